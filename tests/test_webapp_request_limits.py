"""Limits that protect the table (issue 16): every /api request and socket handshake by client
address and by user (webapp.ratelimit.RequestLimits, in process memory), every socket's frames.

The buckets' clock is frozen by each test (``app[LIMITS].clock``) and moved by hand: nothing
here depends on how fast the machine is.
"""

from __future__ import annotations

import json

import aiohttp
import pytest
from conftest import until

import engine
from store import LobbySettings, Seat
from webapp.keys import LIMITS, PRESENCE, STORE

ANN, BOB = 111, 222


@pytest.fixture
def web_client(web_client):
    """The app with its refusals answered at once (``LIMIT_DELAY`` 0: no test waits for them)."""
    return lambda **kw: web_client(**{"limit_delay": 0.0, **kw})


async def new_table(store):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in (ANN, BOB)]
    return await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None),
                                    seed=3)


@pytest.fixture
def auth(web_init_data):
    return lambda uid: {"Authorization": f"tma {web_init_data(uid, f'P{uid}')}"}


def freeze(client, now: list[float] | None = None) -> list[float]:
    """Stop the request buckets' clocks (this process's at 1000 s, the shared buckets' epoch
    clock with it); the test moves ``now[0]`` itself. ``now``: a clock already given to another app."""
    now = now if now is not None else [1000.0]
    client.app[LIMITS].clock = lambda: now[0]
    client.app[LIMITS].wall = lambda: 1_800_000_000.0 + now[0]
    return now


class RedisCalls:
    """Counts connections taken from the store's Redis pool: every command and pipeline takes one."""

    def __init__(self, store) -> None:
        self.n = 0
        pool = store.redis.connection_pool
        take = pool.get_connection

        async def counted(*args, **kwargs):
            self.n += 1
            return await take(*args, **kwargs)

        pool.get_connection = counted


async def assert_too_fast(resp) -> float:
    assert resp.status == 429, (resp.status, await resp.text())
    body = await resp.json()
    assert body["error"] == "too_fast" and body["detail"] and isinstance(body["server_time"], float)
    assert body["retry_after"] > 0 and int(resp.headers["Retry-After"]) >= 1
    return body["retry_after"]


async def test_a_get_flood_from_one_user_is_refused_while_another_user_is_served(web_client, store, auth):
    client = await web_client(read_rate=2.0, read_burst=5)
    now = freeze(client)
    table = await new_table(store)
    url = f"/api/tables/{table.id}"
    assert [(await client.get(url, headers=auth(ANN))).status for _ in range(5)] == [200] * 5
    for _ in range(20):  # the flood
        wait = await assert_too_fast(await client.get(url, headers=auth(ANN)))
    assert wait == pytest.approx(0.5)  # one token at 2/s
    assert [(await client.get(url, headers=auth(BOB))).status for _ in range(5)] == [200] * 5
    resp = await client.get("/api/me", headers=auth(ANN))  # every route of the user counts
    await assert_too_fast(resp)
    now[0] += 0.4  # not yet a whole token back
    await assert_too_fast(await client.get(url, headers=auth(ANN)))
    now[0] += 0.1
    assert (await client.get(url, headers=auth(ANN))).status == 200
    await assert_too_fast(await client.get(url, headers=auth(ANN)))


async def test_moves_have_a_bucket_of_their_own_beside_reads(web_client, store, auth):
    client = await web_client(read_rate=1.0, read_burst=2, write_rate=1.0, write_burst=3)
    freeze(client)
    table = await new_table(store)
    for _ in range(2):
        assert (await client.get(f"/api/tables/{table.id}", headers=auth(ANN))).status == 200
    await assert_too_fast(await client.get(f"/api/tables/{table.id}", headers=auth(ANN)))
    url = f"/api/tables/{table.id}/actions"  # reads used up, moves still allowed (3)
    statuses = [(await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))).status for _ in range(4)]
    assert statuses == [422, 422, 422, 429]


async def test_an_unauthenticated_flood_from_one_address_is_limited(web_client, store, auth):
    client = await web_client(address_rate=1.0, address_burst=10)
    freeze(client)
    for i in range(10):  # signed in or not, junk or not: all from one address
        headers = {"Authorization": "tma junk"} if i % 2 else {}
        assert (await client.get("/api/me", headers=headers)).status == 401
    await assert_too_fast(await client.get("/api/me"))
    await assert_too_fast(await client.get("/api/config"))
    await assert_too_fast(await client.post("/api/session", data=b"{}"))
    await assert_too_fast(await client.get("/api/me", headers=auth(ANN)))  # a valid user shares the address
    await assert_too_fast(await client.get("/ws/tables/x"))  # socket handshakes too
    # static files are not limited, the health check has a bucket of its own
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/")).status in (200, 404)  # 404 when the front end is not built


