"""store worker (S4): turn timers, strikes and auto play, computer seats, claims exactly once.

Time is driven with ``tick(now=...)``; every test runs on fakeredis and the real Redis.
"""

from __future__ import annotations

import asyncio
import random
import sys

import pytest
from conftest import play_to_last_move, until, wait_subscribed

import engine
from store import LobbySettings, Seat
from store.common import ROUND_HOLD
from store.computers import WAIT_AFTER_CALL
from store.store import CALLOUT_DELAY, CALLOUTS, COMPUTER_DELAY, LEASE


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


def computers(n: int) -> list[Seat]:
    return [Seat(seat=f"c{i + 1}", name=f"Computer {i + 1}", computer=True) for i in range(n)]


T30 = LobbySettings(players=3, turn_seconds=30)
OFF = LobbySettings(players=3, turn_seconds=None)


async def test_s4_timer_plays_for_an_absent_seat_when_its_turn_time_runs_out(store):
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=4)
    seat = engine.awaiting(table.state)[0]
    assert table.deadline is not None
    assert table.deadline - store.clock() <= 30
    assert await store.next_due(table.id) == table.deadline
    assert await store.tick(now=table.deadline - 1) == 0
    assert (await store.get_table(table.id)).version == 0
    assert await store.tick(now=table.deadline + 0.01) == 1
    after = await store.get_table(table.id)
    assert after.version == 1
    entry = (await store.log(table.id))[-1]
    assert entry["seat"] == seat and entry["by"] == "timer"
    assert after.seat(seat).strikes == 1 and not after.seat(seat).auto
    # the next player's clock started at the timer's move
    assert after.deadline == table.deadline + 0.01 + 30


async def test_s4_three_timeouts_in_a_row_hand_the_seat_to_the_computer_until_the_player_acts(store):
    table = await store.create_table(game="prsi", seats=people(2), settings=T30, seed=8)
    now = store.clock()
    me = "u100"
    for _ in range(40):
        table = await store.get_table(table.id)
        if table.seat(me).auto:
            break
        now = max(now, await store.next_due(table.id)) + 0.01
        assert await store.tick(now=now) == 1
    seat = table.seat(me)
    assert seat.auto and seat.strikes == 3
    timer_moves = [e for e in await store.log(table.id) if e["seat"] == me]
    assert [e["by"] for e in timer_moves] == ["timer"] * 3
    # now the computer plays for them after a short delay, not after 30 s
    for _ in range(40):
        table = await store.get_table(table.id)
        if engine.awaiting(table.state) == [me]:
            break
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
    due = await store.next_due(table.id)
    assert due - now <= COMPUTER_DELAY[1] + 0.05
    assert table.deadline is None  # nobody's turn clock runs: the computer plays for them
    await store.tick(now=due + 0.001)
    assert (await store.log(table.id))[-1]["by"] == "computer"
    # … until the player acts again
    for _ in range(40):
        table = await store.get_table(table.id)
        if engine.awaiting(table.state) == [me]:
            break
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
    res = await store.apply(table.id, me, engine.computer_action(table.state, me))
    assert res.table.seat(me).strikes == 0 and not res.table.seat(me).auto


async def test_s4_a_players_own_move_resets_the_strikes(store):
    table = await store.create_table(game="prsi", seats=people(2), settings=T30, seed=8)
    me = "u100"
    now = store.clock()
    while (await store.get_table(table.id)).seat(me).strikes < 2:
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
    table = await store.get_table(table.id)
    while engine.awaiting(table.state) != [me]:
        other = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, other, engine.computer_action(table.state, other))).table
    res = await store.apply(table.id, me, engine.computer_action(table.state, me))
    assert res.table.seat(me).strikes == 0


