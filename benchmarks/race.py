"""Penki's callout race against computers (issue 24): ``python -m benchmarks --only race``.

A simulated person plays Penki (R1–R18) at a table of computers of one level, in
simulated time, through the very planning the store uses (:func:`store.computers.plan_turns`:
when each computer moves, declares or calls) and the engine; no Redis, no clock, every
draw from seeded RNGs, so a run is reproducible and CPU-bound.

The person (:class:`Person`) reacts with a log-normal reaction time (median ``median``
seconds, ``sigma`` in log space, never under :data:`HUMAN_FASTEST`) to what their seat
sees, plus ``latency`` seconds of network (the commit reaches the screen, the tap
reaches the server):

* owes «ОДНА КАРТА!» (R17): declares one reaction time after the action that made the
  debt (a person taps while laying the card);
* sees a computer owing one (the public card count, R18) or a computer's open «ЗЕВОК!»
  window (R6): asks / calls one reaction time after the chance, every time, also after
  going out (R18 lets them): the person of issue 24 who asks at every chance;
* moves after a thinking time (median 1.5 s) with the regular player's choices and, in
  phase 1, a blunder at ``blunder`` per chance (R5), so that computers have something to call.

Reported per level and person: the person's catch rate of the computers' owed
declarations, the computers' catch rate of the person's owed declarations and of the
person's blunders, and the game length in actions (the endless-game check: the share of
games within three times the median, and the longest run of «СКОЛЬКО КАРТ?» catches with
no play or take between them, a give-and-take cycle).

The expert plays here with its search off (its moves are the regular player's; its race,
declarations and notice rate are its own): the race does not depend on the search, which
would cost ~20 ms of CPU per decision over thousands of games.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import engine
from engine.errors import Rejected
from engine.players import LEVELS, Level, Memory, decide
from store.computers import plan_turns, seat_seed

HUMAN_FASTEST = 0.15  # s: no person reacts faster to what the screen shows
MOVE_THINK = (1.5, 0.4)  # a person's time to choose a move: median s, sigma
GAMES = 2000  # per level and person, by default
MAX_ACTIONS = 6000
RETRY_LATER = 5.0  # s: store.common.RETRY_LATER  # a game still going after this many actions counts as endless


@dataclass(frozen=True)
class Person:
    """A simulated person: reaction time ``median`` s (log-normal, ``sigma``), blunder rate."""

    name: str
    median: float
    sigma: float
    blunder: float = 0.1

    def react(self, rng: random.Random) -> float:
        return max(HUMAN_FASTEST, self.median * math.exp(self.sigma * rng.gauss(0.0, 1.0)))


PEOPLE = {"practised": Person("practised", 0.45, 0.3), "casual": Person("casual", 0.9, 0.35)}


@dataclass
class Tally:
    """Counts of one level against one person over many games."""

    games: int = 0
    computer_debts: int = 0  # «ОДНА КАРТА!» owed by a computer
    computer_caught_by_person: int = 0
    computer_caught_by_computer: int = 0
    computer_declared: int = 0
    person_debts: int = 0
    person_caught: int = 0
    person_declared: int = 0
    person_blunders: int = 0  # «ЗЕВОК!» windows the person opened
    person_blunders_called: int = 0
    computer_blunders: int = 0
    computer_blunders_called_by_person: int = 0
    lengths: list[int] = field(default_factory=list)
    cycles: list[int] = field(default_factory=list)  # per game: the longest run of catches
    endless: int = 0
    cpu: float = 0.0

    def merge(self, other: Tally) -> None:
        for k, v in vars(other).items():
            if isinstance(v, list):
                getattr(self, k).extend(v)
            else:
                setattr(self, k, getattr(self, k) + v)

    def summary(self) -> dict[str, Any]:
        def rate(a: int, b: int) -> float | None:
            return round(a / b, 4) if b else None

        median = statistics.median(self.lengths) if self.lengths else 0
        within = sum(1 for n in self.lengths if n <= 3 * median)
        cycles = sorted(self.cycles)
        return {
            "games": self.games,
            "computer_debts": self.computer_debts,
            "person_catches_computer": rate(self.computer_caught_by_person, self.computer_debts),
            "computer_declared": rate(self.computer_declared, self.computer_debts),
            "person_debts": self.person_debts,
            "computers_catch_person": rate(self.person_caught, self.person_debts),
            "person_blunders": self.person_blunders,
            "computers_call_person_blunder": rate(self.person_blunders_called, self.person_blunders),
            "computer_blunders": self.computer_blunders,
            "person_calls_computer_blunder": rate(self.computer_blunders_called_by_person, self.computer_blunders),
            "median_actions": median,
            "within_3x_median": rate(within, len(self.lengths)),
            "endless": self.endless,
            "longest_cycle": cycles[-1] if cycles else 0,
            "cycle_p99": cycles[int(0.99 * (len(cycles) - 1))] if cycles else 0,
            "cpu_ms_per_game": round(1000 * self.cpu / max(1, self.games), 2),
        }


def _person_level(person: Person) -> Level:
    """The person's choice of move: the regular player's, with the person's blunder rate and no callouts
    (the simulation times those itself)."""
    return replace(LEVELS["regular"], name="person", slip=0.0, blunder=person.blunder, forget=1.0, notice=0.0)


def play_game(level: str, person: Person, seed: int, players: int = 3, latency: float = 0.05,
              search: bool = False) -> Tally:
    """One game of Penki: the person in seat ``p``, computers of ``level`` in the others."""
    cpu0 = time.process_time()
    seats = ["p", *(f"c{k}" for k in range(1, players))]
    doc: dict[str, Any] = {
        "id": f"race-{level}-{person.name}-{seed}", "seed": seed, "settings": {"turn_seconds": None},
        "seats": [{"seat": s, "computer": s != "p", "auto": False, "level": level} for s in seats],
    }
    rng = random.Random(f"race:{seed}")
    state = engine.new_game("penki", seats, dealer=seats[seed % players], seed=seed)
    mem = Memory("penki", "", seats).feed(list(state.last))
    plan_turns(doc, state, None, 0.0, memory=mem)
    me_level = _person_level(person)
    lv = LEVELS[level]
    t = 0.0
    tally = Tally(games=1)
    person_move: float | None = None  # when the person's move comes (chosen then, from their view)
    intents: dict[tuple[str, int], float] = {}  # the person's callouts: (action, chance) -> when
    debts: dict[str, int] = {}  # seat -> the chance (log index) of its open debt
    window: tuple[str, int] | None = None
    run = longest = 0
    if "p" in engine.awaiting(state):
        person_move = t + max(0.4, MOVE_THINK[0] * math.exp(MOVE_THINK[1] * rng.gauss(0, 1)))
    actions = 0
    while not state.over and actions < MAX_ACTIONS:
        # what comes next: a computer's due move, call or declaration, or one of the person's
        dues = [(t_due, sid) for sid, turn in doc["turns"].items() if turn["driven"] and (t_due := turn["due"])]
        dues += [(t_due, sid) for sid, t_due in doc["callouts"].items()]
        options = [(at, 0, sid, None) for at, sid in dues]
        options += [(at, 1, "p", key) for key, at in intents.items()]
        if person_move is not None:
            options.append((person_move, 2, "p", None))
        if not options:
            break
        at, kind, seat, key = min(options)
        t = max(t, at)
        if kind == 0:  # the store's worker: the seat decides afresh when its time comes
            d = decide(engine.view(state, seat), None, level=lv if search else replace(lv, iterations=0,
                       penki_iterations=0), seed=seat_seed(doc, seat), memory=mem)
            action = d.action if d is not None else None
        elif kind == 1:
            intents.pop(key)
            action = {"a": key[0]}
        else:
            person_move = None
            d = decide(engine.view(state, "p"), None, level=me_level, seed=seed, memory=mem)
            action = d.action if d is not None and d.kind == "move" else None
        outcome = None
        if action is not None:
            try:
                outcome = engine.apply(state, seat, action)
            except Rejected:
                outcome = None
        if outcome is None:
            if kind == 0:  # nothing to do after all: the worker looks again later (store RETRY_LATER)
                if seat in doc["turns"]:
                    doc["turns"][seat]["due"] = t + RETRY_LATER
                if seat in doc["callouts"]:
                    doc["callouts"][seat] = t + RETRY_LATER
            continue
        actions += 1
        state = outcome.state
        mem.feed(outcome.events)
        for e in outcome.events:
            a = e.get("a")
            if a == "one_card" and e["seat"] in debts:
                tally.computer_declared += e["seat"] != "p"
                tally.person_declared += e["seat"] == "p"
                debts.pop(e["seat"])
            elif a == "how_many":
                for caught in e.get("caught") or ():
                    debts.pop(caught, None)
                    if caught == "p":
                        tally.person_caught += 1
                    elif e["seat"] == "p":
                        tally.computer_caught_by_person += 1
                    else:
                        tally.computer_caught_by_computer += 1
                run += 1
                longest = max(longest, run)
            elif a in ("play", "take"):
                run = 0
            elif a == "zevok" and window is not None:
                if window[0] == "p":
                    tally.person_blunders_called += 1
                elif e["seat"] == "p":
                    tally.computer_blunders_called_by_person += 1
                window = None
        # a window opened (R6): whose, and the person's call on a computer's
        if mem.window is not None and (window is None or window[1] != mem.window[1]):
            window = tuple(mem.window)
            if window[0] == "p":
                tally.person_blunders += 1
            else:
                tally.computer_blunders += 1
                intents[("zevok", window[1])] = t + person.react(rng) + latency
        if mem.window is None:
            window = None
            intents = {k: v for k, v in intents.items() if k[0] != "zevok"}
        # debts (R17): new ones counted; the person declares theirs, asks at a computer's
        for sid in state.owes:
            chance = mem.candidates.get(sid, -1)
            if debts.get(sid) == chance:
                continue
            debts[sid] = chance
            if sid == "p":
                tally.person_debts += 1
                intents[("one_card", chance)] = t + person.react(rng) + latency
            else:
                tally.computer_debts += 1
                intents[("how_many", chance)] = t + person.react(rng) + latency
        for sid in [s for s in debts if s not in state.owes]:
            debts.pop(sid)  # lapsed (R17) or settled above
        plan_turns(doc, state, seat, t, memory=mem)
        if "p" in engine.awaiting(state):
            if person_move is None or seat == "p":
                person_move = t + max(0.4, MOVE_THINK[0] * math.exp(MOVE_THINK[1] * rng.gauss(0, 1)))
        else:
            person_move = None
    tally.lengths.append(actions)
    tally.cycles.append(longest)
    tally.endless += not state.over
    tally.cpu = time.process_time() - cpu0
    return tally


def _chunk(level: str, person: str, seeds: range) -> Tally:
    total = Tally()
    for k in seeds:
        total.merge(play_game(level, PEOPLE[person], k))
    return total


def measure(games: int = GAMES, levels: tuple[str, ...] = ("beginner", "regular", "expert"),
            people: tuple[str, ...] = ("practised", "casual"), seed: int = 0, jobs: int | None = None) -> dict[str, Any]:
    """``games`` games per level and person (the same deals for every pairing: seeds ``seed`` …
    ``seed + games - 1``) over ``jobs`` processes → ``{level: {person: Tally.summary()}}``,
    ``targets`` (:func:`targets`) and the CPU seconds spent."""
    jobs = jobs or min(2, os.cpu_count() or 1)
    out: dict[str, Any] = {"games": games, "people": {k: vars(PEOPLE[k]) for k in people}}
    cpu0 = time.process_time()
    step = max(1, -(-games // (4 * jobs)))
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {(level, name): [pool.submit(_chunk, level, name, range(k, min(seed + games, k + step)))
                                   for k in range(seed, seed + games, step)]
                   for level in levels for name in people}
        for level in levels:
            out[level] = {}
            for name in people:
                total = Tally()
                for fut in futures[level, name]:
                    total.merge(fut.result())
                out[level][name] = total.summary()
    out["cpu_s_here"] = round(time.process_time() - cpu0, 2)
    out["targets"] = targets(out)
    return out


def rows(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``python -m benchmarks``' rows: a row per level and person, then the targets."""
    found: list[tuple[str, str, str]] = []
    for level in ("beginner", "regular", "expert"):
        for name, f in (out.get(level) or {}).items():
            found.append(("race", f"{level} vs {name} person ({f['games']} games)",
                          f"person catches {f['person_catches_computer']}, computers catch "
                          f"{f['computers_catch_person']}, blunders called {f['computers_call_person_blunder']}, "
                          f"within 3× median {f['within_3x_median']}, longest catch run {f['longest_cycle']}, "
                          f"{f['cpu_ms_per_game']} ms CPU/game"))
    for k, ok in (out.get("targets") or {}).items():
        found.append(("race", f"target {k}", "meets" if ok else "MISSES"))
    return found