async def test_a_refusal_waits_limit_delay_and_says_how_long_is_left(web_client):
    client = await web_client(address_rate=1.0, address_burst=1, limit_delay=0.2)
    freeze(client)
    assert (await client.get("/api/config")).status == 200
    resp = await client.get("/api/config")
    assert await assert_too_fast(resp) == pytest.approx(0.8)  # 1 s to a token, 0.2 s of it waited here
    assert client.app[LIMITS].refused == 1


async def test_the_health_check_has_a_separate_address_bucket(web_client):
    client = await web_client(health_rate=1.0, health_burst=3)
    now = freeze(client)
    assert [(await client.get("/healthz")).status for _ in range(3)] == [200] * 3
    await assert_too_fast(await client.get("/healthz"))
    assert (await client.get("/api/config")).status == 200
    now[0] += 1.0
    assert (await client.get("/healthz")).status == 200


async def test_x_forwarded_for_names_the_client_only_behind_a_trusted_proxy(web_client):
    untrusted = await web_client(address_rate=1.0, address_burst=2)
    freeze(untrusted)
    for fwd in ("10.0.0.1", "10.0.0.2"):
        assert (await untrusted.get("/api/config", headers={"X-Forwarded-For": fwd})).status == 200
    # without TRUSTED_PROXIES the header is the client's own claim: all of it is 127.0.0.1
    await assert_too_fast(await untrusted.get("/api/config", headers={"X-Forwarded-For": "10.0.0.3"}))

    proxied = await web_client(address_rate=1.0, address_burst=2, trusted_proxies="127.0.0.1, ::1")
    freeze(proxied)
    for _ in range(2):
        assert (await proxied.get("/api/config", headers={"X-Forwarded-For": "10.0.0.1"})).status == 200
    await assert_too_fast(await proxied.get("/api/config", headers={"X-Forwarded-For": "10.0.0.1"}))
    assert (await proxied.get("/api/config", headers={"X-Forwarded-For": "10.0.0.2"})).status == 200
    # hops left of the one the proxy added are the client's claims: a new one each time gains nothing
    for forged in ("1.1.1.1", "2.2.2.2"):
        resp = await proxied.get("/api/config", headers={"X-Forwarded-For": f"{forged}, 10.0.0.1"})
        await assert_too_fast(resp)


def test_client_address_takes_the_nearest_untrusted_hop_and_an_ipv6_network():
    from aiohttp.test_utils import make_mocked_request

    from webapp.ratelimit import client_address

    def addr(remote: str, fwd: str | None, trusted=("127.0.0.1", "10.9.9.9")) -> str:
        req = make_mocked_request("GET", "/api/me", headers={"X-Forwarded-For": fwd} if fwd else {})
        req = req.clone(remote=remote)
        return client_address(req, frozenset(trusted))

    assert addr("203.0.113.5", "198.51.100.1") == "203.0.113.5"  # not a trusted peer: header ignored
    assert addr("127.0.0.1", "198.51.100.1, 10.9.9.9") == "198.51.100.1"  # two proxies of ours
    assert addr("127.0.0.1", "6.6.6.6, 198.51.100.1") == "198.51.100.1"
    assert addr("127.0.0.1", None) == "127.0.0.1"
    assert addr("2001:db8:1:2:aaaa::1", None) == addr("2001:db8:1:2:bbbb::7", None) == "2001:db8:1:2::/64"
    assert addr("2001:db8:1:3::1", None) != addr("2001:db8:1:2::1", None)


async def test_a_refused_request_does_no_redis_work_and_changes_nothing(web_client, store, auth):
    client = await web_client(write_rate=1.0, write_burst=1, read_rate=1.0, read_burst=1)
    freeze(client)
    table = await new_table(store)
    url = f"/api/tables/{table.id}/actions"
    for uid in (ANN, BOB):  # each user's read and write buckets used up
        assert (await client.get(f"/api/tables/{table.id}", headers=auth(uid))).status == 200
        assert (await client.post(url, json={"action": {"a": "fly"}}, headers=auth(uid))).status == 422
    # a legal move of the seat to move is refused untouched
    state = (await store.get_table(table.id)).state
    mover = engine.awaiting(state)[0]
    uid = int(mover[1:])
    move = engine.legal_actions(state, mover)[0]
    calls = RedisCalls(store)
    for _ in range(3):
        await assert_too_fast(await client.post(url, json={"action": move}, headers=auth(uid)))
        await assert_too_fast(await client.get(f"/api/tables/{table.id}", headers=auth(uid)))
    assert calls.n == 0
    after = await store.get_table(table.id)
    assert after.version == table.version and engine.dump(after.state) == engine.dump(state)
    assert await store.log(table.id, since=0) == await store.log(table.id, since=0)  # readable, unchanged
    assert calls.n > 0  # (the counter counts: these reads went to Redis)


