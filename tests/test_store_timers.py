"""S4 turn timers and computer seats, point by point: who the worker moves for, when, and what
it leaves scheduled afterwards (found by the mutation run, ``make mutate``: each test here
fails on a mutant of ``store/schedule.py``, ``release.lua`` or ``schedule.lua`` that the
rest of the suite let through).

Time is driven with ``tick(now=...)`` and ``apply(now=...)``; every test runs on fakeredis
and on the real Redis. No test waits on the wall clock.
"""

from __future__ import annotations

import random

import engine
from engine.players import Decision
from store import LobbySettings, Seat
from store.common import CALLOUTS, LEASE, RETRY_LATER


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


def computers(n: int) -> list[Seat]:
    return [Seat(seat=f"c{i + 1}", name=f"Computer {i + 1}", computer=True) for i in range(n)]


T30 = LobbySettings(players=3, turn_seconds=30)
OFF = LobbySettings(players=3, turn_seconds=None)


async def _to_computer_turn(store, table, now: float):
    """Play the person's turns (and tick the computers) until ``c1`` is to move."""
    for _ in range(60):
        if engine.awaiting(table.state) == ["c1"]:
            return table, now
        seat = engine.awaiting(table.state)[0]
        if seat == "c1":
            break
        if seat.startswith("u"):
            table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)).table
        else:
            now = max(now, await store.next_due(table.id)) + 0.01
            await store.tick(now=now)
            table = await store.get_table(table.id)
    return table, now


async def test_s4_the_timer_never_calls_out_for_an_absent_person(store):
    """S3, S4: when a person's turn time runs out, the timer plays an ordinary move for them;
    it never calls «ЗЕВОК!», «СКОЛЬКО КАРТ?» or «ОДНА КАРТА!» on their behalf (noticing is the
    player's skill), even where the computer player would."""
    rng = random.Random(1)
    checked = 0
    for seed in range(8):
        table = await store.create_table(game="penki", seats=people(3), settings=T30, seed=seed)
        now = store.clock()
        for _ in range(200):
            if table.state.over or checked >= 3:
                break
            seat = engine.awaiting(table.state)[0]
            wanted = engine.computer_action(table.state, seat)
            if wanted is not None and wanted["a"] in CALLOUTS:  # the computer would call here
                due = table.deadline
                assert due is not None and await store.next_due(table.id) == due
                assert await store.tick(now=due + 0.01) == 1
                entry = (await store.log(table.id))[-1]
                assert entry["by"] == "timer" and entry["seat"] == seat
                assert entry["action"]["a"] not in CALLOUTS
                assert entry["action"] in engine.legal_actions(table.state, seat)
                checked += 1
                now = due + 0.01
                table = await store.get_table(table.id)
                continue
            legal = engine.legal_actions(table.state, seat)
            blunder = next((a for a in legal if a.get("to") == seat), None)  # a chance to call, for the next
            action = blunder if blunder and rng.random() < 0.7 else rng.choice(legal)
            table = (await store.apply(table.id, seat, action, now=now)).table
        if checked >= 3:
            break
    assert checked >= 3


async def test_s4_the_worker_moves_nobody_before_a_seat_is_due(store):
    """A claim that comes early (the table's entry is due, no seat is yet) plays nothing and
    puts the table back at its soonest seat's due time."""
    store.clock = lambda: 1_800_000_000.0
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=T30, seed=6)
    table, now = await _to_computer_turn(store, table, store.clock())
    due = await store.next_due(table.id)
    assert due is not None and due > now
    early = now + (due - now) / 2
    await store.redis.zadd(store.keys.deadlines_of(store._shard(table.id)), {table.id: early})  # e.g. a retry set before this turn
    assert await store.tick(now=early) == 0
    assert (await store.get_table(table.id)).version == table.version
    assert await store.next_due(table.id) == due
    assert await store.tick(now=due + 0.001) == 1
    assert (await store.log(table.id))[-1]["by"] == "computer"
    # a person's turn time: an early claim a second in leaves the 30 s deadline as it was
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=4)
    early = store.clock() + 1
    await store.redis.zadd(store.keys.deadlines_of(store._shard(table.id)), {table.id: early})
    assert await store.tick(now=early) == 0
    assert await store.next_due(table.id) == table.deadline == store.clock() + 30


