"""Property tests over random Prší matches (P1–P14, S3): random seeds, 2–5 players, a mix of
random legal actions and the computer player's, with invariants checked after every action."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import prsi
from engine.cards import PRSI_PACK, SUITS
from engine.errors import Rejected
from engine.ratings import prsi_balances

PACK = Counter(PRSI_PACK)
MAX_ACTIONS = 20_000


def cards_in(value: Any) -> set[str]:
    """Every card string anywhere inside a JSON-like value."""
    if isinstance(value, str):
        return {value} if value in prsi.PACK else set()
    if isinstance(value, dict):
        return set().union(*(cards_in(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return set()


def check_state(s: prsi.PrsiState) -> None:
    # P1, P3, P9: the 32 cards are always all there, each once.
    assert Counter([c for h in s.hands for c in h] + list(s.stock) + list(s.discard)) == PACK
    assert s.discard and s.suit in SUITS and 1 <= s.round <= prsi.ROUNDS
    # P6, P7: a debt only on a 7, a skip only on an Ace, never both.
    assert s.pending_draw >= 0 and s.pending_draw % 2 == 0
    assert not (s.pending_draw and s.pending_skip)
    if s.pending_draw:
        assert s.top[0] == "7"
    if s.pending_skip:
        assert s.top[0] == "A"
    assert (s.to_move is None) == s.over
    assert len(s.last) <= prsi.LAST_EVENTS
    # dump/load: exact round trip through JSON.
    dumped = engine.dump(s)
    again = engine.load(json.loads(json.dumps(dumped)))
    assert again == s and engine.dump(again) == dumped
    # S3: views never show a hidden card (another hand, the stock order).
    public = {s.top} | {e["card"] for e in s.last if e["a"] == "play"}
    for seat in (*s.players, None):
        v = engine.view(s, seat)
        json.dumps(v)
        own = set(s.hand(seat)) if seat is not None else set()
        assert cards_in(v) <= own | public, seat
        assert v["hand"] == (sorted(own, key=prsi._display_key) if seat is not None else None)
        assert [p["cards"] for p in v["players"]] == [len(h) for h in s.hands]
        assert v["stock"] == len(s.stock) and v["discard"] == len(s.discard)


def check_legal(s: prsi.PrsiState) -> None:
    seat = s.to_move
    legal = engine.legal_actions(s, seat)
    assert legal, "the player to move always has an action"
    for other in s.players:
        if other != seat:
            assert engine.legal_actions(s, other) == [] and engine.computer_action(s, other) is None
    # Every listed action is accepted ...
    for a in legal:
        engine.apply(s, seat, a)
    # ... and every other play or turn action is refused as illegal.
    listed = {a["card"] for a in legal if a["a"] == "play"}
    for c in s.hand(seat):
        if c not in listed:
            try:
                engine.apply(s, seat, {"a": "play", "card": c, "suit": "h"})
            except Rejected as exc:
                assert exc.code == "illegal"
            else:
                raise AssertionError(f"{c} accepted but not listed")
    for kind in ("draw", "stand", "pass"):
        if {"a": kind} not in legal:
            try:
                engine.apply(s, seat, {"a": kind})
            except Rejected as exc:
                assert exc.code == "illegal"
            else:
                raise AssertionError(f"{kind} accepted but not listed")
    # The computer player only picks listed actions.
    assert engine.computer_action(s, seat) in legal


def check_over(s: prsi.PrsiState) -> None:
    # P13: places with ties, P14: balances summing to zero.
    assert s.over and s.round == prsi.ROUNDS and len(s.history) == prsi.ROUNDS
    assert set(s.places) == set(s.players) == set(s.balances)
    for p, place in s.places.items():
        assert place == 1 + sum(1 for q in s.players if s.points[q] < s.points[p])
    assert sum(s.balances.values()) == 0 and s.balances == prsi_balances(s.points)
    assert s.points == {p: sum(h["points"][p] for h in s.history) for p in s.players}
    for seat in s.players:
        assert engine.legal_actions(s, seat) == [] and engine.computer_action(s, seat) is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), count=st.integers(2, 5), computer=st.floats(0.5, 1.0))
def test_random_matches_keep_every_invariant(seed: int, count: int, computer: float) -> None:
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, dealer=rng.choice(players), seed=seed)
    steps = 0
    while not s.over and steps < MAX_ACTIONS:
        check_state(s)
        check_legal(s)
        seat = s.to_move
        chosen = (engine.computer_action(s, seat) if rng.random() < computer
                  else rng.choice(engine.legal_actions(s, seat)))
        before = engine.dump(s)
        t = engine.apply(s, seat, chosen).state
        assert engine.dump(s) == before, "apply changed its input"
        assert t.version == s.version + 1
        s = t
        steps += 1
    check_state(s)
    check_over(s)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(2, 5))
def test_random_play_only_matches_finish(seed: int, count: int) -> None:
    """Uniformly random legal actions (long matches, many turnovers) still end well."""
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, seed=seed)
    steps = 0
    while not s.over and steps < MAX_ACTIONS:
        s = engine.apply(s, s.to_move, rng.choice(engine.legal_actions(s, s.to_move))).state
        steps += 1
        if steps % 97 == 0:
            check_state(s)
    check_over(s)
