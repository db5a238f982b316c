"""The graceful drain (issue 26, :mod:`webapp.drain`).

* In the app: while draining, ``/healthz`` says 503 ``draining``, a new socket is refused
  (503 before the upgrade), a move held when the drain began is answered 200, and only then
  are the open sockets closed with 1012, after an ``error`` frame ``draining``.
* A rolling restart behind the shipped ``deploy/nginx.conf`` (the real nginx; skipped where
  it is not installed): two ``python -m webapp`` processes (a bot token on the fake Bot API,
  the shared Redis under a prefix of the test's own) under load (tables played by POSTs
  through nginx, every player on a socket through nginx that reconnects as the Mini App
  does: at once after a 1012, else after a short pause). Each process in turn is sent
  SIGTERM, exits, and is started again. Checked: every move a player was answered 200 is in
  its table's log exactly once, at the version it was told (0 lost, 0 doubled); no answer was
  a 5xx or a dropped connection; every process exited 0 within ``DRAIN_SECONDS``; every
  socket closed by a drain was on a socket again, and the time from its close to its first
  ``state`` on the new socket is measured (reported in test-output/drain/summary.json and
  bounded generously here, 10 s; the figure is what counts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from typing import Any

import aiohttp
import pytest
from ops_support import ROOT, LocalService, free_port
from test_cluster_service import Player
from test_deploy_proxies import NGINX, nginx

import engine
from store import LobbySettings, Seat, Store
from webapp import drain as drain_module

OUT = ROOT / "test-output" / "drain"
CALLOUTS = {"zevok", "one_card", "how_many"}
FAIL_TIMEOUT = 10  # s between restarting one process and the next


# ------------------------------------------------------------------------ in the app
async def test_a_drain_answers_held_moves_refuses_new_sockets_then_closes_sockets_with_1012(aiohttp_client,
                                                                                            monkeypatch):
    from webapp.__main__ import build
    from webapp.keys import STORE
    from webapp.settings import WebSettings

    settings = WebSettings(redis_url=f"redis://127.0.0.1:{free_port()}/0", local_play=True, bot_token=None,
                           run_worker=False)
    app = await build(settings)
    client = await aiohttp_client(app)
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    headers = {"Authorization": f"tma {login['init_data']}"}
    made = await (await client.post("/api/local/tables", json={"game": "prsi", "players": 2},
                                    headers=headers)).json()
    table_id = made["table"]["id"]
    store = app[STORE]
    ws = await client.ws_connect(f"/ws/tables/{table_id}")
    await ws.send_str(json.dumps({"type": "auth", "init_data": login["init_data"]}))
    first = json.loads((await ws.receive(timeout=20)).data)
    assert first["type"] == "state"
    known = await store.current(table_id)
    view = engine.view(known.state, made["seat"])
    if view["to_move"] != made["seat"]:  # the computer leads: make its move here (no worker runs)
        seat = engine.awaiting(known.state)[0]
        await store.apply(table_id, seat, engine.computer_action(known.state, seat), by="computer")
        known = await store.current(table_id)
        view = engine.view(known.state, made["seat"])
    assert view["to_move"] == made["seat"]

    gate = asyncio.Event()
    entered = asyncio.Event()
    real_apply = store.apply

    async def held_apply(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        await gate.wait()
        return await real_apply(*args, **kwargs)

    monkeypatch.setattr(store, "apply", held_apply)
    move = asyncio.create_task(client.post(f"/api/tables/{table_id}/actions", headers=headers,
                                           json={"action": view["legal"][0], "version": known.version,
                                                 "client_action_id": "held-1"}))
    await entered.wait()
    draining = asyncio.create_task(drain_module.drain(app, 10.0))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if app[drain_module.DRAIN].draining:
            break
    r = await client.get("/healthz")
    assert r.status == 503 and await r.json() == {"ok": False, "status": "draining"}
    assert r.headers.get("Connection", "").lower() == "close"
    r = await client.get(f"/ws/tables/{table_id}", headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                           "Sec-WebSocket-Version": "13",
                                                           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert r.status == 503 and (await r.json())["error"] == "draining"
    await asyncio.sleep(0.2)
    assert not draining.done() and not ws.closed  # the held move holds the drain
    gate.set()
    answer = await move
    assert answer.status == 200, await answer.text()
    await asyncio.wait_for(draining, 20)
    seen = []
    while True:
        msg = await ws.receive(timeout=20)
        if msg.type != aiohttp.WSMsgType.TEXT:
            break
        seen.append(json.loads(msg.data))
    assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == drain_module.CLOSE_RESTART == 1012
    assert seen[-1]["type"] == "error" and seen[-1]["error"] == "draining"
    assert any(m["type"] == "state" and m["version"] == known.version + 1 for m in seen)  # the held move's


# ------------------------------------------------------------------------ a rolling restart behind nginx
class Held:
    """A player's socket through the proxy, reconnecting as the Mini App does; what it saw."""

    def __init__(self, http: aiohttp.ClientSession, base: str, table_id: str, player: Player) -> None:
        self.http, self.base, self.table_id, self.player = http, base, table_id, player
        self.version = 0
        self.restarts: list[float] = []  # seconds from a 1012 close to the next state on a new socket
        self.other_closes: list[Any] = []
        self.stopped = False
        self.task = asyncio.create_task(self.run())
        self.open_now = asyncio.Event()

    async def run(self) -> None:
        closed_at: float | None = None
        while not self.stopped:
            try:
                async with self.http.ws_connect(f"{self.base}/ws/tables/{self.table_id}?since={self.version}",
                                                headers=self.player.headers(), heartbeat=10) as ws:
                    async for msg in ws:
                        if msg.type != aiohttp.WSMsgType.TEXT:
                            break
                        data = json.loads(msg.data)
                        if data.get("type") == "state":
                            self.version = max(self.version, data["version"])
                            self.open_now.set()
                            if closed_at is not None:
                                self.restarts.append(time.monotonic() - closed_at)
                                closed_at = None
                    code = ws.close_code
                if self.stopped:
                    return
                if code == drain_module.CLOSE_RESTART:
                    closed_at = time.monotonic()
                    continue  # at once, as the Mini App does
                self.other_closes.append(code)
            except (TimeoutError, aiohttp.ClientError, OSError) as e:
                if self.stopped:
                    return
                self.other_closes.append(repr(e))
            await asyncio.sleep(0.2)

    async def stop(self) -> None:
        self.stopped = True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


