"""Computer players at three levels (engine/players.py, issue 14).

* Never peeks: every level's decision is a function of the seat's view and the
  public log only. Over random games, the hidden cards (stock, stumps, the other
  hands) are dealt out again in many ways consistent with the view, the blunder
  window and owed declarations (hidden too, S3) are cleared, and the decision
  (seeded) stays the same for every level; handing a player the state is refused.
* Every decision is accepted by the engine at the real state: turn actions, and
  callouts deduced from the log alone («ЗЕВОК!» only with a window open, R6;
  «СКОЛЬКО КАРТ?» only with a declaration owed, R18; «ОДНА КАРТА!» only when owed, R17).
* The levels differ as the issue says: the beginner blunders (R5) at its tunable
  rate and forgets declarations; the expert never blunders; reaction times are a
  distribution, callouts on someone never earlier than a human could react.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

import engine
from engine import arena, players
from engine.players import CALL_FLOOR, LEVELS, Decision, Level, Memory, decide

LEVEL_NAMES = ("beginner", "regular", "expert")
SEATS = ("a", "b", "c")
# The expert's search, cut down so that the tests stay quick; still a real search.
QUICK = {name: replace(lv, iterations=min(lv.iterations, 16), penki_iterations=min(lv.penki_iterations, 6))
         for name, lv in LEVELS.items()}


def positions(game: str, seed: int, steps: int = 400, every: int = 3) -> list[tuple[Any, list[dict[str, Any]]]]:
    """(state, public log) snapshots of a game driven by the players of mixed levels,
    with random legal actions and blunders mixed in so that callouts come up."""
    rng = random.Random(seed)
    state = engine.new_game(game, list(SEATS), seed=seed)
    log: list[dict[str, Any]] = [dict(e) for e in state.last]
    out = []
    levels = dict(zip(SEATS, ("beginner", "regular", "beginner"), strict=True))
    for step in range(steps):
        if state.over:
            break
        if step % every == 0:
            out.append((state, list(log)))
        wants = []
        for s in SEATS:
            d = decide(engine.view(state, s), log, level=QUICK[levels[s]], seed=seed)
            if d is not None:
                wants.append((d.delay, s, d.action))
        awaited = engine.awaiting(state)
        if awaited and rng.random() < 0.25:
            s = rng.choice(awaited)
            legal = engine.legal_actions(state, s)
            action = rng.choice(legal) if legal else None
        elif wants:
            _, s, action = min(wants, key=lambda w: (w[0], w[1]))
        else:
            break
        if action is None:
            continue
        res = engine.apply(state, s, action)
        state = res.state
        log.extend(res.events)
    return out


def redealt(state: Any, seat: str, rng: random.Random) -> Any:
    """``state`` with every card hidden from ``seat`` dealt out again, counts kept, and the
    hidden flags (a blunder window, owed declarations) cleared."""
    others = [p for p in state.players if p != seat]
    if state.game == "prsi":
        pool = [*state.stock, *(c for p in others for c in state.hand(p))]
        rng.shuffle(pool)
        it = iter(pool)
        hands = tuple(h if p == seat else tuple(next(it) for _ in h)
                      for p, h in zip(state.players, state.hands, strict=True))
        return replace(state, hands=hands, stock=tuple(next(it) for _ in state.stock))
    pool = [*state.stock, *(c for p in state.players for c in state.stumps[p]),
            *(c for p in others for c in state.hands[p])]
    rng.shuffle(pool)
    it = iter(pool)
    stumps = {p: tuple(next(it) for _ in state.stumps[p]) for p in state.players}
    hands = {p: state.hands[p] if p == seat else tuple(next(it) for _ in state.hands[p]) for p in state.players}
    return replace(state, stock=tuple(next(it) for _ in state.stock), stumps=stumps, hands=hands,
                   zevok=None, owes=())


@pytest.mark.parametrize("game", ["prsi", "penki"])
def test_never_peeks_same_decision_for_any_consistent_redeal(game):
    rng = random.Random(7)
    checked = searched = 0
    for seed in (1, 2):
        for state, log in positions(game, seed, every=5):
            for seat in SEATS:
                view = engine.view(state, seat)
                for name in LEVEL_NAMES:
                    first = decide(view, log, level=QUICK[name], seed=seed)
                    searched += bool(first and first.searched)
                    for _ in range(2):
                        other = redealt(state, seat, rng)
                        assert engine.view(other, seat) == view  # consistent with what the seat sees
                        again = decide(engine.view(other, seat), log, level=QUICK[name], seed=seed)
                        assert again == first, (name, seat, state.version)
                    checked += 1
    assert checked > 100 and searched > 5  # the expert did search on most of its turns


def test_a_player_cannot_be_handed_the_state():
    state = engine.new_game("prsi", list(SEATS), seed=3)
    with pytest.raises(TypeError):
        decide(state, [], level="expert")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decide(engine.observer(state), [], level="regular")


@pytest.mark.parametrize("game", ["prsi", "penki"])
@pytest.mark.parametrize("name", LEVEL_NAMES)
def test_every_decision_is_accepted_by_the_engine(game, name):
    """Turn actions come from ``legal``; callouts are deduced from the log and must be due."""
    kinds: dict[str, int] = {}
    for seed in (3, 4, 5):
        for state, log in positions(game, seed, every=1):
            for seat in SEATS:
                d = decide(engine.view(state, seat), log, level=QUICK[name], seed=seed)
                if d is None:
                    continue
                engine.apply(state, seat, d.action)  # raises Rejected if the player got it wrong
                kinds[d.action["a"]] = kinds.get(d.action["a"], 0) + 1
    if game == "penki":
        assert {"zevok", "how_many", "one_card"} & set(kinds)  # the callouts were exercised


def test_penki_callouts_follow_the_hidden_flags_exactly():
    """From the log alone, a seat sees an open «ЗЕВОК!» window or an owed declaration
    exactly when the state holds one (an expert that notices everything)."""
    seen_window = seen_debt = 0
    watchful = replace(QUICK["expert"], notice=1.0)
    for seed in range(6, 12):
        for state, log in positions("penki", seed, every=1):
            for seat in SEATS:
                d = decide(engine.view(state, seat), log, level=watchful, seed=seed)
                call = d.action["a"] if d is not None else None
                window = state.zevok is not None and state.zevok != seat and state.phase == 1
                assert (call == "zevok") == window
                if state.phase == 2 and not state.over:
                    owes_me = seat in state.owes
                    others = any(p != seat for p in state.owes)
                    assert (call == "one_card") == owes_me
                    if not owes_me:
                        assert (call == "how_many") == others
                    seen_debt += owes_me or others
                seen_window += window
    assert seen_window > 3 and seen_debt > 3


def test_memory_reads_only_the_new_tail_and_restarts_on_another_log():
    state = engine.new_game("penki", list(SEATS), seed=5)
    log: list[dict[str, Any]] = []
    mem = Memory("penki", "a", SEATS)
    for _ in range(60):
        seat = engine.awaiting(state)[0]
        res = engine.apply(state, seat, engine.legal_actions(state, seat)[0])
        state = res.state
        log.extend(res.events)
        mem.update(log)
        fresh = Memory("penki", "a", SEATS).update(log)
        assert mem.piles == fresh.piles and mem.window == fresh.window and mem.read == len(log)
    other = engine.new_game("penki", list(SEATS), seed=6)
    res = engine.apply(other, "a", {"a": "draw"})
    mem.update(list(res.events))
    assert mem.read == 1 and mem.piles == Memory("penki", "a", SEATS).update(res.events).piles


def test_a_short_log_still_gives_legal_decisions():
    """Given only the view's ``last`` events a player remembers less but stays legal."""
    for game in ("prsi", "penki"):
        for state, _log in positions(game, 13, every=2):
            for seat in SEATS:
                d = decide(engine.view(state, seat), None, level=QUICK["expert"], seed=1)
                if d is not None and d.action["a"] not in players.CALLOUTS:
                    engine.apply(state, seat, d.action)


