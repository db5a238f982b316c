"""Cheap per-request work and backpressure in the web app: the verified-initData cache,
batched presence, state messages serialised once per version, admission (503 with
Retry-After under more load than a process takes), the bounded Redis pool."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import WEB_BOT_TOKEN

import webapp.auth
from store import UNAVAILABLE, LobbySettings, Seat, Store
from webapp.admission import Admission
from webapp.auth import Authenticator
from webapp.errors import ApiError
from webapp.keys import ADMISSION, STORE
from webapp.presence import Presence
from webapp.ws import Client, Frames

ANN, BOB = 111, 222
DAY = 24 * 3600


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Users:
    """A stand-in for the store's ``save_user`` / ``seen_user`` (counts saves)."""

    def __init__(self) -> None:
        self.saved: list = []

    async def save_user(self, user) -> None:
        self.saved.append(user)

    async def seen_user(self, user_id, name, username=None, language=None) -> None:
        self.saved.append((user_id, name, username, language))


# --- the verified-initData cache -----------------------------------------------------
async def test_verified_init_data_is_checked_once_then_served_from_the_cache(web_init_data, monkeypatch):
    clock = Clock()
    auth = Authenticator(WEB_BOT_TOKEN, Users(), max_age=DAY, clock=clock)
    calls = []
    real = webapp.auth.verify_init_data

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(webapp.auth, "verify_init_data", counting)
    init = web_init_data(ANN, "Ann", auth_date=int(clock.now))
    for _ in range(5):
        who = await auth.identify(init)
        assert who.id == ANN and who.name == "Ann"
    assert len(calls) == 1
    other = web_init_data(BOB, "Bob", auth_date=int(clock.now))
    assert (await auth.identify(other)).id == BOB
    assert len(calls) == 2


async def test_a_cached_init_data_expires_exactly_at_its_max_age(web_init_data):
    clock = Clock()
    auth = Authenticator(WEB_BOT_TOKEN, Users(), max_age=3600, clock=clock)
    init = web_init_data(ANN, auth_date=int(clock.now))
    await auth.identify(init)
    clock.now += 3600
    assert (await auth.identify(init)).id == ANN  # exactly the max age: still good
    clock.now += 1
    with pytest.raises(ApiError) as err:
        await auth.identify(init)
    assert err.value.status == 401 and err.value.code == "auth_expired"
    with pytest.raises(ApiError):  # and again: it was dropped, the fresh check says the same
        await auth.identify(init)


async def test_bad_init_data_is_never_cached(web_init_data):
    auth = Authenticator(WEB_BOT_TOKEN, Users(), max_age=DAY)
    good = web_init_data(ANN)
    tampered = good.replace("Ann", "Eve")
    for _ in range(2):
        with pytest.raises(ApiError):
            await auth.identify(tampered)
    foreign = web_init_data(ANN, token="987:other-bot-token")
    with pytest.raises(ApiError):
        await auth.identify(foreign)
    assert tampered not in auth._verified and foreign not in auth._verified
    assert (await auth.identify(good)).id == ANN


async def test_the_cache_is_bounded(web_init_data, monkeypatch):
    monkeypatch.setattr(Authenticator, "MAX_VERIFIED", 3)
    auth = Authenticator(WEB_BOT_TOKEN, Users(), max_age=DAY)
    inits = [web_init_data(uid) for uid in range(1, 6)]
    for init in inits:
        await auth.identify(init)
    assert len(auth._verified) == 3
    assert list(auth._verified) == inits[2:]  # the least recently used went first


# --- batched presence ------------------------------------------------------------------
class Beats:
    """A stand-in for ``store.heartbeats`` recording each batch."""

    def __init__(self, fail: int = 0) -> None:
        self.batches: list[tuple[list, int]] = []
        self.fail = fail

    async def heartbeats(self, marks, ttl: int = 30) -> None:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("redis away")
        self.batches.append((list(marks), ttl))


async def test_presence_touches_are_written_in_one_batch_and_not_rewritten_while_fresh():
    clock = Clock()
    beats = Beats()
    presence = Presence(beats, ttl=30, flush=0.25, clock=clock)
    for user in (1, 2, 3):
        presence.touch("T", user)
    presence.touch("T", 1)
    assert await presence.flush() == 3
    assert beats.batches == [([("T", 1), ("T", 2), ("T", 3)], 40)]  # ttl + the refresh allowance
    clock.now += 5
    presence.touch("T", 1)  # written 5 s ago: nothing to do
    assert await presence.flush() == 0
    clock.now += 6  # 11 s > ttl / 3 since the write
    presence.touch("T", 1)
    presence.touch("U", 1)
    assert await presence.flush() == 2
    assert beats.batches[-1] == ([("T", 1), ("U", 1)], 40)