class Mover:
    """Plays a table by POSTs through the proxy, each move retried with its id until answered."""

    def __init__(self, http: aiohttp.ClientSession, base: str, store: Store, table_id: str,
                 players: list[Player]) -> None:
        self.http, self.base, self.store, self.table_id = http, base, store, table_id
        self.by_seat = {p.seat: p for p in players}
        self.acked: dict[str, int] = {}
        self.bad: list[tuple[int, Any]] = []  # 5xx or dropped connections the players saw
        self.stopped = False
        self.over = False
        self.task = asyncio.create_task(self.run())

    async def run(self) -> None:
        while not self.stopped:
            table = await self.store.get_table(self.table_id)
            if table.state.over:
                self.over = True
                return
            seat = engine.awaiting(table.state)[0]
            action = engine.computer_action(table.state, seat)
            if action is None or action["a"] in CALLOUTS:
                action = next(a for a in engine.legal_actions(table.state, seat) if a["a"] not in CALLOUTS)
            cid = uuid.uuid4().hex
            body = {"action": action, "client_action_id": cid, "version": table.version}
            while True:
                try:
                    async with self.http.post(f"{self.base}/api/tables/{self.table_id}/actions", json=body,
                                              headers=self.by_seat[seat].headers()) as r:
                        status, text = r.status, await r.text()
                    try:
                        answer = json.loads(text)
                    except ValueError:
                        answer = text[:200]  # not ours: the proxy's own error page
                except (aiohttp.ClientError, OSError) as e:
                    status, answer = 0, repr(e)
                if status == 200:
                    self.acked[cid] = answer["version"]
                    break
                if status >= 500 or status == 0:
                    self.bad.append((status, answer))
                    await asyncio.sleep(0.1)
                    continue
                if status == 429:
                    await asyncio.sleep(0.3)
                    continue
                assert status == 409, (status, answer)  # a retry of a committed move answers duplicate, not this
                break
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        self.stopped = True
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(self.task, 30)