async def test_s4_a_restart_loses_no_deadline(store, store_factory):
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=4)
    await store.close()  # every process goes away
    fresh = await store_factory()
    assert await fresh.next_due(table.id) == table.deadline
    assert await fresh.tick(now=table.deadline + 0.01) == 1
    assert (await fresh.log(table.id))[-1]["by"] == "timer"


async def test_a_claim_by_a_worker_that_died_comes_due_again_after_the_lease(store, store_factory):
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=4)
    now = table.deadline + 0.01
    claimed = await store._claim(keys=[store.keys.deadlines_of(store._shard(table.id))], args=[repr(now), repr(now + LEASE), 10])
    assert claimed == [table.id]  # … and this worker dies before moving
    other = await store_factory()
    assert await other.tick(now=now) == 0
    assert await other.tick(now=now + LEASE + 0.01) == 1
    assert (await other.get_table(table.id)).version == 1


async def test_concurrent_workers_claim_each_due_table_exactly_once(store, store_factory):
    tables = [await store.create_table(game="prsi", seats=people(3), settings=T30, seed=i) for i in range(8)]
    now = max(t.deadline for t in tables) + 0.01
    workers = [store, await store_factory(), await store_factory()]
    moved = await asyncio.gather(*(w.tick(now=now) for w in workers for _ in range(2)))
    assert sum(moved) == 8
    for t in tables:
        assert [e["version"] for e in await store.log(t.id)] == [1]


async def test_s4_timer_off_sets_no_deadline_for_people(store):
    table = await store.create_table(game="prsi", seats=people(3), settings=OFF, seed=4)
    assert table.deadline is None and await store.next_due(table.id) is None
    assert await store.tick(now=store.clock() + 10_000) == 0


async def test_computer_seats_move_after_a_short_delay_and_their_game_is_unrated(store):
    store.clock = lambda: 1_800_000_000.0  # the table's first due time is measured from its creation
    table = await store.create_table(game="prsi", seats=people(1) + computers(2), settings=OFF, seed=21)
    assert not table.rated
    now = store.clock()
    for _ in range(600):
        table = await store.get_table(table.id)
        if table.state.over:
            break
        seat = engine.awaiting(table.state)[0]
        if seat == "u100":
            assert table.deadline is None and await store.next_due(table.id) is None
            res = await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)
            assert res.table.seat(seat).strikes == 0
        else:
            due = await store.next_due(table.id)
            last = (await store.log(table.id))[-1:]
            held = ROUND_HOLD if last and any(e["a"] == "round_end" for e in last[0]["events"]) else 0.0
            assert COMPUTER_DELAY[0] + held - 1e-6 <= due - now <= COMPUTER_DELAY[1] + held + 1e-6
            assert await store.tick(now=due - 0.01) == 0
            now = due + 0.001
            assert await store.tick(now=now) == 1
    assert table.state.over
    assert {e["by"] for e in await store.log(table.id) if e["seat"] != "u100"} == {"computer"}
    assert await store.next_due(table.id) is None
    assert await store.ledger() == []


async def test_run_worker_moves_computer_seats_and_stops_on_request(store):
    table = await store.create_table(game="prsi", seats=computers(2), seed=5)
    stop = asyncio.Event()
    task = asyncio.create_task(store.run_worker(stop, interval=0.05))
    try:
        async def moved() -> bool:
            return (await store.get_table(table.id)).version >= 1

        await until(moved)
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
    assert task.done() and task.exception() is None


def note(possible_since: dict[tuple[str, str], float], state, at: float) -> None:
    """Record since when each computer seat may call on someone, per call (``(seat, kind)``:
    time). What the engine accepts, not what one computer policy would do: the store's
    computers play their level with a seed of the table's (random) id."""
    for sid in ("c1", "c2"):
        for kind in ("zevok", "how_many"):
            try:
                engine.apply(state, sid, {"a": kind})
            except engine.Rejected:
                possible_since.pop((sid, kind), None)
            else:
                possible_since.setdefault((sid, kind), at)


