"""Prší table variants (RULES.md PV1–PV9): what the conformance cases in tests/cases cannot
reach (a pass with nothing to draw, bad options, dumps, views), and a random-play oracle
over random combinations of variants, written from RULES.md apart from the engine."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import engine
from engine import prsi, prsi_variants
from engine.__main__ import play_out, replay_case
from engine.cards import PRSI_PACK
from engine.errors import Rejected

VARIANTS = prsi_variants.VARIANTS
PACK = Counter(PRSI_PACK)


def make_deck(players: list[str], dealer: str, hands: dict[str, list[str]], top: str,
              stock: list[str] | tuple[str, ...] = ()) -> list[str]:
    size = len(hands[players[0]])
    k, d = len(players), players.index(dealer)
    order = [hands[players[(d + 1 + j) % k]][j // k] for j in range(size * k)]
    used = [*order, top, *stock]
    assert len(set(used)) == len(used)
    return used + [c for c in PRSI_PACK if c not in used]


def game(variants: list[str], hands: dict[str, list[str]], top: str, stock: list[str] | tuple[str, ...] = ()
         ) -> prsi.PrsiState:
    players = list(hands)
    return engine.new_game("prsi", players, dealer=players[-1], options={"variants": variants},
                           decks=[make_deck(players, players[-1], hands, top, stock)])


def code(s: prsi.PrsiState, seat: str, action: dict[str, Any]) -> str:
    before = engine.dump(s)
    with pytest.raises(Rejected) as exc:
        engine.apply(s, seat, action)
    assert engine.dump(s) == before
    return exc.value.code


def drained(s: prsi.PrsiState) -> prsi.PrsiState:
    """``s`` with the stock and the discard pile under the top card moved into c's hand: nothing to draw."""
    i = s.players.index("c")
    hands = list(s.hands)
    hands[i] = hands[i] + s.stock + s.discard[:-1]
    return replace(s, hands=tuple(hands), stock=(), discard=s.discard[-1:])


# ---------------------------------------------------------------- setting up


def test_options_turn_variants_on_and_house_rules_stay_without() -> None:
    house = engine.new_game("prsi", ["a", "b"], seed=3)
    assert house.vx is None
    assert "variants" not in engine.observer(house) and "variants" not in engine.view(house, "a")
    s = engine.new_game("prsi", ["a", "b"], seed=3, options={"variants": ["PV6", "PV1", "PV6"]})
    assert engine.observer(s)["variants"] == ["PV1", "PV6"]
    assert engine.view(s, None)["variants"] == ["PV1", "PV6"]


def test_an_empty_variants_list_is_shown_and_plays_the_house_rules() -> None:
    """FORMAT.md: a table given ``options.variants`` shows ``variants`` in its observer state, an
    empty list too (``"variants": []``); with none on it plays exactly the house rules (P1–P14)."""
    house = engine.new_game("prsi", ["a", "b", "c"], seed=3)
    empty = engine.new_game("prsi", ["a", "b", "c"], seed=3, options={"variants": []})
    assert engine.observer(empty) == {**engine.observer(house), "variants": []}
    assert engine.view(empty, "a")["variants"] == [] and engine.view(empty, None)["variants"] == []
    out = replay_case({"game": "prsi", "players": ["a", "b"], "seed": 4, "options": {"variants": []}, "actions": []})
    assert out["state"]["variants"] == [] and "out_pending" not in out["state"]
    for _ in range(400):  # the same match move by move: states, events and the computer's choices
        if house.over:
            break
        seat = house.to_move
        assert engine.legal_actions(empty, seat) == engine.legal_actions(house, seat)
        action = engine.computer_action(house, seat)
        assert engine.computer_action(empty, seat) == action
        h, e = engine.apply(house, seat, action), engine.apply(empty, seat, action)
        assert h.events == e.events
        house, empty = h.state, e.state
        assert engine.observer(empty) == {**engine.observer(house), "variants": []}
        assert engine.load(json.loads(json.dumps(engine.dump(empty)))) == empty
    assert house.over and empty.over and empty.balances == house.balances


