"""What every part of :class:`store.Store` shares: lifetimes, delays, small helpers, the base.

The only package that talks to Redis is :mod:`store`. Key names: :mod:`store.keys`.
Scripts: the ``*.lua`` files beside this module, registered once per store and
called as objects (redis-py reloads them on NOSCRIPT).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

import orjson
from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from engine.players import LEVELS
from store.keys import Keys

_REGULAR = LEVELS["regular"]

log = logging.getLogger("karty.store")

SCHEMA = 1
TABLE_TTL = 48 * 3600  # S7: live game state, since the last move
FINISHED_TTL = 7 * 24 * 3600  # S7: a finished game's summary
LOBBY_TTL = 3600  # S1, S7: since the last change
LEASE = 30.0  # seconds a worker's claim on a due table lasts
RETRY_LATER = 5.0
SWEEP_EVERY = 60.0  # seconds between sweeps (Store.sweep) across all workers
SWEEP_SETTLE = 10.0  # a commit's follow-up counts as lost only after this many seconds  # a due move the engine refused is looked at again after this
# Seconds before a regular computer moves (a move with no choice is quicker), and before it
# calls «ЗЕВОК!» or «СКОЛЬКО КАРТ?» on someone: slower than a move, so a person has a fair
# chance to declare first or to win the race. Each level has its own log-normal reaction
# times (engine.players.LEVELS); these are the regular level's bounds.
COMPUTER_DELAY = (_REGULAR.forced.lo, _REGULAR.move.hi)
CALLOUT_DELAY = (_REGULAR.call.lo, _REGULAR.call.hi)
# Seconds the end of a Prší round holds before the next round's computers and turn
# timers start (issue 17): the table sees the last card, what everyone had left and
# who drew for a last 7; the Mini App shows the same countdown.
ROUND_HOLD = 6.0
OUTBOX_MAXLEN = 10_000
OUTBOX_GROUP = "bot"
MAX_TRIES = 200  # compare-and-set attempts before StoreError("busy")
RESULTS_KEPT = 50
INDEX_KEEP = 90 * 24 * 3600  # chat/user index entries older than this are trimmed (their tables are long gone)
POOL_SIZE = 48  # Redis connections per process at most (Store.from_url)
# Store.from_url's defaults, for tools and tests: slow is not broken there. The service
# passes its own, tighter bounds from StoreSettings (REDIS_TIMEOUT, REDIS_POOL_TIMEOUT).
CALL_TIMEOUT = 30.0  # seconds one Redis read/write may take before it fails
POOL_TIMEOUT = 30.0  # seconds a call may wait for a free pooled connection
BUCKET_WAIT = 0.25  # seconds a move waits for its action bucket's own call (a cluster) before going on without it
CALLOUTS = frozenset({"zevok", "one_card", "how_many"})
BYS = ("player", "timer", "computer")


@cache
def _lua(name: str) -> str:
    return resources.files("store").joinpath(name).read_text(encoding="utf-8")


def _lua_composed(name: str, **parts: str) -> str:
    """Script ``name`` preceded by each of ``parts`` (function name → script file) as
    ``local function <name>(KEYS, ARGV) <that script> end``: the scripts run unchanged
    inside one call (their ``return`` is the function's), e.g. ``move.lua``."""
    defs = [f"local function {fn}(KEYS, ARGV)\n{_lua(file)}\nend\n" for fn, file in parts.items()]
    return "".join(defs) + _lua(name)


def _s(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _dumps(obj: Any) -> str:
    """Compact JSON text (orjson: every document written goes through here)."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def _loads(raw: str | bytes) -> Any:
    """Parse JSON text (orjson)."""
    return orjson.loads(raw)


def _utc(at: datetime | float | None, clock: Callable[[], float]) -> datetime:
    if at is None:
        return datetime.fromtimestamp(clock(), tz=UTC)
    if isinstance(at, int | float):
        return datetime.fromtimestamp(at, tz=UTC)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@cache
def _lib_version() -> str:
    from redis.utils import get_lib_version

    return get_lib_version()


def driver_kwargs() -> dict[str, Any]:
    """Connection arguments naming the client once: redis-py looks its own version up in
    the package metadata on every new connection (about 1 ms each) unless it is given.

    Replies are parsed by hiredis (C) when it is installed, as redis-py does by default,
    unless ``KARTY_HIREDIS=0`` (:func:`store.connect.hiredis_wanted`): then by redis-py's own parser.
    """
    from store.connect import hiredis_wanted

    out: dict[str, Any]
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # redis-py < 7
        out = {"lib_version": _lib_version()}
    else:
        out = {"driver_info": DriverInfo(lib_version=_lib_version())}
    if not hiredis_wanted():
        from redis._parsers import _AsyncRESP3Parser  # redis-py turns it into RESP2's for protocol 2

        out["parser_class"] = _AsyncRESP3Parser
    return out


class StoreBase:
    """The state every part of the store shares; :class:`store.Store` sets it up.

    The parts (:mod:`store.users`, :mod:`store.lobbies`, :mod:`store.tables`, …) are
    mixins over this base and call one another through ``self``.
    """

    redis: Redis
    keys: Keys
    clock: Callable[[], float]
    _rng: random.Random
    _commit: Any  # store.durable.Replicated around commit.lua
    _move: Any  # … around move.lua (bucket, commit and follow-up at once), None on a cluster
    fused: bool  # whether a move is one move.lua call (a single Redis)
    pipelined: Any  # store.pipelined.Pipelined to that single Redis (the live path's calls), or None
    shards: int  # shards of the deadlines, versions and outbox (store.keys.shard_of)
    _cas: AsyncScript
    _schedule: AsyncScript
    _claim: AsyncScript
    _release: AsyncScript
    _record: AsyncScript
    _bucket: AsyncScript
    _sockets: AsyncScript
    _compact_log: AsyncScript
    _groups_ready: set[int]
    _followups: Any  # store.schedule.Batcher of schedule.lua follow-ups
    _wakes: list[float]  # store.schedule: due times soon, a heap
    _wake: Any  # store.schedule: the running worker's wake-up event, or None
    live: Any  # store.live.Live: the tables this process knows
    _pending_done: set[tuple[str, int]]
    _outbox_waits: dict[str, dict[int, Any]]
    brains: Any  # store.computers.Brains