async def test_presence_marks_survive_a_failed_batch():
    beats = Beats(fail=1)
    presence = Presence(beats, ttl=30, clock=Clock())
    presence.touch("T", 1)
    with pytest.raises(ConnectionError):
        await presence.flush()
    assert await presence.flush() == 1
    assert beats.batches == [([("T", 1)], 40)]


async def test_the_presence_writer_writes_soon_after_a_touch_and_at_close(store):
    presence = Presence(store, ttl=30, flush=0.05)
    presence.start()
    presence.touch("T1", 7)
    for _ in range(200):
        if await store.is_present("T1", 7):
            break
        await asyncio.sleep(0.01)
    assert await store.is_present("T1", 7)
    presence.touch("T1", 8)
    await presence.close()  # what was pending is written on the way out
    assert await store.is_present("T1", 8)
    assert 30 <= await store.redis.ttl(store.keys.presence("T1", 8)) <= 40


async def test_store_heartbeats_writes_many_marks_in_one_round_trip(store):
    await store.heartbeats([("T1", 1), ("T2", 2)], ttl=30)
    assert await store.is_present("T1", 1) and await store.is_present("T2", 2)
    assert not await store.is_present("T1", 2)
    await store.heartbeats([], ttl=30)  # nothing to write: no error


# --- one serialisation per seat and version -----------------------------------------
async def test_a_versions_state_message_is_built_once_per_seat_and_shared(store, monkeypatch):
    import webapp.ws

    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in (ANN, BOB)]
    table = await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None))
    views = []  # the seats of each engine.views / engine.view call: all of a version's views at once
    real_view, real_views = webapp.ws.engine.view, webapp.ws.engine.views

    def counting_one(state, seat):
        views.append([seat])
        return real_view(state, seat)

    def counting(state, seats):
        seats = list(seats)
        views.append(seats)
        return real_views(state, seats)

    monkeypatch.setattr(webapp.ws.engine, "view", counting_one)
    monkeypatch.setattr(webapp.ws.engine, "views", counting)
    known = await store.current(table.id)
    frames = Frames(known, [], None)
    clients = [Client(None, ANN, f"u{ANN}", 4) for _ in range(3)] + [Client(None, BOB, f"u{BOB}", 4)]
    clients += [Client(None, 999, None, 4) for _ in range(2)]
    for client in clients:
        client.offer(*frames.get(client.seat))
    assert len(views) == 1 and sorted(views[0], key=str) == sorted([f"u{ANN}", f"u{BOB}", None], key=str)
    texts = [client.queue.get_nowait()[1] for client in clients]
    assert texts[0] is texts[1] is texts[2]  # the very same string for every socket of a seat
    for text, client in zip(texts, clients, strict=True):
        msg = json.loads(text)
        assert msg["seat"] == client.seat and msg["version"] == table.version
        assert msg["view"] == real_view(table.state, client.seat)


# --- admission ------------------------------------------------------------------------
async def test_admission_takes_the_limit_queues_briefly_and_refuses_beyond():
    adm = Admission(limit=2, queue=1, max_wait=10.0)
    assert await adm.acquire() and await adm.acquire()
    waiting = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    assert not await adm.acquire()  # the queue is full: refused at once
    adm.release()  # the slot passes to the waiter
    assert await waiting
    assert adm.running == 2 and adm.refused == 1
    adm.release()
    adm.release()
    assert adm.running == 0


async def test_admission_refuses_a_waiter_whose_wait_runs_out():
    adm = Admission(limit=1, queue=5, max_wait=0.01)
    assert await adm.acquire()
    assert not await adm.acquire()
    adm.release()
    assert adm.running == 0 and not adm._waiters
    assert await adm.acquire()  # the slot is free again


async def test_overload_is_answered_503_with_retry_after_and_admitted_requests_finish(web_client, auth):
    client = await web_client(admit_limit=1, admit_queue=0, admit_wait=0)
    gate = asyncio.Event()
    real = client.app[STORE].user_tables

    async def slow(user_id):
        await gate.wait()
        return await real(user_id)

    client.app[STORE].user_tables = slow
    try:
        first = asyncio.create_task(client.get("/api/tables", headers=auth(ANN)))
        while client.app[ADMISSION].running == 0:
            await asyncio.sleep(0.005)
        resp = await client.get("/api/tables", headers=auth(BOB))
        assert resp.status == 503
        body = await resp.json()
        assert body["error"] == "overloaded" and body["retry_after"] > 0
        assert int(resp.headers["Retry-After"]) >= 1
        assert (await client.get("/healthz")).status == 200  # health checks are never held back
        gate.set()
        assert (await first).status == 200
    finally:
        del client.app[STORE].user_tables
    assert (await client.get("/api/tables", headers=auth(BOB))).status == 200


