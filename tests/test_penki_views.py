"""Hidden information in Penki views (S3; R2: stumps unseen by all, the owner included).

Over random games (2–6 players, legal play mixed with blunders, random callouts and
penalty hand-overs), every view of every seat and of a spectator, dumped to JSON,
holds no card but the viewer's own hand and the public ones (pile tops, the drawn
card, the table, the cards of the ``last`` events); it stays the same when every
card hidden from the viewer (stock, all stumps, the other hands) is dealt out
differently and when the blunder window and the owed declarations are cleared.
Every event that names a card names one that was face up: a drawn, moved, placed
or played card, a pile's top moved by a penalty, the table's bottom card taken;
a ``give`` never names its card.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import penki
from engine.cards import PENKI_PACK
from engine.errors import Rejected

PACK = frozenset(PENKI_PACK)
CARD = re.compile(r'"((?:10|[6-9JQKA])[hdcs])"')  # a whole JSON string that is a card
CARD_EVENTS = frozenset({"draw", "move", "place", "penalty_move", "play", "take"})
CALLS = ({"a": "zevok"}, {"a": "one_card"}, {"a": "how_many"})
MAX_STEPS = 400


def cards_in(value: Any) -> set[str]:
    """Every card string anywhere inside a JSON-ready value (keys included)."""
    return set(CARD.findall(json.dumps(value))) & PACK


def public_cards(s: penki.PenkiState) -> set[str]:
    """Cards face up for everyone: pile tops, the drawn card, the table, the last events' cards."""
    tops = {pile[-1] for pile in s.piles.values() if pile}
    return tops | ({s.drawn} if s.drawn else set()) | set(s.table) | cards_in(list(s.last))


def redealt(s: penki.PenkiState, seat: str | None, rng: random.Random) -> penki.PenkiState:
    """``s`` with every card hidden from ``seat`` shuffled among the hidden places, and
    neither a blunder window nor an owed declaration."""
    others = [p for p in s.players if p != seat]
    pool = [*s.stock, *(c for p in s.players for c in s.stumps[p]), *(c for p in others for c in s.hands[p])]
    rng.shuffle(pool)

    def take(n: int) -> tuple[str, ...]:
        nonlocal pool
        got, pool = tuple(pool[:n]), pool[n:]
        return got

    stumps = {p: take(len(s.stumps[p])) for p in s.players}
    hands = {p: (s.hands[p] if p == seat else take(len(s.hands[p]))) for p in s.players}
    stock = take(len(s.stock))
    assert not pool
    return replace(s, stock=stock, stumps=stumps, hands=hands, zevok=None, owes=())


def check_views(s: penki.PenkiState, rng: random.Random) -> None:
    for e in s.last:
        assert not cards_in(e) or e["a"] in CARD_EVENTS, e
    public = public_cards(s)
    for seat in (*s.players, None):
        v = json.loads(json.dumps(engine.view(s, seat)))
        own = set(s.hands[seat]) if seat is not None else set()
        assert cards_in(v) <= own | public, (seat, cards_in(v) - own - public)
    seat = rng.choice((*s.players, None))  # one viewer a step: views are the slow part
    assert engine.view(redealt(s, seat, rng), seat) == engine.view(s, seat), seat


def check_events(before: penki.PenkiState, after: penki.PenkiState, seat: str, action: dict[str, Any],
                 events: list[dict[str, Any]]) -> None:
    """Each card an event names was face up before the action or is face up after it."""
    for e in events:
        kind = e["a"]
        if kind == "draw":
            assert e["card"] == before.stock[0] == after.drawn
        elif kind == "move":
            assert e["card"] == before.piles[seat][-1]
        elif kind == "place":
            assert e["card"] == before.drawn and set(e) == {"a", "seat", "card", "to"}  # no blunder flag
        elif kind == "penalty_move":
            assert e["card"] == before.piles[e["from"]][-1]
        elif kind == "play":
            assert e["card"] == action["card"] and e["seat"] == seat
        elif kind == "take":
            assert e["card"] == before.table[0] and e["seat"] == seat
        else:
            assert not cards_in(e), e
        if kind == "give":
            assert set(e) == {"a", "seat", "to"}


