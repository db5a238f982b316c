"""Computer seats in the store (issue 14): a level per seat from the lobby, the table's public
memory, the expert off the event loop with a fallback, decisions from the view only.

Time is driven with ``tick(now=...)``; every test runs on fakeredis and the real Redis.
"""

from __future__ import annotations

import asyncio
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import engine
from engine.players import LEVELS, Memory
from store import LobbySettings, Seat, StoreError, User
from store.computers import Brains, plan_decision, seat_level, seat_seed, table_memory

ALICE, BOB = User(id=1, name="Alice"), User(id=2, name="Bob")
OFF = LobbySettings(players=3, turn_seconds=None)


async def codes(coro) -> str:
    with pytest.raises(StoreError) as err:
        await coro
    return err.value.code


async def test_lobby_computer_levels_default_regular_cycle_and_reach_the_table(store):
    lobby = await store.create_lobby(chat_id=-10, game="penki", creator=ALICE)
    lobby = await store.add_computer(lobby.id, ALICE.id)
    lobby = await store.add_computer(lobby.id, ALICE.id, level="expert")
    assert [(s.seat, s.level) for s in lobby.seats[1:]] == [("c1", "regular"), ("c2", "expert")]
    lobby = await store.set_computer_level(lobby.id, ALICE.id, "c1")
    assert lobby.seats[1].level == "expert"
    lobby = await store.set_computer_level(lobby.id, ALICE.id, "c1")
    assert lobby.seats[1].level == "beginner"
    lobby = await store.set_computer_level(lobby.id, ALICE.id, "c2", "regular")
    assert lobby.seats[2].level == "regular"
    assert await codes(store.set_computer_level(lobby.id, BOB.id, "c1")) == "not_creator"
    assert await codes(store.set_computer_level(lobby.id, ALICE.id, "u1")) == "invalid"
    assert await codes(store.set_computer_level(lobby.id, ALICE.id, "c1", "grandmaster")) == "invalid"
    assert await codes(store.add_computer(lobby.id, ALICE.id, level="god")) == "invalid"
    table = await store.start(lobby.id, ALICE.id, seed=5)
    assert [(s.seat, s.level) for s in table.seats] == [("u1", None), ("c1", "beginner"), ("c2", "regular")]
    assert await codes(store.set_computer_level(lobby.id, ALICE.id, "c1")) == "started"


def test_seat_level_and_seed():
    assert seat_level({"computer": True, "level": "expert"}) == "expert"
    assert seat_level({"computer": True, "level": None}) == "regular"
    assert seat_level({"computer": False, "auto": True}) == "regular"  # a person in auto (S4)
    doc = {"id": "t1", "seed": 42}
    assert seat_seed(doc, "c1") == seat_seed(dict(doc), "c1") != seat_seed(doc, "c2")


async def test_the_table_keeps_its_public_memory_in_step_with_the_log(store):
    seats = [Seat(seat="u1", user_id=1, name="Alice"), Seat(seat="c1", name="C1", computer=True, level="expert"),
             Seat(seat="c2", name="C2", computer=True, level="beginner")]
    table = await store.create_table(game="penki", seats=seats, settings=OFF, seed=9)
    now = store.clock()
    for _ in range(60):
        table = await store.get_table(table.id)
        if "u1" in engine.awaiting(table.state):
            await store.apply(table.id, "u1", engine.legal_actions(table.state, "u1")[0], now=now)
        else:
            now = max(now, await store.next_due(table.id)) + 0.001
            await store.tick(now=now)
    doc = await store._doc(table.id)
    events = [e for entry in await store.log(table.id) for e in entry["events"]]
    stored = table_memory(doc, engine.load(doc["state"]))
    assert stored.to_dict() == Memory("penki", "", stored.players).update(events).to_dict() | {"first": stored._first}
    assert not stored.partial


def redealt(state, seat: str, rng: random.Random):
    from dataclasses import replace

    others = [p for p in state.players if p != seat]
    pool = [*state.stock, *(c for p in state.players for c in state.stumps[p]),
            *(c for p in others for c in state.hands[p])]
    rng.shuffle(pool)
    it = iter(pool)
    stumps = {p: tuple(next(it) for _ in state.stumps[p]) for p in state.players}
    hands = {p: state.hands[p] if p == seat else tuple(next(it) for _ in state.hands[p]) for p in state.players}
    return replace(state, stock=tuple(next(it) for _ in state.stock), stumps=stumps, hands=hands,
                   zevok=None, owes=())


