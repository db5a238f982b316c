"""Computer seats (issue 14): their level, the table's public memory, decisions off the loop.

Each computer seat has a level (``beginner``, ``regular``, ``expert``; a seat without
one, and a person the computer plays for after three timeouts, S4, is ``regular``).
A table keeps one :class:`engine.players.Memory` in its document (``doc["memory"]``):
what the public log has shown, fed with every commit's events, the same for every
seat, so a computer decides from its seat's :func:`engine.view` and that memory
alone (never the state: hidden cards never reach a player, S3). Only a table with a
computer-driven seat keeps one (:func:`driven`); a table of people has nothing to read
it, and when one of them goes to auto (S4) the store first replays it from the deal and
the log (:func:`replayed_memory`), so the computer playing for them remembers all of it.

The expert's search is capped by a count of simulated actions calibrated to stay within
50 ms of CPU (``Level.budget``, deterministic: the engine reads no clock); :class:`Brains` runs those searches in a
bounded pool of worker processes, so the event loop never waits on them. Requests
queue first come, first served (an ``asyncio.Semaphore`` is FIFO), and one that has
no answer within :data:`DECIDE_TIMEOUT` seconds (queue and search together) is decided
by the regular player instead: a busy server plays a little weaker, never slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool as BrokenExecutor
from typing import Any

import engine
from engine import players
from engine.players import Decision, Memory
from store import metrics

log = logging.getLogger("karty.store")

LEVELS = players.LEVEL_NAMES
DEFAULT_LEVEL = players.DEFAULT_LEVEL
DECIDE_TIMEOUT = 2.0  # wall seconds an expert decision may take, queueing included


def seat_level(seat: dict[str, Any]) -> str:
    """The level a computer-driven seat plays at (a person in auto: ``regular``)."""
    level = seat.get("level") if seat.get("computer") else None
    return level if level in LEVELS else DEFAULT_LEVEL


def seat_seed(doc: dict[str, Any], seat: str) -> int:
    """A seat's own player seed for the table: stable, and telling nothing of the deal's seed."""
    digest = hashlib.blake2b(f"{doc['id']}:{doc['seed']}:{seat}".encode(), digest_size=8, person=b"karty-ai").digest()
    return int.from_bytes(digest, "big")


def table_memory(doc: dict[str, Any], state: Any) -> Memory:
    """The table's public memory (a document from before it had one: what ``last`` shows)."""
    data = doc.get("memory")
    if data:
        return Memory.from_dict(data)
    mem = Memory(state.game, "", state.players)
    mem.partial = True
    mem.feed(list(state.last))
    if state.game == "penki" and state.phase == 2:
        mem.phase = 2
    return mem


def driven(doc: dict[str, Any]) -> bool:
    """Whether a seat of ``doc`` is played by the computer: a computer, or a person in auto (S4)."""
    return any(s["computer"] or s["auto"] for s in doc["seats"])


def remember(doc: dict[str, Any], before: Any, events: list[dict[str, Any]]) -> Memory | None:
    """Feed a commit's public ``events`` into ``doc["memory"]`` and return the memory; ``None``
    (and no memory in ``doc``) when no seat of ``doc`` is computer-driven (:func:`driven`).

    ``before``: the state the events were applied to (for a table made before tables
    had a memory; a new table, whose ``doc`` has no ``version`` yet, starts empty). A
    seat that has just become driven needs ``doc["memory"]`` set first
    (:func:`replayed_memory`), else it starts from what ``before.last`` shows."""
    if not driven(doc):
        doc.pop("memory", None)
        return None
    mem = table_memory(doc, before) if "version" in doc else Memory(before.game, "", before.players)
    mem.feed(events)
    doc["memory"] = mem.to_dict()
    return mem


