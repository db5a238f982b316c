"""store lobbies (S1): seats, limits, settings, computers, start exactly once, TTL 1 h.

Every test runs on fakeredis and the real Redis.
"""

from __future__ import annotations

import asyncio

import pytest

from store import Lobby, LobbySettings, Seat, StoreError, User
from store.lobbies import ordered_seats
from store.store import LOBBY_TTL

ALICE, BOB, CAROL, DAN = (User(id=i, name=n) for i, n in ((1, "Alice"), (2, "Bob"), (3, "Carol"), (4, "Dan")))


async def codes(coro) -> str:
    with pytest.raises(StoreError) as err:
        await coro
    return err.value.code


async def test_s1_create_lobby_seats_the_creator_with_default_settings(store):
    lobby = await store.create_lobby(chat_id=-10, thread_id=7, game="prsi", creator=ALICE)
    assert [s.seat for s in lobby.seats] == ["u1"] and lobby.seats[0].name == "Alice"
    assert lobby.settings == LobbySettings(players=3, turn_seconds=60)
    assert lobby.table_id is None and lobby.version == 1 and lobby.thread_id == 7
    assert (await store.get_lobby(lobby.id)) == lobby
    penki = await store.create_lobby(chat_id=-10, game="penki", creator=BOB)
    assert penki.settings.players == 3
    assert [x.id for x in await store.chat_lobbies(-10)] == [penki.id, lobby.id]