async def test_store_decisions_never_peek(store):
    """What the store plans and what the worker decides for a computer seat come from the
    seat's view and the table's memory: a consistent redeal of the hidden cards changes nothing."""
    seats = [Seat(seat=f"c{i}", name=f"C{i}", computer=True, level=lv)
             for i, lv in enumerate(("beginner", "regular", "expert"), start=1)]
    table = await store.create_table(game="penki", seats=seats, settings=OFF, seed=11)
    brains = Brains(executor=ThreadPoolExecutor(1))
    rng = random.Random(2)
    now = store.clock()
    checked = 0
    try:
        for _ in range(80):
            doc = await store._doc(table.id)
            state = engine.load(doc["state"])
            if state.over:
                break
            mem = table_memory(doc, state)
            for seat in doc["seats"]:
                sid = seat["seat"]
                other = redealt(state, sid, rng)
                assert plan_decision(doc, state, seat, mem) == plan_decision(doc, other, seat, mem)
                level = seat_level(seat)
                first = await brains.decide(engine.view(state, sid), mem, level, seat_seed(doc, sid))
                again = await brains.decide(engine.view(other, sid), mem, level, seat_seed(doc, sid))
                if level != "expert":  # the expert's search has a CPU cap: its pick may vary with load
                    assert first == again
                checked += 1
            now = max(now, await store.next_due(table.id)) + 0.001
            await store.tick(now=now)
    finally:
        brains.close()
    assert checked > 100


async def test_an_expert_table_plays_to_the_end_with_its_searches_off_the_loop(store):
    seats = [Seat(seat="c1", name="C1", computer=True, level="expert"),
             Seat(seat="c2", name="C2", computer=True, level="regular"),
             Seat(seat="c3", name="C3", computer=True, level="beginner")]
    threads: set[str] = set()
    pool = ThreadPoolExecutor(1, thread_name_prefix="brains", initializer=lambda: None)
    store.brains = Brains(executor=pool, timeout=600)  # no fallback however slow the machine
    original = store.brains.decide

    async def spy(view, memory, level, seed):
        decision = await original(view, memory, level, seed)
        return decision

    store.brains.decide = spy  # type: ignore[method-assign]
    import store.computers as computers

    real = computers._expert

    def expert(view, memory, seed):
        threads.add(threading.current_thread().name)
        return real(view, memory, seed)

    computers._expert = expert
    try:
        table = await store.create_table(game="prsi", seats=seats, settings=OFF, seed=3)
        now = store.clock()
        for _ in range(400):
            table = await store.get_table(table.id)
            if table.state.over:
                break
            now = max(now, await store.next_due(table.id)) + 0.001
            await store.tick(now=now)
        assert table.state.over
        assert threads and all(t.startswith("brains") for t in threads)  # never on the loop's thread
        assert store.brains.fallbacks == 0
        assert {e["by"] for e in await store.log(table.id)} == {"computer"}
    finally:
        computers._expert = real
        pool.shutdown()


