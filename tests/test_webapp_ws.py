"""The table WebSocket (webapp/ws.py): auth, own views, every version in order, catch-up."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest
from conftest import until, wait_subscribed

import engine
from store import LobbySettings, Seat
from webapp.ws import Client

ANN, BOB, EVE = 111, 222, 333


async def new_table(store, humans=(ANN, BOB), computers: int = 0, game: str = "prsi", seed: int = 5):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in humans]
    seats += [Seat(seat=f"c{i}", name=f"C{i}", computer=True) for i in range(1, computers + 1)]
    settings = LobbySettings(players=len(seats), turn_seconds=None)
    return await store.create_table(game=game, seats=seats, settings=settings, seed=seed)


async def recv(ws, timeout: float = 60.0) -> dict[str, Any]:
    msg = await ws.receive(timeout=timeout)
    assert msg.type == aiohttp.WSMsgType.TEXT, (msg.type, msg.data, msg.extra)
    data = json.loads(msg.data)
    assert isinstance(data.pop("server_time"), float)  # every socket message carries it (webapp.clock)
    return data


async def recv_state(ws, timeout: float = 60.0) -> dict[str, Any]:
    while True:
        msg = await recv(ws, timeout)
        if msg["type"] == "state":
            return msg


async def connect(client, table_id: str, init_data: str, since: int | None = None):
    ws = await client.ws_connect(f"/ws/tables/{table_id}")
    hello: dict[str, Any] = {"type": "auth", "init_data": init_data}
    if since is not None:
        hello["since"] = since
    await ws.send_str(json.dumps(hello))
    return ws


async def act(client, table_id: str, seat: str, action: dict, init) -> dict[str, Any]:
    resp = await client.post(
        f"/api/tables/{table_id}/actions",
        json={"action": action},
        headers={"Authorization": f"tma {init(int(seat[1:]))}"},
    )
    assert resp.status == 200, await resp.text()
    return await resp.json()


@pytest.fixture
def init(web_init_data):
    return lambda uid: web_init_data(uid, f"P{uid}")


async def test_players_and_a_spectator_receive_every_version_in_order(web_client, store, init):
    client = await web_client()
    table = await new_table(store)
    ws_ann = await connect(client, table.id, init(ANN))
    # a non-browser client may authenticate with the header before the upgrade
    ws_bob = await client.ws_connect(
        f"/ws/tables/{table.id}", headers={"Authorization": f"tma {init(BOB)}"}
    )
    ws_eve = await connect(client, table.id, init(EVE))
    sockets = {f"u{ANN}": ws_ann, f"u{BOB}": ws_bob, None: ws_eve}
    for seat, ws in sockets.items():
        first = await recv_state(ws)
        assert first["version"] == table.version and first["seat"] == seat
        assert first["events"] == [] and first["by"] is None
        assert first["table"] == table.id and len(first["seats"]) == 2 and "deadline" in first

    seen: dict[str | None, list[int]] = {seat: [] for seat in sockets}
    for _ in range(12):
        table = await store.get_table(table.id)
        if table.state.over:
            break
        mover = engine.awaiting(table.state)[0]
        done = await act(client, table.id, mover, engine.computer_action(table.state, mover), init)
        state = engine.load(engine.dump((await store.get_table(table.id)).state))
        for seat, ws in sockets.items():
            msg = await recv_state(ws)
            seen[seat].append(msg["version"])
            assert msg["version"] == done["version"]
            assert msg["events"] == done["events"] and msg["by"] == "player"
            assert msg["view"] == engine.view(state, seat)  # their own view, nobody else's
            hand = msg["view"]["hand"]
            if seat is None:
                assert hand is None
            else:
                assert sorted(hand) == sorted(engine.observer(state)["hands"][seat])
    first = seen[f"u{ANN}"][0]
    for versions in seen.values():
        assert versions == list(range(first, first + len(versions)))
    for ws in sockets.values():
        await ws.close()


async def test_a_burst_of_moves_arrives_in_order_with_every_event(web_client, store, init):
    client = await web_client(ws_send_queue=2)
    table = await new_table(store, game="penki", seed=4)
    ws = await connect(client, table.id, init(ANN))
    start = (await recv_state(ws))["version"]
    events: list[dict] = []
    for _ in range(15):
        table = await store.get_table(table.id)
        if table.state.over:
            break
        mover = engine.awaiting(table.state)[0]
        events += (await act(client, table.id, mover, engine.computer_action(table.state, mover), init))["events"]
    final = (await store.get_table(table.id)).version
    got: list[dict] = []
    versions = [start]
    while versions[-1] < final:
        msg = await recv_state(ws)
        assert msg["version"] > versions[-1]
        versions.append(msg["version"])
        got += msg["events"]
    assert got == events
    assert msg["view"] == engine.view((await store.get_table(table.id)).state, f"u{ANN}")
    await ws.close()


async def test_sockets_per_user_are_capped(web_client, store, init):
    client = await web_client(ws_per_user=2)
    table = await new_table(store)
    open_ = [await connect(client, table.id, init(ANN)) for _ in range(2)]
    for ws in open_:
        await recv_state(ws)
    extra = await connect(client, table.id, init(ANN))
    assert (await recv(extra))["error"] == "too_many"
    assert (await extra.receive(timeout=60)).data == 4429
    other = await connect(client, table.id, init(BOB))  # another user is not affected
    assert (await recv_state(other))["seat"] == f"u{BOB}"
    for ws in (*open_, other):
        await ws.close()


async def test_reconnecting_client_catches_up(web_client, store, init):
    client = await web_client()
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    start = (await recv_state(ws))["version"]
    await ws.close()

    events: list[dict] = []
    for _ in range(3):
        table = await store.get_table(table.id)
        mover = engine.awaiting(table.state)[0]
        events += (await act(client, table.id, mover, engine.computer_action(table.state, mover), init))["events"]

    ws = await connect(client, table.id, init(ANN), since=start)
    msg = await recv_state(ws)
    current = await store.get_table(table.id)
    assert msg["version"] == current.version == start + 3
    assert msg["events"] == events and msg["by"] == "player"
    assert msg["view"] == engine.view(current.state, f"u{ANN}")
    await ws.close()

    ws = await connect(client, table.id, init(ANN))  # no `since`: the snapshot alone
    msg = await recv_state(ws)
    assert msg["version"] == start + 3 and msg["events"] == []
    await ws.close()


async def test_computer_moves_are_pushed_with_by_computer(web_client, store, init):
    client = await web_client()
    table = await new_table(store, humans=(ANN,), computers=2, game="penki", seed=9)
    ws = await connect(client, table.id, init(ANN))
    version = (await recv_state(ws))["version"]
    moved = 0
    for _ in range(40):
        moved += await store.tick(now=time.time() + 5)
        if moved:
            break
        table = await store.get_table(table.id)
        if engine.awaiting(table.state) and engine.awaiting(table.state)[0] == f"u{ANN}":
            await act(client, table.id, f"u{ANN}", engine.computer_action(table.state, f"u{ANN}"), init)
            version = (await recv_state(ws))["version"]
    assert moved
    msg = await recv_state(ws)
    assert msg["version"] > version and msg["by"] == "computer" and msg["events"]
    await ws.close()


async def wait_for(condition, timeout: float = 5.0) -> None:
    """Wait until ``await condition()`` is true (polling; fails after ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_ping_pong_refreshes_presence(web_client, store, init):
    """A seated user's socket marks them present (written by the batched presence writer)."""
    client = await web_client()
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    await wait_for(lambda: store.is_present(table.id, ANN))
    ttl = await store.redis.ttl(store.keys.presence(table.id, ANN))
    assert ttl >= 30  # at least PRESENCE_TTL after the touch (plus the refresh allowance)
    await ws.send_str(json.dumps({"type": "ping"}))
    assert (await recv(ws)) == {"type": "pong"}
    spectator = await connect(client, table.id, init(EVE))
    await recv_state(spectator)
    await ws.send_str("what")
    assert (await recv(ws))["error"] == "bad_message"
    assert not await store.is_present(table.id, EVE)  # spectators are not "at the table"
    await ws.close()
    await spectator.close()


@pytest.mark.parametrize("frame", ["what", "[1, 2]", '{"type": "dance"}', '{"type": 5}',
                                   '{"type": "act", "action": ' + "[" * 3000 + "]" * 3000 + "}"])
async def test_a_bad_frame_after_the_auth_is_answered_bad_message_and_closes_4400(web_client, store, init, frame):
    """Issue 27.5, CONTRACTS §3: a frame that is not a JSON object of a known type (not JSON,
    an array, an unknown type, an act nested past the parser) gets ``bad_message``, then the
    close 4400; a well-formed act with a wrong field is a refused move, the socket kept open."""
    client = await web_client()
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    await ws.send_str(json.dumps({"type": "act", "ref": 1, "action": {"a": 5}}))
    refused = await recv(ws)
    assert refused["type"] == "refused" and refused["status"] == 400 and refused["ref"] == 1
    await ws.send_str(json.dumps({"type": "ping"}))
    assert (await recv(ws)) == {"type": "pong"}
    await ws.send_str(frame)
    msg = await recv(ws)
    assert msg["type"] == "error" and msg["error"] == "bad_message"
    closing = await ws.receive(timeout=60)
    assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == 4400
    assert (await store.get_table(table.id)).version == table.version


@pytest.mark.parametrize(
    ("first", "code", "error"),
    [
        ({"type": "auth", "init_data": "user=%7B%7D&hash=00"}, 4401, "unauthorized"),
        ({"type": "auth"}, 4401, "unauthorized"),
        ({"type": "auth", "init_data": "EXPIRED"}, 4401, "auth_expired"),
        ({"type": "auth", "init_data": "FOREIGN"}, 4401, "unauthorized"),
        ({"type": "auth", "init_data": "OK", "since": "x"}, 4400, "bad_message"),
        ({"type": "ping"}, 4400, "bad_message"),
        ("not json", 4400, "bad_message"),
    ],
)
async def test_bad_first_message_closes(web_client, store, web_init_data, first, code, error):
    client = await web_client()
    table = await new_table(store)
    if isinstance(first, dict) and first.get("init_data") == "EXPIRED":
        first["init_data"] = web_init_data(ANN, auth_date=int(time.time()) - 2 * 86400)
    if isinstance(first, dict) and first.get("init_data") == "FOREIGN":
        first["init_data"] = web_init_data(ANN, token="42:another-bot-token")
    if isinstance(first, dict) and first.get("init_data") == "OK":
        first["init_data"] = web_init_data(ANN)
    ws = await client.ws_connect(f"/ws/tables/{table.id}")
    await ws.send_str(first if isinstance(first, str) else json.dumps(first))
    msg = await recv(ws)
    assert msg == {"type": "error", "error": error, "detail": msg["detail"]}
    closing = await ws.receive(timeout=60)
    assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == code


async def test_silence_before_auth_and_idleness_close(web_client, store, init):
    client = await web_client(ws_auth_timeout=0.3, ws_idle_timeout=0.5)
    table = await new_table(store)
    ws = await client.ws_connect(f"/ws/tables/{table.id}")
    assert (await recv(ws))["error"] == "unauthorized"
    assert (await ws.receive(timeout=60)).data == 4401

    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    assert (await recv(ws))["error"] == "idle"
    assert (await ws.receive(timeout=60)).data == 4408


async def test_handshake_errors_before_the_upgrade(web_client, store, init, web_init_data):
    client = await web_client()
    table = await new_table(store)
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        await client.ws_connect("/ws/tables/missing")
    assert e.value.status == 404
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        await client.ws_connect(f"/ws/tables/{table.id}", headers={"Authorization": "tma junk"})
    assert e.value.status == 401
    resp = await client.get(f"/ws/tables/{table.id}")  # a plain GET, no upgrade
    assert resp.status == 400


async def test_oversized_message_closes(web_client, store, init):
    client = await web_client(ws_max_msg_size=1024)
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    await ws.send_str(json.dumps({"type": "ping", "pad": "x" * 4000}))
    msg = await ws.receive(timeout=60)
    assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert msg.data == aiohttp.WSCloseCode.MESSAGE_TOO_BIG


async def test_shutdown_closes_sockets(web_client, store, init):
    client = await web_client()
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    await client.app.shutdown()
    msg = await ws.receive(timeout=60)
    assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == aiohttp.WSCloseCode.GOING_AWAY


class SlowSocket:
    """Stands in for a WebSocketResponse whose peer does not read."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.gate = asyncio.Event()
        self.closed_with: int | None = None

    async def send_str(self, data: str) -> None:
        await self.gate.wait()
        self.sent.append(json.loads(data))

    async def close(self, code: int = 1000, message: bytes = b"") -> None:
        self.closed_with = code


def state(version: int, events: list) -> dict:
    return {"type": "state", "version": version, "view": {"version": version}, "events": events}


async def test_a_slow_client_collapses_to_the_latest_snapshot():
    sock = SlowSocket()
    client = Client(sock, ANN, "u111", queue_size=3)  # type: ignore[arg-type]
    for v in range(1, 11):
        client.offer(state(v, [{"a": "draw", "v": v}]))  # never blocks
    client.offer({"type": "pong"})
    client.offer(state(5, []))  # older than what is queued: dropped
    assert client.queue.qsize() <= 3
    writer = asyncio.create_task(client.writer(send_timeout=5))
    sock.gate.set()
    await until(lambda: any(m["type"] == "pong" for m in sock.sent)
                and max(m.get("version", 0) for m in sock.sent) == 10 and client.queue.empty())
    writer.cancel()
    states = [m for m in sock.sent if m["type"] == "state"]
    assert states[-1]["version"] == 10
    assert [m["version"] for m in states] == sorted(m["version"] for m in states)
    got = [e["v"] for m in states for e in m["events"]]
    assert got == list(range(1, 11))  # every event still arrives, merged
    assert any(m["type"] == "pong" for m in sock.sent)


async def test_a_stuck_client_is_closed_not_waited_for():
    sock = SlowSocket()
    client = Client(sock, ANN, None, queue_size=2)  # type: ignore[arg-type]
    client.offer(state(1, []))
    await asyncio.wait_for(client.writer(send_timeout=0.1), 60)
    assert sock.closed_with is not None


async def test_a_socket_on_another_process_gets_every_version_through_pub_sub(
    web_client, aiohttp_client, store, store_factory, init
):
    """Two server processes on one Redis: moves posted to one reach sockets on the other at once
    (the commit's own pub/sub message, no poll), each with its own view."""
    from conftest import WEB_BOT_TOKEN

    from webapp.app import create_app
    from webapp.settings import WebSettings

    posting = await web_client()
    settings = WebSettings(bot_token=WEB_BOT_TOKEN, local_play=False, run_worker=False)
    watching = await aiohttp_client(create_app(settings, await store_factory()))
    table = await new_table(store)
    sockets = {f"u{ANN}": await connect(watching, table.id, init(ANN)), None: await connect(watching, table.id, init(EVE))}
    for ws in sockets.values():
        await recv_state(ws)
    await wait_subscribed(store, table.id)  # the watching process's subscription is live
    for _ in range(6):
        table = await store.get_table(table.id)
        mover = engine.awaiting(table.state)[0]
        done = await act(posting, table.id, mover, engine.computer_action(table.state, mover), init)
        state = (await store.get_table(table.id)).state
        for seat, ws in sockets.items():
            msg = await recv_state(ws, timeout=60)
            assert msg["version"] == done["version"] and msg["events"] == done["events"]
            assert msg["view"] == engine.view(state, seat)
    for ws in sockets.values():
        await ws.close()


class Recorder:
    """A live-feed listener recording what it is given."""

    def __init__(self) -> None:
        self.got: list[tuple[int, list, str | None]] = []
        self.arrived = asyncio.Event()
        self.ended = False

    def deliver(self, known, events, by, lagged, texts=None) -> None:
        if events is None:  # the move's own
            events, by = known.move.get("events"), known.move.get("by")
        self.got.append((known.version, events, by))
        self.arrived.set()

    def gone(self) -> None:
        self.ended = True
        self.arrived.set()

    async def until(self, version: int, timeout: float = 5.0) -> None:
        async def reached() -> bool:
            return bool(self.got) and self.got[-1][0] >= version

        await wait_for(reached, timeout)


async def move(store, table_id: str, by_store=None):
    """One legal move on the table's current version (read fresh), through ``by_store``."""
    table = await store.get_table(table_id)
    mover = engine.awaiting(table.state)[0]
    return await (by_store or store).apply(table_id, mover, engine.computer_action(table.state, mover))


async def test_the_live_feed_delivers_every_version_in_order_from_the_commit_without_reading(
    store, store_factory
):
    """Another process's commits arrive as their own documents: each version once, in order,
    with its events, and no Redis read of the table (its document is in the message)."""
    table = await new_table(store)
    other = await store_factory()
    rec = Recorder()
    known = await store.watch(table.id, rec)
    assert known.version == table.version
    reads = 0
    real_hget = store.redis.hget

    async def counting(key, field):
        nonlocal reads
        reads += key == store.keys.table(table.id)
        return await real_hget(key, field)

    store.redis.hget = counting
    try:
        done = [await move(other, table.id) for _ in range(5)]
        await rec.until(done[-1].version)
    finally:
        del store.redis.hget
    assert [v for v, _, _ in rec.got] == [d.version for d in done]
    assert [e for _, e, _ in rec.got] == [d.events for d in done]
    assert all(by == "player" for _, _, by in rec.got)
    assert reads == 0
    mine = store.live.peek(table.id)
    assert mine.version == done[-1].version
    assert engine.dump(mine.state) == engine.dump((await store.get_table(table.id)).state)


async def test_own_commits_reach_local_listeners_at_once_and_their_echo_is_not_parsed(store, store_factory):
    """A commit feeds this process's listeners before apply returns; it is published only
    when another process listens (the table's watchers set), and its echo is then skipped
    unparsed."""
    table = await new_table(store)
    rec = Recorder()
    await store.watch(table.id, rec)
    res = await move(store, table.id)
    assert rec.got[-1][0] == res.version  # delivered before apply returned, not via Redis
    assert await watchers(store, table.id) == {store.live.id}
    # Another process listens too: the next commit is published to it (and echoed here).
    other = await store_factory()
    theirs = Recorder()
    await other.watch(table.id, theirs)
    before = store.live.parsed
    res = await move(store, table.id)
    assert rec.got[-1][0] == res.version
    await theirs.until(res.version)
    await wait_for(lambda: _true(store.live.messages >= 1))
    # The echo of the second commit is the first message here: the first was never published
    # (messages arrive in order on one connection).
    assert store.live.messages == 1 and other.live.messages == 1
    assert store.live.parsed == before  # the echo was skipped by its version prefix alone
    await other.live.close()  # a clean shutdown leaves the sets (a crash leaves a member behind: publishes)
    assert await watchers(store, table.id) == {store.live.id}


async def _true(value: bool) -> bool:
    return value


async def watchers(store, table_id: str) -> set[str]:
    return {m.decode() if isinstance(m, bytes) else m for m in await store.redis.smembers(store.keys.watchers(table_id))}


async def test_a_skipped_version_is_caught_up_from_the_log_with_every_event(store, store_factory):
    table = await new_table(store)
    other = await store_factory()
    rec = Recorder()
    await store.watch(table.id, rec)
    entry = store.live.entries[table.id]
    # Lose two messages on the way (as if pub/sub dropped them): the third shows the gap.
    real = store.live._on_message
    dropped = 0

    def lossy(channel, data):
        nonlocal dropped
        if dropped < 2:
            dropped += 1
            store.live.messages += 1
            return
        real(channel, data)

    store.live._on_message = lossy
    done = [await move(store, table.id, other) for _ in range(3)]
    await rec.until(done[-1].version)
    assert [v for v, _, _ in rec.got] == [done[-1].version]  # one snapshot …
    assert rec.got[-1][1] == [e for d in done for e in d.events]  # … with every event in order
    assert store.live.resyncs == 1 and entry.pending is None


async def test_a_pub_sub_reconnect_rereads_each_known_table_once(real_store):
    """After the live connection drops, the tables known here are read again once and
    what moved on meanwhile is delivered (with its events from the log)."""
    store = real_store
    table = await new_table(store)
    rec = Recorder()
    await store.watch(table.id, rec)
    conn = store.live.feed._pubsub.connection
    await store.live.feed._pubsub.unsubscribe(store.keys.events(table.id))  # deaf for a moment …
    await asyncio.sleep(0.1)
    done = await move(store, table.id, _Detached(store))  # … a commit it cannot hear …
    await conn.disconnect()  # … and the connection drops; redis-py reconnects and resubscribes
    await rec.until(done.version, timeout=10)
    assert rec.got[-1][0] == done.version and rec.got[-1][1] == done.events
    done2 = await move(store, table.id, _Detached(store))
    await rec.until(done2.version)  # and live again through pub/sub


class _Detached:
    """``apply`` through ``store`` without telling its live feed (as another process would)."""

    def __init__(self, store) -> None:
        self.store = store

    async def apply(self, *args, **kwargs):
        committed = self.store.live.committed
        self.store.live.committed = lambda known, texts=None: None
        try:
            return await self.store.apply(*args, **kwargs)
        finally:
            self.store.live.committed = committed


async def test_an_expired_table_tells_its_sockets_gone(web_client, store, init):
    client = await web_client()
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))
    await recv_state(ws)
    await store.redis.delete(store.keys.table(table.id))
    await store.live._resync(None, 0)  # what a reconnect does: the table is found gone
    msg = await recv(ws)
    assert msg["type"] == "error" and msg["error"] == "gone"
    await ws.close()


