"""store outbox for the bot (S5): start, turn (once per turn, people only), round, end; consumer group.

Every test runs on fakeredis and the real Redis.
"""

from __future__ import annotations

from conftest import play_to_last_move

import engine
from store import LobbySettings, Seat, User


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


async def drain(store, consumer: str = "bot-1") -> list[dict]:
    out: list[dict] = []
    while True:
        got = await store.outbox_read(consumer, count=100, block_ms=0)
        if not got:
            return out
        for entry_id, entry in got:
            out.append(entry)
            await store.outbox_ack(entry_id)


async def test_start_from_a_lobby_announces_the_table_and_the_first_turn(store):
    alice = User(id=1, name="Alice")
    lobby = await store.create_lobby(chat_id=-9, thread_id=4, game="prsi", creator=alice)
    await store.join(lobby.id, User(id=2, name="Bob"))
    await store.add_computer(lobby.id, 1)
    table = await store.start(lobby.id, 1, seed=3)
    entries = await drain(store)
    assert entries[0]["kind"] == "start"
    assert entries[0]["table"] == table.id and entries[0]["chat_id"] == -9 and entries[0]["thread_id"] == 4
    assert entries[0]["lobby_id"] == lobby.id and entries[0]["rated"] is False
    assert [s["seat"] for s in entries[0]["seats"]] == ["u1", "u2", "c1"]
    first = engine.awaiting(table.state)[0]
    turns = [e for e in entries if e["kind"] == "turn"]
    if first.startswith("u"):
        assert [(t["seat"], t["user_id"]) for t in turns] == [(first, int(first[1:]))]
    else:
        assert turns == []  # computers are never notified


async def test_s5_turn_entries_once_per_turn_and_only_for_people(store):
    seats = [*people(2), Seat(seat="c1", name="C", computer=True)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=-9, seed=12,
                                     settings=LobbySettings(players=3, turn_seconds=None))
    turns_seen = 0
    now = store.clock()
    for _ in range(30):
        table = await store.get_table(table.id)
        seat = engine.awaiting(table.state)[0]
        if seat.startswith("c"):
            now = max(now, await store.next_due(table.id)) + 0.01
            assert await store.tick(now=now) == 1
        else:
            await store.apply(table.id, seat, engine.computer_action(table.state, seat))
            turns_seen += 1
    entries = await drain(store)
    turns = [e for e in entries if e["kind"] == "turn"]
    assert all(t["seat"] in ("u100", "u101") and t["user_id"] == int(t["seat"][1:]) for t in turns)
    # one entry per person's turn: those they played, plus the one now open (if a person's)
    table = await store.get_table(table.id)
    open_now = engine.awaiting(table.state)[0].startswith("u")
    assert len(turns) == turns_seen + int(open_now)
    versions = [(t["seat"], t["version"]) for t in turns]
    assert len(versions) == len(set(versions))