@pytest.fixture
def auth(web_init_data):
    return lambda uid: {"Authorization": f"tma {web_init_data(uid, f'P{uid}')}"}


# --- the bounded pool ---------------------------------------------------------------
@pytest.mark.redis
async def test_the_pool_is_bounded_and_a_call_waiting_too_long_fails_as_unavailable(redis_url):
    from conftest import real_redis_answers

    if not real_redis_answers(redis_url):
        pytest.skip("no Redis")
    store = Store.from_url(redis_url, prefix="karty-test-pool", pool_size=2, pool_timeout=0.05, timeout=0.5)
    try:
        assert await store.warm() == 2
        pool = store.redis.connection_pool
        held = [await pool.get_connection(), await pool.get_connection()]
        with pytest.raises(UNAVAILABLE):
            await store.ping()
        for conn in held:
            await pool.release(conn)
        assert await store.ping()
        # a call that takes longer than the time bound fails instead of hanging
        with pytest.raises(UNAVAILABLE):
            await store.redis.execute_command("BLPOP", "karty-test-pool:{x}:never", 2)
        assert await store.ping()  # and the pool recovers
    finally:
        await store.close()


async def test_another_process_sends_the_committers_ready_messages_without_parsing_the_table(
    store, store_factory
):
    """The committing process makes each seat's message once; a process that only watches
    sends those texts as they are: it neither parses the document nor builds a view."""
    import engine
    from webapp.ws import Feed, render

    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in (ANN, BOB)]
    table = await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None))
    watcher = await store_factory()
    for st in (store, watcher):
        st.live.render = render
    feed = Feed(table.id)
    client = Client(None, ANN, f"u{ANN}", 8)
    feed.clients.add(client)
    await watcher.watch(table.id, feed)
    committer_feed = Feed(table.id)
    await store.watch(table.id, committer_feed)
    committer_client = Client(None, ANN, f"u{ANN}", 8)
    committer_feed.clients.add(committer_client)
    state = table.state
    mover = engine.awaiting(state)[0]
    res = await store.apply(table.id, mover, engine.computer_action(state, mover))
    for _ in range(500):
        if not client.queue.empty():
            break
        await asyncio.sleep(0.01)
    msg, text = client.queue.get_nowait()
    _, mine = committer_client.queue.get_nowait()
    assert msg.get("lazy") and text == mine  # the very message the committer made
    got = json.loads(text)
    assert got["version"] == res.version and got["events"] == res.events and got["by"] == "player"
    assert got["view"] == engine.view(res.table.state, f"u{ANN}")
    known = watcher.live.peek(table.id)
    assert known.version == res.version and known._doc is None and known._state is None
    assert known.table.version == res.version  # parsed when asked for


async def test_a_committed_move_leaves_nothing_for_the_garbage_collector(store):
    """What the committing process renders of a version holds no reference back to it: no
    cycle between the version (``Known``) and its messages (``Frames``) is left for the
    collector, with sockets of the table here and with none (the render goes to others)."""
    import gc

    import engine
    from store.live import Known
    from webapp.ws import Feed, render

    store.live.render = render
    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in (ANN, BOB)]
    watched = await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None))
    alone = await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None))
    feed = Feed(watched.id)
    client = Client(None, ANN, f"u{ANN}", 64)
    feed.clients.add(client)
    await store.watch(watched.id, feed)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        moves, newest = 0, {}
        for table in (watched, alone):
            state = table.state
            for _ in range(6):
                if state.over:
                    break
                mover = engine.awaiting(state)[0]
                res = await store.apply(table.id, mover, engine.computer_action(state, mover))
                state = res.table.state
                moves += 1
                newest[table.id] = res.version
        while not client.queue.empty():
            client.queue.get_nowait()
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Known | Frames)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert moves >= 10 and feed.version == newest[watched.id]  # the sockets here were fed all along
    assert left == [], f"{len(left)} versions or their messages were left to the collector"


async def test_admission_refuses_while_the_event_loop_runs_late():
    adm = Admission(limit=10, queue=10, max_wait=1.0, max_lag=0.05)
    adm.lag = 0.2  # what watch_lag measures when the CPU cannot keep up
    assert not await adm.acquire() and adm.running == 0
    adm.lag = 0.0
    assert await adm.acquire()
    adm.release()


async def test_the_lag_probe_sees_a_blocked_loop():
    import time as _time

    adm = Admission(max_lag=0.05)
    probe = asyncio.create_task(adm.watch_lag(every=0.01))
    await asyncio.sleep(0.03)
    _time.sleep(0.2)  # the loop is held up (as by a CPU-bound burst)
    for _ in range(100):
        await asyncio.sleep(0.001)
        if adm.lag > 0.05:
            break
    seen = adm.lag
    probe.cancel()
    assert seen > 0.05
