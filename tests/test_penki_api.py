"""Penki through the engine API (docs/CONTRACTS.md §1): rejection order (FORMAT.md),
views, events, awaiting, the computer player, persistence and the simulate CLI."""

from __future__ import annotations

import json

import pytest
from test_penki_rules import (
    ABC,
    ASK,
    DRAW,
    ONE,
    TAKE,
    ZEVOK,
    give,
    move,
    place,
    play,
    position,
    rejected,
    run,
)

import engine
from engine import penki
from engine.__main__ import main as engine_main

VIEW_KEYS = {
    "game", "version", "seat", "players", "hand", "to_move", "dealer", "over", "places", "balances",
    "legal", "last", "phase", "stock", "drawn", "table", "discarded", "penalty", "penalty_queue",
}
PLAYER_KEYS = {"id", "cards", "pile", "pile_top", "stumps", "declared", "out"}


# ---------------------------------------------------------------- rejection order


def test_bad_action_comes_first():
    s = engine.new_game("penki", list(ABC), seed=1)
    for action in ("draw", {"a": "stand"}, {"a": "pass"}, {"a": "play"}, {"a": "play", "card": "Xx"},
                   {"a": "play", "card": None}, {"a": "move", "to": "q"},
                   {"a": "place"}, {"a": "give", "card": 9}, {"a": None},
                   {"a": ["draw"]}, {"a": {"draw": 1}}, {"a": "play", "card": ["7h"]}, {"a": "move", "to": ["a"]}):
        assert rejected(s, "b", action) == "bad_action"  # b is not to move: still bad_action
    assert rejected(s, "zz", DRAW) == "bad_action"


def test_game_over_before_turn_and_hand():
    s = position(phase=2, turn="b", hands={"a": ("6c", "8c"), "b": ("Jh",), "c": ("Qh",)}, table=("10h",))
    s = run(s, ("b", play("Jh")), ("c", play("Qh")))
    assert s.over
    assert rejected(s, "b", play("Ah")) == "game_over"
    assert rejected(s, "a", ZEVOK) == "game_over"
    assert rejected(s, "a", {"a": "bogus"}) == "bad_action"


def test_not_your_turn_before_not_in_hand_and_illegal():
    s = position(phase=2, turn="a", hands={"a": ("6c", "8c"), "b": ("Jh", "7c"), "c": ("Qh", "9c")})
    assert rejected(s, "b", play("Ah")) == "not_your_turn"
    assert rejected(s, "b", move("a")) == "not_your_turn"
    assert rejected(s, "b", DRAW) == "not_your_turn"
    assert rejected(s, "a", play("Ah")) == "not_in_hand"
    assert rejected(s, "b", give("Ah")) == "not_in_hand"
    assert rejected(s, "b", give("Jh")) == "illegal"
    assert rejected(s, "a", DRAW) == "illegal"  # phase-1 action in phase 2
    assert rejected(s, "a", ZEVOK) == "illegal"
    assert rejected(s, "a", TAKE) == "illegal"
    s1 = engine.new_game("penki", list(ABC), seed=1)
    assert rejected(s1, "a", play("6h")) == "not_in_hand"  # phase-1 hands are empty
    for action in (TAKE, ONE, ASK, place("a"), ZEVOK):
        assert rejected(s1, "a", action) == "illegal"


def test_nobody_is_to_move_during_a_hand_over():
    s = position(phase=2, turn="b", owes=("a",), hands={"a": ("6h",), "b": ("8h", "9h"), "c": ("9c", "Jc")},
                 table=("6c",))
    s = run(s, ("c", ASK))
    assert s.to_move is None and engine.legal_actions(s, "b") == [give("8h"), give("9h")]
    assert rejected(s, "b", TAKE) == "not_your_turn"
    assert engine.view(s, "a")["penalty"] == {"to": "a", "from": ["b", "c"]}


# ---------------------------------------------------------------- views and events


def test_view_contract_keys_and_hidden_information():
    s = engine.new_game("penki", list(ABC), seed=3)
    s = run(s, ("a", DRAW))
    for seat in (*ABC, None):
        v = engine.view(s, seat)
        assert set(v) == VIEW_KEYS
        assert all(set(p) == PLAYER_KEYS for p in v["players"])
        assert v["stock"] == len(s.stock) and v["drawn"] == s.drawn
        json.dumps(v)
    assert engine.view(s, None)["hand"] is None and engine.view(s, None)["legal"] == []
    assert engine.view(s, "a")["legal"] == engine.legal_actions(s, "a")
    assert engine.view(s, "a")["last"] == [{"a": "draw", "seat": "a", "card": s.drawn}]


def test_view_phase_two_hand_sorted_counts_and_declared():
    s = position(phase=2, hands={"a": ("9d", "6h", "Ac"), "b": ("8h",), "c": ("7h", "Ks")},
                 stumps={"c": ("6c", "7c")}, declared=("b",), places={})
    v = engine.view(s, "a")
    assert v["hand"] == ["6h", "Ac", "9d"]  # hearts, clubs, spades, then trumps
    assert [(p["cards"], p["stumps"], p["declared"]) for p in v["players"]] == [
        (3, 0, False), (1, 0, True), (2, 2, False)]


