"""store tables: compare-and-set commits, the log, client_action_id, TTLs, restarts (S7).

Every test runs on fakeredis and on the real Redis (``store`` fixture).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import wait_subscribed

import engine
from engine.errors import Rejected
from store import Seat, StoreError
from store.store import FINISHED_TTL, TABLE_TTL


def people(n: int = 3) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


def next_move(table) -> tuple[str, dict]:
    seat = engine.awaiting(table.state)[0]
    return seat, engine.computer_action(table.state, seat)


def replayed(doc_table, log: list[dict], dealer: str, seed: int):
    state = engine.new_game(doc_table.game, [s.seat for s in doc_table.seats], dealer=dealer, seed=seed)
    for entry in log:
        state = engine.apply(state, entry["seat"], entry["action"]).state
    return state


async def test_create_table_is_seeded_with_a_seeded_dealer_and_version_zero(store):
    a = await store.create_table(game="prsi", seats=people(), seed=42)
    b = await store.create_table(game="prsi", seats=people(), seed=42)
    assert a.id != b.id
    assert a.version == 0 and a.state.version == 0
    assert engine.dump(a.state) == engine.dump(b.state)  # same seed: same deal, same dealer
    got = await store.get_table(a.id)
    assert got is not None and engine.dump(got.state) == engine.dump(a.state)
    assert got.rated is True and got.settings.turn_seconds == 60


async def test_create_table_refuses_bad_seat_counts_and_games(store):
    for bad in (people(1), people(6)):
        with pytest.raises(StoreError) as err:
            await store.create_table(game="prsi", seats=bad)
        assert err.value.code == "invalid"
    with pytest.raises(StoreError):
        await store.create_table(game="poker", seats=people())


async def test_apply_commits_logs_and_bumps_the_version(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat, action = next_move(table)
    res = await store.apply(table.id, seat, action, client_action_id="c1")
    assert res.version == 1 and not res.duplicate and res.table.version == 1
    assert res.events and res.events[0]["seat"] == seat
    log = await store.log(table.id)
    assert [e["version"] for e in log] == [1]
    assert log[0]["seat"] == seat and log[0]["action"] == action and log[0]["by"] == "player"
    assert log[0]["events"] == res.events and log[0]["cid"] == "c1"
    assert (await store.get_table(table.id)).version == 1


async def test_rejected_action_raises_the_engine_reason_and_changes_nothing(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat = engine.awaiting(table.state)[0]
    other = next(s.seat for s in table.seats if s.seat != seat)
    with pytest.raises(Rejected) as err:
        await store.apply(table.id, other, {"a": "draw"})
    assert err.value.code == "not_your_turn"
    assert (await store.get_table(table.id)).version == 0
    assert await store.log(table.id) == []


async def test_unknown_table_is_not_found(store):
    with pytest.raises(StoreError) as err:
        await store.apply("nope", "u1", {"a": "draw"})
    assert err.value.code == "not_found"
    assert await store.get_table("nope") is None


async def test_expected_version_mismatch_is_stale(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat, action = next_move(table)
    with pytest.raises(StoreError) as err:
        await store.apply(table.id, seat, action, expected_version=3)
    assert err.value.code == "stale"
    res = await store.apply(table.id, seat, action, expected_version=0)
    assert res.version == 1


async def test_duplicate_client_action_id_is_applied_once(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat, action = next_move(table)
    first = await store.apply(table.id, seat, action, client_action_id="same")
    again = await store.apply(table.id, seat, action, client_action_id="same")
    assert again.duplicate and again.version == first.version and again.events == first.events
    assert len(await store.log(table.id)) == 1
    # even a different action under the same id is answered with the first outcome
    third = await store.apply(table.id, seat, {"a": "draw"}, client_action_id="same")
    assert third.duplicate and third.version == 1
    assert (await store.get_table(table.id)).version == 1


async def test_client_action_ids_are_per_seat(store):
    """Another seat's action under the same id is not a retry: it is judged and committed."""
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat, action = next_move(table)
    first = await store.apply(table.id, seat, action, client_action_id="1")
    seat2, action2 = next_move(first.table)
    assert seat2 != seat
    second = await store.apply(table.id, seat2, action2, client_action_id="1")
    assert not second.duplicate and second.version == 2
    again = await store.apply(table.id, seat2, action2, client_action_id="1")
    assert again.duplicate and again.version == 2
    assert [e["cid"] for e in await store.log(table.id)] == ["1", "1"]