@pytest.mark.parametrize("options", [{"variants": ["PV8"]}, {"variants": ["pv1"]}, {"variants": "PV1"},
                                     {"variants": [1]}, {"colour": "red"}, ["PV1"]])
def test_bad_options_are_refused(options: Any) -> None:
    with pytest.raises(ValueError):
        engine.new_game("prsi", ["a", "b"], seed=1, options=options)


def test_penki_takes_no_variants() -> None:
    with pytest.raises(ValueError):
        engine.new_game("penki", ["a", "b", "c"], seed=1, options={"variants": ["PV1"]})


@pytest.mark.parametrize("count", [2, 3, 4, 5])
def test_pv4_deals_six_each_in_every_round(count: int) -> None:
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, seed=11, options={"variants": ["PV4"]})
    assert [len(h) for h in s.hands] == [6] * count
    assert len(s.stock) == 32 - 6 * count - 1
    s, _ = play_out_state(s, 1)
    assert s.round == 2 and [len(h) for h in s.hands] == [6] * count


def play_out_state(s: prsi.PrsiState, rounds: int) -> tuple[prsi.PrsiState, int]:
    """Computer play until ``rounds`` more rounds have been dealt (or the match ends)."""
    target = s.round + rounds
    n = 0
    while not s.over and s.round < target:
        s = engine.apply(s, s.to_move, engine.computer_action(s, s.to_move)).state
        n += 1
    return s, n


def test_replay_handles_options_and_the_cli_rejects_bad_variants(tmp_path) -> None:
    case = {"game": "prsi", "players": ["a", "b"], "seed": 4, "options": {"variants": ["PV2", "PV7"]},
            "actions": []}
    out = replay_case(case)
    assert out["state"]["variants"] == ["PV2", "PV7"] and out["state"]["out_pending"] is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**case, "options": {"variants": ["PV9"]}}))
    assert engine.__main__.main(["replay", str(bad)]) == 2


# ---------------------------------------------------------------- rules the cases cannot reach


def test_pv3_a_player_left_with_a_seven_passes_when_nothing_can_be_drawn() -> None:
    s = game(["PV3"], {"a": ["9h", "Kc", "Jd", "8s"], "b": ["7h", "Qc", "Qd", "Qs"], "c": ["10h", "9c", "9d", "9s"]}, "8h")
    s = engine.apply(s, "a", {"a": "play", "card": "9h"}).state
    b = s.players.index("b")
    s = drained(replace(s, hands=(*s.hands[:b], ("7h",), *s.hands[b + 1:])))
    assert engine.legal_actions(s, "b") == [{"a": "pass"}]  # 7h fits but may not be the last card
    assert code(s, "b", {"a": "play", "card": "7h"}) == "illegal"
    assert code(s, "b", {"a": "draw"}) == "illegal"
    t = engine.apply(s, "b", {"a": "pass"}).state
    assert t.to_move == "c" and t.hand("b") == ("7h",)


def test_pv3q_a_queen_may_always_be_the_last_card_and_a_pass_needs_no_playable_card() -> None:
    s = game(["PV3q"], {"a": ["9h", "Kc", "Jd", "8s"], "b": ["Qc", "7c", "8d", "9s"], "c": ["10h", "9c", "9d", "Ks"]}, "8h")
    b = s.players.index("b")
    s = drained(replace(engine.apply(s, "a", {"a": "play", "card": "9h"}).state,
                        hands=(s.hands[0][1:], ("Qc",), s.hands[2])))
    assert s.hands[b] == ("Qc",)
    assert engine.legal_actions(s, "b") == [{"a": "play", "card": "Qc"}]
    assert code(s, "b", {"a": "pass"}) == "illegal"  # P10: who can play must play
    t = engine.apply(s, "b", {"a": "play", "card": "Qc"}).state
    assert t.round == 2 and t.round_points["b"] == 0