async def test_s4_a_refused_computer_move_is_tried_again_later(store):
    """A computer move the engine refuses commits nothing and is looked at again
    RETRY_LATER seconds on (never dropped: the table would stall for good)."""
    store.clock = lambda: 1_800_000_000.0
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=OFF, seed=6)
    table, _ = await _to_computer_turn(store, table, store.clock())
    due = await store.next_due(table.id)
    real = store.brains.decide
    calls = []

    async def confused(view, memory, level, seed):
        calls.append(view["seat"])
        return Decision(action={"a": "play", "card": "Zz"}, delay=0.0)  # no such card: refused

    store.brains.decide = confused
    assert await store.tick(now=due + 0.001) == 0
    assert calls == ["c1"]
    assert (await store.get_table(table.id)).version == table.version
    assert await store.next_due(table.id) == due + 0.001 + RETRY_LATER
    store.brains.decide = real
    assert await store.tick(now=due + 0.001 + RETRY_LATER / 2) == 0  # not before the retry
    assert await store.tick(now=due + 0.002 + RETRY_LATER) == 1
    assert (await store.log(table.id))[-1]["seat"] == "c1"


async def test_s4_a_claim_released_after_a_commit_leaves_the_commits_due_time(store):
    """A worker holds a claim while a commit lands (another worker, a person's move): when
    the worker then ends its claim with nothing played, the due time the commit set stands
    (release.lua checks the lease token); otherwise the next turn's timer would be lost."""
    store.clock = lambda: 1_800_000_000.0
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=T30, seed=6)
    table, _ = await _to_computer_turn(store, table, store.clock())
    due = await store.next_due(table.id)
    at = due + 0.001
    move = engine.computer_action(table.state, "c1")

    async def overtaken(view, memory, level, seed):
        # meanwhile the computer's move is committed elsewhere: the person's turn, with a timer
        await store.apply(table.id, "c1", move, by="computer", now=at)
        return None  # … and this worker finds nothing to play

    store.brains.decide = overtaken
    assert await store.tick(now=at) == 0
    after = await store.get_table(table.id)
    assert after.version == table.version + 1
    person = engine.awaiting(after.state)[0]
    assert person == "u100" and after.deadline == at + 30
    assert await store.next_due(table.id) == after.deadline


async def test_s4_a_computer_callout_comes_however_fast_the_others_play(store, pinned_table_ids):
    """Issue 17: a computer's callout is due its reaction time after the chance opened, and
    that due time stays while the chance stays the same; commits that leave the chance
    as it was (the blunderer going on with the turn) never push it later, or a quick
    player would never be called on.

    The games are the same on every run: the clock is fixed and the table ids pinned."""
    store.clock = lambda: 1_800_000_000.0
    seats = [Seat(seat="u1", user_id=1, name="Alice"), Seat(seat="c1", name="C1", computer=True),
             Seat(seat="c2", name="C2", computer=True)]
    rng = random.Random(4)
    kept = 0
    for seed in range(10):
        table = await store.create_table(game="penki", seats=seats, settings=OFF, seed=seed)
        now = store.clock()
        for _ in range(300):
            table = await store.get_table(table.id)
            if table.state.over or kept >= 3:
                break
            if "u1" not in engine.awaiting(table.state):
                now = max(now, await store.next_due(table.id)) + 0.001
                await store.tick(now=now)
                continue
            before = await store._doc(table.id)
            legal = engine.legal_actions(table.state, "u1")
            blunder = next((a for a in legal if a.get("to") == "u1"), None)
            action = blunder if blunder and rng.random() < 0.8 else rng.choice(legal)
            now += 0.25  # a quick player: well inside any computer's reaction time
            await store.apply(table.id, "u1", action, now=now)
            after = await store._doc(table.id)
            for sid, due in before["callouts"].items():
                if after["callout_kinds"].get(sid) == before["callout_kinds"][sid]:  # the same chance
                    assert after["callouts"][sid] == due, (sid, due, after["callouts"][sid])
                    assert await store.next_due(table.id) <= due
                    kept += 1
        if kept >= 3:
            break
    assert kept >= 3


async def test_s4_the_sweeper_leaves_tables_whose_follow_up_ran_alone(store):
    """The sweeper repairs only commits whose follow-up never ran: an idle table, however
    long since its last move, keeps its due time and gets no outbox entries again."""
    store.clock = lambda: 1_800_000_000.0
    chat = Seat(seat="u100", user_id=100, name="Player 0")
    lobby_seats = [chat, *people(2)[1:]]
    table = await store.create_table(game="prsi", seats=lobby_seats, settings=T30, seed=4, chat_id=-100)
    now = store.clock()
    for _ in range(3):
        seat = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)).table
    due = await store.next_due(table.id)
    outbox = await store.redis.xlen(store.keys.outbox_of(store._shard(table.id)))
    assert outbox > 0  # the turns' entries for the bot
    assert await store.sweep(now=now + 3600, lease=None) == 0
    assert await store.redis.xlen(store.keys.outbox_of(store._shard(table.id))) == outbox
    assert await store.next_due(table.id) == due
    assert int(await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id)) == table.version