def test_penki_blunder_rate_is_tunable():
    """R5: the beginner blunders at its rate; at 0 nobody ever blunders, at 1 it blunders
    at every chance, so «ЗЕВОК!» can be called on it (and is, by the others)."""
    never = replace(LEVELS["beginner"], blunder=0.0, slip=0.0)
    always = replace(LEVELS["beginner"], blunder=1.0)
    calm = sum(arena.play("penki", {"a": never, "b": "regular", "c": "regular"}, s).stats["a"].blunders
               for s in range(12))
    res = [arena.play("penki", {"a": always, "b": "expert", "c": "regular"}, s) for s in range(4)]
    assert calm == 0
    assert sum(r.stats["a"].blunders for r in res) >= 8
    assert sum(r.stats["b"].calls for r in res) > 0  # the others call «ЗЕВОК!» on it


def test_expert_never_blunders_and_regular_rarely():
    stats = [arena.play("penki", {"a": QUICK["expert"], "b": "regular", "c": "beginner"}, s).stats
             for s in range(5)]
    assert sum(st["a"].blunders for st in stats) == 0
    assert sum(st["c"].blunders for st in stats) > sum(st["b"].blunders for st in stats)


def test_beginner_forgets_declarations_the_expert_never_does():
    forgetful = replace(LEVELS["beginner"], forget=1.0)
    forgot = declared = 0
    for s in range(10):
        st = arena.play("penki", {"a": forgetful, "b": QUICK["expert"], "c": "regular"}, s).stats
        forgot += st["a"].declared == 0 and st["a"].debts > 0
        assert st["a"].declared == 0
        declared += st["b"].declared
        assert st["b"].missed <= st["b"].debts - st["b"].declared
    assert declared > 0 and forgot > 0