async def test_a_frame_flood_closes_the_socket_and_the_table_goes_on(web_client, store, auth, web_init_data):
    client = await web_client(ws_frame_rate=1.0, ws_frame_burst=40)
    freeze(client)
    table = await new_table(store)
    heartbeats = []
    real = client.app[STORE].heartbeats

    async def counted(batch, **kwargs):
        heartbeats.extend(batch)
        return await real(batch, **kwargs)

    client.app[STORE].heartbeats = counted
    client.app[PRESENCE].clock = lambda: 5000.0  # a written mark stays fresh: the test's timing cannot matter

    async def open_socket(uid):
        ws = await client.ws_connect(f"/ws/tables/{table.id}")
        await ws.send_str(json.dumps({"type": "auth", "init_data": web_init_data(uid, f"P{uid}")}))
        first = json.loads((await ws.receive(timeout=30)).data)
        assert first["type"] == "state"
        return ws

    flooder, other = await open_socket(ANN), await open_socket(BOB)
    for _ in range(40):  # a burst of 40 is allowed (each pong awaited: none is collapsed away)
        await flooder.send_str('{"type": "ping"}')
        assert json.loads((await flooder.receive(timeout=30)).data)["type"] == "pong"
    for _ in range(200):  # the flood: the next frame closes the socket
        await flooder.send_str('{"type": "ping"}')
    data = json.loads((await flooder.receive(timeout=30)).data)
    assert data["type"] == "error" and data["error"] == "too_fast", data
    msg = await flooder.receive(timeout=30)
    assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == 4429
    # 41 frames of pings: presence written at most twice for the flooder (the open, one batch in flight)
    await client.app[PRESENCE].flush()
    assert heartbeats.count((table.id, ANN)) <= 2
    # the other socket of the table keeps getting versions
    state = (await store.get_table(table.id)).state
    mover = engine.awaiting(state)[0]
    resp = await client.post(f"/api/tables/{table.id}/actions", json={"action": engine.computer_action(state, mover)},
                             headers=auth(int(mover[1:])))
    assert resp.status == 200, await resp.text()
    version = (await resp.json())["version"]

    async def got_version():
        msg = json.loads((await other.receive(timeout=30)).data)
        return msg["type"] == "state" and msg["version"] == version

    await until(got_version)
    await other.send_str('{"type": "ping"}')
    assert json.loads((await other.receive(timeout=30)).data)["type"] == "pong"
    await other.close()


async def test_socket_handshakes_count_against_the_users_reads(web_client, store, web_init_data):
    client = await web_client(read_rate=1.0, read_burst=2)
    freeze(client)
    table = await new_table(store)
    codes = []
    for _ in range(3):
        ws = await client.ws_connect(f"/ws/tables/{table.id}")
        await ws.send_str(json.dumps({"type": "auth", "init_data": web_init_data(ANN, "Ann")}))
        first = json.loads((await ws.receive(timeout=30)).data)
        codes.append(first.get("error") or first["type"])
        await ws.close()
    assert codes == ["state", "state", "too_fast"]


async def test_a_users_reads_spread_over_processes_share_one_bucket(web_client, store, auth):
    """Two processes (two apps on one store): the user's GETs alternate between them, and
    after the burst in all (not per process) both refuse; another user is served; a token
    comes back on either after 1/rate s. A move does not take a read or write token."""
    one = await web_client(read_rate=2.0, read_burst=6)
    two = await web_client(read_rate=2.0, read_burst=6)
    now = freeze(one)
    freeze(two, now)
    table = await new_table(store)
    url = f"/api/tables/{table.id}"
    statuses = [(await (one if i % 2 else two).get(url, headers=auth(ANN))).status for i in range(6)]
    assert statuses == [200] * 6
    await assert_too_fast(await one.get(url, headers=auth(ANN)))
    wait = await assert_too_fast(await two.get(url, headers=auth(ANN)))
    assert wait == pytest.approx(0.5)
    assert (await two.get(url, headers=auth(BOB))).status == 200
    now[0] += 0.5
    assert (await two.get(url, headers=auth(ANN))).status == 200
    await assert_too_fast(await one.get(url, headers=auth(ANN)))
    state = (await store.get_table(table.id)).state
    mover = int(state.to_move[1:])
    legal = engine.legal_actions(state, state.to_move)
    resp = await one.post(f"{url}/actions", headers=auth(mover), json={"action": legal[0], "version": table.version})
    assert resp.status == 200, await resp.text()
    assert not await store.redis.exists(store.keys.request_bucket(mover, "write"))