# A race: on the real Redis only, where commands of concurrent callers can interleave (conftest).
@pytest.mark.redis
async def test_duplicate_client_action_id_fired_concurrently_commits_once(real_store):
    store = real_store
    table = await store.create_table(game="prsi", seats=people(), seed=3)
    seat, action = next_move(table)
    results = await asyncio.gather(
        *(store.apply(table.id, seat, action, client_action_id="burst") for _ in range(12))
    )
    assert sum(not r.duplicate for r in results) == 1
    assert {r.version for r in results} == {1}
    assert len(await store.log(table.id)) == 1


async def test_a_rejected_client_action_id_may_be_retried(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    seat, action = next_move(table)
    other = next(s.seat for s in table.seats if s.seat != seat)
    with pytest.raises(Rejected):
        await store.apply(table.id, other, action, client_action_id="r1")
    res = await store.apply(table.id, seat, action, client_action_id="r1")
    assert not res.duplicate and res.version == 1


async def test_s7_ttls_are_set_on_create_and_refreshed_on_every_commit(store):
    r, k = store.redis, store.keys
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    assert TABLE_TTL - 5 <= await r.ttl(k.table(table.id)) <= TABLE_TTL
    for key in (k.table(table.id),):
        await r.expire(key, 100)
    seat, action = next_move(table)
    await store.apply(table.id, seat, action, client_action_id="x")
    for key in (k.table(table.id), k.log(table.id), k.cids(table.id)):
        assert TABLE_TTL - 5 <= await r.ttl(key) <= TABLE_TTL, key
    await r.expire(k.log(table.id), 100)
    res = await store.apply(table.id, *next_move(await store.get_table(table.id)))
    assert res.version == 2
    assert TABLE_TTL - 5 <= await r.ttl(k.log(table.id)) <= TABLE_TTL


async def test_s7_finished_game_is_kept_seven_days_and_replays_from_its_log(store):
    table = await store.create_table(game="prsi", seats=people(), seed=7)
    while not table.state.over:
        res = await store.apply(table.id, *next_move(table))
        table = res.table
    r, k = store.redis, store.keys
    for key in (k.table(table.id), k.log(table.id)):
        assert FINISHED_TTL - 5 <= await r.ttl(key) <= FINISHED_TTL
    log = await store.log(table.id)
    assert [e["version"] for e in log] == list(range(1, table.version + 1))
    case = await store.export_case(table.id)
    assert engine.dump(replayed(table, log, case["dealer"], case["seed"])) == engine.dump(table.state)
    with pytest.raises(Rejected) as err:
        await store.apply(table.id, table.seats[0].seat, {"a": "draw"})
    assert err.value.code == "game_over"


async def test_a_fresh_store_continues_the_same_game(store, store_factory):
    table = await store.create_table(game="prsi", seats=people(), seed=11)
    for _ in range(3):
        table = (await store.apply(table.id, *next_move(table))).table
    await store.close()  # the first process goes away
    fresh = await store_factory()
    again = await fresh.get_table(table.id)
    assert again.version == 3 and engine.dump(again.state) == engine.dump(table.state)
    res = await fresh.apply(again.id, *next_move(again))
    assert res.version == 4
    assert [e["version"] for e in await fresh.log(table.id)] == [1, 2, 3, 4]


async def test_log_since_returns_only_newer_entries(store):
    table = await store.create_table(game="prsi", seats=people(), seed=2)
    for _ in range(4):
        table = (await store.apply(table.id, *next_move(table))).table
    assert [e["version"] for e in await store.log(table.id, since=2)] == [3, 4]
    with pytest.raises(StoreError):
        await store.log("missing")


async def test_subscribe_yields_every_commit_with_who_played(store):
    table = await store.create_table(game="prsi", seats=people(), seed=5)
    got: list[dict] = []
    ready = asyncio.Event()

    async def listen():
        agen = store.subscribe(table.id)
        task = asyncio.ensure_future(agen.__anext__())
        await wait_subscribed(store, table.id)
        ready.set()
        got.append(await task)
        got.append(await agen.__anext__())
        await agen.aclose()

    listener = asyncio.create_task(listen())
    await ready.wait()
    t = table
    for _ in range(2):
        t = (await store.apply(t.id, *next_move(t))).table
    await asyncio.wait_for(listener, 60)
    assert [m["version"] for m in got] == [1, 2]
    assert all(m["table"] == table.id and m["by"] == "player" and m["events"] for m in got)


async def test_chat_and_user_tables_list_live_tables_newest_first(store):
    a = await store.create_table(game="prsi", seats=people(), chat_id=-5)
    b = await store.create_table(game="penki", seats=people(), chat_id=-5)
    assert [t.id for t in await store.chat_tables(-5)] == [b.id, a.id]
    assert {t.id for t in await store.user_tables(101)} == {a.id, b.id}
    await store.redis.delete(store.keys.table(a.id))  # expired
    assert [t.id for t in await store.chat_tables(-5)] == [b.id]


async def test_table_and_lobby_indexes_do_not_grow_without_end(store):
    from store import User
    from store.store import INDEX_KEEP

    now = store.clock()
    old = now - INDEX_KEEP - 60
    for key in (store.keys.chat_tables(-5), store.keys.user_tables(101), store.keys.chat_lobbies(-5)):
        await store.redis.zadd(key, {"ancient": old, "recent": now - 60})
    await store.create_table(game="prsi", seats=people(), chat_id=-5)
    await store.create_lobby(chat_id=-5, game="prsi", creator=User(id=101, name="P"))
    for key in (store.keys.chat_tables(-5), store.keys.user_tables(101), store.keys.chat_lobbies(-5)):
        members = await store.redis.zrange(key, 0, -1)
        assert "ancient" not in members and "recent" in members


async def test_presence_heartbeat_expires(store):
    await store.heartbeat("t1", 7, ttl=30)
    assert await store.is_present("t1", 7)
    assert not await store.is_present("t1", 8)
    assert 25 <= await store.redis.ttl(store.keys.presence("t1", 7)) <= 30
    await store.redis.delete(store.keys.presence("t1", 7))
    assert not await store.is_present("t1", 7)


async def test_users_and_reachability(store):
    from store import User

    await store.save_user(User(id=5, name="Eva", language="cs"))
    assert (await store.get_user(5)).name == "Eva"
    assert await store.get_user(6) is None
    assert await store.is_reachable(5)
    await store.set_reachable(5, False)
    assert not await store.is_reachable(5)
    await store.set_reachable(5, True)
    assert await store.is_reachable(5)


async def test_table_doc_is_versioned_json(store):
    table = await store.create_table(game="penki", seats=people(4), seed=9)
    raw = await store.redis.hget(store.keys.table(table.id), "doc")
    doc = json.loads(raw)
    assert doc["schema"] == 1 and doc["state"]["schema"] and doc["version"] == 0
    assert int(await store.redis.hget(store.keys.table(table.id), "version")) == 0


async def test_table_version_reads_the_version_alone(store):
    table = await store.create_table(game="prsi", seats=people(), seed=1)
    assert await store.table_version(table.id) == 0
    seat, action = next_move(table)
    await store.apply(table.id, seat, action)
    assert await store.table_version(table.id) == 1
    assert await store.table_version("nope") is None


def test_seat_dicts_are_the_seats_models_dumped():
    """The socket's messages dump a document's seats without building models: the same dicts."""
    from store.models import seat_dicts

    stored = [Seat(seat="u1", user_id=1, name="Anna", played=True).model_dump(exclude_defaults=True),
              Seat(seat="c1", name="C", computer=True, level="expert", auto=True, strikes=2).model_dump(),
              {"seat": "u2", "user_id": 2, "name": "Bob"}]
    assert seat_dicts(stored) == [Seat(**s).model_dump() for s in stored]
    assert list(seat_dicts(stored)[0]) == list(Seat.model_fields)  # every field, in the model's order
    with pytest.raises(KeyError):
        seat_dicts([{"seat": "u3"}])  # no name: not a stored seat