async def test_a_slow_expert_falls_back_to_the_regular_player():
    """No answer within the timeout: the regular player's decision, and the count goes up."""
    gate = threading.Event()

    class Stuck(ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            return super().submit(lambda: gate.wait(5))

    brains = Brains(timeout=0.05, executor=Stuck(1))
    state = engine.new_game("prsi", ["a", "b", "c"], seed=4)
    seat = state.to_move
    view = engine.view(state, seat)
    mem = Memory("prsi", "", state.players).feed(list(state.last))
    try:
        decision = await brains.decide(view, mem, "expert", 7)
    finally:
        gate.set()
        brains.close()
    assert brains.fallbacks == 1
    from engine.players import decide

    assert decision == decide(view, None, level="regular", seed=7, memory=mem)


async def test_expert_requests_queue_first_come_first_served():
    """At most 2·workers searches at once; the rest wait their turn in order."""
    order: list[int] = []
    lock = threading.Lock()
    import store.computers as computers

    real = computers._expert

    def expert(view, memory, seed):
        with lock:
            order.append(seed)
        return real(view, memory, seed)

    computers._expert = expert
    brains = Brains(workers=1, timeout=120, executor=ThreadPoolExecutor(1))
    state = engine.new_game("prsi", ["a", "b", "c"], seed=4)
    view = engine.view(state, state.to_move)
    mem = Memory("prsi", "", state.players).feed(list(state.last))
    try:
        if len(view["legal"]) < 2:
            pytest.skip("no choice at this deal")
        results = await asyncio.gather(*(brains.decide(view, mem, "expert", k) for k in range(6)))
    finally:
        computers._expert = real
        brains.close()
    assert all(r is not None for r in results) and order == list(range(6))


async def test_computer_callouts_wait_a_human_reaction_after_the_chance(store, pinned_table_ids):
    """Issue 17.5: a computer calls «ЗЕВОК!» / «СКОЛЬКО КАРТ?» no sooner than its level's
    reaction time after the commit that opened the chance, however many commits follow.
    The same games on every run and backend: fixed clock, pinned table ids."""
    store.clock = lambda: 1_800_000_000.0
    seats = [Seat(seat="u1", user_id=1, name="Alice"), Seat(seat="c1", name="C1", computer=True, level="regular"),
             Seat(seat="c2", name="C2", computer=True, level="beginner")]
    floor = min(lv.call.lo for lv in LEVELS.values())
    rng = random.Random(5)
    waits: list[float] = []
    for seed in range(5):
        table = await store.create_table(game="penki", seats=seats, settings=OFF, seed=seed)
        now = store.clock()
        for _ in range(300):
            table = await store.get_table(table.id)
            if table.state.over:
                break
            if "u1" in engine.awaiting(table.state):
                legal = engine.legal_actions(table.state, "u1")
                blunder = next((a for a in legal if a.get("to") == "u1"), None)  # something to call
                await store.apply(table.id, "u1", blunder if blunder and rng.random() < 0.5 else rng.choice(legal),
                                  now=now)
                continue
            doc = await store._doc(table.id)
            wants = {**{s: t.get("want") for s, t in doc["turns"].items()}, **doc["callout_kinds"]}
            now = max(now, await store.next_due(table.id)) + 0.001
            if not await store.tick(now=now):
                continue
            entries = await store.log(table.id)
            last = entries[-1]
            if last["action"]["a"] not in ("zevok", "how_many"):
                continue
            chance = int(wants[last["seat"]].rsplit(":", 1)[1])  # the public event that opened it
            seen = 0
            for entry in entries:
                seen += len(entry["events"])
                if seen > chance:
                    waits.append(now - entry["ts"])
                    break
    assert len(waits) >= 3 and min(waits) >= floor - 1e-3


def test_a_table_saved_before_tables_had_a_memory_gets_one_marked_partial():
    """Issue 14: a table document from before the public memory (no ``memory``) gives its
    computers one built from what ``last`` shows, marked partial (it may not start at the
    deal), and in Penki's phase 2 when the game is there."""
    state = engine.new_game("penki", ["u1", "c1", "c2"], seed=5)
    phase1 = table_memory({"id": "old"}, state)
    assert phase1.partial and phase1.phase != 2
    for _ in range(2000):
        if state.phase == 2 or state.over:
            break
        seat = engine.awaiting(state)[0]
        state = engine.apply(state, seat, engine.computer_action(state, seat)).state
    assert state.phase == 2
    phase2 = table_memory({"id": "old"}, state)
    assert phase2.partial and phase2.phase == 2
    assert table_memory({"id": "old"}, engine.new_game("prsi", ["u1", "c1"], seed=5)).phase != 2


def _memory_from_the_log(doc, entries) -> dict:
    """The oracle: the table (its stored document) dealt again and every logged action
    replayed through the engine, each outcome's events fed to a fresh Memory (what a
    memory kept since the deal holds)."""
    players = [s["seat"] for s in doc["seats"]]
    state = engine.new_game(doc["game"], players, dealer=doc["dealer"], seed=doc["seed"])
    mem = Memory(doc["game"], "", players).feed(list(state.last))
    for entry in entries:
        outcome = engine.apply(state, entry["seat"], entry["action"])
        state = outcome.state
        mem.feed(outcome.events)
    return mem.to_dict()


@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_a_table_of_people_keeps_no_memory_until_a_seat_goes_to_auto(store, game, pinned_table_ids):
    """Issue 11: a table with no computer-driven seat keeps no public memory (nothing reads
    it; each commit would write it). Three timeouts hand a seat to the computer (S4): that
    commit replays the memory from the deal and the log, equal to one kept all along, so
    the computer playing for the person remembers the whole game; the person's own move
    takes the seat back and the memory goes again."""
    store.clock = lambda: 1_800_000_000.0
    seats = [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"P{i}") for i in range(3)]
    table = await store.create_table(game=game, seats=seats, settings=LobbySettings(players=3, turn_seconds=30),
                                     seed=11)
    assert "memory" not in await store._doc(table.id)
    now = store.clock()
    for _ in range(200):  # the timer plays every turn: the first seat to time out three times goes to auto
        table = await store.get_table(table.id)
        if any(s.auto for s in table.seats) or table.state.over:
            break
        assert "memory" not in await store._doc(table.id)
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
    assert any(s.auto for s in table.seats) and not table.state.over
    doc = await store._doc(table.id)
    assert doc["memory"] == _memory_from_the_log(doc, await store.log(table.id))
    assert not Memory.from_dict(doc["memory"]).partial
    auto = next(s.seat for s in table.seats if s.auto)
    played_for = 0
    for _ in range(200):  # the others play themselves; the computer plays for the seat in auto, once
        assert not table.state.over
        awaiting = engine.awaiting(table.state)
        if auto in awaiting and played_for:
            break
        if auto in awaiting:
            now = max(now, await store.next_due(table.id)) + 0.01
            assert await store.tick(now=now) == 1
            played_for += 1
        else:
            seat = awaiting[0]
            await store.apply(table.id, seat, engine.legal_actions(table.state, seat)[0], now=now)
        table = await store.get_table(table.id)
        doc = await store._doc(table.id)
        assert doc["memory"] == _memory_from_the_log(doc, await store.log(table.id))
    assert played_for == 1
    res = await store.apply(table.id, auto, engine.legal_actions(table.state, auto)[0], now=now)  # the person is back
    assert not any(s.auto for s in res.table.seats)
    assert "memory" not in await store._doc(table.id)
