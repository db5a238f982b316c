"""Play again (issue 15) in the store: a finished table's "Play again" lobby — one tap each,
the same seats (computers included), the next dealer, kept seats, declines and no-shows
that leave open seats the lobby fills as usual, one table however many tap at once."""

from __future__ import annotations

import asyncio

import pytest

import engine
from store import LobbySettings, Seat, StoreError, User

CHAT = -100777


def person(uid: int, name: str) -> Seat:
    return Seat(seat=f"u{uid}", user_id=uid, name=name)


def user(uid: int, name: str) -> User:
    return User(id=uid, name=name)


async def finished(store, seats, *, chat_id=CHAT, seed=3, settings=None):
    table = await store.create_table(game="prsi", seats=seats, chat_id=chat_id, seed=seed, settings=settings)
    for _ in range(5000):
        st = (await store.get_table(table.id)).state
        if st.over:
            return await store.get_table(table.id)
        await store.apply(table.id, st.to_move, engine.computer_action(st, st.to_move))
    raise AssertionError("the match did not end")


async def lobby_entries(store):
    """The ``lobby`` entries of the outbox (read to its end)."""
    out = []
    while batch := await store.outbox_read("t", count=500, block_ms=0):
        out += [e for _, e in batch if e["kind"] == "lobby"]
        for i, _ in batch:
            await store.outbox_ack(i)
    return out


async def test_one_tap_each_same_seats_next_dealer(store):
    ann, bob, cid = person(1, "Ann"), person(2, "Bob"), person(3, "Cid")
    old = await finished(store, [ann, bob, cid], settings=LobbySettings(turn_seconds=30, variants=["PV7"]))
    last_dealer = old.state.dealer
    with pytest.raises(StoreError) as exc:
        await store.rematch(old.id, user(9, "Stranger"))
    assert exc.value.code == "not_seated"

    lobby = await store.rematch(old.id, user(2, "Bob"))
    assert [s.seat for s in lobby.seats] == ["u2"] and lobby.creator_id == 2 and lobby.table_id is None
    assert lobby.rematch_of == old.id and lobby.order == ["u1", "u2", "u3"] and sorted(lobby.reserved) == [1, 3]
    assert lobby.settings.turn_seconds == 30 and lobby.settings.variants == ["PV7"] and lobby.settings.players == 3
    assert (await store.rematch(old.id, user(2, "Bob"))).seats == lobby.seats  # a second tap changes nothing
    told = await lobby_entries(store)
    assert told and told[0]["lobby_id"] == lobby.id and told[0]["chat_id"] == CHAT
    with pytest.raises(StoreError) as exc:  # the others' seats are kept for them
        await store.join(lobby.id, user(9, "Stranger"))
    assert exc.value.code == "full"

    await store.rematch(old.id, user(3, "Cid"))
    lobby = await store.rematch(old.id, user(1, "Ann"))  # the last seat: the table starts by itself
    assert lobby.table_id is not None
    new = await store.get_table(lobby.table_id)
    assert [s.seat for s in new.seats] == ["u1", "u2", "u3"]  # where they sat, not in tap order
    order = ["u1", "u2", "u3"]
    assert new.state.dealer == order[(order.index(last_dealer) + 1) % 3]
    assert new.state.vx.names() == ["PV7"] and not new.rated and new.chat_id == CHAT
    assert (await store.rematch(old.id, user(1, "Ann"))).table_id == new.id  # later taps find the new table
    assert (await store.rematch_of(old.id)).table_id == new.id


async def test_computers_keep_their_seats_and_a_lone_person_starts_at_once(store):
    ann = person(1, "Ann")
    cpu = Seat(seat="c1", user_id=None, name="Computer 1", computer=True)
    old = await finished(store, [cpu, ann], chat_id=None)
    lobby = await store.rematch(old.id, user(1, "Ann"))
    new = await store.get_table(lobby.table_id)
    assert [(s.seat, s.computer) for s in new.seats] == [("c1", True), ("u1", False)]
    assert new.state.dealer == ["c1", "u1"][(["c1", "u1"].index(old.state.dealer) + 1) % 2]
    assert lobby.chat_id is None and await lobby_entries(store) == []