async def test_round_and_end_entries_for_a_whole_match(store):
    table = await store.create_table(game="prsi", seats=people(3), chat_id=-9, seed=40)
    while not table.state.over:
        seat = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat))).table
    entries = await drain(store)
    rounds = [e for e in entries if e["kind"] == "round"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
    assert all(r["table"] == table.id and r["chat_id"] == -9 and r["round_points"] for r in rounds)
    end = [e for e in entries if e["kind"] == "end"]
    assert len(end) == 1 and end[0]["places"] == table.state.places
    assert end[0]["balances"] == table.state.balances and end[0]["rated"] is True
    assert end[0]["names"]["u100"] == "Player 0" and end[0]["user_ids"]["u100"] == 100
    assert entries.index(end[0]) > entries.index(rounds[-1])


async def test_unacknowledged_entries_come_back_to_a_restarted_consumer(store, store_factory):
    await store.create_table(game="prsi", seats=people(2), chat_id=-9, seed=1)
    got = await store.outbox_read("bot-1", block_ms=0)
    assert got and got[0][1]["kind"] == "start"
    fresh = await store_factory()  # the bot restarts before acknowledging
    again = await fresh.outbox_read("bot-1", block_ms=0)
    assert [i for i, _ in again] == [i for i, _ in got]
    for entry_id, _ in again:
        await fresh.outbox_ack(entry_id)
    assert await fresh.outbox_read("bot-1", block_ms=0) == []
    third = await store_factory()
    assert await third.outbox_read("bot-1", block_ms=0) == []


async def test_entries_acknowledged_with_the_next_read_do_not_come_back(store, store_factory):
    """``outbox_read(ack=…)``: the entries handled since the last read are acknowledged
    with it (one round trip on one server); a restarted consumer does not get them again,
    while those not passed still come back."""
    await store.create_table(game="prsi", seats=people(2), chat_id=-9, seed=1)
    await store.create_table(game="prsi", seats=people(2), chat_id=-8, seed=2)
    first = await store.outbox_read("bot-1", count=2, block_ms=0)
    assert len(first) == 2
    more = await store.outbox_read("bot-1", count=100, block_ms=0, ack=[first[0][0]])
    assert more and first[0][0] not in [i for i, _ in more]
    fresh = await store_factory()  # restarted: only what was never acknowledged comes back
    again = [i for i, _ in await fresh.outbox_read("bot-1", count=100, block_ms=0)]
    # (order holds within a table's shard; on a cluster the shards come back in any order)
    assert sorted(again) == sorted([first[1][0]] + [i for i, _ in more])
    assert len(again) == len(set(again))


async def test_each_entry_goes_to_one_consumer_of_the_group(store):
    for i in range(3):
        await store.create_table(game="prsi", seats=people(2), chat_id=-9, seed=i)
    a = await store.outbox_read("a", count=2, block_ms=0)
    b = await store.outbox_read("b", count=100, block_ms=0)
    assert len(a) == 2 and b and not {i for i, _ in a} & {i for i, _ in b}


async def test_tables_outside_chats_send_nothing(store):
    await store.create_table(game="prsi", seats=people(2), seed=1)
    assert await store.outbox_read("bot-1", block_ms=0) == []


async def test_outbox_read_waits_up_to_block_ms(store):
    import time

    t0 = time.monotonic()
    assert await store.outbox_read("bot-1", block_ms=150) == []
    assert time.monotonic() - t0 >= 0.1


async def test_outbox_read_recovers_when_the_stream_and_group_are_lost(store):
    table = await store.create_table(game="prsi", seats=people(3), chat_id=-9, seed=5,
                                     settings=LobbySettings(players=3, turn_seconds=None))
    assert await drain(store)  # the group exists and the first entries were read
    await store.redis.delete(store.keys.outbox_of(store._shard(table.id)))  # e.g. a Redis restored without the stream
    seat = engine.awaiting(table.state)[0]
    await store.apply(table.id, seat, engine.computer_action(table.state, seat))
    entries = await drain(store)
    assert [e["kind"] for e in entries] == ["turn"]


def crash_after_next_commit(store) -> list[tuple]:
    """The next apply commits, then its process 'dies' before ledger, outbox and due time.

    Returns a list that receives the lost follow-up's arguments (to replay it late)."""
    lost: list[tuple] = []
    real = store._after_commit
    # On a single Redis a move's follow-up is in its commit's script (move.lua), so no process
    # can die between the two; the separate follow-up (a cluster's, or a game's last move) can.
    store.fused = False

    async def died(*args):
        lost.append(args)
        store._after_commit = real

    store._after_commit = died
    return lost


async def test_sweep_sends_the_turn_entry_of_a_commit_whose_process_died(store):
    table = await store.create_table(game="prsi", seats=people(3), chat_id=-9, seed=5,
                                     settings=LobbySettings(players=3, turn_seconds=None))
    await drain(store)
    seat = engine.awaiting(table.state)[0]
    crash_after_next_commit(store)
    now = store.clock()
    res = await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)
    assert await drain(store) == []  # the process died before telling the bot
    assert await store.sweep(now=now + 30, lease=None) == 1
    nxt = engine.awaiting(res.table.state)[0]
    entries = await drain(store)
    assert [(e["kind"], e["seat"], e["version"]) for e in entries] == [("turn", nxt, 1)]


async def test_sweep_sends_the_end_of_a_match_once_even_if_the_slow_follow_up_comes_later(store):
    table = await store.create_table(game="prsi", seats=people(2), chat_id=-9, seed=9,
                                     settings=LobbySettings(players=2, turn_seconds=None))
    now = store.clock()
    table, seat, action = await play_to_last_move(store, table, now)
    await drain(store)
    lost = crash_after_next_commit(store)
    await store.apply(table.id, seat, action, now=now)
    assert await drain(store) == [] and await store.ledger() == []
    assert await store.sweep(now=now + 30, lease=None) == 1
    entries = await drain(store)
    assert [e["kind"] for e in entries] == ["round", "end"]
    assert entries[0]["round"] == 5 and entries[1]["rated"] is True
    assert [m["table"] for m in await store.ledger()] == [table.id]
    # the first process was only slow: its follow-up arrives now and repeats nothing
    await store._after_commit(*lost[0])
    assert await drain(store) == []
    assert len(await store.ledger()) == 1
    assert await store.sweep(now=now + 60, lease=None) == 0


async def test_a_late_follow_up_of_an_older_version_still_sends_its_entries(store):
    table = await store.create_table(game="prsi", seats=people(3), chat_id=-9, seed=5,
                                     settings=LobbySettings(players=3, turn_seconds=None))
    await drain(store)
    seat = engine.awaiting(table.state)[0]
    lost = crash_after_next_commit(store)  # v1's follow-up is slow …
    table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat))).table
    seat = engine.awaiting(table.state)[0]
    await store.apply(table.id, seat, engine.computer_action(table.state, seat))  # … v2's is done
    await store._after_commit(*lost[0])  # v1's arrives: its entry is sent, v2's due time stands
    entries = await drain(store)
    assert sorted(e["version"] for e in entries) == [1, 2]
    assert int(await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id)) == 2
