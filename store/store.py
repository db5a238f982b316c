"""The store: live games, lobbies, deadlines, outbox and ratings on Redis (DESIGN.md, S1–S7).

:class:`Store` is a facade over one module per concern, each a mixin over
:class:`store.common.StoreBase`:

=====================  ==========================================================
module                 concern
=====================  ==========================================================
:mod:`store.users`     users and whether the bot can reach them
:mod:`store.flags`     ping, durable flags, "done once" markers
:mod:`store.lobbies`   lobbies and the start of a table (S1)
:mod:`store.tables`    tables, applying a move exactly once, the log, exports
:mod:`store.schedule`  turn deadlines and computer moves: plan, worker, sweeper (S4)
:mod:`store.events`    the pub/sub events of each commit
:mod:`store.presence`  who is looking at a table
:mod:`store.outbox`    the bot's notifications stream (S5)
:mod:`store.ratings`   the ledger and the leaderboards (S6)
:mod:`store.notices`   each player's live "your turn" message (S5)
:mod:`store.limits`    per-user action rate and open sockets, across processes
:mod:`store.rematch`   "Play again": a finished table's next match (issue 15)
:mod:`store.chats`     migrated chats (group → supergroup), who is known in a chat
:mod:`store.languages` one language per person and per chat, one precedence (S8)
:mod:`store.inbox`     webhook updates answered and not yet handled, lobby edits not yet shown
:mod:`store.replays`   a table's game again, frame by frame, from its log (issue 15)
=====================  ==========================================================
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster

from store.chats import Chats
from store.common import (
    BYS,
    CALL_TIMEOUT,
    CALLOUT_DELAY,
    CALLOUTS,
    COMPUTER_DELAY,
    FINISHED_TTL,
    INDEX_KEEP,
    LEASE,
    LOBBY_TTL,
    MAX_TRIES,
    OUTBOX_GROUP,
    OUTBOX_MAXLEN,
    POOL_SIZE,
    POOL_TIMEOUT,
    RESULTS_KEPT,
    RETRY_LATER,
    SCHEMA,
    SWEEP_EVERY,
    SWEEP_SETTLE,
    TABLE_TTL,
    _lua,
    _lua_composed,
    driver_kwargs,
)
from store.computers import Brains
from store.connect import StoreRedis, connect, healing, hiredis_packing, is_cluster, wants_cluster
from store.durable import Replicated
from store.events import Events
from store.flags import Flags
from store.inbox import Inbox
from store.keys import Keys
from store.languages import Languages
from store.limits import Limits
from store.live import Live
from store.lobbies import Lobbies
from store.metrics import Timed
from store.notices import Notices
from store.outbox import Outbox
from store.pipelined import Pipelined
from store.presence import Presence
from store.ratings import Ratings
from store.rematch import Rematches
from store.replays import Replays
from store.schedule import Batcher, Schedule
from store.tables import Tables
from store.users import Users

SCHED_SHARDS_CLUSTER = 8  # shards of the deadlines and the outbox on a cluster (spread over its primaries)

__all__ = [
    "BYS",
    "CALLOUTS",
    "CALLOUT_DELAY",
    "COMPUTER_DELAY",
    "FINISHED_TTL",
    "INDEX_KEEP",
    "LEASE",
    "LOBBY_TTL",
    "MAX_TRIES",
    "OUTBOX_GROUP",
    "OUTBOX_MAXLEN",
    "RESULTS_KEPT",
    "RETRY_LATER",
    "SCHEMA",
    "SWEEP_EVERY",
    "SWEEP_SETTLE",
    "TABLE_TTL",
    "Store",
]


class Store(Users, Flags, Lobbies, Tables, Schedule, Events, Presence, Outbox, Ratings, Notices, Limits,
            Rematches, Chats, Inbox, Replays, Languages):
    """Karty's Redis store (docs/CONTRACTS.md §2).

    ``redis``: a ``redis.asyncio.Redis`` or ``RedisCluster`` (``decode_responses`` either way);
    ``prefix``: the key prefix; ``clock``: epoch seconds (tests pass a fake one);
    ``replicas``: how many replicas must have a commit before it is reported (``WAIT``,
    :mod:`store.durable`); default 1 on a cluster, 0 on a single Redis (``REDIS_WAIT_REPLICAS``
    through :meth:`from_url`); ``shards``: how many shards the deadline set, the versions hash
    and the outbox stream are split into (default 1 on a single Redis, :data:`SCHED_SHARDS_CLUSTER`
    on a cluster; ``REDIS_SCHED_SHARDS``); every process of a deployment must use the same count.
    """

    def __init__(self, redis: Redis | RedisCluster, prefix: str = "karty", *,
                 clock: Callable[[], float] = time.time, replicas: int | None = None,
                 shards: int | None = None) -> None:
        self.redis = redis
        self.keys = Keys(prefix)
        self.clock = clock
        self._rng = random.Random()
        if replicas is None:  # a cluster has replicas; a single Redis usually none
            replicas = 1 if is_cluster(redis) else 0
        # the deadlines, versions and outbox in this many shards (store.keys): spread over a cluster's primaries
        self.shards = shards or (SCHED_SHARDS_CLUSTER if is_cluster(redis) else 1)
        # A commit is answered only once a replica has it (store.durable): {1,..} wrote, {2,..} a repeat.
        self._commit = Replicated(redis, redis.register_script(_lua("commit.lua")), replicas,
                                  wrote=lambda res: int(res[0]) == 1, vouches=lambda res: int(res[0]) == 2)
        # On a single Redis a move's bucket, commit and follow-up are one script (move.lua):
        # one round trip per move; on a cluster their keys are in different slots.
        self.fused = not is_cluster(redis)
        # ... and, on one plain server, that call goes on a pipelined connection (store.pipelined)
        self.pipelined = Pipelined.for_client(redis) if self.fused else None
        self._move = Replicated(redis, redis.register_script(_lua_composed(
            "move.lua", bucket="bucket.lua", commit="commit.lua", schedule="schedule.lua")), replicas,
            wrote=lambda res: int(res[0]) == 1, vouches=lambda res: int(res[0]) == 2,
            channel=self.pipelined) if self.fused else None
        self._cas = redis.register_script(_lua("cas.lua"))
        self._schedule = redis.register_script(_lua("schedule.lua"))
        self._claim = redis.register_script(_lua("claim.lua"))
        self._release = redis.register_script(_lua("release.lua"))
        self._record = redis.register_script(_lua("record.lua"))
        self._bucket = redis.register_script(_lua("bucket.lua"))
        self._sockets = redis.register_script(_lua("sockets.lua"))
        self._compact_log = redis.register_script(_lua("compact.lua"))
        self._time_scripts()  # each script's calls timed (store.metrics: karty_redis_call_seconds)
        self._followups = Batcher(self._send_followups)
        self._wakes: list[float] = []  # due times soon (epoch s): this process's worker wakes at them
        self._wake: asyncio.Event | None = None  # set by _note_due while the worker sleeps
        self.live = Live(self)
        self._groups_ready: set[int] = set()
        self._pending_done: set[tuple[str, int]] = set()
        self._outbox_waits: dict[str, dict[int, Any]] = {}
        self.brains = Brains()  # the expert's searches, off the event loop (store.computers)

    def _time_scripts(self) -> None:
        """Wrap each script in :class:`store.metrics.Timed` (its name: the ``.lua`` file's)."""
        for attr, name in (("_commit", "commit"), ("_move", "move"), ("_cas", "cas"), ("_schedule", "schedule"),
                           ("_claim", "claim"), ("_release", "release"), ("_record", "record"),
                           ("_bucket", "bucket"), ("_sockets", "sockets"), ("_compact_log", "compact")):
            script = getattr(self, attr)
            if script is not None:
                setattr(self, attr, Timed(name, script))

    @classmethod
    def from_url(
        cls,
        url: str,
        prefix: str = "karty",
        *,
        pool_size: int = POOL_SIZE,
        timeout: float = CALL_TIMEOUT,
        pool_timeout: float = POOL_TIMEOUT,
        cluster: bool | None = None,
        **kwargs: Any,
    ) -> Store:
        """A store on a new, bounded connection pool to ``url`` (``redis://host:port/db``).

        At most ``pool_size`` connections (one of them held by the live feed's pub/sub,
        :mod:`store.live`); a call waits at most ``pool_timeout`` s for a free one and
        each read or write on a connection at most ``timeout`` s. Either bound exceeded
        raises one of :data:`store.UNAVAILABLE` (the web app answers 503 ``unavailable``).
        :meth:`warm` opens the connections before traffic arrives.

        ``redis+cluster://h1:7000,h2:7001`` (or ``cluster=True``, or ``REDIS_CLUSTER=1``
        when ``cluster`` is None) makes it a Redis Cluster client (:mod:`store.connect`):
        then at most ``pool_size`` commands run at once (the next waits ``pool_timeout``
        s, then raises ``MaxConnectionsError``, one of :data:`store.UNAVAILABLE`).
        """
        if wants_cluster(url, cluster):
            client = connect(url, cluster=True, max_in_flight=pool_size, in_flight_wait=pool_timeout,
                             max_connections=pool_size + 16,  # room for pipelines and pub/sub beside
                             socket_timeout=timeout, socket_connect_timeout=timeout,
                             decode_responses=True, **driver_kwargs())
            return cls(client, prefix=prefix, **kwargs)
        pool = healing(hiredis_packing(BlockingConnectionPool.from_url(
            url,
            max_connections=pool_size,
            timeout=pool_timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            decode_responses=True,
            **driver_kwargs(),
        )))  # health-checked, idempotent calls retried once on a lost connection (store.connect)
        return cls(StoreRedis(connection_pool=pool), prefix=prefix, **kwargs)

    async def warm(self, connections: int | None = None) -> int:
        """Open up to ``connections`` pooled connections now (default: the whole pool) and
        load the scripts; returns how many were opened. A new connection costs a TCP
        handshake and a ``HELLO``/``CLIENT SETINFO`` exchange: better at start than under load.
        """
        if is_cluster(self.redis):
            await self.redis.initialize()  # discover the nodes and slots; scripts load on first use per node
            return len(self.redis.get_primaries())
        pool = self.redis.connection_pool
        n = min(connections or pool.max_connections, pool.max_connections, POOL_SIZE)
        taken = []
        try:
            for _ in range(n):
                conn = await pool.get_connection()
                taken.append(conn)
                await conn.connect()
        finally:
            for conn in taken:
                await pool.release(conn)
        for script in (*([self._move] if self._move is not None else []), self._commit, self._cas, self._schedule, self._claim, self._release, self._record,
                       self._bucket, self._sockets, self._compact_log):
            await self.redis.script_load(script.script)
        if self.pipelined is not None:
            await self.pipelined.execute("PING")  # its connection open too
        return len(taken)

    async def close(self) -> None:
        """Stop the live feed, close the Redis connection pool (and the expert's worker processes)."""
        self.brains.close()
        await self._close_outbox()
        await self.live.close()
        if self.pipelined is not None:
            await self.pipelined.close()
        await self.redis.aclose()
