"""Leaving a table (issue 25, item 6): ``Store.leave`` hands the seat to the computer for the
rest of the game (S4's auto), so an untimed table one walked away from finishes by itself.

Time is driven with ``tick(now=...)`` and ``apply(now=...)``; every test runs on fakeredis and
on the real Redis.
"""

from __future__ import annotations

import pytest

import engine
from store import LobbySettings, Seat, StoreError

UNTIMED = LobbySettings(players=2, turn_seconds=None)


async def code_of(coro) -> str:
    with pytest.raises(StoreError) as err:
        await coro
    return err.value.code


async def _my_turn(store, table, seat: str, now: float):
    """Play the other person's first legal actions until ``seat`` is awaited."""
    for _ in range(50):
        awaiting = engine.awaiting(table.state)
        if seat in awaiting:
            return table
        other = awaiting[0]
        table = (await store.apply(table.id, other, engine.legal_actions(table.state, other)[0], now=now)).table
    raise AssertionError("never the seat's turn")


@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_a_left_seat_is_played_by_the_computer_to_the_end(store, game):
    store.clock = lambda: 1_800_000_000.0
    now = store.clock()
    seats = [Seat(seat="u1", user_id=1, name="Alice"), Seat(seat="u2", user_id=2, name="Bob")]
    table = await store.create_table(game=game, seats=seats, chat_id=-5, settings=UNTIMED, seed=3)
    assert table.rated
    # One move of Alice's own first (P16: a seat that never moved makes the match unrated).
    table = await _my_turn(store, table, "u1", now)
    table = (await store.apply(table.id, "u1", engine.legal_actions(table.state, "u1")[0], now=now)).table
    table = await _my_turn(store, table, "u2", now)
    assert "u1" not in engine.awaiting(table.state)
    assert await code_of(store.leave_table(table.id, 1, now=now)) == "not_your_turn"  # nothing changed
    assert not table.seat("u1").auto and await store.table_version(table.id) == table.version
    assert await code_of(store.leave_table(table.id, 99, now=now)) == "not_seated"
    assert await code_of(store.leave_table("nope", 1, now=now)) == "not_found"

    table = await _my_turn(store, table, "u1", now)
    before = table.version
    table = await store.leave_table(table.id, 1, now=now)
    assert table.version == before + 1  # the seat's awaited action, chosen by the computer
    seat = table.seat("u1")
    assert seat.left and seat.auto and table.rated
    entry = (await store.log(table.id, since=before))[0]
    assert (entry["seat"], entry["by"]) == ("u1", "computer")
    again = await store.leave_table(table.id, 1, now=now)  # idempotent
    assert again.version == table.version == await store.table_version(table.id)

    computer_moves = 0
    for _ in range(5000):  # Bob plays himself; the worker plays every turn of Alice's
        if table.state.over:
            break
        awaiting = engine.awaiting(table.state)
        if "u1" in awaiting:
            assert await code_of(store.apply(table.id, "u1", engine.legal_actions(table.state, "u1")[0],
                                             now=now)) == "left"
            now = max(now, await store.next_due(table.id)) + 0.01
            assert await store.tick(now=now) == 1
            computer_moves += 1
        else:
            bob = awaiting[0]
            await store.apply(table.id, bob, engine.legal_actions(table.state, bob)[0], now=now)
        table = await store.get_table(table.id)
        assert table.seat("u1").left and table.seat("u1").auto
    assert table.state.over and computer_moves > 0
    assert table.rated  # the result counts for the seat, as S4's auto
    assert [r["table"] for r in (await store.user_rating(game, 1, chat_id=-5))["last"]] == [table.id]
    assert (await store.leave_table(table.id, 1, now=now)).version == table.version  # left stays left
    assert await code_of(store.leave_table(table.id, 2, now=now)) == "over"


async def test_leaving_a_table_against_computers_lets_it_finish_by_itself(store):
    store.clock = lambda: 1_800_000_000.0
    now = store.clock()
    seats = [Seat(seat="u7", user_id=7, name="Eva"), Seat(seat="c1", name="Computer", computer=True, level="expert")]
    table = await store.create_table(game="prsi", seats=seats, settings=UNTIMED, seed=8)
    for _ in range(20):
        if "u7" in engine.awaiting(table.state):
            break
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
        table = await store.get_table(table.id)
    table = await store.leave_table(table.id, 7, now=now)
    for _ in range(5000):  # nobody but the worker moves now
        if table.state.over:
            break
        now = max(now, await store.next_due(table.id)) + 0.01
        assert await store.tick(now=now) == 1
        table = await store.get_table(table.id)
    assert table.state.over and not table.rated