def test_a_group_needs_pv4_and_a_jack_names_a_rank_only_with_pv5() -> None:
    hands = {"a": ["9h", "9c", "Jh", "8s"], "b": ["7h", "Qc", "Qd", "Qs"], "c": ["10h", "Kc", "9d", "9s"]}
    s = game(["PV1"], hands, "8h")
    assert code(s, "a", {"a": "play", "cards": ["9h", "9c"]}) == "bad_action"  # no card: as any play without one
    t = engine.apply(s, "a", {"a": "play", "card": "Jh", "rank": "A"}).state  # an ordinary Jack: rank ignored
    assert t.vx.named_rank is None and t.suit == "h"
    assert engine.apply(t, "b", {"a": "play", "card": "7h"}).state.top == "7h"


@pytest.mark.parametrize("variants", [None, [], ["PV1"], ["PV5"], ["PV2", "PV3", "PV6", "PV7"]])
@pytest.mark.parametrize("junk", [{"cards": ["9h", "9c"]}, {"cards": []}, {"cards": "9c"}, {"cards": [7, None]},
                                  {"cards": ["9c"], "rank": "A", "suit": "s"}, {"suit": "x"}, {"rank": ["K"]}])
def test_pv9_8_fields_of_a_variant_that_is_off_are_no_fields(variants: list[str] | None, junk: dict[str, Any]) -> None:
    """PV9.8: without PV4 a play's ``cards`` is ignored (the play is judged by its ``card``), as a
    stray ``suit`` is (on a card that is no Queen) and a Jack's ``rank`` without PV5; a ``play``
    with ``cards`` and no ``card`` is ``bad_action``. The house rules (no options) read it the same way."""
    hands = {"a": ["9h", "9c", "Jh", "8s"], "b": ["7h", "Qc", "Qd", "Qs"], "c": ["10h", "Kc", "9d", "9s"]}
    players = list(hands)
    deck = make_deck(players, players[-1], hands, "8h")
    options = None if variants is None else {"variants": variants}
    s = engine.new_game("prsi", players, dealer=players[-1], options=options, decks=[deck])
    plain = {"a": "play", "card": "9h"}
    want = engine.apply(s, "a", plain)
    got = engine.apply(s, "a", {**plain, **junk})
    assert got.events == want.events and engine.dump(got.state) == engine.dump(want.state)
    assert "cards" not in got.events[0] and got.state.top == "9h" and got.state.hand("a") == ("9c", "Jh", "8s")
    if "rank" not in junk and (variants is None or "PV5" not in variants):  # a Jack's rank: no field without PV5
        jack = engine.apply(s, "a", {"a": "play", "card": "Jh", "rank": "A", **junk})
        assert jack.events == engine.apply(s, "a", {"a": "play", "card": "Jh"}).events
    if "cards" in junk:
        assert code(s, "a", {k: v for k, v in {**plain, **junk}.items() if k != "card"}) == "bad_action"
    # The other reasons come in their order, as for the play without the stray fields.
    assert code(s, "b", {"a": "play", "card": "7h", **junk}) == "not_your_turn"
    assert code(s, "a", {"a": "play", "card": "10h", **junk}) == "not_in_hand"
    assert code(s, "a", {"a": "play", "card": "9c", **junk}) == "illegal"


def test_pv4_any_order_of_a_groups_middle_cards_is_accepted_and_kept() -> None:
    s = game(["PV4"], {"a": ["9h", "9c", "9s", "9d", "8d", "10d"], "b": ["Kc", "7d", "Jd", "10s", "8s", "Jh"],
                       "c": ["Ac", "Ad", "7s", "Js", "Qh", "8c"]}, "8h")
    listed = [a["cards"] for a in engine.legal_actions(s, "a") if "cards" in a and len(a["cards"]) == 4]
    assert ["9h", "9c", "9s", "9d"] in listed and ["9h", "9s", "9c", "9d"] not in listed
    t = engine.apply(s, "a", {"a": "play", "cards": ["9h", "9s", "9c", "9d"]}).state
    assert t.discard == ("8h", "9h", "9s", "9c", "9d") and t.suit == "d"