async def wait_exit(proc: subprocess.Popen, guard: float) -> tuple[int, float]:
    start = time.monotonic()
    while proc.poll() is None:
        assert time.monotonic() - start < guard, "the process did not exit"
        await asyncio.sleep(0.02)
    return proc.returncode, time.monotonic() - start


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(NGINX is None, reason="nginx is not installed")
async def test_a_rolling_restart_behind_nginx_loses_no_move_and_every_socket_comes_back(tmp_path, redis_url):
    from fake_bot_api import FakeBotAPI

    OUT.mkdir(parents=True, exist_ok=True)
    api = FakeBotAPI()
    await api.start()
    prefix = f"karty-drain-{uuid.uuid4().hex[:8]}"
    ports = [free_port(), free_port()]
    drain_seconds = 10.0
    env = {"BOT_TOKEN": api.token, "BOT_USERNAME": api.username, "WEBAPP_SHORT_NAME": "play",
           "TELEGRAM_API_URL": api.url, "REDIS_URL": redis_url, "KARTY_PREFIX": prefix, "LOCAL_PLAY": "false",
           "DRAIN_SECONDS": str(drain_seconds), "WEBHOOK_SECRET": "dr-" + uuid.uuid4().hex,
           "TRUSTED_PROXIES": "127.0.0.1"}
    services = [LocalService(port, OUT / f"service{i}.log",
                             {**env, "WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram/webhook"}, args=())
                for i, port in enumerate(ports)]
    for svc in services:
        svc.log.write_bytes(b"")
    listen = free_port()
    command = nginx(tmp_path, [ports[0], ports[1], ports[0], ports[1]], listen)
    conf = tmp_path / "karty.conf"  # the shipped config's four processes are two here: one line each
    kept, seen = [], set()
    for line in conf.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("upstream"):
            seen = set()
        if line.strip().startswith("server 127.0.0.1:"):
            if line in seen:
                continue
            seen.add(line)
        kept.append(line)
    conf.write_text("\n".join(kept) + "\n", encoding="utf-8")
    proxy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})
    base = f"http://127.0.0.1:{listen}"
    store = Store.from_url(redis_url, prefix=prefix)
    http = aiohttp.ClientSession(headers={"Host": "karty.example.com"})
    movers: list[Mover] = []
    helds: list[Held] = []
    exits: list[tuple[int, float]] = []
    try:
        for svc in services:
            svc.start()
        await asyncio.gather(*(svc.ready(http) for svc in services))
        tables = []
        for n in range(6):
            uid = 7_300_000_000 + int(uuid.uuid4().int % 10**6) * 10
            players = [Player(uid + i, name, api.token) for i, name in enumerate(("Anna", "Boris"))]
            seats = [Seat(seat=p.seat, user_id=p.id, name=p.name) for p in players]
            table = await store.create_table(game="prsi" if n % 2 == 0 else "penki", seats=seats, seed=2600 + n,
                                             settings=LobbySettings(players=2, turn_seconds=None))
            tables.append((table.id, players))
        helds = [Held(http, base, t, p) for t, players in tables for p in players]
        await asyncio.wait_for(asyncio.gather(*(h.open_now.wait() for h in helds)), 120)
        movers = [Mover(http, base, store, t, players) for t, players in tables]

        async def moves_made() -> int:
            return sum(len(m.acked) for m in movers)

        async def until_moves(n: int) -> None:
            deadline = time.monotonic() + 300
            while await moves_made() < n and not all(m.over for m in movers):
                for m in movers:
                    if m.task.done() and not m.over:
                        m.task.result()  # a mover that failed: its error
                assert time.monotonic() < deadline, "play stalled"
                await asyncio.sleep(0.1)

        await until_moves(20)
        for svc in services:  # the rolling restart: one process after the other
            svc.signal(signal.SIGTERM)
            exits.append(await wait_exit(svc.proc, drain_seconds + 30))
            svc._fh.close()
            svc.start()
            await svc.ready(http)
            await until_moves(await moves_made() + 15)
            # deploy/nginx.conf marks no process down (max_fails=0); a pause between the
            # processes, as an operator's loop has, lets the sockets settle on both
            await asyncio.sleep(FAIL_TIMEOUT + 1)
        await until_moves(await moves_made() + 10)
    finally:
        for m in movers:
            await m.stop()
        for h in helds:
            await h.stop()
        await http.close()
        for svc in services:
            svc.stop()
        proxy.send_signal(signal.SIGQUIT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proxy.wait(10)
        if proxy.poll() is None:
            proxy.kill()
        await api.stop()

    try:
        lost, doubled, total = [], [], 0
        for m in movers:
            log = await store.log(m.table_id, since=0)
            versions = [e["version"] for e in log]
            assert versions == list(range(1, len(versions) + 1)), (m.table_id, versions)
            cids = [e["cid"] for e in log if e.get("cid")]
            doubled += [c for c in set(cids) if cids.count(c) > 1]
            at = {e["cid"]: e["version"] for e in log if e.get("cid")}
            lost += [c for c, v in m.acked.items() if at.get(c) != v]
            total += len(m.acked)
        restarts = [s for h in helds for s in h.restarts]
        bad = [b for m in movers for b in m.bad]
        summary = {"moves_acknowledged": total, "lost": len(lost), "doubled": len(doubled),
                   "answers_5xx_or_dropped": len(bad), "exits": [{"code": c, "seconds": round(s, 3)} for c, s in exits],
                   "sockets_told_to_reconnect": len(restarts),
                   "reconnect_seconds_max": round(max(restarts), 3) if restarts else None,
                   "reconnect_seconds_median": round(sorted(restarts)[len(restarts) // 2], 3) if restarts else None,
                   "other_socket_closes": [c for h in helds for c in h.other_closes],
                   "load": os.getloadavg()[0]}
        (OUT / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        print("drain:", json.dumps(summary))
        assert total >= 55 or all(m.over for m in movers), summary
        assert not lost and not doubled, summary
        assert not bad, (summary, bad[:5])
        assert not [c for c in summary["other_socket_closes"] if "status=5" in str(c)], summary  # no 5xx handshake
        assert all(code == 0 and seconds <= drain_seconds for code, seconds in exits), summary
        # every socket on the process being drained was told, and came back
        assert len(restarts) >= 1, summary
        assert all(len(h.restarts) >= 1 for h in helds), summary  # each socket met at least one drain
        assert max(restarts) < 10, summary  # generous: the figure is in the summary (the issue: 2 s)
    finally:
        keys = [k async for k in store.redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await store.redis.delete(*keys)
        await store.close()