async def test_s1_join_is_idempotent_and_fills_seats_in_order(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    lobby = await store.join(lobby.id, BOB)
    again = await store.join(lobby.id, BOB)
    assert again.version == lobby.version
    assert [s.seat for s in again.seats] == ["u1", "u2"]
    assert (await store.get_user(2)).name == "Bob"


async def test_s1_seat_limit_refuses_the_extra_player(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(lobby.id, BOB)
    await store.join(lobby.id, CAROL)
    assert await codes(store.join(lobby.id, DAN)) == "full"
    assert await codes(store.add_computer(lobby.id, ALICE.id)) == "full"


# A race: on the real Redis only, where commands of concurrent callers can interleave (conftest).
@pytest.mark.redis
async def test_concurrent_joins_never_overfill_the_lobby(real_store):
    store = real_store
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    users = [User(id=100 + i, name=f"U{i}") for i in range(8)]
    results = await asyncio.gather(*(store.join(lobby.id, u) for u in users), return_exceptions=True)
    assert sum(not isinstance(r, Exception) for r in results) == 2
    assert all(r.code == "full" for r in results if isinstance(r, Exception))
    assert len((await store.get_lobby(lobby.id)).seats) == 3


async def test_leave_is_idempotent(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(lobby.id, BOB)
    left = await store.leave(lobby.id, BOB.id)
    assert [s.seat for s in left.seats] == ["u1"]
    assert (await store.leave(lobby.id, BOB.id)).version == left.version


async def test_s1_only_the_creator_adds_computers_and_changes_settings(store):
    lobby = await store.create_lobby(chat_id=-10, game="penki", creator=ALICE)
    await store.join(lobby.id, BOB)
    assert await codes(store.add_computer(lobby.id, BOB.id)) == "not_creator"
    assert await codes(store.update_settings(lobby.id, BOB.id, players=4)) == "not_creator"
    assert await codes(store.start(lobby.id, BOB.id)) == "not_creator"
    lobby = await store.add_computer(lobby.id, ALICE.id)
    assert [(s.seat, s.computer, s.user_id) for s in lobby.seats][-1] == ("c1", True, None)


async def test_settings_are_checked_per_game(store):
    prsi = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    assert (await store.update_settings(prsi.id, ALICE.id, players=5, turn_seconds=None)).settings == \
        LobbySettings(players=5, turn_seconds=None)
    assert await codes(store.update_settings(prsi.id, ALICE.id, players=6)) == "invalid"  # Prší 2–5
    assert await codes(store.update_settings(prsi.id, ALICE.id, turn_seconds=45)) == "invalid"
    assert await codes(store.update_settings(prsi.id, ALICE.id, colour="red")) == "invalid"
    penki = await store.create_lobby(chat_id=-10, game="penki", creator=ALICE)
    assert (await store.update_settings(penki.id, ALICE.id, players=6)).settings.players == 6  # Penki 2–6
    assert await codes(store.update_settings(penki.id, ALICE.id, players=1)) == "invalid"
    await store.join(penki.id, BOB)
    await store.join(penki.id, CAROL)
    assert await codes(store.update_settings(penki.id, ALICE.id, players=2)) == "full"
    assert await codes(store.create_lobby(chat_id=-1, game="durak", creator=ALICE)) == "invalid"


async def test_s1_start_needs_two_seats_and_makes_a_table_with_the_lobby_seats(store):
    lobby = await store.create_lobby(chat_id=-10, thread_id=3, game="prsi", creator=ALICE)
    assert await codes(store.start(lobby.id, ALICE.id)) == "too_few"
    await store.join(lobby.id, BOB)
    await store.add_computer(lobby.id, ALICE.id)
    table = await store.start(lobby.id, ALICE.id, seed=5)
    assert [s.seat for s in table.seats] == ["u1", "u2", "c1"]
    assert table.lobby_id == lobby.id and table.chat_id == -10 and table.thread_id == 3
    assert table.rated is False  # P16: a computer seat
    assert (await store.get_lobby(lobby.id)).table_id == table.id
    assert [t.id for t in await store.chat_tables(-10)] == [table.id]


# A race: on the real Redis only, where commands of concurrent callers can interleave (conftest).
@pytest.mark.redis
async def test_double_start_at_the_same_moment_makes_exactly_one_table(real_store, real_store_factory):
    store, store_factory = real_store, real_store_factory
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(lobby.id, BOB)
    other = await store_factory()
    results = await asyncio.gather(
        *(s.start(lobby.id, ALICE.id) for s in (store, other, store, other)), return_exceptions=True
    )
    tables = [r for r in results if not isinstance(r, Exception)]
    assert len(tables) == 1
    assert all(isinstance(r, StoreError) and r.code == "started" for r in results if r not in tables)
    assert (await store.get_lobby(lobby.id)).table_id == tables[0].id
    assert [t.id for t in await store.chat_tables(-10)] == [tables[0].id]
    keys = [k async for k in store.redis.scan_iter(match=f"{store.keys.prefix}:{{g:*}}:table")]
    assert keys == [store.keys.table(tables[0].id)]  # the losers' drafts are gone
    starts = []
    while got := await store.outbox_read("bot", count=100, block_ms=0):
        starts += [e for i, e in got if e["kind"] == "start"]
        for i, _ in got:
            await store.outbox_ack(i)
    assert [e["table"] for e in starts] == [tables[0].id]  # announced once


async def test_a_start_whose_process_dies_after_the_flip_is_listed_and_scheduled(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(lobby.id, BOB)

    async def died(*args, **kwargs):
        raise SystemExit  # the process dies right after the lobby flipped to the table

    store._register = died
    with pytest.raises(SystemExit):
        await store.start(lobby.id, ALICE.id)
    table_id = (await store.get_lobby(lobby.id)).table_id
    assert table_id is not None
    assert [t.id for t in await store.chat_tables(-10)] == [table_id]
    assert [t.id for t in await store.user_tables(BOB.id)] == [table_id]
    table = await store.get_table(table_id)
    assert await store.next_due(table_id) == table.deadline is not None  # its turn timer runs


async def test_no_joining_leaving_or_changing_after_the_start(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(lobby.id, BOB)
    await store.start(lobby.id, ALICE.id)
    assert await codes(store.join(lobby.id, CAROL)) == "started"
    assert await codes(store.leave(lobby.id, BOB.id)) == "started"
    assert await codes(store.add_computer(lobby.id, ALICE.id)) == "started"
    assert await codes(store.update_settings(lobby.id, ALICE.id, players=4)) == "started"
    assert await codes(store.start(lobby.id, ALICE.id)) == "started"
    assert len((await store.join(lobby.id, BOB)).seats) == 2  # a seated player's join is a no-op


async def test_s1_s7_lobby_ttl_is_one_hour_since_the_last_change(store):
    lobby = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    key = store.keys.lobby(lobby.id)
    assert LOBBY_TTL - 5 <= await store.redis.ttl(key) <= LOBBY_TTL
    await store.redis.expire(key, 50)
    await store.join(lobby.id, BOB)
    assert LOBBY_TTL - 5 <= await store.redis.ttl(key) <= LOBBY_TTL
    await store.set_lobby_message(lobby.id, 777)
    assert (await store.get_lobby(lobby.id)).message_id == 777
    await store.redis.delete(key)  # expired
    assert await store.get_lobby(lobby.id) is None
    assert await codes(store.join(lobby.id, CAROL)) == "not_found"
    assert await store.chat_lobbies(-10) == []


async def test_s1_a_new_lobby_never_overwrites_one_with_the_same_id(store, monkeypatch):
    """Ids are random (48 bits); were one drawn twice, the second lobby is refused ("busy")
    and the first, with its players, stays as it was (cas.lua: the key must not exist)."""
    import store.lobbies as lobbies

    monkeypatch.setattr(lobbies.secrets, "token_urlsafe", lambda n: "same-id")
    first = await store.create_lobby(chat_id=-10, game="prsi", creator=ALICE)
    await store.join(first.id, BOB)
    with pytest.raises(StoreError) as err:
        await store.create_lobby(chat_id=-20, game="penki", creator=CAROL)
    assert err.value.code == "busy"
    kept = await store.get_lobby("same-id")
    assert kept.game == "prsi" and kept.chat_id == -10 and [s.user_id for s in kept.seats] == [1, 2]


async def test_a_new_table_never_overwrites_one_with_the_same_id(store, monkeypatch):
    from store import Seat, tables

    seats = [Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in (1, 2)]
    monkeypatch.setattr(tables.secrets, "token_urlsafe", lambda n: "same-table")
    first = await store.create_table(game="prsi", seats=seats, seed=1)
    with pytest.raises(StoreError) as err:
        await store.create_table(game="penki", seats=seats, seed=2)
    assert err.value.code == "busy"
    assert (await store.get_table("same-table")).game == "prsi" == first.game


async def test_s1_a_lobby_gone_meanwhile_leaves_the_chats_lobby_list(store):
    """S1/S7: a lobby that expired (1 h unused) is not listed for its chat, and its id is
    dropped from the chat's lobby index, so the index does not grow with dead ids."""
    old = await store.create_lobby(chat_id=-12, game="prsi", creator=ALICE)
    live = await store.create_lobby(chat_id=-12, game="penki", creator=BOB)
    await store.redis.delete(store.keys.lobby(old.id))  # its TTL ran out
    assert [lb.id for lb in await store.chat_lobbies(-12)] == [live.id]
    index = store.keys.chat_lobbies(-12)
    assert [i.decode() if isinstance(i, bytes) else i for i in await store.redis.zrange(index, 0, -1)] == [live.id]


def play_again(order, seated, dealer_pos):
    return Lobby(id="l1", chat_id=-1, game="prsi", creator_id=1, settings=LobbySettings(players=len(order)),
                 seats=[Seat(seat=s, user_id=int(s[1:]), name=s) for s in seated], rematch_of="t0",
                 order=order, dealer_pos=dealer_pos)


def test_s1_play_again_seats_keep_their_places_and_newcomers_fill_the_open_ones_in_turn():
    """Issue 15 (S1's "Play again" lobby): who sat at the old table sits where they sat;
    newcomers (in join order) take the places left open, then sit after the kept seats."""
    seats, _ = ordered_seats(play_again(["u1", "u2", "u3"], ["u3", "u5", "u1", "u4"], None))
    assert [s.seat for s in seats] == ["u1", "u5", "u3", "u4"]


def test_s1_play_again_deals_first_from_the_next_dealers_seat_or_the_next_taken_one():
    """Issue 15: the first dealer of the new table is the seat after the old match's last
    dealer (``dealer_pos``), or the next seat clockwise that is taken when that one is empty."""
    seats, dealer = ordered_seats(play_again(["u1", "u2", "u3"], ["u2", "u3", "u1"], 1))
    assert [s.seat for s in seats] == ["u1", "u2", "u3"] and dealer == "u2"
    seats, dealer = ordered_seats(play_again(["u1", "u2", "u3"], ["u3", "u1"], 1))  # u2 never came back
    assert [s.seat for s in seats] == ["u1", "u3"] and dealer == "u3"
    seats, dealer = ordered_seats(play_again(["u1", "u2", "u3"], ["u1", "u2"], 2))  # wraps round
    assert dealer == "u1"