def test_pv7_the_drawn_card_is_shown_only_to_its_drawer() -> None:
    s = game(["PV7"], {"a": ["Kc", "9d", "10s", "Js"], "b": ["10c", "Jd", "8d", "9c"], "c": ["7c", "Kh", "10d", "Jc"]},
             "8h", stock=["9h"])
    t = engine.apply(s, "a", {"a": "draw"}).state
    assert engine.view(t, "a")["drawn"] == "9h" and engine.view(t, "a")["drawn_pending"]
    for seat in ("b", "c", None):
        v = engine.view(t, seat)
        assert v["drawn"] is None and v["drawn_pending"] and "9h" not in json.dumps(v)
    assert engine.legal_actions(t, "a") == [{"a": "play", "card": "9h"}, {"a": "pass"}]


def test_pv5_named_rank_is_in_views_and_dumps() -> None:
    s = game(["PV5"], {"a": ["Jh", "10c", "Kd", "8s"], "b": ["10h", "7d", "8d", "Ac"], "c": ["9c", "Kc", "10d", "Js"]}, "8h")
    t = engine.apply(s, "a", {"a": "play", "card": "Jh", "rank": "9"}).state
    assert engine.view(t, "b")["named_rank"] == "9" and t.last[-1] == {"a": "play", "seat": "a", "card": "Jh", "rank": "9"}
    assert engine.load(json.loads(json.dumps(engine.dump(t)))) == t
    assert [a for a in engine.legal_actions(t, "b") if a["a"] == "play"] == []  # no 9, Queen or Jack


def test_pv2_events_tell_who_is_back() -> None:
    s = game(["PV2"], {"a": ["9h", "Kc", "Jd", "8s"], "b": ["7h", "Qc", "Qd", "Qs"], "c": ["10h", "9c", "9d", "9s"]}, "8h")
    a = s.players.index("a")
    s = replace(s, hands=(("9h",), *s.hands[a + 1:]))
    t, ev = engine.apply(s, "a", {"a": "play", "card": "9h"})
    assert [e["a"] for e in ev] == ["play"] and t.vx.out_pending == "a" and engine.view(t, None)["out_pending"] == "a"
    u, ev = engine.apply(t, "b", {"a": "play", "card": "7h"})
    assert [e["a"] for e in ev] == ["play", "back", "draw"] and ev[1] == {"a": "back", "seat": "a"}
    assert len(u.hand("a")) == 2 and u.to_move == "c"


# ---------------------------------------------------------------- the random-play oracle


def fits(s: prsi.PrsiState, on: set[str], named: str | None, card: str) -> bool:
    """RULES.md P5–P8 with PV1, PV5, PV6 and PV9.1, from scratch."""
    rank, top = card[:-1], s.discard[-1]
    if s.pending_draw:
        if "PV1" in on:
            return False
        if top[:-1] == "K":  # a Ks debt (PV6, also a group of Kings holding Ks)
            return card == "7s"
        return rank == "7" or ("PV6" in on and top == "7s" and card == "Ks")
    if s.pending_skip:
        return rank == "A"
    if rank == "Q" or ("PV5" in on and rank == "J"):
        return True
    if named is not None:
        return rank == named
    return card[-1] == s.suit or rank == top[:-1]


def finishes(on: set[str], rank: str) -> bool:
    """PV3, PV3q: may ``rank`` be a last card?"""
    if "PV3q" in on:
        return rank == "Q"
    return "PV3" not in on or rank not in ("7", "A")


def expected_singles(s: prsi.PrsiState) -> set[str]:
    vx = s.vx
    on, hand = set(vx.on), s.hands[s.players.index(s.to_move)]
    if vx.out_pending is not None:  # PV2: only 7h, when it fits (PV9.4)
        ok = ("PV1" not in on and s.discard[-1][0] == "7") if s.pending_draw else (
            s.suit == "h" or s.discard[-1][0] == "7")
        return {"7h"} if "7h" in hand and ok and (len(hand) > 1 or finishes(on, "7")) else set()
    if vx.drawn is not None:  # PV7
        return {vx.drawn}
    return {c for c in hand if fits(s, on, vx.named_rank, c) and (len(hand) > 1 or finishes(on, c[:-1]))}


