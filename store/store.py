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
=====================  ==========================================================
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio import Redis

from store.common import (
    BYS,
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
    RESULTS_KEPT,
    RETRY_LATER,
    SCHEMA,
    SWEEP_EVERY,
    SWEEP_SETTLE,
    TABLE_TTL,
    _lua,
)
from store.events import Events
from store.flags import Flags
from store.keys import Keys
from store.lobbies import Lobbies
from store.outbox import Outbox
from store.presence import Presence
from store.ratings import Ratings
from store.schedule import Schedule
from store.tables import Tables
from store.users import Users

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


class Store(Users, Flags, Lobbies, Tables, Schedule, Events, Presence, Outbox, Ratings):
    """Karty's Redis store (docs/CONTRACTS.md §2).

    ``redis``: a ``redis.asyncio.Redis`` (``decode_responses`` either way);
    ``prefix``: the key prefix; ``clock``: epoch seconds (tests pass a fake one).
    """

    def __init__(self, redis: Redis, prefix: str = "karty", *, clock: Callable[[], float] = time.time) -> None:
        self.redis = redis
        self.keys = Keys(prefix)
        self.clock = clock
        self._rng = random.Random()
        self._commit = redis.register_script(_lua("commit.lua"))
        self._cas = redis.register_script(_lua("cas.lua"))
        self._schedule = redis.register_script(_lua("schedule.lua"))
        self._claim = redis.register_script(_lua("claim.lua"))
        self._release = redis.register_script(_lua("release.lua"))
        self._record = redis.register_script(_lua("record.lua"))
        self._group_ready = False
        self._pending_done: set[str] = set()

    @classmethod
    def from_url(cls, url: str, prefix: str = "karty", **kwargs: Any) -> Store:
        """A store on a new connection pool to ``url`` (``redis://host:port/db``)."""
        return cls(Redis.from_url(url, decode_responses=True), prefix=prefix, **kwargs)

    async def close(self) -> None:
        """Close the Redis connection pool."""
        await self.redis.aclose()