async def test_penki_computer_seats_call_out_out_of_turn_after_a_short_delay(store, pinned_table_ids):
    """R6, R17, R18: computer seats' callouts are scheduled even when it is not their turn;
    a call on someone (ЗЕВОК, СКОЛЬКО КАРТ?) waits at least CALLOUT_DELAY's low end since it
    became possible, so a person has a fair chance to declare or to call first. The same
    games on every run and backend: fixed clock, pinned table ids (the computers' seeds)."""
    store.clock = lambda: 1_800_000_000.0
    rng = random.Random(3)
    out_of_turn: list[dict] = []
    on_someone: list[float] = []
    for seed in range(12):
        table = await store.create_table(game="penki", seats=people(1) + computers(2), settings=OFF, seed=seed)
        now = store.clock()
        wanted_since: dict[tuple[str, str], float] = {}
        note(wanted_since, table.state, now)
        for _ in range(400):
            table = await store.get_table(table.id)
            if table.state.over or (out_of_turn and len(on_someone) >= 2):
                break
            due = await store.next_due(table.id)
            if due is not None:
                waiting = engine.awaiting(table.state)
                # a move's or a call's reaction time at most; a move waits out a due call (issue 24)
                longest = max(COMPUTER_DELAY[1], CALLOUT_DELAY[1]) + WAIT_AFTER_CALL
                assert 0 < due - now <= longest + 1e-6 or due <= now
                now = max(now, due) + 0.001
                if await store.tick(now=now):
                    entry = (await store.log(table.id))[-1]
                    assert entry["by"] == "computer"
                    kind = entry["action"]["a"]
                    if kind in CALLOUTS and entry["seat"] not in waiting:
                        out_of_turn.append(entry)
                    if kind in ("zevok", "how_many") and entry["seat"] not in waiting:
                        on_someone.append(now - wanted_since[(entry["seat"], kind)])
                    note(wanted_since, (await store.get_table(table.id)).state, now)
                    continue
            if "u100" in engine.awaiting(table.state):
                legal = engine.legal_actions(table.state, "u100")
                await store.apply(table.id, "u100", rng.choice(legal), now=now)
                note(wanted_since, (await store.get_table(table.id)).state, now)
    assert out_of_turn and on_someone
    assert min(on_someone) >= CALLOUT_DELAY[0] - 1e-6


async def test_a_timer_move_is_published_as_played_for_the_seat(store):
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=4)
    seat = engine.awaiting(table.state)[0]
    agen = store.subscribe(table.id)
    first = asyncio.ensure_future(agen.__anext__())
    await wait_subscribed(store, table.id)
    assert await store.tick(now=table.deadline + 0.01) == 1
    msg = await asyncio.wait_for(first, 60)
    await agen.aclose()
    assert msg["by"] == "timer" and msg["seat"] == seat and msg["version"] == 1


async def _crash_after_next_commit(store) -> None:
    """The next apply commits, then its process 'dies' before scheduling, outbox and ledger
    (the follow-up as a call of its own, as on a cluster: on a single Redis it is in move.lua)."""
    store.fused = False

    async def died(*args, **kwargs):
        del store._after_commit

    store._after_commit = died


async def test_sweep_reschedules_a_commit_whose_process_died_before_scheduling(store):
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=OFF, seed=6)
    now = store.clock()
    while engine.awaiting(table.state) != ["u100"]:
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
        table = await store.get_table(table.id)
    assert await store.next_due(table.id) is None  # a person's turn, no timer
    await _crash_after_next_commit(store)
    res = await store.apply(table.id, "u100", engine.computer_action(table.state, "u100"), now=now)
    assert engine.awaiting(res.table.state) == ["c1"]
    assert await store.next_due(table.id) is None  # the computer's move was never scheduled
    assert await store.sweep(now=now + 1, lease=None) == 0  # too fresh: maybe still in progress
    assert await store.sweep(now=now + 30, lease=None) == 1
    due = await store.next_due(table.id)
    assert due is not None and due - now <= COMPUTER_DELAY[1] + 1e-6
    assert await store.tick(now=now + 31) == 1