@pytest.mark.parametrize("fault", ["refused", "frozen"])
async def test_a_shared_bucket_redis_cannot_answer_lets_the_request_go_on(web_client, store, auth, monkeypatch, fault):
    """Redis refusing, or not answering (a stopped server): the request is not held up by its
    limit; the process's own bucket still stands in front of it."""
    import asyncio

    from redis.exceptions import ConnectionError as RedisConnectionError

    async def broken(*args, **kwargs):
        if fault == "refused":
            raise RedisConnectionError("refused")
        await asyncio.Event().wait()  # never answers: SHARED_WAIT bounds it

    client = await web_client(read_rate=2.0, read_burst=2)
    freeze(client)
    table = await new_table(store)
    monkeypatch.setattr(store, "take_request", broken)
    url = f"/api/tables/{table.id}"
    assert [(await client.get(url, headers=auth(ANN))).status for _ in range(2)] == [200, 200]
    await assert_too_fast(await client.get(url, headers=auth(ANN)))


async def test_a_flood_of_refusals_shares_one_timer_and_writes_no_line_each(web_client, caplog):
    """Issue 27.1: refused requests wait ``LIMIT_DELAY`` on one timer shared by all of them (not
    one each), are answered without the JSON encoder, and write no log line each: the access log
    skips them (:mod:`webapp.accesslog`) and the limits log one aggregated line a minute."""
    import asyncio
    import logging

    from aiohttp import web

    from webapp.accesslog import AccessLog
    from webapp.ratelimit import REFUSED

    client = await web_client(address_rate=0.001, address_burst=1, limit_delay=0.2)
    freeze(client)
    assert (await client.get("/api/config")).status == 200
    loop = asyncio.get_running_loop()
    timers = []
    real_call_later = loop.call_later

    def counted(delay, *args, **kwargs):
        if 0.1 <= delay <= 0.2 + 1e-6:  # a refusal's wait (LIMIT_DELAY), not the app's own periodic timers
            timers.append(delay)
        return real_call_later(delay, *args, **kwargs)

    loop.call_later = counted
    try:
        answers = await asyncio.gather(*(client.get("/api/config") for _ in range(30)))
    finally:
        loop.call_later = real_call_later
    for resp in answers:
        assert await assert_too_fast(resp) > 0
    assert len(timers) <= 3  # one per LIMIT_DELAY window, not 30
    assert client.app[LIMITS].refused == 30
    # the access log: a served request is a line, a refusal is counted instead
    request = type("R", (), {"get": lambda self, k, d=None: d})()
    logger = logging.getLogger("aiohttp.access")
    before = AccessLog.unlogged
    with caplog.at_level(logging.INFO):
        access = AccessLog(logger)
        for _ in answers:
            raw = web.Response(status=429)
            raw[REFUSED] = True
            access.log(request, raw, 0.001)
    assert AccessLog.unlogged - before == 30
    assert not [r for r in caplog.records if r.name == "aiohttp.access"]
    assert not [r for r in caplog.records if r.name == "webapp.ratelimit"]  # within the minute: no line yet


def test_a_forged_init_data_repeated_costs_one_check(monkeypatch):
    """Issue 27.1: the verdict on a bad initData string is kept (bounded), so its repeats are a
    lookup, not an HMAC each; an expired one, or one from the future, is never kept."""
    import time as clock

    from webapp import auth as auth_module
    from webapp.auth import Authenticator, sign_init_data
    from webapp.errors import ApiError

    token = "123:abc"
    checks = []
    real = auth_module.check_signature
    monkeypatch.setattr(auth_module, "check_signature", lambda *a: checks.append(1) or real(*a))
    who = Authenticator(token, store=None, max_age=3600)
    forged = sign_init_data({"auth_date": int(clock.time()), "user": {"id": 5, "first_name": "F"}}, "999:other")
    for _ in range(50):
        with pytest.raises(ApiError) as e:
            who.verify(forged)
        assert e.value.status == 401 and e.value.code == "unauthorized"
    assert len(checks) == 1
    ahead = sign_init_data({"auth_date": int(clock.time()) + 3600, "user": {"id": 5, "first_name": "F"}}, token)
    for _ in range(3):
        with pytest.raises(ApiError):
            who.verify(ahead)
    assert len(checks) == 4  # checked afresh each time: the clocks may agree later
    for n in range(Authenticator.MAX_REFUSED + 10):  # bounded
        with pytest.raises(ApiError):
            who.verify(f"hash=00&n={n}")
    assert len(who._refused) <= Authenticator.MAX_REFUSED