def replayed_memory(doc: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """``doc``'s public memory, as :func:`remember` would have kept it since the deal: the
    deal's events (the engine deals again from the document's seed) and then each log
    entry's (``entries``: :meth:`store.Store.log`, up to ``doc``'s version) → ``to_dict()``."""
    players = [s["seat"] for s in doc["seats"]]
    variants = (doc.get("settings") or {}).get("variants")
    dealt = engine.new_game(doc["game"], players, dealer=doc["dealer"], seed=doc["seed"],
                            options={"variants": variants} if variants else None)
    mem = Memory(doc["game"], "", players).feed(list(dealt.last))
    for entry in entries:
        if entry.get("version", 0) <= doc["version"]:
            mem.feed(entry.get("events") or [])
    return mem.to_dict()


def _expert(view: dict[str, Any], memory: Memory, seed: int) -> Decision | None:
    """In a worker process: the expert's searched decision."""
    return players.decide(view, None, level="expert", seed=seed, memory=memory)


def _expert_timed(view: dict[str, Any], memory: Memory, seed: int) -> tuple[Decision | None, float]:
    """In a worker process: :func:`_expert` and the CPU seconds its thread spent on it."""
    start = time.thread_time()
    decision = _expert(view, memory, seed)
    return decision, time.thread_time() - start


class Brains:
    """The expert's searches in ``workers`` processes; at most ``2·workers`` at once, FIFO.

    ``executor``: any :class:`concurrent.futures.Executor` instead of the process pool
    (tests). ``timeout``: seconds before a request is answered by the regular player.
    """

    def __init__(self, workers: int | None = None, timeout: float = DECIDE_TIMEOUT,
                 executor: Executor | None = None) -> None:
        self.workers = workers or max(1, min(2, (os.cpu_count() or 2) - 1))
        self.timeout = timeout
        self._executor = executor
        self._owned = executor is None
        self._slots: asyncio.Semaphore | None = None
        self.fallbacks = 0

    def _pool(self) -> Executor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._executor

    async def decide(self, view: dict[str, Any], memory: Memory, level: str, seed: int) -> Decision | None:
        """The decision of a computer at ``level`` for ``view``; the expert's search off the loop."""
        metrics.DECISIONS.labels(level).inc()
        if level != "expert" or not players.searches(view, level):
            return players.decide(view, None, level=level, seed=seed, memory=memory)
        if self._slots is None:
            self._slots = asyncio.Semaphore(2 * self.workers)
        loop = asyncio.get_running_loop()
        slots = self._slots
        try:
            async with asyncio.timeout(self.timeout):
                await slots.acquire()
                try:
                    fut = loop.run_in_executor(self._pool(), _expert_timed, view, memory, seed)
                except BaseException:
                    slots.release()
                    raise
                fut.add_done_callback(lambda _f: slots.release())  # the slot frees when the search ends
                decision, cpu = await asyncio.shield(fut)
                metrics.SEARCH_CPU.observe(cpu)
                return decision
        except TimeoutError:
            self.fallbacks += 1
            metrics.FALLBACKS.labels("timeout").inc()
            log.warning("expert decision for %s took over %.1f s: the regular player moves", view["seat"],
                        self.timeout)
        except Exception as exc:
            self.fallbacks += 1
            metrics.FALLBACKS.labels("error").inc()
            log.exception("expert decision for %s failed: the regular player moves", view["seat"])
            if isinstance(exc, BrokenExecutor) and self._owned:  # a worker died: a fresh pool next time
                self._executor = None
        return players.decide(view, None, level="regular", seed=seed, memory=memory)

    def warm(self) -> None:
        """Start the worker processes now (a worker calls this), so the first search is not slow."""
        for _ in range(self.workers):
            self._pool().submit(players.searches, {"seat": None}, DEFAULT_LEVEL)

    def close(self) -> None:
        """Stop the worker processes now: a search under way is dropped (its seat is the store's
        to move again), and the process exits without waiting for a worker still starting up
        (a spawned worker imports the engine first: seconds on a loaded machine, and the
        interpreter's exit joined it, delaying a drain past ``DRAIN_SECONDS``)."""
        if self._owned and self._executor is not None:
            processes = list((getattr(self._executor, "_processes", None) or {}).values())
            self._executor.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                with contextlib.suppress(Exception):
                    process.terminate()
            self._executor = None


def plan_decision(doc: dict[str, Any], state: Any, seat: dict[str, Any], memory: Memory) -> Decision | None:
    """What the computer in ``seat`` will want and after how long, without the expert's search."""
    sid = seat["seat"]
    return players.decide(engine.view(state, sid), None, level=seat_level(seat), seed=seat_seed(doc, sid),
                          memory=memory, search=False)