def test_view_piles_tops_and_sizes():
    s = position(stock=("Kh",), piles={"a": ("6h", "7c"), "c": ("Js",)})
    v = engine.view(s, "b")
    assert [(p["pile"], p["pile_top"]) for p in v["players"]] == [(2, "7c"), (0, None), (1, "Js")]
    assert v["hand"] == [] and v["legal"] == []


def test_last_events_are_bounded():
    s = engine.new_game("penki", list(ABC), seed=9)
    for _ in range(60):
        seat = engine.awaiting(s)[0]
        s = engine.apply(s, seat, engine.computer_action(s, seat)).state
    assert len(engine.view(s, "a")["last"]) == 20 and len(s.last) == 20


def test_awaiting():
    s = engine.new_game("penki", list(ABC), seed=9)
    assert engine.awaiting(s) == ["a"]
    s = position(phase=2, turn="b", owes=("a",), hands={"a": ("6h",), "b": ("8h", "9h"), "c": ("9c", "Jc")},
                 table=("6c",))
    assert engine.awaiting(run(s, ("c", ASK))) == ["b", "c"]


# ---------------------------------------------------------------- the computer player


def test_computer_calls_zevok_only_against_an_opponent():
    s = position(turn="b", stock=("Kd", "Kc"), piles={"a": ("8h",)}, drawn="9s")
    s = run(s, ("b", place("b")))
    assert engine.computer_action(s, "a") == ZEVOK and engine.computer_action(s, "c") == ZEVOK
    assert engine.computer_action(s, "b") is None


def test_computer_never_blunders_in_phase_one():
    s = position(stock=("6h", "7h"), piles={"a": ("Qd",), "b": ("Js",), "c": ("Jh",)})
    assert engine.computer_action(s, "a") == move("b")
    s = position(stock=("6h",), piles={"c": ("8d",)}, drawn="9h")
    assert engine.computer_action(s, "a") == place("c")
    s = position(stock=("6h",), piles={"c": ("8d",)}, drawn="Kh")
    assert engine.computer_action(s, "a") == place("a")
    s = position(stock=("6h",), piles={"c": ("8d",)})
    assert engine.computer_action(s, "a") == DRAW
    assert engine.computer_action(s, "b") is None


def test_computer_declares_and_asks():
    s = position(phase=2, turn="b", owes=("a",), hands={"a": ("6h",), "b": ("8h", "9h"), "c": ("9c", "Jc")},
                 table=("6c",))
    assert engine.computer_action(s, "a") == ONE
    assert engine.computer_action(s, "b") == ASK and engine.computer_action(s, "c") == ASK


def test_computer_beats_cheaply_keeping_trumps_and_takes_otherwise():
    s = position(phase=2, turn="b", hands={"a": ("6c",), "b": ("Ah", "10h", "6d", "Ks"), "c": ("9c",)},
                 table=("9h",))
    assert engine.computer_action(s, "b") == play("10h")
    s = position(phase=2, turn="b", hands={"a": ("6c",), "b": ("8h", "7d", "6d"), "c": ("9c",)},
                 table=("9h",))
    assert engine.computer_action(s, "b") == play("6d")
    s = position(phase=2, turn="b", hands={"a": ("6c",), "b": ("Ks", "Ad"), "c": ("9c",)}, table=("9s",))
    assert engine.computer_action(s, "b") == TAKE


def test_computer_leads_cheapest_and_gives_worst():
    s = position(phase=2, turn="a", hands={"a": ("Ks", "6d", "9h", "7c"), "b": ("8h",), "c": ("9c",)})
    assert engine.computer_action(s, "a") == play("7c")
    s = position(phase=2, turn="b", owes=("a",), hands={"a": ("6h",), "b": ("8h", "Ks"), "c": ("Jd", "9c")},
                 table=("6c",))
    s = run(s, ("b", ASK))
    assert engine.computer_action(s, "b") == give("Ks")
    assert engine.computer_action(s, "c") == give("9c")


def test_computer_is_deterministic_and_always_has_an_action_when_awaited():
    s = engine.new_game("penki", ["a", "b", "c", "d"], seed=11)
    while not s.over:
        for seat in engine.awaiting(s):
            act = engine.computer_action(s, seat)
            assert act is not None and act == engine.computer_action(s, seat)
        seat = engine.awaiting(s)[0]
        s = engine.apply(s, seat, engine.computer_action(s, seat)).state
        for d in s.owes:
            s = engine.apply(s, d, ONE).state


# ---------------------------------------------------------------- persistence and CLI


def test_dump_load_round_trip_and_schema():
    s = engine.new_game("penki", list(ABC), seed=4)
    data = engine.dump(s)
    assert data["schema"] == penki.SCHEMA and data["game"] == "penki"
    assert engine.load(json.loads(json.dumps(data))) == s
    with pytest.raises(ValueError):
        engine.load({**data, "schema": 999})


def test_state_contract_attributes():
    s = engine.new_game("penki", list(ABC), seed=4)
    assert (s.game, s.version, s.players, s.over, s.to_move, s.balances, s.places) == (
        "penki", 0, ("a", "b", "c"), False, "a", None, {})
    out = engine.apply(s, "a", DRAW)
    assert out.state.version == 1 and s.version == 0 and s.drawn is None
    state, events = out
    assert state is out.state and events == out.events


def test_simulate_cli(capsys):
    assert engine_main(["simulate", "--game", "penki", "--games", "3", "--seed", "5", "--players", "4"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["game"] == "penki" and result["games"] == 3 and result["actions"] > 0
