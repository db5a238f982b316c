"""Computer players against each other, timed like the service (pure, seeded).

:func:`play` deals a game and lets :func:`engine.players.decide` drive every seat
the way the store's worker does: after each commit every seat decides afresh from
its own view and the public log; a decision is due ``delay`` seconds after the
chance it answers (a seat that keeps wanting the same thing keeps its due time);
the soonest due decision is applied next. So callouts race moves as they do at a
live table: a forgotten «ОДНА КАРТА!» is caught only if someone notices before the
next play or take (R17, R18), a blunder only before the next player's first action
(R6). Time is simulated: nothing here reads a clock but for ``cpu`` statistics.

The referee sees the whole state (it is the table, not a player) and counts what
the players did: blunders (R5), owed declarations made or missed (R17), turns.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import engine
from engine import players as players_mod

MAX_STEPS = 20_000


@dataclass(slots=True)
class SeatStats:
    """One seat's counts over a game: ``turns`` (a run of its turn actions), ``blunders``
    (R5), ``debts`` owed / ``declared`` / ``missed`` (R17), ``calls`` made that were accepted,
    ``searches`` and their ``cpu`` seconds (expert), ``slowest`` search."""

    turns: int = 0
    blunders: int = 0
    debts: int = 0
    declared: int = 0
    missed: int = 0
    calls: int = 0
    searches: int = 0
    cpu: float = 0.0
    slowest: float = 0.0


@dataclass(slots=True)
class Result:
    """A finished game: ``balances`` (P14 / R19), ``places``, per seat :class:`SeatStats`."""

    game: str
    seed: int
    levels: dict[str, str]
    balances: dict[str, int]
    places: dict[str, int]
    stats: dict[str, SeatStats] = field(default_factory=dict)
    steps: int = 0
    rejected: int = 0
    cpu_samples: list[float] = field(default_factory=list)


def seat_seed_of(seed: int, seat: str) -> int:
    """A seat's own player seed for a game dealt from ``seed`` (stable across processes)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{seat}".encode(), digest_size=6).digest(), "big")


def _blunder(state: Any, seat: str, action: Mapping[str, Any]) -> bool:
    """R5, judged on the full state: the drawn card to the own pile while it or the own top fits."""
    if state.phase != 1 or action.get("a") != "place" or action.get("to") != seat or state.drawn is None:
        return False
    from engine import penki
    own = state.piles[seat]
    return penki._first_fit(state, seat, state.drawn) is not None or (
        bool(own) and penki._first_fit(state, seat, own[-1]) is not None)


def play(game: str, levels: Mapping[str, str | players_mod.Level], seed: int, *,
         budget: int | None = None, sample_cpu: bool = False) -> Result:
    """Play one game (a Prší match of 5 rounds, or a Penki game) among ``levels`` (seat → level).

    Seats sit in ``levels``' order, the last deals. ``seed`` deals the game and seeds each
    seat's player. ``budget`` (simulated actions) is passed to the expert's search. Returns a :class:`Result`.
    """
    seats = list(levels)
    state = engine.new_game(game, seats, seed=seed)
    log: list[dict[str, Any]] = [dict(e) for e in state.last]
    mems = {s: players_mod.Memory(game, s, seats) for s in seats}
    seat_seed = {s: seat_seed_of(seed, s) for s in seats}
    stats = {s: SeatStats() for s in seats}
    pending: dict[str, tuple[float, players_mod.Decision]] = {}
    now = 0.0
    last_turn_seat: str | None = None
    last_actor: str | None = None
    result = Result(game, seed, {s: (lv if isinstance(lv, str) else lv.name) for s, lv in levels.items()}, {}, {})
    for _step in range(MAX_STEPS):
        if state.over:
            break
        for s in seats:
            view = engine.view(state, s)
            t0 = time.process_time()
            d = players_mod.decide(view, log, level=levels[s], seed=seat_seed[s], memory=mems[s], budget=budget)
            if d is not None and d.searched:
                spent = time.process_time() - t0
                st = stats[s]
                st.searches += 1
                st.cpu += spent
                st.slowest = max(st.slowest, spent)
                if sample_cpu:
                    result.cpu_samples.append(spent)
            if d is None:
                pending.pop(s, None)
                continue
            prev = pending.get(s)
            if prev is not None and s != last_actor and prev[1].action == d.action and prev[1].kind == d.kind \
                    and prev[1].chance == d.chance:
                continue
            pending[s] = (now + d.delay, d)
        if not pending:
            break  # nobody can act: cannot happen in a legal game
        seat = min(pending, key=lambda s: (pending[s][0], seats.index(s)))
        due, d = pending.pop(seat)
        now = max(now, due)
        action = d.action
        before = state
        try:
            out = engine.apply(state, seat, action)
        except engine.Rejected:
            result.rejected += 1
            last_actor = seat
            continue
        state = out.state
        log.extend(out.events)
        last_actor = seat
        st = stats[seat]
        kind = action["a"]
        if kind not in players_mod.CALLOUTS and kind != "give":
            if seat != last_turn_seat:
                st.turns += 1
            last_turn_seat = seat
        if game == "penki":
            if _blunder(before, seat, action):
                st.blunders += 1
            if kind in ("zevok", "how_many"):
                st.calls += 1
            was, now_owes = set(before.owes), set(state.owes)
            for p in now_owes - was:
                stats[p].debts += 1
            for p in was - now_owes:
                if kind == "one_card" and p == seat:
                    stats[p].declared += 1
                else:
                    stats[p].missed += 1
    result.steps = _step
    result.stats = stats
    if state.over:
        result.balances = dict(state.balances)
        result.places = dict(state.places)
    return result