async def test_declines_and_no_shows_leave_seats_the_lobby_fills(store):
    ann, bob, cid = person(1, "Ann"), person(2, "Bob"), person(3, "Cid")
    old = await finished(store, [ann, bob, cid], seed=8)
    now = [1000.0]
    store.clock = lambda: now[0]
    lobby = await store.rematch(old.id, user(1, "Ann"))
    lobby = await store.decline_rematch(old.id, 2)  # Bob says no: his seat is open at once
    assert lobby.reserved == [3]
    dan = await store.join(lobby.id, user(4, "Dan"))
    assert [s.seat for s in dan.seats] == ["u1", "u4"] and dan.table_id is None
    with pytest.raises(StoreError):
        await store.join(lobby.id, user(5, "Eve"))  # Cid's seat is still kept
    now[0] += 121  # Cid never answers: his seat lapses
    eve = await store.join(lobby.id, user(5, "Eve"))
    new = await store.get_table(eve.table_id)
    assert [s.seat for s in new.seats] == ["u1", "u4", "u5"]  # newcomers in the places left open
    late = await store.rematch(old.id, user(3, "Cid"))  # too late: the new table runs without him
    assert late.table_id == new.id and late.seat_of(3) is None and new.seat_of(3) is None


async def test_a_decline_before_anyone_asks_is_remembered(store):
    ann, bob = person(1, "Ann"), person(2, "Bob")
    old = await finished(store, [ann, bob], seed=5)
    assert await store.decline_rematch(old.id, 2) is None
    lobby = await store.rematch(old.id, user(1, "Ann"))
    assert lobby.reserved == [] and lobby.table_id is None
    dan = await store.join(lobby.id, user(4, "Dan"))
    assert dan.table_id is not None


async def test_taps_at_the_same_moment_make_one_lobby_and_one_table(store):
    seats = [person(i, f"P{i}") for i in (1, 2, 3, 4)]
    old = await finished(store, seats, seed=11)
    lobbies = await asyncio.gather(*(store.rematch(old.id, user(i, f"P{i}")) for i in (1, 2, 3, 4)))
    assert len({lb.id for lb in lobbies}) == 1
    final = await store.rematch_of(old.id)
    assert final.table_id is not None and len(final.seats) == 4
    new = await store.get_table(final.table_id)
    assert [s.seat for s in new.seats] == ["u1", "u2", "u3", "u4"]


async def test_a_running_table_has_no_rematch(store):
    table = await store.create_table(game="prsi", seats=[person(1, "Ann"), person(2, "Bob")], seed=1)
    with pytest.raises(StoreError) as exc:
        await store.rematch(table.id, user(1, "Ann"))
    assert exc.value.code == "invalid"


async def test_s1_play_again_after_an_unknown_table_is_not_found(store):
    with pytest.raises(StoreError) as exc:
        await store.rematch("no-such-table", user(1, "Ann"))
    assert exc.value.code == "not_found"


async def test_s1_play_again_seats_the_tapper_under_their_new_name_and_computers_under_theirs(store):
    """Issue 15: whoever taps first makes the lobby under the name they have now (it is
    remembered for them, as a join does); a computer keeps its own name."""
    cpu = Seat(seat="c1", user_id=None, name="Computer 1", computer=True)
    old = await finished(store, [cpu, person(1, "Ann"), person(2, "Bob")], seed=4)
    lobby = await store.rematch(old.id, user(1, "Annie"))
    assert [(s.seat, s.name) for s in lobby.seats] == [("c1", "Computer 1"), ("u1", "Annie")]
    assert (await store.get_user(1)).name == "Annie"


async def test_s1_a_decline_after_the_new_table_started_leaves_its_lobby_as_it_was(store):
    """Issue 15: once the "Play again" table runs, saying no changes nothing (the lobby still
    shows who sits there)."""
    old = await finished(store, [person(1, "Ann"), person(2, "Bob")], seed=6)
    await store.rematch(old.id, user(1, "Ann"))
    started = await store.rematch(old.id, user(2, "Bob"))
    assert started.table_id is not None
    assert (await store.decline_rematch(old.id, 2)).seats == started.seats
    assert (await store.rematch_of(old.id)).seats == started.seats
