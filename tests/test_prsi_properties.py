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
        # PV9.8: the house rules read fields of the variants (all off) as no fields.
        stray = {"cards": rng.choice([[], ["Ah"], "9h", None, [1]]), "rank": rng.choice(["A", "x", 7])}
        if "suit" not in chosen:
            stray["suit"] = rng.choice(["h", "x", None, 3])
        assert engine.dump(engine.apply(s, seat, {**chosen, **stray}).state) == engine.dump(t)
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


def _may_play(s: prsi.PrsiState, card: str) -> bool:
    """P5–P8 from scratch."""
    rank, top_rank = card[:-1], s.top[:-1]
    if s.pending_draw:
        return rank == "7"
    if s.pending_skip:
        return rank == "A"
    return rank == "Q" or card[-1] == s.suit or rank == top_rank


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), count=st.integers(2, 5))
def test_p5_to_p11_random_play_follows_the_definitions(seed: int, count: int) -> None:
    """An oracle written from RULES.md over uniformly random legal play: the legal plays
    are exactly the cards P5–P8 allow; draw/stand/pass exactly when P5–P7/P10 allow;
    a 7 adds 2 to the debt, an Ace stands the next player (P6, P7); a draw takes the
    whole debt or one card, card by card from the stock and then from the discard pile
    turned over oldest first, forgiving what is missing (P9, P10); the next seat moves."""
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, dealer=rng.choice(players), seed=seed)
    for _ in range(3000):
        if s.over:
            break
        seat = s.to_move
        i = s.players.index(seat)
        hand = s.hands[i]
        legal = engine.legal_actions(s, seat)
        assert {a["card"] for a in legal if a["a"] == "play"} == {c for c in hand if _may_play(s, c)}
        drawable = len(s.stock) + len(s.discard) - 1
        assert ({"a": "draw"} in legal) == (not s.pending_skip and (bool(s.pending_draw) or drawable > 0))
        assert ({"a": "stand"} in legal) == s.pending_skip
        assert ({"a": "pass"} in legal) == (not s.pending_skip and not s.pending_draw and drawable == 0
                                            and not any(_may_play(s, c) for c in hand))
        action = rng.choice(legal)
        t = engine.apply(s, seat, action).state
        if t.round == s.round and not t.over:  # else P11 ended the round (scoring is tested apart)
            _check_step(s, t, i, action)
        s = t


def _check_step(s: prsi.PrsiState, t: prsi.PrsiState, i: int, action: dict) -> None:
    """One accepted action inside a round, ``s`` before and ``t`` after (P5–P10)."""
    hand = s.hands[i]
    assert t.to_move == s.players[(i + 1) % len(s.players)]
    if action["a"] == "play":
        card = action["card"]
        assert t.top == card and t.suit == action.get("suit", card[-1])
        assert t.pending_draw == (s.pending_draw + 2 if card[0] == "7" else 0)
        assert t.pending_skip == (card[0] == "A")
    elif action["a"] == "draw":
        want = s.pending_draw or 1
        supply = [*s.stock, *s.discard[:-1]]  # P9: the pile turned over, oldest card first
        assert t.hands[i] == hand + tuple(supply[:want])  # P10: whatever is missing is forgiven
        if want < len(s.stock):
            assert t.stock == s.stock[want:] and t.discard == s.discard
        else:  # P9: the stock ran out: the rest of the turned-over pile is the stock
            assert t.stock == tuple(supply[want:]) and t.discard == (s.top,)
        assert t.top == s.top and t.suit == s.suit and t.pending_draw == 0 and not t.pending_skip
    else:  # stand, pass
        assert t.hands == s.hands and t.pending_draw == 0 and not t.pending_skip