TARGETS = {  # issue 24, against the practised person
    "beginner": ("person_catches_computer", 0.50, 1.0, "computers_call_person_blunder", 0.10, 0.30),
    "regular": ("person_catches_computer", 0.15, 0.35, "computers_call_person_blunder", 0.50, 0.70),
    "expert": ("person_catches_computer", 0.0, 0.10, "computers_call_person_blunder", 0.90, 1.0),
}


def targets(out: dict[str, Any]) -> dict[str, bool]:
    """Each level's targets of issue 24 (read off the practised person's figures) → met or not.
    "About 20 %" and "about 60 %" are read as ±10 points."""
    met: dict[str, bool] = {}
    for level, (k1, lo1, hi1, k2, lo2, hi2) in TARGETS.items():
        fig = (out.get(level) or {}).get("practised")
        if fig is None:
            continue
        met[f"{level}: caught {lo1:.0%}–{hi1:.0%}"] = fig[k1] is not None and lo1 <= fig[k1] <= hi1
        met[f"{level}: blunders called {lo2:.0%}–{hi2:.0%}"] = fig[k2] is not None and lo2 <= fig[k2] <= hi2
        met[f"{level}: 99.9% within 3× median, no endless game"] = (
            fig["within_3x_median"] is not None and fig["within_3x_median"] >= 0.999 and fig["endless"] == 0)
    return met


def table(out: dict[str, Any]) -> str:
    """The README's table: a row per level and person."""
    rows = ["| level | person | person catches computer's «ОДНА КАРТА!» | computers catch person's | "
            "person's blunders called | games within 3× median | longest catch run |",
            "|---|---|---|---|---|---|---|"]

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}%"

    for level in ("beginner", "regular", "expert"):
        for name, fig in (out.get(level) or {}).items():
            rows.append(f"| {level} | {name} | {pct(fig['person_catches_computer'])} of {fig['computer_debts']} | "
                        f"{pct(fig['computers_catch_person'])} of {fig['person_debts']} | "
                        f"{pct(fig['computers_call_person_blunder'])} of {fig['person_blunders']} | "
                        f"{pct(fig['within_3x_median'])} | {fig['longest_cycle']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=GAMES)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--levels", nargs="+", default=["beginner", "regular", "expert"])
    parser.add_argument("--people", nargs="+", default=["practised", "casual"])
    args = parser.parse_args(argv)
    out = measure(args.games, tuple(args.levels), tuple(args.people), jobs=args.jobs)
    print(table(out))
    for k, ok in out["targets"].items():
        print(f"target {k}: {'meets' if ok else 'MISSES'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
