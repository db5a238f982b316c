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


WAIT_AFTER_CALL = 0.05  # s a computer's move comes after another computer's due call (the call goes first)


def plan_turns(doc: dict[str, Any], state: Any, actor: str | None, now: float, hold: float = 0.0,
               memory: Memory | None = None, computer_delay: float = 0.75) -> list[str]:
    """Fill ``doc["turns"]``, ``doc["callouts"]``, ``doc["callout_kinds"]``, ``doc["chances"]``
    and ``doc["deadline"]`` for ``state`` after a commit at ``now`` (epoch s); returns the
    people whose turn starts with it. Pure: no I/O, no clock (the store's ``_plan``).

    ``turns``: ``{seat: {since, due, driven, want, at}}`` for every awaited seat. A seat keeps
    its entry while it stays awaited without acting (and, computer-driven, wants the same
    thing); otherwise its turn starts now: due after ``turn_seconds`` for a person (``None``: no
    timer), after its level's reaction time for a computer-driven seat (a computer, or a person
    in auto; issue 14). ``callouts``: ``{seat: due}`` for computer-driven seats, not awaited,
    whose player wants to call or declare (Penki).

    The race model (issue 24, :data:`engine.players.CALL_FLOOR`): a call or a declaration is
    due its delay after its chance, the commit that opened it (``chances``: ``{log index: epoch
    s}``, kept while some seat still wants it), whether the seat is awaited or not, so a call
    never waits for the next move and never comes sooner than the floor after the chance. A
    computer-driven seat whose due action is a move waits out every call another computer has
    due (``at``: its own due time; ``due``: ``at`` or :data:`WAIT_AFTER_CALL` after the last such
    call): a computer to move never closes a chance (R6, R18) before a call would come.

    ``hold``: seconds every turn and callout starts later (a round just ended); no turn is kept.
    ``memory``: the table's public memory after this commit (:func:`remember`; built here when
    ``None`` and a seat needs it). ``computer_delay``: seconds for a driven seat with nothing
    to do. ``deadline``: the earliest person's due time (the turn timer in the Mini App).
    """
    prev_turns: dict[str, Any] = doc.get("turns") or {}
    prev_callouts: dict[str, float] = doc.get("callouts") or {}
    prev_kinds: dict[str, str] = doc.get("callout_kinds") or {}
    prev_chances: dict[str, float] = doc.get("chances") or {}
    seats = {s["seat"]: s for s in doc["seats"]}
    turn_seconds = doc["settings"].get("turn_seconds")
    turns: dict[str, Any] = {}
    callouts: dict[str, float] = {}
    kinds: dict[str, str] = {}
    chances: dict[str, float] = {}
    calls: list[tuple[str, float]] = []  # (seat, due) of computers' calls on someone
    new_turns: list[str] = []

    def chance_due(decision: Decision) -> float:
        key = str(decision.chance)
        at = chances.setdefault(key, prev_chances.get(key, now))
        return now + hold + decision.delay if hold else at + decision.delay

    if not state.over:
        mem = memory  # built only when a computer-driven seat needs it (a table of people: never)
        for sid in engine.awaiting(state):
            seat = seats[sid]
            driven = bool(seat["computer"] or seat["auto"])
            if driven and mem is None:
                mem = table_memory(doc, state)
            wanted = plan_decision(doc, state, seat, mem) if driven else None
            want = want_key(wanted)
            prev = prev_turns.get(sid)
            if wanted is not None and wanted.kind != "move":  # a call or declaration: from its chance
                due = chance_due(wanted)
                turns[sid] = {"since": prev["since"] if prev is not None and sid != actor and not hold
                              else now + hold, "due": due, "driven": True, "want": want, "at": due}
                if wanted.kind == "call":
                    calls.append((sid, due))
                continue
            if prev is not None and sid != actor and prev["driven"] == driven and not hold \
                    and prev.get("want") == want:
                turns[sid] = dict(prev, due=prev.get("at", prev["due"]))
                continue
            start = now + hold
            if driven:
                due = start + (wanted.delay if wanted is not None else computer_delay)
            else:
                due = start + turn_seconds if turn_seconds else None
                if prev is None or sid == actor or hold:
                    new_turns.append(sid)
            turns[sid] = {"since": start, "due": due, "driven": driven, "want": want, "at": due}
        for sid, seat in seats.items():
            if sid in turns or not (seat["computer"] or seat["auto"]):
                continue
            if mem is None:
                mem = table_memory(doc, state)
            wanted = plan_decision(doc, state, seat, mem)
            if wanted is not None:
                key = want_key(wanted)
                if wanted.kind == "move":  # not awaited: nothing it may do now but call or declare
                    kept = prev_callouts.get(sid) if prev_kinds.get(sid) == key else None
                    due = kept or now + hold + wanted.delay
                else:
                    due = chance_due(wanted)
                callouts[sid] = due
                kinds[sid] = key
                if wanted.kind == "call":
                    calls.append((sid, due))
        for sid, turn in turns.items():  # a computer to move lets every due call come first
            if turn["driven"] and turn["due"] is not None and not (turn["want"] or "").startswith(CALL_WANTS):
                waits = [due for other, due in calls if other != sid]
                if waits:
                    turn["due"] = max(turn["at"], max(waits) + WAIT_AFTER_CALL)
    doc["turns"] = turns
    doc["callouts"] = callouts
    doc["callout_kinds"] = kinds
    doc["chances"] = chances
    people = [t["due"] for t in turns.values() if not t["driven"] and t["due"] is not None]
    doc["deadline"] = min(people) if people else None
    return new_turns


CALL_WANTS = ("zevok:", "how_many:", "one_card:")


def want_key(decision: Decision | None) -> str | None:
    """What a computer wants, as a key: the action and the public chance it answers."""
    if decision is None:
        return None
    action = decision.action
    return f"{action['a']}:{action.get('card') or action.get('to') or ''}:{decision.chance}"


def plan_decision(doc: dict[str, Any], state: Any, seat: dict[str, Any], memory: Memory) -> Decision | None:
    """What the computer in ``seat`` will want and after how long, without the expert's search."""
    sid = seat["seat"]
    return players.decide(engine.view(state, sid), None, level=seat_level(seat), seed=seat_seed(doc, sid),
                          memory=memory, search=False)