def check(s: prsi.PrsiState) -> None:
    assert Counter([c for h in s.hands for c in h] + list(s.stock) + list(s.discard)) == PACK
    assert engine.load(json.loads(json.dumps(engine.dump(s)))) == s
    if s.over:
        assert all(engine.legal_actions(s, p) == [] for p in s.players)
        assert sum(s.balances.values()) == 0
        return
    seat, vx = s.to_move, s.vx
    legal = engine.legal_actions(s, seat)
    singles = {a["card"] for a in legal if a["a"] == "play" and "cards" not in a}
    assert singles == expected_singles(s)
    groups = [a for a in legal if "cards" in a]
    if groups:
        assert "PV4" in vx.on and vx.out_pending is None and vx.drawn is None
    for a in groups:
        cards = a["cards"]
        assert (len({c[:-1] for c in cards}) == 1 and cards[0] in singles) or (
            len(cards) == len(s.hand(seat)) and fits(s, set(vx.on), vx.named_rank, cards[0]))
    kinds = {a["a"] for a in legal if a["a"] != "play"}
    drawable = bool(s.stock) or len(s.discard) > 1
    if vx.out_pending is not None or vx.drawn is not None:
        assert kinds == {"pass"}
    elif s.pending_skip:
        assert kinds == {"stand"}
    elif s.pending_draw:
        assert kinds == {"draw"}
    else:
        assert kinds == ({"draw"} if drawable else set() if singles else {"pass"})
    for a in legal:
        engine.apply(s, seat, a)
    for kind in {"draw", "stand", "pass"} - kinds:
        with pytest.raises(Rejected) as exc:
            engine.apply(s, seat, {"a": kind})
        assert exc.value.code == "illegal"
    for c in s.hand(seat):
        if c not in singles:
            with pytest.raises(Rejected) as exc:
                engine.apply(s, seat, {"a": "play", "card": c, "suit": "h", "rank": "A"})
            assert exc.value.code == "illegal"
    assert engine.computer_action(s, seat) in legal
    for p in s.players:
        if p != seat:
            assert engine.legal_actions(s, p) == [] and engine.computer_action(s, p) is None
    # S3: no view shows a card hidden from its viewer.
    public = {s.discard[-1]} | {c for e in s.last for c in e.get("cards", [e.get("card")]) if c}
    for viewer in (*s.players, None):
        v = json.dumps(engine.view(s, viewer))
        own = set(s.hand(viewer)) if viewer else set()
        hidden = (set(PRSI_PACK) - own - public)
        assert not any(f'"{c}"' in v for c in hidden), viewer


def check_step(s: prsi.PrsiState, t: prsi.PrsiState, action: dict[str, Any],
               events: list[dict[str, Any]] | None = None) -> None:
    """One accepted action inside a round (P5–P10 with the variants); ``events``: the step's."""
    seat = s.to_move
    i = s.players.index(seat)
    nxt = s.players[(i + 1) % len(s.players)]
    on, vx = set(s.vx.on), s.vx
    if action["a"] == "play":
        cards = action.get("cards") or [action["card"]]
        if any(e.get("a") == "turnover" for e in events or ()):
            # PV2: the player brought back drew the pending chain through a short stock, so
            # the pile under the played card was turned over (P9) in the same step
            assert vx.out_pending is not None and t.discard == (cards[-1],)
        else:
            assert t.discard == s.discard + tuple(cards)
        assert t.top == cards[-1]
        if vx.out_pending is not None:  # PV2: the one who went out is back and draws
            back = s.players.index(vx.out_pending)
            assert len(t.hands[back]) <= s.pending_draw + 2 and t.pending_draw == 0
            assert t.to_move == nxt
            return
        rank = cards[0][:-1]
        add = 2 * len(cards) if rank == "7" else 4 if ("PV6" in on and rank == "K" and "Ks" in cards) else 0
        out = not t.hands[i]  # P11: a last Ace is not active, a last Jack names nothing; PV2 waits
        assert t.pending_draw == s.pending_draw + add
        assert t.pending_skip == (rank == "A" and not out)
        assert t.suit == action.get("suit", cards[-1][-1])
        assert t.vx.named_rank == (action.get("rank") if "PV5" in on and rank == "J" and not out else None)
        assert t.to_move == nxt and t.vx.out_pending == (seat if out else None)
    elif action["a"] == "draw":
        want = s.pending_draw or 1
        supply = [*s.stock, *s.discard[:-1]]
        assert t.hands[i] == s.hands[i] + tuple(supply[:want])
        if not s.pending_draw and "PV7" in on and fits(t, on, vx.named_rank, t.hands[i][-1]):
            assert t.to_move == seat and t.vx.drawn == t.hands[i][-1]
        else:
            assert t.to_move == nxt and t.vx.drawn is None
    else:
        assert t.to_move == nxt and t.hands == s.hands


