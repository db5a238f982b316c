"""Prší rules, one or more tests per rule (RULES.md P1–P14), bad input, views, the computer player."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

import engine
from engine import prsi
from engine.cards import PRSI_PACK
from engine.errors import Rejected

ABC = ["a", "b", "c"]


def make_deck(players: list[str], dealer: str, hands: dict[str, list[str]], top: str,
              stock: list[str] | tuple[str, ...] = ()) -> list[str]:
    """A full pack, top first, that deals ``hands`` (4 cards each), turns ``top`` up and
    starts the stock with ``stock`` (the other cards follow in pack order)."""
    k, d = len(players), players.index(dealer)
    order = [hands[players[(d + 1 + j) % k]][j // k] for j in range(4 * k)]
    used = [*order, top, *stock]
    assert len(set(used)) == len(used), "a card given twice"
    return used + [c for c in PRSI_PACK if c not in used]


def game(hands: dict[str, list[str]], top: str, stock: list[str] | tuple[str, ...] = (),
         players: list[str] | None = None, dealer: str | None = None) -> prsi.PrsiState:
    players = players or list(hands)
    dealer = dealer or players[-1]
    return engine.new_game("prsi", players, dealer=dealer, decks=[make_deck(players, dealer, hands, top, stock)])


def act(s: prsi.PrsiState, seat: str, a: str, **fields: Any) -> prsi.PrsiState:
    return engine.apply(s, seat, {"a": a, **fields}).state


def events(s: prsi.PrsiState, seat: str, a: str, **fields: Any) -> list[dict[str, Any]]:
    return engine.apply(s, seat, {"a": a, **fields}).events


def rejected(s: prsi.PrsiState, seat: str, action: Any) -> str:
    before = engine.dump(s)
    with pytest.raises(Rejected) as exc:
        engine.apply(s, seat, action)
    assert engine.dump(s) == before, "a rejected action changed the state"
    return exc.value.code


def hand(s: prsi.PrsiState, seat: str) -> list[str]:
    return list(s.hand(seat))


def all_cards(s: prsi.PrsiState) -> Counter[str]:
    return Counter([c for h in s.hands for c in h] + list(s.stock) + list(s.discard))


BASIC = {"a": ["8h", "Kc", "9s", "Jd"], "b": ["10h", "Kd", "7c", "As"], "c": ["Jh", "Ad", "9c", "8s"]}


# ---------------------------------------------------------------- P1


@pytest.mark.parametrize("count", [2, 3, 4, 5])
def test_p1_two_to_five_players_share_the_32_card_pack(count: int) -> None:
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, seed=7)
    assert all_cards(s) == Counter(PRSI_PACK)
    assert len(PRSI_PACK) == 32 and {c[:-1] for c in PRSI_PACK} == {"7", "8", "9", "10", "J", "Q", "K", "A"}


@pytest.mark.parametrize("count", [0, 1, 6])
def test_p1_other_player_counts_are_refused(count: int) -> None:
    with pytest.raises(ValueError):
        engine.new_game("prsi", [f"p{i}" for i in range(count)], seed=1)


def test_p1_new_game_refuses_bad_decks_dealers_and_missing_seed() -> None:
    with pytest.raises(ValueError):
        engine.new_game("prsi", ABC, decks=[[*PRSI_PACK[:31], "7h"]])
    with pytest.raises(ValueError):
        engine.new_game("prsi", ABC, dealer="z", seed=1)
    with pytest.raises(ValueError):
        engine.new_game("prsi", ABC)
    with pytest.raises(ValueError):
        engine.new_game("prsi", ["a", "a", "b"], seed=1)


def test_p1_an_ace_may_be_the_last_card_and_does_nothing() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, hands=(("Ah",), s.hands[1], s.hands[2]))
    out = engine.apply(s, "a", {"a": "play", "card": "Ah"})
    assert out.state.round == 2 and not out.state.pending_skip
    assert out.state.round_points["a"] == 0


# ---------------------------------------------------------------- P2, P3


def test_p2_dealer_moves_left_each_round_and_the_dealers_left_starts() -> None:
    s = engine.new_game("prsi", ABC, dealer="c", seed=11)
    dealers, starters = [s.dealer], [s.to_move]
    while not s.over:
        seat = s.to_move
        out = engine.apply(s, seat, engine.computer_action(s, seat))
        for ev in out.events:
            if ev["a"] == "deal":
                dealers.append(ev["dealer"])
                starters.append(out.state.to_move)
        s = out.state
    assert dealers == ["c", "a", "b", "c", "a"]
    assert starters == ["a", "b", "c", "a", "b"]
    assert s.round == 5 and len(s.history) == 5


def test_p3_deal_four_each_one_at_a_time_from_the_dealers_left() -> None:
    deck = list(PRSI_PACK)
    s = engine.new_game("prsi", ABC, dealer="b", decks=[deck])
    # c sits left of b: c gets cards 0, 3, 6, 9; a gets 1, 4, 7, 10; b gets 2, 5, 8, 11.
    assert hand(s, "c") == [deck[0], deck[3], deck[6], deck[9]]
    assert hand(s, "a") == [deck[1], deck[4], deck[7], deck[10]]
    assert hand(s, "b") == [deck[2], deck[5], deck[8], deck[11]]
    assert s.discard == (deck[12],) and s.top == deck[12]
    assert list(s.stock) == deck[13:] and len(s.stock) == 19
    assert s.to_move == "c" and s.round == 1 and s.version == 0


def test_p3_seeded_decks_are_deterministic_and_differ_per_round() -> None:
    one = engine.new_game("prsi", ABC, seed=42)
    two = engine.new_game("prsi", ABC, seed=42)
    assert engine.dump(one) == engine.dump(two)
    assert prsi._deck(one, 1) != prsi._deck(one, 2)
    assert engine.dump(engine.new_game("prsi", ABC, seed=43)) != engine.dump(one)


# ---------------------------------------------------------------- P4


def test_p4_opening_seven_makes_the_starter_draw_two_or_answer() -> None:
    s = game({**BASIC, "a": ["8h", "7d", "9s", "Jd"]}, top="7s")
    assert s.pending_draw == 2 and not s.pending_skip
    assert engine.legal_actions(s, "a") == [{"a": "play", "card": "7d"}, {"a": "draw"}]
    assert rejected(s, "a", {"a": "play", "card": "9s"}) == "illegal"
    drawn = act(s, "a", "draw")
    assert len(hand(drawn, "a")) == 6 and drawn.pending_draw == 0 and drawn.to_move == "b"
    answered = act(s, "a", "play", card="7d")
    assert answered.pending_draw == 4 and answered.to_move == "b"


def test_p4_opening_ace_makes_the_starter_stand_or_answer() -> None:
    s = game({**BASIC, "a": ["8h", "Ac", "9s", "Jd"]}, top="Ah")
    assert s.pending_skip and s.pending_draw == 0
    assert engine.legal_actions(s, "a") == [{"a": "play", "card": "Ac"}, {"a": "stand"}]
    assert rejected(s, "a", {"a": "draw"}) == "illegal"
    stood = act(s, "a", "stand")
    assert not stood.pending_skip and stood.to_move == "b" and stood.suit == "h"


def test_p4_opening_queen_names_no_suit_and_stays_on_the_pile() -> None:
    s = game(BASIC, top="Qc")
    assert s.suit == "c" and s.discard == ("Qc",) and not s.pending_skip and s.pending_draw == 0
    assert {"a": "play", "card": "Kc"} in engine.legal_actions(s, "a")
    assert rejected(s, "a", {"a": "play", "card": "8h"}) == "illegal"


def test_p4_p7_opening_ace_with_two_players_the_dealer_plays_next() -> None:
    # The opening Ace acts as if the dealer had just played it: with two players the
    # starter stands and the dealer (the "Ace's player") plays again (P7).
    two = {"a": ["8h", "Ac", "9s", "Jd"], "b": ["10s", "7h", "Jc", "Qs"]}
    s = game(two, top="Ah", players=["a", "b"], dealer="b")
    assert s.to_move == "a" and s.pending_skip
    stood = act(s, "a", "stand")
    assert stood.to_move == "b" and not stood.pending_skip and stood.suit == "h"
    assert {"a": "play", "card": "7h"} in engine.legal_actions(stood, "b")  # the Ace is spent
    answered = act(s, "a", "play", card="Ac")
    assert answered.to_move == "b" and answered.pending_skip
    assert engine.legal_actions(answered, "b") == [{"a": "stand"}]
    assert act(answered, "b", "stand").to_move == "a"  # a's Ace: a plays again


def test_p4_opening_queen_of_the_suit_follows_and_a_queen_may_name_another() -> None:
    s = game({**BASIC, "a": ["Qd", "Kc", "9s", "Jd"]}, top="Qc")
    plays = engine.legal_actions(s, "a")
    assert {"a": "play", "card": "Kc"} in plays and {"a": "play", "card": "Qd", "suit": "s"} in plays
    assert {"a": "play", "card": "Jd"} not in plays  # the opening Q named nothing: clubs are in play
    assert act(s, "a", "play", card="Qd", suit="s").suit == "s"


# ---------------------------------------------------------------- P5


def test_p5_follow_the_suit_or_the_rank_or_draw() -> None:
    s = game(BASIC, top="9h", stock=["Ks"])
    plays = {x["card"] for x in engine.legal_actions(s, "a") if x["a"] == "play"}
    assert plays == {"8h", "9s"}  # hearts by suit, 9s by rank
    assert rejected(s, "a", {"a": "play", "card": "Kc"}) == "illegal"
    t = act(s, "a", "play", card="9s")
    assert t.suit == "s" and t.top == "9s" and t.to_move == "b"


def test_p5_drawing_is_allowed_with_a_playable_card_and_ends_the_turn() -> None:
    s = game(BASIC, top="9h", stock=["Ks", "7h"])
    assert {"a": "draw"} in engine.legal_actions(s, "a")
    t = act(s, "a", "draw")
    assert hand(t, "a") == [*BASIC["a"], "Ks"] and t.to_move == "b" and t.stock[0] == "7h"
    assert rejected(t, "a", {"a": "play", "card": "Ks"}) == "not_your_turn"


# ---------------------------------------------------------------- P6


def test_p6_sevens_chain_two_four_six_and_the_draw_spends_the_chain() -> None:
    s = game({"a": ["7h", "8c", "Kd", "Jc"], "b": ["7c", "10d", "Qd", "Ah"], "c": ["7s", "9c", "8d", "Js"]},
             top="9h")
    s = act(s, "a", "play", card="7h")
    assert s.pending_draw == 2
    assert rejected(s, "b", {"a": "play", "card": "10d"}) == "illegal"
    assert rejected(s, "b", {"a": "play", "card": "Qd", "suit": "d"}) == "illegal"
    s = act(s, "b", "play", card="7c")
    assert s.pending_draw == 4
    s = act(s, "c", "play", card="7s")
    assert s.pending_draw == 6 and s.to_move == "a"
    evs = events(s, "a", "draw")
    assert evs == [{"a": "draw", "seat": "a", "n": 6}]
    s = act(s, "a", "draw")
    assert len(hand(s, "a")) == 9 and s.pending_draw == 0 and s.to_move == "b"
    # The top 7 is now ordinary: a spade or a 7 follows, a Queen goes on it.
    assert {x["card"] for x in engine.legal_actions(s, "b") if x["a"] == "play"} == {"Qd"}
    assert rejected(s, "b", {"a": "play", "card": "10d"}) == "illegal"


# ---------------------------------------------------------------- P7


def test_p7_ace_is_answered_by_an_ace_or_by_standing() -> None:
    s = game({"a": ["As", "8c", "Kd", "Jc"], "b": ["Ah", "Qs", "9c", "7d"], "c": ["8s", "Jh", "9d", "10c"]},
             top="9s")
    s = act(s, "a", "play", card="As")
    assert s.pending_skip
    assert rejected(s, "b", {"a": "play", "card": "Qs", "suit": "h"}) == "illegal"
    s = act(s, "b", "play", card="Ah")
    assert s.pending_skip and s.to_move == "c"
    assert rejected(s, "c", {"a": "draw"}) == "illegal"
    assert engine.legal_actions(s, "c") == [{"a": "stand"}]
    assert events(s, "c", "stand") == [{"a": "stand", "seat": "c"}]
    s = act(s, "c", "stand")
    assert not s.pending_skip and s.to_move == "a" and s.suit == "h"
    assert rejected(s, "a", {"a": "stand"}) == "illegal"


def test_p7_two_players_the_aces_player_plays_again() -> None:
    s = game({"a": ["Ac", "Kc", "9h", "8d"], "b": ["10s", "7h", "Jd", "Qs"]}, top="9c")
    s = act(s, "a", "play", card="Ac")
    assert rejected(s, "a", {"a": "play", "card": "Kc"}) == "not_your_turn"
    s = act(s, "b", "stand")
    assert s.to_move == "a"
    s = act(s, "a", "play", card="Kc")
    assert s.to_move == "b"


# ---------------------------------------------------------------- P8


def test_p8_queen_goes_on_any_plain_card_and_names_a_suit() -> None:
    s = game({"a": ["Qh", "8c", "10s", "Jc"], "b": ["9h", "9s", "10d", "7d"], "c": ["Qs", "Jh", "Kc", "10c"]},
             top="Jd")
    assert engine.legal_actions(s, "a")[:4] == [{"a": "play", "card": "Qh", "suit": x} for x in "hdcs"]
    out = engine.apply(s, "a", {"a": "play", "card": "Qh", "suit": "s"})
    assert out.events == [{"a": "play", "seat": "a", "card": "Qh", "suit": "s"}]
    s = out.state
    assert s.suit == "s" and s.top == "Qh"
    assert rejected(s, "b", {"a": "play", "card": "9h"}) == "illegal"
    s = act(s, "b", "play", card="9s")
    s = act(s, "c", "play", card="Qs", suit="c")
    assert s.suit == "c"


def test_p8_queen_is_refused_on_an_active_seven_or_ace() -> None:
    s = game({**BASIC, "a": ["Qh", "8c", "10s", "Jc"]}, top="7h")
    assert rejected(s, "a", {"a": "play", "card": "Qh", "suit": "h"}) == "illegal"
    s = game({**BASIC, "a": ["Qh", "8c", "10s", "Jc"]}, top="Ah")
    assert rejected(s, "a", {"a": "play", "card": "Qh", "suit": "h"}) == "illegal"


def test_p8_queen_needs_a_suit_unless_it_is_the_last_card() -> None:
    s = game({**BASIC, "a": ["Qh", "8c", "10s", "Jc"]}, top="9h")
    assert rejected(s, "a", {"a": "play", "card": "Qh"}) == "bad_action"
    assert rejected(s, "a", {"a": "play", "card": "Qh", "suit": "x"}) == "bad_action"
    last = replace(s, hands=(("Qh",), s.hands[1], s.hands[2]))
    assert engine.legal_actions(last, "a") == [{"a": "play", "card": "Qh"}, {"a": "draw"}]
    out = engine.apply(last, "a", {"a": "play", "card": "Qh"})
    assert out.events[0] == {"a": "play", "seat": "a", "card": "Qh"}
    assert out.state.round == 2 and out.state.round_points["a"] == 0


# ---------------------------------------------------------------- P9


def test_p9_the_draw_that_empties_the_stock_turns_the_pile_over_unshuffled() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=("Kd",), discard=("7h", "8h", "10h"), suit="h")
    out = engine.apply(s, "a", {"a": "draw"})
    assert out.events == [{"a": "draw", "seat": "a", "n": 1}, {"a": "turnover", "n": 2}]
    assert out.state.stock == ("7h", "8h") and out.state.discard == ("10h",) and out.state.suit == "h"


def test_p9_drawing_from_an_empty_stock_turns_the_pile_over_first() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=(), discard=("7h", "8h", "10h"), suit="h")
    out = engine.apply(s, "a", {"a": "draw"})
    assert out.events == [{"a": "turnover", "n": 2}, {"a": "draw", "seat": "a", "n": 1}]
    assert hand(out.state, "a")[-1] == "7h"  # the oldest discard was the stock's top
    assert out.state.stock == ("8h",) and out.state.discard == ("10h",)


def test_p9_the_top_card_and_a_pending_seven_stay_through_a_turnover() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=("Kd",), discard=("8h", "Jh", "7h"), suit="h", pending_draw=2)
    out = engine.apply(s, "a", {"a": "draw"})
    assert [e["a"] for e in out.events] == ["draw", "turnover", "draw"]
    assert hand(out.state, "a")[-2:] == ["Kd", "8h"]
    assert out.state.discard == ("7h",) and out.state.stock == ("Jh",) and out.state.pending_draw == 0


# ---------------------------------------------------------------- P10


def test_p10_a_debt_that_cannot_be_drawn_in_full_is_forgiven() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=("Kd",), discard=("9c", "7h"), suit="h", pending_draw=4)
    out = engine.apply(s, "a", {"a": "draw"})
    assert out.events == [{"a": "draw", "seat": "a", "n": 1}, {"a": "turnover", "n": 1},
                          {"a": "draw", "seat": "a", "n": 1}, {"a": "forgiven", "seat": "a", "n": 2}]
    assert out.state.pending_draw == 0 and out.state.stock == () and out.state.to_move == "b"


def test_p10_with_nothing_to_draw_a_player_who_can_play_must_play() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=(), discard=("10h",), suit="h")
    assert rejected(s, "a", {"a": "draw"}) == "illegal"
    assert rejected(s, "a", {"a": "pass"}) == "illegal"
    assert engine.legal_actions(s, "a") == [{"a": "play", "card": "8h"}]


def test_p10_with_nothing_to_draw_or_play_the_player_passes() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=(), discard=("10d",), suit="d")
    s = replace(s, hands=(("8h", "Kc", "9s", "7c"), s.hands[1], s.hands[2]))
    assert engine.legal_actions(s, "a") == [{"a": "pass"}]
    out = engine.apply(s, "a", {"a": "pass"})
    assert out.events == [{"a": "pass", "seat": "a"}] and out.state.to_move == "b"
    # With cards to draw, passing is refused.
    assert rejected(replace(s, stock=("Kd",)), "a", {"a": "pass"}) == "illegal"


def test_p10_a_pending_ace_is_stood_even_with_nothing_to_draw() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, stock=(), discard=("Ad",), suit="d", pending_skip=True)
    assert engine.legal_actions(s, "a") == [{"a": "stand"}]
    assert rejected(s, "a", {"a": "pass"}) == "illegal"


# ---------------------------------------------------------------- P11, P12


def test_p11_the_round_ends_when_the_last_card_is_played() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, hands=(("8h",), s.hands[1], s.hands[2]))
    out = engine.apply(s, "a", {"a": "play", "card": "8h"})
    kinds = [e["a"] for e in out.events]
    assert kinds == ["play", "round_end", "deal"]
    assert out.events[1]["winner"] == "a" and out.events[1]["round"] == 1
    assert out.events[2] == {"a": "deal", "round": 2, "dealer": "a"}
    assert out.state.round == 2 and out.state.to_move == "b" and out.state.version == 1


def test_p11_a_last_seven_makes_the_next_player_draw_the_chain_at_once() -> None:
    s = game(BASIC, top="9h", stock=["7d", "Qs", "Ac", "10d", "Js"])
    s = replace(s, hands=(("7h",), ("Kd",), ("8s",)), pending_draw=2, discard=("9c", "7c"), suit="c")
    out = engine.apply(s, "a", {"a": "play", "card": "7h"})
    assert out.events[1] == {"a": "draw", "seat": "b", "n": 4}
    # b's Kd (4) plus 7d, Qs, Ac, 10d (7 + 20 + 11 + 10) all count.
    assert out.state.round_points == {"a": 0, "b": 52, "c": 8}


def test_p11_a_last_sevens_debt_turns_the_pile_over_and_the_rest_is_forgiven() -> None:
    # a goes out with 7h on a pending 7c: b owes 4 but only Qs (stock) and 7c (turned over) exist.
    s = game(BASIC, top="9h")
    s = replace(s, hands=(("7h",), ("Kd",), ("8s",)), stock=("Qs",), discard=("7c",), suit="c", pending_draw=2)
    out = engine.apply(s, "a", {"a": "play", "card": "7h"})
    assert out.events[1:5] == [{"a": "draw", "seat": "b", "n": 1}, {"a": "turnover", "n": 1},
                               {"a": "draw", "seat": "b", "n": 1}, {"a": "forgiven", "seat": "b", "n": 2}]
    assert out.state.round_points == {"a": 0, "b": 4 + 20 + 7, "c": 8}
    assert out.state.round == 2 and out.state.pending_draw == 0


def test_p11_a_last_ace_or_queen_does_nothing_to_the_next_player() -> None:
    for last in ("Ah", "Qh"):
        s = game(BASIC, top="9h")
        s = replace(s, hands=((last,), ("Kd", "7s"), ("8s",)))
        out = engine.apply(s, "a", {"a": "play", "card": last})
        assert [e["a"] for e in out.events] == ["play", "round_end", "deal"]
        assert out.state.round_points == {"a": 0, "b": 11, "c": 8}


def test_p12_round_points_for_cards_left_in_hand() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, hands=(("8h",), ("7c", "8d", "9c", "10s", "Jd", "Qd", "Kc", "As"), ("Ah", "Qc")))
    out = engine.apply(s, "a", {"a": "play", "card": "8h"}).state
    assert out.round_points == {"a": 0, "b": 7 + 8 + 9 + 10 + 2 + 20 + 4 + 11, "c": 31}
    assert out.points == out.round_points
    assert out.history == ({"round": 1, "points": {"a": 0, "b": 71, "c": 31}},)


# ---------------------------------------------------------------- P13, P14


def test_p13_p14_after_round_five_lowest_total_wins_ties_share_a_place() -> None:
    s = game(BASIC, top="9h")
    s = replace(s, round=5, points={"a": 30, "b": 28, "c": 55}, hands=(("8h",), ("Jh",), ("Kc",)))
    out = engine.apply(s, "a", {"a": "play", "card": "8h"})
    t = out.state
    assert t.over and t.to_move is None and t.round == 5
    assert t.points == {"a": 30, "b": 30, "c": 59}
    assert t.places == {"a": 1, "b": 1, "c": 3}
    assert t.balances == {"a": 29, "b": 29, "c": -58} and sum(t.balances.values()) == 0
    assert out.events[-1] == {"a": "match_end", "places": t.places, "balances": t.balances, "points": t.points}
    assert engine.awaiting(t) == [] and engine.legal_actions(t, "b") == []
    assert engine.computer_action(t, "b") is None
    assert rejected(t, "b", {"a": "draw"}) == "game_over"


# ---------------------------------------------------------------- bad input (FORMAT.md reasons)


@pytest.mark.parametrize("card", ["6h", "Zz", "qh", "10", "", 5, None, ["7h"], {"c": 1}])
def test_unknown_cards_are_bad_actions(card: Any) -> None:
    s = game(BASIC, top="9h")
    assert rejected(s, "a", {"a": "play", "card": card}) == "bad_action"
    assert rejected(s, "b", {"a": "play", "card": card}) == "bad_action"  # even out of turn


@pytest.mark.parametrize("action", [{"a": "fly"}, {"a": "move", "to": "b"}, {"a": "take"}, {"a": "zevok"},
                                    {"a": "play"}, {}, [], "draw", None, {"a": ["draw"]}])
def test_malformed_and_penki_actions_are_bad_actions(action: Any) -> None:
    s = game(BASIC, top="9h")
    assert rejected(s, "a", action) == "bad_action"


def test_unknown_seat_is_a_bad_action() -> None:
    assert rejected(game(BASIC, top="9h"), "z", {"a": "draw"}) == "bad_action"


def test_out_of_turn_is_rejected_before_not_in_hand() -> None:
    s = game(BASIC, top="9h")
    assert rejected(s, "b", {"a": "play", "card": "10h"}) == "not_your_turn"
    assert rejected(s, "b", {"a": "play", "card": "8h"}) == "not_your_turn"
    assert rejected(s, "c", {"a": "draw"}) == "not_your_turn"


def test_a_card_not_held_is_not_in_hand() -> None:
    s = game(BASIC, top="9h")
    assert rejected(s, "a", {"a": "play", "card": "9h"}) == "not_in_hand"
    assert rejected(s, "a", {"a": "play", "card": "10h"}) == "not_in_hand"


def test_a_suit_on_a_card_that_is_not_a_queen_is_ignored() -> None:
    s = game(BASIC, top="9h")
    t = act(s, "a", "play", card="8h", suit="x")
    assert t.suit == "h"


def test_every_action_after_the_match_is_game_over() -> None:
    s = engine.new_game("prsi", ABC, seed=5)
    while not s.over:
        s = engine.apply(s, s.to_move, engine.computer_action(s, s.to_move)).state
    for seat in ABC:
        for action in ({"a": "draw"}, {"a": "stand"}, {"a": "pass"}, {"a": "play", "card": "7h"}):
            assert rejected(s, seat, action) == "game_over"
    assert rejected(s, "a", {"a": "play", "card": "6h"}) == "bad_action"  # bad_action comes first


def test_accepted_actions_bump_the_version_and_leave_the_input_alone() -> None:
    s = game(BASIC, top="9h")
    before = engine.dump(s)
    t = act(s, "a", "play", card="8h")
    assert engine.dump(s) == before and t.version == s.version + 1 and t is not s


# ---------------------------------------------------------------- views (S3, CONTRACTS.md §1)


VIEW_KEYS = {"game", "version", "seat", "players", "hand", "to_move", "dealer", "over", "places", "balances",
             "legal", "last", "round", "rounds", "top", "suit", "pending_draw", "pending_skip", "stock",
             "discard", "round_points", "points", "history"}


def test_view_shows_own_hand_and_counts_only() -> None:
    s = game(BASIC, top="9h")
    v = engine.view(s, "a")
    assert set(v) == VIEW_KEYS
    assert v["hand"] == ["8h", "Jd", "Kc", "9s"]  # sorted by suit h d c s, then rank
    assert v["players"] == [{"id": p, "cards": 4, "points": 0} for p in ABC]
    assert v["stock"] == 19 and v["discard"] == 1 and v["top"] == "9h" and v["rounds"] == 5
    assert v["legal"] == engine.legal_actions(s, "a") and type(v["legal"][0]) is dict
    assert v["last"] == [{"a": "deal", "round": 1, "dealer": "c"}]
    assert engine.view(s, "b")["legal"] == []


def test_spectator_view_has_no_hand_and_no_legal_actions() -> None:
    s = game(BASIC, top="9h")
    for who in (None, "stranger"):
        v = engine.view(s, who)
        assert v["hand"] is None and v["legal"] == [] and v["seat"] is None
        text = repr(v)
        assert not any(c in text for h in BASIC.values() for c in h if c != "9h")


def test_view_last_holds_at_most_twenty_events() -> None:
    s = engine.new_game("prsi", ABC, seed=3)
    for _ in range(60):
        s = engine.apply(s, s.to_move, engine.computer_action(s, s.to_move)).state
    v = engine.view(s, "a")
    assert len(v["last"]) == prsi.LAST_EVENTS == len(s.last)


def test_observer_has_exactly_the_format_keys() -> None:
    keys = {"to_move", "hands", "stock", "round", "dealer", "top", "suit", "discard", "pending_draw",
            "pending_skip", "round_points", "points", "over", "places", "balances"}
    assert set(engine.observer(game(BASIC, top="9h"))) == keys


def test_dump_has_schema_and_game_and_load_refuses_others() -> None:
    s = game(BASIC, top="9h")
    d = engine.dump(s)
    assert d["schema"] == prsi.SCHEMA and d["game"] == "prsi"
    assert engine.load(d) == s
    with pytest.raises(ValueError):
        prsi.load({**d, "schema": 99})
    for bad in ({**d, "game": "mau"}, {k: v for k, v in d.items() if k != "game"}, ["prsi"]):
        with pytest.raises(ValueError):
            engine.load(bad)


def test_legal_actions_are_read_only_but_copy_to_plain_dicts() -> None:
    s = game(BASIC, top="9h")
    legal = engine.legal_actions(s, "a")
    with pytest.raises(TypeError):
        legal[0]["card"] = "Ah"
    copy = dict(legal[0])
    copy["card"] = "Ah"
    assert engine.legal_actions(s, "a")[0]["card"] != "Ah"


# ---------------------------------------------------------------- the computer player


def test_computer_answers_a_seven_with_a_seven() -> None:
    s = game({**BASIC, "a": ["8h", "7d", "9s", "Jd"]}, top="7s")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "7d"}
    s = game({**BASIC, "a": ["8h", "Kh", "9s", "Jd"]}, top="7s")
    assert engine.computer_action(s, "a") == {"a": "draw"}


def test_computer_answers_an_ace_with_an_ace_or_stands() -> None:
    s = game({**BASIC, "a": ["8h", "Ac", "9s", "Jd"]}, top="Ah")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "Ac"}
    s = game(BASIC, top="Ah")
    assert engine.computer_action(s, "a") == {"a": "stand"}


def test_computer_sheds_high_points_and_keeps_sevens_aces_and_queens() -> None:
    s = game({**BASIC, "a": ["7h", "Ah", "Qh", "Jh"], "c": ["8d", "Ad", "9c", "8s"]}, top="9h")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "Jh"}
    s = game({**BASIC, "a": ["Jh", "10h", "Kc", "8c"], "b": ["9d", "Kd", "7c", "As"],
              "c": ["7h", "Ad", "9c", "8s"]}, top="9h")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "10h"}


def test_computer_attacks_a_next_player_down_to_one_card_with_a_seven() -> None:
    s = game({**BASIC, "a": ["7h", "Kh", "Kc", "8c"]}, top="9h")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "Kh"}
    s = replace(s, hands=(s.hands[0], ("Kd",), s.hands[2]))
    assert engine.computer_action(s, "a") == {"a": "play", "card": "7h"}


def test_computer_plays_a_queen_late_naming_its_longest_suit() -> None:
    s = game({**BASIC, "a": ["Qh", "8c", "Kc", "9s"]}, top="10d")
    assert engine.computer_action(s, "a") == {"a": "play", "card": "Qh", "suit": "c"}
    engine.apply(s, "a", engine.computer_action(s, "a"))


def test_computer_acts_only_on_its_turn_and_is_deterministic() -> None:
    s = game(BASIC, top="9h")
    assert engine.computer_action(s, "b") is None
    assert engine.computer_action(s, "a") == engine.computer_action(s, "a")
    assert engine.awaiting(s) == ["a"]