def test_reaction_times_are_a_distribution_and_callouts_wait_for_a_human():
    rng = random.Random(1)
    for lv in LEVELS.values():
        for delay in (lv.move, lv.forced, lv.declare, lv.call):
            xs = [delay.sample(rng) for _ in range(300)]
            assert min(xs) >= delay.lo and max(xs) <= delay.hi
            assert len(set(xs)) > 100  # not a constant
        assert lv.call.lo >= CALL_FLOOR  # issue 24: never before a human could have declared


def test_same_seed_same_decision_other_seed_may_differ():
    state = engine.new_game("prsi", list(SEATS), seed=21)
    view = engine.view(state, state.to_move)
    d1 = decide(view, list(state.last), level="regular", seed=5)
    d2 = decide(view, list(state.last), level="regular", seed=5)
    assert isinstance(d1, Decision) and d1 == d2
    delays = {decide(view, list(state.last), level="regular", seed=k).delay for k in range(20)}
    assert len(delays) > 10


def test_level_is_a_name_or_a_level():
    state = engine.new_game("penki", list(SEATS), seed=2)
    view = engine.view(state, "a")
    assert decide(view, [], level="beginner", seed=1).action in view["legal"]
    assert isinstance(LEVELS["regular"], Level)
    with pytest.raises(KeyError):
        decide(view, [], level="grandmaster", seed=1)


@pytest.mark.parametrize("game", ["prsi", "penki"])
def test_memory_round_trips_through_json_and_feeds_incrementally(game):
    import json

    for state, log in positions(game, 17, every=10):
        whole = Memory(game, "a", SEATS).update(log)
        half = len(log) // 2
        fed = Memory(game, "a", SEATS).feed(log[:half])
        fed = Memory.from_dict(json.loads(json.dumps(fed.to_dict()))).feed(log[half:])
        assert fed.to_dict() == whole.to_dict()
        view = engine.view(state, "a")
        assert decide(view, log, level=QUICK["expert"], seed=3, memory=fed) == decide(
            view, log, level=QUICK["expert"], seed=3)


@pytest.mark.parametrize("variants", [["PV1"], ["PV2", "PV7"], ["PV3q", "PV4"], ["PV5", "PV6"], ["PV2", "PV4", "PV5", "PV7"]])
def test_every_level_plays_prsi_variants_through_legal_actions(variants):
    """PV1–PV7 come for free: turn actions are taken from ``legal``, the expert's deals carry
    the table's variants; every decision is accepted (a refused one raises) and play goes on."""
    ended = 0
    for name in LEVEL_NAMES:
        state = engine.new_game("prsi", list(SEATS), seed=3, options={"variants": variants})
        log = [dict(e) for e in state.last]
        mems = {s: Memory("prsi", s, SEATS) for s in SEATS}
        for _ in range(600):
            if state.over:
                ended += 1
                break
            seat = engine.awaiting(state)[0]
            d = decide(engine.view(state, seat), log, level=QUICK[name], seed=1, memory=mems[seat])
            res = engine.apply(state, seat, d.action)
            state = res.state
            log.extend(res.events)
    assert ended >= 1 or variants == ["PV3q", "PV4"]  # PV3q rounds can run long


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_prsi_fast_playout_is_the_engine_playout(seed):
    # The expert's house-rules playouts on plain lists follow P5–P12 and the regular heuristic
    # exactly as engine.apply and engine.computer_action do: same round balance, every option.
    compared = 0
    for state, _log in positions("prsi", seed, steps=300, every=2):
        me = state.to_move
        if me is None:
            continue
        ids = list(state.players)
        for action in engine.legal_actions(state, me):
            out = engine.apply(state, me, action)
            ends = [e for e in out.events if e["a"] == "round_end"]
            if ends:
                rp = ends[0]["round_points"]
                want = float(sum(v - rp[me] for p, v in rp.items() if p != me))
            else:
                want, _ = players._prsi_rollout(out.state, me)
            got, _ = players._fs_round([list(h) for h in state.hands], list(state.stock), list(state.discard),
                                       state.suit, state.pending_draw, state.pending_skip, ids.index(me),
                                       ids.index(me), dict(action), players.ROLLOUT_CAP)
            assert got == want, (state.version, action)
            compared += 1
    assert compared > 50