async def test_s4_a_table_the_worker_fails_on_leaves_the_others_moving(store, store_factory):
    """One due table the worker cannot handle (a damaged document) is logged and left to come
    due again after the lease; the other due tables of the same pass are moved as usual."""
    broken = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=1)
    fine = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=2)
    await store.redis.hset(store.keys.table(broken.id), "doc", "{damaged")
    worker = await store_factory()  # another process: it knows neither table, it reads them
    now = max(broken.deadline, fine.deadline) + 0.01
    assert await worker.tick(now=now) == 1
    assert (await worker.get_table(fine.id)).version == 1
    assert now < await worker.next_due(broken.id) <= now + LEASE + 0.01  # leased: due again, never lost


async def test_s4_the_timer_plays_the_computer_players_move_for_the_person(store):
    """S4: when the turn time runs out, the move played is the engine's computer player's
    (not merely some legal move), marked as played by the timer."""
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=6)
    differs = 0
    for _ in range(6):  # two turns each: a third timeout in a row would hand the seat to the computer
        seat = engine.awaiting(table.state)[0]
        wanted = engine.computer_action(table.state, seat)
        differs += wanted != engine.legal_actions(table.state, seat)[0]
        assert await store.tick(now=table.deadline + 0.01) == 1
        entry = (await store.log(table.id))[-1]
        assert entry["by"] == "timer" and entry["seat"] == seat and entry["action"] == wanted
        table = await store.get_table(table.id)
        if table.state.over:
            break
    assert differs  # some turn where a merely legal move would have been another one


async def test_s4_a_callout_whose_chance_passed_leaves_the_table_due_for_the_rest(store):
    """A computer's callout comes due, but by then it has nothing to call (its decision is
    none): nothing is played and the table stays due for the others (the person's turn time)."""
    seats = [Seat(seat="u1", user_id=1, name="Alice"), Seat(seat="c1", name="C1", computer=True),
             Seat(seat="c2", name="C2", computer=True)]
    rng = random.Random(4)
    for seed in range(10):
        table = await store.create_table(game="penki", seats=seats, settings=T30, seed=seed)
        now = store.clock()
        for _ in range(300):
            table = await store.get_table(table.id)
            if table.state.over:
                break
            doc = await store._doc(table.id)
            person = (doc["turns"].get("u1") or {}).get("due")
            calls = sorted((due, sid) for sid, due in doc["callouts"].items())
            if person is not None and len(calls) == 1 and calls[0][0] + RETRY_LATER < person:
                due = calls[0][0]
                real = store.brains.decide

                async def nothing(view, memory, level, seed):
                    return None

                store.brains.decide = nothing
                try:
                    assert await store.tick(now=due + 0.001) == 0
                finally:
                    store.brains.decide = real
                assert (await store.get_table(table.id)).version == table.version
                assert await store.next_due(table.id) == person  # not a retry: nothing was refused
                return
            if "u1" in engine.awaiting(table.state):
                legal = engine.legal_actions(table.state, "u1")
                blunder = next((a for a in legal if a.get("to") == "u1"), None)
                action = blunder if blunder and rng.random() < 0.8 else rng.choice(legal)
                await store.apply(table.id, "u1", action, now=now)
            else:
                now = max(now, await store.next_due(table.id)) + 0.001
                await store.tick(now=now)
    raise AssertionError("no lone callout came due well before the person's turn time")


async def test_s4_a_due_table_that_is_gone_is_forgotten_by_the_worker(store):
    """A table whose state expired while it was due (its document gone): the worker's claim
    finds nothing and forgets it, from the deadlines and from the versions the sweeper
    reads (release.lua's 'gone' flag), so neither keeps it for ever."""
    store.clock = lambda: 1_800_000_000.0
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=T30, seed=6)
    shard = store._shard(table.id)
    assert await store.redis.hget(store.keys.deadline_versions_of(shard), table.id) is not None
    store.live.abandon(table.id)  # this process forgets it too
    await store.redis.delete(store.keys.table(table.id))
    await store.redis.zadd(store.keys.deadlines_of(shard), {table.id: store.clock() - 1})
    assert await store.tick(now=store.clock()) == 0
    assert await store.redis.zscore(store.keys.deadlines_of(shard), table.id) is None
    assert await store.redis.hget(store.keys.deadline_versions_of(shard), table.id) is None
