"""The store's Prometheus metrics (issue 26): Redis calls, the worker's timers, computers, the outbox.

Defined once per process in ``prometheus_client``'s default registry (the web app exposes
them at ``GET /metrics``, :mod:`webapp.metrics`). Labels are bounded: a script's name (the
``*.lua`` files), a shard number, a computer level, an error's class; never a table, user
or chat id.

The hot path pays little: a Redis script's call is one ``perf_counter`` pair and one
histogram observation (:class:`Timed`); the outbox's backlog and the due timers are read
by :func:`sample`, every few seconds in a background task, never per move.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

#: Bucket bounds (seconds) of the store's call times: a move's script is ~0.2 ms on loopback.
REDIS_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

REDIS_CALL = Histogram("karty_redis_call_seconds", "Time of one call of a store script (Lua), by script",
                       ["script"], buckets=REDIS_BUCKETS)
REDIS_ERRORS = Counter("karty_redis_errors_total",
                       "Store script calls that raised (connection lost, timeout, error reply), by error class",
                       ["script", "error"])
TIMER_CLAIMS = Counter("karty_timer_claims_total", "Tables the worker claimed because a deadline or a computer "
                       "move was due")
TIMERS_FIRED = Counter("karty_timer_moves_total", "Moves the worker made, by who moved (timer: an absent "
                       "person's time ran out; computer: a computer seat or a person in auto)", ["by"])
TIMER_LATE = Histogram("karty_timer_late_seconds", "How late the worker moved after the move was due",
                       buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0))
TIMERS_DUE = Gauge("karty_timers_due", "Deadlines and computer moves due now and not yet made, per shard",
                   ["shard"])
DECISIONS = Counter("karty_computer_decisions_total", "Decisions of computer seats, by level", ["level"])
SEARCH_CPU = Histogram("karty_computer_search_cpu_seconds",
                       "CPU time of one expert search (in the worker process that ran it)",
                       buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
FALLBACKS = Counter("karty_computer_fallbacks_total", "Expert decisions that fell back to the regular level, "
                    "by reason (timeout, error)", ["reason"])
OUTBOX_PENDING = Gauge("karty_outbox_pending", "Outbox entries not yet acknowledged by a notifier (read or "
                       "not), per shard", ["shard"])
OUTBOX_AGE = Gauge("karty_outbox_oldest_age_seconds", "Age of the oldest outbox entry not yet acknowledged "
                   "(0 when none), per shard", ["shard"])
SAMPLE_ERRORS = Counter("karty_store_sample_errors_total", "Failed reads of the outbox backlog and due timers")


class Timed:
    """``await timed(keys=..., args=...)``: ``inner``'s call, its time observed as ``script``.

    ``inner``: a redis-py ``AsyncScript`` or a :class:`store.durable.Replicated`; every other
    attribute (``script``, ``sha``) is ``inner``'s. An exception is counted in
    ``karty_redis_errors_total`` (by class) and raised as it was.
    """

    __slots__ = ("_errors", "_observe", "inner", "name")

    def __init__(self, name: str, inner: Any) -> None:
        self.name = name
        self.inner = inner
        self._observe = REDIS_CALL.labels(name).observe  # the child looked up once, not per call
        self._errors: dict[str, Any] = {}

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)

    def __setattr__(self, attr: str, value: Any) -> None:  # e.g. a Replicated's timeout_ms: ``inner``'s
        if attr in Timed.__slots__:
            object.__setattr__(self, attr, value)
        else:
            setattr(self.inner, attr, value)

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = (), **kw: Any) -> Any:
        start = time.perf_counter()
        try:
            return await self.inner(keys=keys, args=args, **kw)
        except Exception as e:
            kind = type(e).__name__
            counter = self._errors.get(kind)
            if counter is None:
                counter = self._errors[kind] = REDIS_ERRORS.labels(self.name, kind)
            counter.inc()
            raise
        finally:
            self._observe(time.perf_counter() - start)


def stream_age(entry_id: Any, now: float) -> float:
    """Seconds since the stream entry ``entry_id`` (``"<ms>-<seq>"``) was added, 0 at least."""
    ms = int(str(entry_id).split("-", 1)[0])
    return max(0.0, now - ms / 1000.0)


async def sample(store: Any) -> None:
    """Read the outbox backlog and the due timers of every shard into their gauges.

    Per shard: ``XINFO GROUPS`` (entries pending acknowledgement and entries not yet read,
    ``lag``), the oldest such entry's id (``XPENDING`` summary, else the first entry after
    the group's last delivered id) and ``ZCOUNT`` of the deadlines due now. A few reads per
    shard: called every few seconds (:mod:`webapp.metrics`), not per move. Errors are
    counted (``karty_store_sample_errors_total``) and the gauges keep their last values.
    """
    from store.common import OUTBOX_GROUP

    now = store.clock()
    for shard in range(store.shards):
        label = str(shard)
        try:
            stream = store.keys.outbox_of(shard)
            due = await store.redis.zcount(store.keys.deadlines_of(shard), "-inf", repr(now))
            TIMERS_DUE.labels(label).set(due)
            groups = await store.redis.xinfo_groups(stream) if await store.redis.exists(stream) else []
            group = next((g for g in groups if g.get("name") == OUTBOX_GROUP), None)
            if group is None:  # no notifier has read it yet: every entry waits
                length = await store.redis.xlen(stream)
                OUTBOX_PENDING.labels(label).set(length)
                first = await store.redis.xrange(stream, count=1) if length else []
                OUTBOX_AGE.labels(label).set(stream_age(first[0][0], now) if first else 0.0)
                continue
            pending = int(group.get("pending") or 0)
            lag = int(group.get("lag") or 0)
            OUTBOX_PENDING.labels(label).set(pending + lag)
            oldest = None
            if pending:
                summary = await store.redis.xpending(stream, OUTBOX_GROUP)
                oldest = summary.get("min")
            elif lag:
                after = await store.redis.xrange(stream, min=f"({group['last-delivered-id']}", count=1)
                oldest = after[0][0] if after else None
            OUTBOX_AGE.labels(label).set(stream_age(oldest, now) if oldest else 0.0)
        except Exception:
            SAMPLE_ERRORS.inc()
            raise