def test_full_expert_never_peeks_and_is_deterministic():
    # The expert at its real budget (a count of simulated actions, no clock): the same decision
    # for every consistent redeal, and again on a second call.
    checked = 0
    for game in ("prsi", "penki"):
        for state, log in positions(game, 5, steps=240, every=12):
            for seat in SEATS:
                view = engine.view(state, seat)
                if not players.searches(view, "expert"):
                    continue
                d = decide(view, log, level="expert", seed=9)
                assert d is not None and d.searched > 0
                assert decide(view, log, level="expert", seed=9) == d
                other = redealt(state, seat, random.Random(checked))
                assert decide(engine.view(other, seat), log, level="expert", seed=9) == d
                checked += 1
    assert checked >= 6


def test_prsi_memory_infers_what_a_choice_shows_from_the_public_log_only():
    # Issue 24 item 6: a seat that sheds a Jack where an 8 was on top (hearts in play) shows it
    # held no fitting plain card worth more (the regular heuristic sheds the most points first);
    # a Queen shows nothing else fitted. Read from the public events alone.
    log = [{"a": "deal", "round": 1, "dealer": "c"}, {"a": "play", "seat": "a", "card": "8h"},
           {"a": "play", "seat": "b", "card": "Jh"}]
    mem = Memory("prsi", "c", SEATS).update(log)
    assert mem.lacks["b"] == {"9h", "10h", "Kh", "8s", "8d", "8c"}
    assert mem.since["b"] == [("play", "Jh", None, "h", "8h", 0, False, 4)]
    mem.update([*log, {"a": "play", "seat": "c", "card": "Qs", "suit": "d"}, {"a": "draw", "seat": "a", "n": 1},
                {"a": "play", "seat": "b", "card": "Qh", "suit": "c"}])
    assert {"7d", "8d", "9d", "10d", "Jd", "Kd", "Ad", "Qs"} - {"Qs"} <= mem.lacks["b"]
    assert mem.since["a"][-1] == ("draw", "", 1, "d", "Qs", 0, False, 3) and mem.counts == {"a": 4, "b": 2, "c": 3}


@pytest.mark.parametrize("seed", [4, 9, 11])
def test_prsi_inference_is_true_of_a_regular_seat_and_blind_to_hidden_cards(seed):
    # What the memory infers from choices (lacks, and the choices since a seat's last draw) holds
    # for the real hands of seats that play the regular heuristic without slips; and it is the
    # same whatever the hidden cards are: the expert's deals and decision do not change when the
    # cards the seat cannot see are dealt again (a peek at them would change them).
    steady = replace(LEVELS["regular"], slip=0.0)
    state = engine.new_game("prsi", list(SEATS), seed=seed)
    log = [dict(e) for e in state.last]
    checked = 0
    for step in range(160):
        if state.over:
            break
        seat = state.to_move
        if step % 3 == 0:
            mem = Memory("prsi", seat, SEATS).update(log)
            for p in SEATS:
                if p == seat:
                    continue
                hand = list(state.hand(p))
                assert sum(c in mem.lacks[p] and c not in mem.known[p] for c in hand) <= mem.free[p]
                assert min(players._mismatches(hand, mem.since[p], random.Random(k)) for k in range(300)) == 0
            view = engine.view(state, seat)
            if players.searches(view, "expert"):
                other = redealt(state, seat, random.Random(step))
                world = players._PrsiWorld(view, mem)
                again = players._PrsiWorld(engine.view(other, seat), Memory("prsi", seat, SEATS).update(log))
                assert world.since == again.since and world.lacks == again.lacks and world.pool == again.pool
                assert decide(view, log, level=QUICK["expert"], seed=2) == decide(
                    engine.view(other, seat), log, level=QUICK["expert"], seed=2)
            checked += 1
        d = decide(engine.view(state, seat), log, level=steady, seed=seed)
        res = engine.apply(state, seat, d.action)
        state = res.state
        log.extend(res.events)
    assert checked >= 5