async def test_sweep_records_a_rated_game_whose_last_commit_lost_its_follow_up(store):
    table = await store.create_table(game="prsi", seats=people(2), settings=OFF, seed=9)
    now = store.clock()
    table, seat, action = await play_to_last_move(store, table, now)
    await _crash_after_next_commit(store)
    await store.apply(table.id, seat, action, now=now)
    assert await store.ledger() == []
    assert await store.sweep(now=now + 30, lease=None) == 1
    assert [m["table"] for m in await store.ledger()] == [table.id]
    # once over, a tombstone: no due time, and no sweep repeats the repair
    assert int(await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id)) \
        == -table.version - 1
    assert await store.next_due(table.id) is None
    assert await store.sweep(now=now + 60, lease=None) == 0 and len(await store.ledger()) == 1
    await store.redis.delete(store.keys.table(table.id))  # 7 days later it expires: forgotten
    assert await store.sweep(now=now + 90, lease=None) == 0
    assert await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id) is None


async def test_sweep_forgets_expired_tables_and_runs_once_per_lease(store, store_factory):
    a = await store.create_table(game="prsi", seats=people(2), settings=OFF, seed=9)
    b = await store.create_table(game="prsi", seats=people(2), settings=OFF, seed=10)
    def versions(t):  # the versions hash of the table's shard (on a cluster, sweep scans every shard)
        return store.keys.deadline_versions_of(store._shard(t.id))

    assert await store.redis.hget(versions(a), a.id) is not None
    await store.redis.delete(store.keys.table(a.id))  # expired after 48 h
    assert await store.sweep(lease=30) == 0
    assert await store.redis.hget(versions(a), a.id) is None
    await store.redis.delete(store.keys.table(b.id))
    other = await store_factory()
    await other.sweep(lease=30)  # another process within the lease: skipped
    assert await store.redis.hget(versions(b), b.id) is not None
    await other.sweep(lease=None)
    assert await store.redis.hget(versions(b), b.id) is None


async def test_a_worker_finding_the_game_over_leaves_a_lost_final_follow_up_to_the_sweep(store):
    """Timer on: the final commit's process dies, the old turn deadline comes due first and the
    worker finds the game over; the sweeper must still record the rated match."""
    table = await store.create_table(game="prsi", seats=people(2), settings=T30, seed=9)
    now = store.clock()
    table, seat, action = await play_to_last_move(store, table, now)
    await _crash_after_next_commit(store)
    await store.apply(table.id, seat, action, now=now)
    due = await store.next_due(table.id)
    assert due is not None  # the last turn's deadline, never cleared
    assert await store.tick(now=due + 0.01) == 0  # the worker sees the game over: nothing to play
    assert await store.next_due(table.id) is None
    assert await store.ledger() == []
    assert await store.sweep(now=due + 30, lease=None) == 1
    assert [m["table"] for m in await store.ledger()] == [table.id]


WORKER = r'''
import asyncio, sys
from store import Store

async def main(url, prefix, now):
    st = Store.from_url(url, prefix=prefix)
    moved = 0
    for _ in range(6):
        moved += await st.tick(now=now)
    await st.close()
    print(moved)

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
'''


