"""Penki properties over random games (hypothesis): 2–6 players, random legal play
mixed with random callouts, deliberate blunders and junk actions.

After every step: the 36 cards are all accounted for, no view shows a stump or a
stock card (or the blunder window and owed declarations), places and balances are
well formed, the JSON round trip is exact, a rejected action changes nothing and an
accepted one bumps the version by one without touching its input.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine import penki
from engine.__main__ import play_out
from engine.cards import PENKI_PACK
from engine.errors import REASONS, Rejected

CALLS = ({"a": "zevok"}, {"a": "one_card"}, {"a": "how_many"})
JUNK = (
    "not a dict", {"a": "bogus"}, {"a": "stand"}, {"a": "pass"}, {"a": "play"}, {"a": "play", "card": "1x"},
    {"a": "play", "card": 7}, {"a": "give"}, {"a": "move"}, {"a": "move", "to": "nobody"},
    {"a": "place", "to": None}, {},
)
SEATS = st.integers(min_value=2, max_value=6)
SEEDS = st.integers(min_value=0, max_value=2**31)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def check(s: penki.PenkiState, deep: bool = True) -> None:
    """Every invariant of a reachable state (``deep``: also views and the JSON round trip)."""
    players = s.players
    n = len(players)
    # 36 cards accounted for, each once
    cards = [*s.stock, *s.table, *([s.drawn] if s.drawn else [])]
    for p in players:
        cards += [*s.piles[p], *s.stumps[p], *s.hands[p]]
    assert len(cards) == len(set(cards)) and set(cards) <= set(PENKI_PACK)
    assert len(cards) + s.discarded == 36
    # phases
    if s.phase == 1:
        assert all(not s.hands[p] for p in players) and not s.table and s.discarded == 0
    else:
        assert not s.stock and s.drawn is None and s.zevok is None
        assert all(not s.piles[p] for p in players)
    assert s.zevok is None or s.zevok in players
    # places and balances
    for place in s.places.values():
        assert place == 1 + sum(q < place for q in s.places.values())
    if s.over:
        assert set(s.places) == set(players) and s.to_move is None and engine.awaiting(s) == []
        assert s.balances is not None and sum(s.balances.values()) == 0
        assert s.balances == penki._balances(players, s.places)
        assert not s.owes and s.penalty is None and not s.penalty_queue
    else:
        assert s.balances is None and len(s.places) <= n - 2
        assert engine.awaiting(s)
        assert (s.to_move is None) == (s.penalty is not None)
    assert set(s.owes) <= set(players) and all(len(s.hands[p]) == 1 for p in s.owes)
    if not deep:
        return
    # views: no stump or stock card, no window, no debts; identical whether or not they exist
    hidden = {c for p in players for c in s.stumps[p]} | set(s.stock)
    quiet = dataclasses.replace(s, zevok=None, owes=())
    for seat in (*players, None):
        v = engine.view(s, seat)
        json.dumps(v)
        assert not hidden & set(_strings(v)), (hidden & set(_strings(v)))
        assert "zevok" not in v and "owes_declaration" not in v and "owes" not in v
        assert v == engine.view(quiet, seat)
        assert isinstance(v["stock"], int) and all(isinstance(p["stumps"], int) for p in v["players"])
        assert len(v["last"]) <= 20
    # the JSON round trip is exact
    data = json.loads(json.dumps(penki.dump(s)))
    back = engine.load(data)
    assert back == s and penki.dump(back) == data


def attempt(s: penki.PenkiState, seat: Any, action: Any) -> tuple[penki.PenkiState, str]:
    """Apply, checking that the input is never changed and that versions count accepted actions."""
    before = penki.dump(s)
    try:
        out = engine.apply(s, seat, action)
    except Rejected as rej:
        assert rej.code in REASONS
        assert penki.dump(s) == before
        return s, rej.code
    assert penki.dump(s) == before
    assert out.state.version == s.version + 1
    json.dumps(out.events)
    for e in out.events:
        assert "blunder" not in e
        if e["a"] == "give":
            assert set(e) == {"a", "seat", "to"}
    return out.state, "ok"


def candidates(s: penki.PenkiState, seat: str) -> list[dict[str, Any]]:
    """Every action of the kinds legal_actions lists that ``seat`` could try."""
    out: list[dict[str, Any]] = [{"a": "draw"}, {"a": "take"}]
    for p in s.players:
        out += [{"a": "move", "to": p}, {"a": "place", "to": p}]
    for c in s.hands[seat]:
        out += [{"a": "play", "card": c}, {"a": "give", "card": c}]
    return out


def step(s: penki.PenkiState, rng: random.Random, *, calls: bool = True) -> tuple[penki.PenkiState, str]:
    """One random step: mostly a legal action of an awaited seat (blunders included)."""
    r = rng.random()
    if calls and r < 0.12:
        return attempt(s, rng.choice(s.players), rng.choice(CALLS))
    if r < 0.16:
        return attempt(s, rng.choice([*s.players, "stranger"]), rng.choice(JUNK))
    if r < 0.22:
        seat = rng.choice(s.players)
        return attempt(s, seat, rng.choice(candidates(s, seat)))
    seat = rng.choice(engine.awaiting(s))
    legal = engine.legal_actions(s, seat)
    assert legal, (seat, penki.dump(s))
    action = rng.choice(legal)
    if rng.random() < 0.5:  # the computer's choice half the time, so that games make progress
        action = engine.computer_action(s, seat) or action
    if action["a"] in ("zevok", "one_card", "how_many"):
        return attempt(s, seat, action)
    s2, result = attempt(s, seat, action)
    assert result == "ok", (seat, action, result)
    return s2, result


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=SEATS, driver=SEEDS)
def test_random_games_keep_every_invariant(seed, n, driver):
    rng = random.Random(driver)
    s = engine.new_game("penki", [f"s{i}" for i in range(n)], dealer=f"s{rng.randrange(n)}", seed=seed)
    check(s)
    for i in range(400):
        if s.over:
            break
        s, _result = step(s, rng)
        check(s, deep=i % 5 == 0)
    check(s)
    if s.over:
        for seat in s.players:
            assert attempt(s, seat, {"a": "take"})[1] == "game_over"
            assert attempt(s, seat, {"a": "bogus"})[1] == "bad_action"


@settings(max_examples=12, deadline=None)
@given(seed=SEEDS, n=SEATS, driver=SEEDS)
def test_legal_means_in_the_generated_list(seed, n, driver):
    """A turn action or give is accepted exactly when legal_actions lists it."""
    rng = random.Random(driver)
    s = engine.new_game("penki", [f"s{i}" for i in range(n)], seed=seed)
    for _ in range(200):
        if s.over:
            break
        seat = rng.choice(s.players)
        legal = engine.legal_actions(s, seat)
        for action in candidates(s, seat):
            _, result = attempt(s, seat, action)
            assert (result == "ok") == (action in legal), (seat, action, result, legal)
        s, _ = step(s, rng)


def _advance_until(s: penki.PenkiState, rng: random.Random, cond, limit: int = 600):
    for _ in range(limit):
        if s.over:
            return None
        if cond(s):
            return s
        s, _ = step(s, rng, calls=False)
    return None


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=st.integers(min_value=3, max_value=6), driver=SEEDS)
def test_racing_zevok_calls_give_exactly_one_penalty(seed, n, driver):
    rng = random.Random(driver)
    s = _advance_until(engine.new_game("penki", [f"s{i}" for i in range(n)], seed=seed), rng,
                       lambda s: s.zevok is not None)
    if s is None:
        return
    x, y = rng.sample([p for p in s.players if p != s.zevok], 2)
    results = []
    for first, second in ((x, y), (y, x)):
        s1, r1 = attempt(s, first, {"a": "zevok"})
        s2, r2 = attempt(s1, second, {"a": "zevok"})
        assert (r1, r2) == ("ok", "illegal") and s2 is s1
        results.append(engine.observer(s2))
        z = s.zevok  # the call may end phase 1 (R8): count pile or hand, less stumps taken
        held = len(s1.piles[z]) + len(s1.hands[z]) - (len(s.stumps[z]) - len(s1.stumps[z]))
        gained = held - len(s.piles[z])
        assert gained == sum(1 for p in s.players if p != s.zevok and s.piles[p])
    assert results[0] == results[1]


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=st.integers(min_value=3, max_value=6), driver=SEEDS)
def test_racing_asks_and_declarations_first_wins(seed, n, driver):
    rng = random.Random(driver)
    s = _advance_until(engine.new_game("penki", [f"s{i}" for i in range(n)], seed=seed), rng,
                       lambda s: bool(s.owes) and len(set(s.players) - set(s.owes)) >= 2, limit=1500)
    if s is None:
        return
    debtor = s.owes[0]
    x, y = rng.sample([p for p in s.players if p not in s.owes], 2)
    for first, second in ((x, y), (y, x)):
        s1, r1 = attempt(s, first, {"a": "how_many"})
        s2, r2 = attempt(s1, second, {"a": "how_many"})
        assert (r1, r2) == ("ok", "illegal") and s2 is s1
        punished = [*([s1.penalty_to] if s1.penalty_to else []), *s1.penalty_queue]
        before = [*([s.penalty_to] if s.penalty_to else []), *s.penalty_queue]
        assert sorted(punished) == sorted([*before, *s.owes])  # each debtor once
    declared, r1 = attempt(s, debtor, {"a": "one_card"})
    assert r1 == "ok"
    if len(s.owes) == 1:
        assert attempt(declared, x, {"a": "how_many"})[1] == "illegal"
    asked, r1 = attempt(s, x, {"a": "how_many"})
    assert r1 == "ok" and attempt(asked, debtor, {"a": "one_card"})[1] == "illegal"


@settings(max_examples=10, deadline=None)
@given(seed=SEEDS, n=SEATS)
def test_computer_players_finish_and_never_blunder(seed, n):
    players = [f"s{i}" for i in range(n)]
    s = engine.new_game("penki", players, seed=seed)
    for _ in range(5000):
        if s.over:
            break
        seat = engine.awaiting(s)[0]
        action = engine.computer_action(s, seat)
        assert action == engine.computer_action(s, seat)  # deterministic
        s, result = attempt(s, seat, action)
        assert result == "ok"
        assert s.zevok is None  # a computer never blunders
        debtors = s.owes
        for d in debtors:  # it declares at once
            assert engine.computer_action(s, d) == {"a": "one_card"}
            s, _ = attempt(s, d, {"a": "one_card"})
    assert s.over


def test_play_out_finishes_for_every_table_size():
    for n in range(2, 7):
        s, actions = play_out("penki", [f"p{i}" for i in range(n)], seed=n)
        assert s.over and actions > 0
        check(s)


ORDER = ["6", "7", "8", "9", "10", "J", "Q", "K", "A"]


def _fits(card: str, top: str | None) -> bool:
    """R3 from scratch: one rank above the top (6 on A); nothing fits an empty pile."""
    return top is not None and ORDER.index(card[:-1]) == (ORDER.index(top[:-1]) + 1) % 9


def _fits_an_opponent(piles: dict[str, tuple[str, ...]], seat: str, card: str) -> bool:
    return any(_fits(card, p[-1] if p else None) for o, p in piles.items() if o != seat)


def _next_in(s: penki.PenkiState, seat: str) -> str:
    i = s.players.index(seat)
    return next(p for p in (*s.players[i + 1:], *s.players[:i + 1]) if p not in s.places)


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, n=SEATS, driver=SEEDS)
def test_r5_r6_r13_r17_random_play_follows_the_definitions(seed, n, driver):
    """An oracle written from RULES.md, checked on every accepted action of random play
    (uniform legal actions, so blunders are frequent, and random «ЗЕВОК!» calls):
    R5 a place on the own pile is a blunder exactly when the card or the old top fits an
    opponent; R6 the window is the blunderer's, survives its own further actions and
    closes at anyone else's first action or the end of phase 1; R4 the turn passes only
    after a place on the own pile that fits nothing; R13 Бита at as many cards as players
    in, the beater (or the next in) leads; R17 a play leaving one card owes, only a debtor
    declares; R18 an ask is valid when someone else owes, catches them nearest first and
    queues them after those waiting, a give moves the card to the punished player."""
    rng = random.Random(driver)
    s = engine.new_game("penki", [f"s{i}" for i in range(n)], dealer=f"s{rng.randrange(n)}", seed=seed)
    for _ in range(700):
        if s.over:
            break
        if s.phase == 1 and rng.random() < 0.15:
            caller = rng.choice(s.players)
            t, result = attempt(s, caller, {"a": "zevok"})
            assert (result == "ok") == (s.zevok is not None and caller != s.zevok)
            if result == "ok" and t.phase == 1:
                z = s.zevok
                assert len(t.piles[z]) == len(s.piles[z]) + sum(1 for p in s.players if p != z and s.piles[p])
                assert t.zevok is None and t.turn == s.turn and t.drawn == s.drawn
            s = t
            continue
        if s.phase == 2 and rng.random() < 0.2:  # R17, R18: calls by anyone at any moment
            caller, call = rng.choice(s.players), rng.choice(("one_card", "how_many"))
            t, result = attempt(s, caller, {"a": call})
            i = s.players.index(caller)
            caught = [p for p in (*s.players[i + 1:], *s.players[:i]) if p in s.owes]
            if call == "one_card":
                assert (result == "ok") == (caller in s.owes)
            else:
                assert (result == "ok") == bool(caught)
                if result == "ok":  # every debtor but the asker, nearest to the asker first
                    assert [e for e in t.last if e["a"] == "how_many"][-1]["caught"] == caught
                    assert not set(caught) & set(t.owes)
                    if s.penalty_to is not None:  # queued after those already waiting
                        assert t.penalty_to == s.penalty_to and t.penalty_queue == (*s.penalty_queue, *caught)
            s = t
            continue
        seat = rng.choice(engine.awaiting(s))
        action = rng.choice(engine.legal_actions(s, seat))
        t, result = attempt(s, seat, action)
        assert result == "ok"
        kind = action["a"]
        if kind == "give":  # R18: the card goes from the giver to the punished player
            assert action["card"] not in t.hands[seat] and action["card"] in t.hands[s.penalty_to]
            assert seat not in t.penalty_from or t.penalty_to != s.penalty_to
        if s.phase == 1:
            own_place = kind == "place" and action["to"] == seat
            top = s.piles[seat][-1] if s.piles[seat] else None
            blunder = own_place and (_fits_an_opponent(s.piles, seat, s.drawn)
                                     or (top is not None and _fits_an_opponent(s.piles, seat, top)))
            if t.phase == 2:
                assert t.zevok is None
            else:
                assert t.zevok == (seat if blunder or seat == s.zevok else None)
                passes = own_place and not _fits(s.drawn, top) and bool(s.stock)
                assert t.turn == (s.players[(s.players.index(seat) + 1) % n] if passes else seat)
        elif kind == "play":
            in_game = n - len(s.places)
            if len(s.table) + 1 == in_game:  # R13 Бита
                assert t.table == () and t.discarded == s.discarded + in_game
                if not t.over:
                    assert t.turn == (seat if seat not in t.places else _next_in(t, seat))
            else:
                assert t.table == (*s.table, action["card"]) and t.turn == _next_in(s, seat)
            if not t.over and seat not in t.places:  # R17
                assert (seat in t.owes) == (len(t.hands[seat]) == 1)
        s = t
