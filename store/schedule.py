"""Turn deadlines and computer moves (S4): planning, the worker and the sweeper.

Deadlines are a sorted set, table id → when the worker must look at the table, split
into ``Store.shards`` shards (each its own slot, with its versions hash and outbox
stream: ``schedule.lua`` touches one shard; a table always in the same one,
:func:`store.keys.shard_of`); the worker claims from every shard, the sweeper scans
every shard.
``claim.lua`` leases due entries (their score moves to ``now + LEASE``), so exactly
one worker gets each; a worker that dies leaves an entry that comes due again
after the lease: no deadline is lost. ``schedule.lua`` never lets an older
version overwrite a newer due time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import time
from typing import Any

import engine
from engine.errors import Rejected
from store import metrics
from store.common import (
    CALLOUTS,
    COMPUTER_DELAY,
    LEASE,
    OUTBOX_MAXLEN,
    RETRY_LATER,
    ROUND_HOLD,
    SWEEP_EVERY,
    SWEEP_SETTLE,
    StoreBase,
    _dumps,
    _s,
    log,
)
from store.computers import plan_turns, seat_level, seat_seed, table_memory
from store.keys import shard_of
from store.live import Known
from store.models import (
    StoreError,
)


class Batcher:
    """Gathers items for one call: ``await add(item)`` returns once a ``send(items)`` call
    that held it is done (or raises its error). At most one call is in flight; whatever
    arrives meanwhile goes with the next one, so no timer delays a lone item."""

    MAX_BATCH = 200

    def __init__(self, send: Any) -> None:
        self.send = send
        self.items: list[tuple[Any, asyncio.Future[None]]] = []
        self.task: asyncio.Task | None = None
        self.calls = 0

    async def add(self, item: Any) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.items.append((item, fut))
        if self.task is None:
            self.task = asyncio.create_task(self._run())
        await fut

    async def _run(self) -> None:
        try:
            while self.items:
                batch, self.items = self.items[: self.MAX_BATCH], self.items[self.MAX_BATCH :]
                self.calls += 1
                try:
                    await self.send([item for item, _ in batch])
                except Exception as exc:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(exc)
                else:
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_result(None)
        finally:
            self.task = None


class Schedule(StoreBase):
    """The schedule part of :class:`store.Store`."""

    @staticmethod
    def _hold(state: Any, events: list[dict[str, Any]]) -> float:
        """Seconds the next round waits after a commit that ended a round of a match
        still going (:data:`ROUND_HOLD`), else 0."""
        if state.over or not any(e.get("a") == "round_end" for e in events):
            return 0.0
        return ROUND_HOLD

    def _plan(self, doc: dict[str, Any], state: Any, actor: str | None, now: float,
              hold: float = 0.0, memory: Any = None) -> list[str]:
        """Fill ``doc``'s turns, callouts and deadline for ``state``; new human turns
        (:func:`store.computers.plan_turns`, the race model of issue 24)."""
        return plan_turns(doc, state, actor, now, hold, memory, COMPUTER_DELAY[0])

    @staticmethod
    def _dues(doc: dict[str, Any]) -> list[tuple[float, str]]:
        """``(due, seat)`` of every seat the worker may have to move for, soonest first."""
        out = [(t["due"], sid) for sid, t in (doc.get("turns") or {}).items() if t["due"] is not None]
        out += [(due, sid) for sid, due in (doc.get("callouts") or {}).items()]
        return sorted(out)

    async def _set_due(self, doc: dict[str, Any], over: bool = False,
                       entries: list[dict[str, Any]] | None = None, gone: bool = False) -> None:
        """``schedule.lua``: the outbox ``entries`` of ``doc``'s version and its next due time, at once.

        ``over``: the game ended (nothing due; a tombstone stays for :meth:`sweep`);
        ``gone``: the table no longer exists (forgotten).
        """
        dues = [] if over or gone else self._dues(doc)
        await self._schedule_version(doc["id"], doc["version"], dues, "2" if gone else "1" if over else "0", entries)
        if dues:
            self._note_due(dues[0][0])

    WAKE_WITHIN = 10.0  # s: due times this close are kept to wake this process's worker on time

    def _note_due(self, due: float) -> None:
        """Wake this process's worker at ``due`` (epoch s), not at its next poll: a computer's
        «ОДНА КАРТА!» is due a few tenths of a second after its play (issue 24), and the
        race with a person is decided within one poll interval."""
        now = self.clock()
        if due - now > self.WAKE_WITHIN:
            return
        heapq.heappush(self._wakes, due)
        if self._wake is not None and self._wakes[0] == due:
            self._wake.set()

    def _next_wait(self, interval: float) -> float:
        """Seconds the worker may sleep: ``interval``, or less when a noted due time comes sooner."""
        wakes = self._wakes
        now = self.clock()
        while wakes and wakes[0] <= now:
            heapq.heappop(wakes)
        return min(interval, wakes[0] - now) if wakes else interval

    async def _schedule_version(self, table_id: str, version: int, dues: list[tuple[float, str]], flag: str,
                                entries: list[dict[str, Any]] | None = None) -> None:
        """One table's follow-up through ``schedule.lua``, batched with this process's
        concurrent ones: while one call is in flight, the next ones gather for one call."""
        await self._followups.add(self._followup(table_id, version, dues, flag, entries))

    @staticmethod
    def _followup(table_id: str, version: int, dues: list[tuple[float, str]], flag: str,
                  entries: list[dict[str, Any]] | None = None) -> list[Any]:
        """One table's values for ``schedule.lua`` (its ARGV after the first; see there)."""
        return [table_id, version, repr(dues[0][0]) if dues else "", flag, len(entries or ()),
                *(_dumps(e) for e in entries or ())]

    def _shard(self, table_id: str) -> int:
        """The shard of the deadlines, versions and outbox holding ``table_id`` (:func:`store.keys.shard_of`)."""
        return shard_of(table_id, self.shards)

    def _sched_keys(self, shard: int) -> list[str]:
        return [self.keys.deadlines_of(shard), self.keys.deadline_versions_of(shard), self.keys.outbox_of(shard)]

    async def _send_followups(self, groups: list[list[Any]]) -> None:
        """One ``schedule.lua`` call per shard holding some of ``groups`` (one slot each), at once."""
        by_shard: dict[int, list[list[Any]]] = {}
        for group in groups:
            by_shard.setdefault(self._shard(group[0]), []).append(group)
        calls = [self._schedule(keys=self._sched_keys(shard),
                                args=[OUTBOX_MAXLEN, *(value for group in part for value in group)])
                 for shard, part in by_shard.items()]
        if len(calls) == 1:
            await calls[0]
            return
        for result in await asyncio.gather(*calls, return_exceptions=True):
            if isinstance(result, BaseException):  # the others stand; the caller's sweep redoes these
                raise result

    async def tick(self, now: float | None = None, limit: int = 100) -> int:
        """One pass of the worker: claim due tables and move for them; returns moves made.

        For each claimed table, the soonest due seat moves (``engine.computer_action``):
        ``by="computer"`` for a computer seat or a person in auto, ``by="timer"`` for a
        person whose turn time ran out. At most one move per table per pass; the
        commit schedules the next one. Safe in any number of processes at once.
        """
        now = self.clock() if now is None else now
        token = repr(now + LEASE + self._rng.random() * 1e-3)
        claimed: list[tuple[str, int]] = []
        if self.shards == 1:
            claimed = [(_s(t), 0) for t in await self._claim(keys=[self.keys.deadlines], args=[repr(now), token, limit])]
        else:  # every shard (each a slot, spread over the primaries); one failing shard skips only itself
            got = await asyncio.gather(*(self._claim(keys=[self.keys.deadlines_of(k)], args=[repr(now), token, limit])
                                         for k in range(self.shards)), return_exceptions=True)
            for shard, result in enumerate(got):
                if isinstance(result, BaseException):
                    log.warning("worker: claiming deadline shard %d failed: %s", shard, result)
                else:
                    claimed += [(_s(t), shard) for t in result]
        if claimed:
            metrics.TIMER_CLAIMS.inc(len(claimed))
        done = await asyncio.gather(*(self._work(t, now, token, shard) for t, shard in claimed),
                                    return_exceptions=True)
        for (table_id, _), result in zip(claimed, done, strict=True):
            if isinstance(result, BaseException):  # the lease runs out and a later pass retries
                log.error("worker failed on table %s", table_id, exc_info=result)
        return sum(r for r in done if isinstance(r, int))

    async def _work(self, table_id: str, now: float, token: str, shard: int = 0) -> int:
        known = self.live.peek(table_id)  # known here and kept fresh by the commits: no read
        if known is None:
            raw = await self.redis.hget(self.keys.table(table_id), "doc")
            known = Known.parse(raw) if raw else None
        doc = known.doc if known is not None else None
        if shard != self._shard(table_id):
            # Claimed from a shard that is not its own (left there by a deployment with
            # another shard count): its due time moves to its own shard, then it is forgotten here.
            if doc is not None and "ended" not in doc:
                await self._set_due(doc)
            await self._forget_in(shard, table_id)
            return 0
        if doc is None or "ended" in doc:
            # Gone: forget it. Ended: nothing more is due; if the final commit's follow-up
            # never ran, the versions hash still says so and the sweeper redoes it.
            await self._release_claim(table_id, token, "", final=doc is None)
            return 0
        state = known.state
        seats = {s["seat"]: s for s in doc["seats"]}
        dues = self._dues(doc)
        retry = False
        memory = None
        for due, sid in dues:
            if due > now:
                break
            by = "computer" if seats[sid]["computer"] or seats[sid]["auto"] else "timer"
            if by == "timer":
                # the timer moves for an absent person; it never calls out for them (S3)
                action = engine.computer_action(state, sid)
                if action is not None and action.get("a") in CALLOUTS:
                    legal = engine.legal_actions(state, sid)
                    action = legal[0] if legal else None
            else:  # the seat's level, from its view and the table's public memory (issue 14)
                memory = memory or table_memory(doc, state)
                decision = await self.brains.decide(engine.view(state, sid), memory, seat_level(seats[sid]),
                                                    seat_seed(doc, sid))
                action = decision.action if decision is not None else None
            if action is None:
                continue
            try:
                await self.apply(table_id, sid, action, expected_version=doc["version"], by=by, now=now,
                                 known=known)
                metrics.TIMERS_FIRED.labels(by).inc()
                metrics.TIMER_LATE.observe(max(0.0, self.clock() - due))
                return 1
            except StoreError as exc:
                if exc.code != "stale":
                    raise
                return 0  # someone committed meanwhile and scheduled the table afresh
            except Rejected as exc:
                log.warning("table %s: computer move %s for %s refused: %s", table_id, action, sid, exc)
                retry = True
        later = [d for d, _ in dues if d > now]
        if retry:
            later.append(now + RETRY_LATER)
        await self._release_claim(table_id, token, repr(min(later)) if later else "")
        return 0

    async def _forget_in(self, shard: int, table_id: str) -> None:
        """Remove ``table_id`` from ``shard``'s deadlines and versions (not its own shard: idempotent)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrem(self.keys.deadlines_of(shard), table_id)
        pipe.hdel(self.keys.deadline_versions_of(shard), table_id)
        await pipe.execute()

    async def _release_claim(self, table_id: str, token: str, due: str, final: bool = False) -> None:
        shard = self._shard(table_id)
        await self._release(keys=[self.keys.deadlines_of(shard), self.keys.deadline_versions_of(shard)],
                            args=[table_id, token, due, "1" if final else "0"])

    async def run_worker(self, stop_event: asyncio.Event, interval: float = 0.2,
                         sweep_every: float = SWEEP_EVERY) -> None:
        """Run :meth:`tick` until ``stop_event`` is set (S4: timers and computer seats).

        Every ``sweep_every`` seconds one of the running workers also runs :meth:`sweep`.
        """
        wake = self._wake = asyncio.Event()

        async def relay() -> None:  # a stop wakes the worker at once
            await stop_event.wait()
            wake.set()

        relay_task = asyncio.create_task(relay())
        try:
            await self._work_loop(stop_event, wake, interval, sweep_every)
        finally:
            relay_task.cancel()
            self._wake = None

    async def _work_loop(self, stop_event: asyncio.Event, wake: asyncio.Event, interval: float,
                         sweep_every: float) -> None:
        next_sweep = 0.0
        try:
            self.brains.warm()  # the expert's worker processes (store.computers)
        except Exception:
            log.exception("could not start the expert's worker processes")
        while not stop_event.is_set():
            try:
                moves = await self.tick()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + sweep_every
                    await self.sweep(lease=sweep_every)
            except Exception:
                log.exception("worker tick failed")
                moves = 0
            if moves:
                continue
            wait = self._next_wait(interval)
            if wait > 0:
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), wait)

    async def sweep(self, now: float | None = None, lease: float | None = SWEEP_EVERY,
                    settle: float = SWEEP_SETTLE) -> int:
        """Finish commits whose follow-up never ran (the process died right after committing).

        The versions hash lists every live table with the version its due time was
        computed from (a finished one as a tombstone, ``-<version>``). A live table
        whose stored version is newer, and whose last commit is more than ``settle``
        seconds old, gets its ledger entry (if it ended rated; idempotent), that
        commit's outbox entries (round, end, turn) and its due time now.
        ``schedule.lua`` adds a version's entries once, so a slow original follow-up
        arriving later repeats none. A table that is gone (expired) is forgotten. One
        table failing is logged and skipped. ``lease``: seconds during which other
        processes' sweeps are skipped (``None``: always sweep). Returns the number of
        tables repaired.
        """
        now = self.clock() if now is None else now
        if lease and not await self.redis.set(self.keys.sweep_lock, "1", nx=True, px=int(lease * 1000)):
            return 0
        repaired = 0
        batch: list[tuple[str, int, int]] = []

        async def flush() -> int:
            pipe = self.redis.pipeline(transaction=False)
            for table_id, known, _ in batch:
                if known < 0:  # a finished table: only whether it is still kept
                    pipe.exists(self.keys.table(table_id))
                else:
                    pipe.hget(self.keys.table(table_id), "doc")
            docs = await pipe.execute()
            fixed = 0
            for (table_id, known, shard), raw in zip(batch, docs, strict=True):
                try:
                    if shard != self._shard(table_id):  # another shard count left it here: to its own shard
                        if raw and known >= 0:
                            doc = json.loads(_s(raw))
                            if not await self._repair(doc, known, now, 0.0):
                                await self._set_due(doc, over="ended" in doc)
                        await self._forget_in(shard, table_id)
                    elif not raw:
                        await self._schedule_version(table_id, abs(known), [], "2")
                    elif known >= 0 and await self._repair(json.loads(_s(raw)), known, now, settle):
                        fixed += 1
                except Exception:
                    log.exception("sweep: table %s failed", table_id)
            batch.clear()
            return fixed

        for shard in range(self.shards):  # every shard's versions (each on the primary of its slot)
            async for table_id, version in self.redis.hscan_iter(self.keys.deadline_versions_of(shard), count=200):
                batch.append((_s(table_id), int(_s(version)), shard))
                if len(batch) >= 200:
                    repaired += await flush()
        if batch:
            repaired += await flush()
        return repaired

    async def _repair(self, doc: dict[str, Any], known: int, now: float, settle: float) -> bool:
        """Redo the follow-up of ``doc``'s last commit if it is older than ``settle`` s and never ran."""
        if doc["version"] <= known or now - doc.get("ts", 0) < settle:
            return False
        over = "ended" in doc
        if over and doc["rated"]:
            await self._record_table(doc)
        if over:
            await self._compact(doc)
        entries: list[dict[str, Any]] = []
        if doc["chat_id"] is not None:  # the bot's entries of that commit
            if "move" in doc:  # the commit's events are in its document
                events = doc["move"].get("events") or []
            else:  # a document written before moves carried their events
                v = doc["version"]
                last = await self.redis.lrange(self.keys.log(doc["id"]), v - 1, v - 1)
                events = json.loads(_s(last[0]).partition("\t")[0]).get("events") or [] if last else []
            entries = self._commit_entries(doc, events, self._fresh_turns(doc))
        await self._set_due(doc, over=over, entries=entries)
        log.warning("sweep: table %s was left unscheduled at version %s", doc["id"], doc["version"])
        return True

    async def next_due(self, table_id: str) -> float | None:
        """When the worker will next look at the table (epoch s), or ``None``."""
        score = await self.redis.zscore(self.keys.deadlines_of(self._shard(table_id)), table_id)
        return None if score is None else float(score)