@pytest.mark.redis
async def test_worker_processes_claim_each_due_table_exactly_once(real_store, redis_url):
    """Two OS processes and this one tick at the same moment over 20 due tables: one move each."""
    tables = [await real_store.create_table(game="prsi", seats=people(3), settings=T30, seed=i) for i in range(20)]
    now = max(t.deadline for t in tables) + 0.01
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", WORKER, redis_url, real_store.keys.prefix,
                                             repr(now), stdout=asyncio.subprocess.PIPE,
                                             stderr=asyncio.subprocess.PIPE)
        for _ in range(2)
    ]
    here = sum(await asyncio.gather(*(real_store.tick(now=now) for _ in range(6))))
    outs = [await asyncio.wait_for(p.communicate(), 60) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err.decode()
    assert here + sum(int(out) for out, _ in outs) == 20
    for t in tables:
        entries = await real_store.log(t.id)
        assert [(e["version"], e["by"]) for e in entries] == [(1, "timer")]


async def test_a_failing_follow_up_does_not_report_a_committed_move_as_failed(store):
    """Redis answers the commit, then not the follow-up: the caller still hears the move was made
    (a retry would otherwise be judged afresh), and the sweeper schedules the table later."""
    table = await store.create_table(game="prsi", seats=people(1) + computers(1), settings=OFF, seed=6)
    now = store.clock()
    while engine.awaiting(table.state) != ["u100"]:
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
        table = await store.get_table(table.id)
    real = store._schedule
    store.fused = False  # the follow-up as a call of its own (a cluster's; on one Redis it is in move.lua)

    async def unreachable(*args, **kwargs):
        store._schedule = real
        raise ConnectionError("Redis went away")

    store._schedule = unreachable
    res = await store.apply(table.id, "u100", engine.computer_action(table.state, "u100"), now=now)
    assert res.version == table.version + 1 and not res.duplicate
    assert (await store.get_table(table.id)).version == res.version
    assert await store.next_due(table.id) is None  # the computer's move was never scheduled …
    assert await store.sweep(now=now + 30, lease=None) == 1  # … until the sweeper's pass
    assert await store.tick(now=now + 32) == 1


async def test_deadlines_left_in_another_shard_by_another_shard_count_move_to_their_own(store):
    """The deadlines are split into ``Store.shards`` (one per slot on a cluster); tables
    scheduled by processes with one shard are found by processes with eight: each moves to
    its own shard (claimed there next) and nothing is left behind or moved twice."""
    from store import Store
    from store.keys import shard_of

    one = Store(store.redis, prefix=store.keys.prefix, shards=1, clock=store.clock)
    eight = Store(store.redis, prefix=store.keys.prefix, shards=8, clock=store.clock)
    try:
        tables = []
        for seed in range(40):  # tables whose own shard of eight is not 0
            t = await one.create_table(game="prsi", seats=people(3), settings=T30, seed=seed)
            if shard_of(t.id, 8) != 0:
                tables.append(t)
            if len(tables) == 2:
                break
        a, b = tables
        assert await store.redis.zscore(store.keys.deadlines_of(0), a.id) == a.deadline
        # a timer due: the claim from shard 0 moves it; the next pass plays it from its own shard
        now = max(a.deadline, b.deadline) + 0.01
        await eight.tick(now=now)  # (tables whose own shard is 0 are played now)
        assert (await eight.get_table(a.id)).version == (await eight.get_table(b.id)).version == 0
        home = store.keys.deadlines_of(shard_of(a.id, 8))
        assert await store.redis.zscore(store.keys.deadlines_of(0), a.id) is None
        assert await store.redis.hget(store.keys.deadline_versions_of(0), a.id) is None
        assert await store.redis.zscore(home, a.id) == a.deadline
        assert await eight.tick(now=now) == 2  # a and b, once each
        assert (await eight.get_table(a.id)).version == (await eight.get_table(b.id)).version == 1
        # the sweeper finds one left in shard 0's versions only (nothing due) and moves it too
        await store.redis.zrem(store.keys.deadlines_of(shard_of(b.id, 8)), b.id)
        await store.redis.hset(store.keys.deadline_versions_of(0), b.id, 1)
        await eight.sweep(now=now + 60, lease=None)
        assert await store.redis.hget(store.keys.deadline_versions_of(0), b.id) is None
        assert await eight.next_due(b.id) is not None
    finally:
        for st in (one, eight):
            await st.live.close()