def attempt(s: penki.PenkiState, seat: str, action: dict[str, Any]) -> penki.PenkiState:
    try:
        out = engine.apply(s, seat, action)
    except Rejected:
        return s
    check_events(s, out.state, seat, action, out.events)
    return out.state


def step(s: penki.PenkiState, rng: random.Random) -> penki.PenkiState:
    """A random callout by anyone now and then; else an awaited seat's legal action
    (blunders included) or the computer's choice for it (which may be a callout)."""
    if rng.random() < 0.1:
        return attempt(s, rng.choice(s.players), dict(rng.choice(CALLS)))
    seat = rng.choice(engine.awaiting(s))
    action = (engine.computer_action(s, seat) if rng.random() < 0.6 else None) or rng.choice(
        engine.legal_actions(s, seat))
    return attempt(s, seat, dict(action))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), count=st.integers(2, 6))
def test_r2_s3_views_never_show_a_hidden_card_over_random_games(seed: int, count: int) -> None:
    rng = random.Random(seed)
    players = [f"s{i}" for i in range(count)]
    s = engine.new_game("penki", players, dealer=rng.choice(players), seed=seed)
    seen = set()
    for _ in range(MAX_STEPS):
        check_views(s, rng)
        seen.update(e["a"] for e in s.last)
        if s.over:
            break
        s = step(s, rng)
    assert "draw" in seen and "place" in seen


def test_r2_a_view_does_not_change_when_hidden_cards_do() -> None:
    # The redeal really moves hidden cards, and a viewer's own hand is not among them.
    s = position_in_phase_two()
    other = redealt(s, "a", random.Random(2))
    assert other.hands["a"] == s.hands["a"] and other.hands["b"] != s.hands["b"]
    assert engine.view(other, "a") == engine.view(s, "a")
    assert engine.view(other, "b") != engine.view(s, "b")  # the check can fail


def position_in_phase_two() -> penki.PenkiState:
    """A seeded game played by the computer players up to the start of phase 2."""
    s = engine.new_game("penki", ["a", "b", "c"], seed=8)
    while s.phase == 1:
        seat = engine.awaiting(s)[0]
        s = engine.apply(s, seat, engine.computer_action(s, seat)).state
    assert not s.over and all(s.hands[p] for p in s.players)
    return s


def test_r18_a_give_names_no_card_and_a_take_names_the_bottom_card() -> None:
    s = position_in_phase_two()
    leader = s.to_move
    card = engine.computer_action(s, leader)["card"]
    s = engine.apply(s, leader, {"a": "play", "card": card}).state
    taker = s.to_move
    out = engine.apply(s, taker, {"a": "take"})
    assert out.events[0] == {"a": "take", "seat": taker, "card": card}  # the table was public
    for seat in s.players:
        assert card in cards_in(engine.view(out.state, seat)["last"])
    # A penalty hand-over: the give event and the views of third parties never name the card.
    hands = {"a": ("6h", "7h"), "b": ("8h", "9h"), "c": ("9c",)}
    t = replace(out.state, hands=hands, stumps={p: () for p in "abc"}, table=("6c",), turn="a",
                owes=("c",), declared=(), penalty_to=None, penalty_from=(), penalty_queue=(), last=())
    t = engine.apply(t, "a", {"a": "how_many"}).state
    out = engine.apply(t, "b", {"a": "give", "card": "8h"})
    assert out.events == [{"a": "give", "seat": "b", "to": "c"}]
    assert "8h" not in cards_in(engine.view(out.state, "a")) | cards_in(engine.view(out.state, None))
    assert "8h" in engine.view(out.state, "c")["hand"] and "8h" not in engine.view(out.state, "b")["hand"]