async def test_redis_not_answering_at_sign_in_closes_try_again_later(web_client, store, init):
    """Every pooled connection busy past its wait (a burst of sign-ins): the socket is told
    ``unavailable`` and closed 1013 (try again later), as the HTTP side answers 503, not
    ``internal``; a retry once Redis answers again is served."""
    import redis.exceptions

    from webapp.keys import AUTH

    client = await web_client()
    table = await new_table(store)
    auth = client.app[AUTH]
    real = auth.identify

    async def busy(*_a, **_k):
        raise redis.exceptions.ConnectionError("No connection available.")

    auth.identify = busy
    try:
        ws = await connect(client, table.id, init(ANN))
        msg = await recv(ws)
        assert msg == {"type": "error", "error": "unavailable", "detail": msg["detail"]}
        closing = await ws.receive(timeout=60)
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == aiohttp.WSCloseCode.TRY_AGAIN_LATER
    finally:
        auth.identify = real
    ws = await connect(client, table.id, init(ANN))
    assert (await recv_state(ws))["seat"] == f"u{ANN}"
    await ws.close()


async def test_a_subscription_not_confirmed_in_time_answers_try_again(web_client, store, init):
    """A loaded Redis that does not confirm the table's subscription within
    ``store.pubsub.SUBSCRIBE_TIMEOUT`` (the handshake looks the table up through it): the
    upgrade is answered 503 ``unavailable`` with ``Retry-After``, like any Redis that does not
    answer in time (not 500 with a traceback), and the app's next try is served."""
    client = await web_client()
    table = await new_table(store)
    feed = store.live.feed
    real = feed.subscribe

    async def unconfirmed(channel):
        raise TimeoutError

    feed.subscribe = unconfirmed
    try:
        resp = await client.get(f"/ws/tables/{table.id}", headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
        assert resp.status == 503 and "Retry-After" in resp.headers
        assert (await resp.json())["error"] == "unavailable"
    finally:
        feed.subscribe = real
    ws = await connect(client, table.id, init(ANN))
    assert (await recv_state(ws))["seat"] == f"u{ANN}"
    await ws.close()


async def test_a_socket_that_only_answers_the_heartbeat_is_closed_as_idle(web_client, store, init):
    """The server's protocol pings are answered by the client's WebSocket stack on its own
    (a tab left open in the background, a script): those pongs are not the app's messages,
    so the socket is still closed as idle after ``ws_idle_timeout`` (aiohttp's own receive
    timeout restarted on each pong, and such a socket was never closed)."""
    client = await web_client(ws_idle_timeout=1.0, ws_heartbeat=0.1)
    table = await new_table(store)
    ws = await connect(client, table.id, init(ANN))  # the client answers every ping (autoping)
    await recv_state(ws)
    assert (await recv(ws))["error"] == "idle"
    assert (await ws.receive(timeout=60)).data == 4408


def test_a_send_gets_the_timeout_unless_it_cannot_wait():
    """Only a small frame on a connection with nothing unsent goes without the send timer:
    anything else may wait on the client, and a stuck client must still be closed."""
    from webapp.ws import SMALL_FRAME

    class Transport:
        def __init__(self, unsent: int) -> None:
            self.unsent = unsent

        def get_write_buffer_size(self) -> int:
            return self.unsent

    def may_wait(transport, text: str) -> bool:
        return Client(None, 1, "u1", 4, transport)._may_wait(text)

    assert may_wait(Transport(0), "x" * 100) is False
    assert may_wait(Transport(1), "x" * 100) is True  # the client is behind
    assert may_wait(Transport(0), "x" * (SMALL_FRAME + 1)) is True  # a big frame may pause the transport
    assert may_wait(None, "x") is True  # no transport known


def test_a_serialized_message_is_stamped_with_the_server_time_first_and_otherwise_unchanged():
    from webapp.clock import stamp_text

    def clock():
        return 1_700_000_000.12345

    big = json.dumps({"type": "state", "view": {"hand": ["♥7"] * 500}, "by": None}, separators=(",", ":"))
    stamped = stamp_text(big, clock)
    assert stamped.startswith('{"server_time":1700000000.123,"type":"state"')
    assert json.loads(stamped) == {"server_time": 1700000000.123, **json.loads(big)}
    for empty in ("{}", "{ }"):
        assert json.loads(stamp_text(empty, clock)) == {"server_time": 1700000000.123}
    assert stamp_text("[1,2]", clock) == "[1,2]"