JUNK: tuple[Any, ...] = ("9h", "Qs", [], ["Ah"], ["7h", "7d"], ["Zz"], [1, None], "x", 10, None, {"k": 1}, "A", "Q")


def with_stray_fields(rng: random.Random, on: frozenset[str], action: dict[str, Any]) -> dict[str, Any]:
    """``action`` with junk in fields of variants that are off (PV9.8): ``cards`` without PV4,
    ``rank`` where the action names no rank (no PV5 Jack), ``suit`` where it names no suit."""
    out = dict(action)
    if "PV4" not in on and rng.random() < 0.5:
        out["cards"] = rng.choice(JUNK)
    if "rank" not in action and rng.random() < 0.4:
        out["rank"] = rng.choice(JUNK)
    if "suit" not in action and rng.random() < 0.4:
        out["suit"] = rng.choice(JUNK)
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), count=st.integers(2, 5),
       variants=st.lists(st.sampled_from(VARIANTS), unique=True), computer=st.floats(0, 1))
@example(seed=1321816604, count=4, variants=["PV7", "PV4", "PV2"], computer=0.5499944669940258)  # 7h brings back
@example(seed=7, count=3, variants=["PV1", "PV5"], computer=0.3)  # stray cards beside card (PV9.8)
def test_random_play_with_variants_follows_the_rules(seed: int, count: int, variants: list[str], computer: float) -> None:
    """Random legal play over random variant combinations (none too) against the oracle; every
    chosen action goes with junk in the fields of variants that are off (PV9.8), and is judged
    exactly as the same action without them."""
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(count)]
    s = engine.new_game("prsi", players, dealer=rng.choice(players), seed=seed, options={"variants": variants})
    for _ in range(700):
        check(s)
        if s.over:
            break
        legal = engine.legal_actions(s, s.to_move)
        action = engine.computer_action(s, s.to_move) if rng.random() < computer else rng.choice(legal)
        before = engine.dump(s)
        clean = engine.apply(s, s.to_move, action)
        out = engine.apply(s, s.to_move, with_stray_fields(rng, s.vx.on, action))
        assert out.events == clean.events and engine.dump(out.state) == engine.dump(clean.state)
        t = out.state
        assert engine.dump(s) == before and t.version == s.version + 1
        if t.round == s.round and not t.over:
            check_step(s, t, action, out.events)
        s = t


@pytest.mark.parametrize("variants", [[v] for v in VARIANTS] + [list(VARIANTS), ["PV1", "PV2", "PV6"],
                                                                 ["PV2", "PV3q", "PV4"], ["PV4", "PV5", "PV7"]])
def test_computer_players_finish_matches_with_variants(variants: list[str]) -> None:
    for seed in range(6):
        players = ["a", "b", "c"] if seed % 2 else ["a", "b", "c", "d", "e"]
        s = engine.new_game("prsi", players, seed=seed, options={"variants": variants})
        s, n = play_out_state(s, 99)
        assert s.over and n < 5000 and sum(s.balances.values()) == 0
        assert s.vx.names() == [v for v in VARIANTS if v in variants]


def test_play_out_stays_the_house_game() -> None:
    s, _ = play_out("prsi", ["a", "b", "c"], 5)
    assert s.over and s.vx is None
