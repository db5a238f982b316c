"""P16 as amended: a seat whose person never made a move of their own (every move the
timer's or the computer's) makes the finished match unrated for everyone; one move of
one's own is enough to be rated. Time is driven with ``tick(now=...)``."""

from __future__ import annotations

import engine
from store import LobbySettings, Seat

T30 = LobbySettings(players=3, turn_seconds=30)


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{700 + i}", user_id=700 + i, name=f"Player {i}") for i in range(n)]


async def play_out(store, table, own: set[str]):
    """Every seat in ``own`` makes its first move itself; the timer (then the computer) plays
    everything else until the match is over."""
    now = store.clock()
    pending = set(own)
    for _ in range(20_000):
        table = await store.get_table(table.id)
        if table.state.over:
            return table
        mine = [s for s in engine.awaiting(table.state) if s in pending]
        if mine:
            seat = mine[0]
            action = engine.legal_actions(table.state, seat)[0]
            await store.apply(table.id, seat, action, by="player", now=now)
            pending.discard(seat)
            continue
        now = max(now, await store.next_due(table.id) or now) + 0.01
        await store.tick(now=now)
    raise AssertionError("the match did not end")


async def end_entry(store, table_id):
    entries = await store.outbox_read("test", count=10_000, block_ms=0)
    ends = [e for _, e in entries if e.get("kind") == "end" and e.get("table") == table_id]
    assert len(ends) == 1
    return ends[0]


async def test_a_match_nobody_played_is_not_rated(store):
    table = await store.create_table(game="prsi", seats=people(3), settings=T30, seed=11, chat_id=-100777)
    assert table.rated
    table = await play_out(store, table, own=set())
    assert not table.rated
    assert await store.ledger() == []
    assert await store.leaderboard("prsi", "week") == []
    assert await store.leaderboard("prsi", "week", chat_id=-100777) == []
    end = await end_entry(store, table.id)
    assert end["rated"] is False and sorted(end["unplayed"]) == ["u700", "u701", "u702"]


async def test_one_seat_nobody_played_makes_it_unrated_for_everyone(store):
    table = await store.create_table(game="penki", seats=people(3), settings=T30, seed=5, chat_id=-100777)
    table = await play_out(store, table, own={"u700", "u701"})
    assert not table.rated and await store.ledger() == []
    assert (await end_entry(store, table.id))["unplayed"] == ["u702"]


async def test_one_move_of_ones_own_is_enough_to_be_rated(store):
    table = await store.create_table(game="penki", seats=people(3), settings=T30, seed=5, chat_id=-100777)
    table = await play_out(store, table, own={"u700", "u701", "u702"})
    assert table.rated
    assert [m["table"] for m in await store.ledger()] == [table.id]
    end = await end_entry(store, table.id)
    assert end["rated"] is True and end["unplayed"] == []
