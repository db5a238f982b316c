"""Two service processes on a Redis Cluster (``make test-cluster`` only; skipped elsewhere).

Each test starts two ``python -m webapp`` processes on the cluster (and the fake Bot
API they talk to), seats real users at a table and plays it through the HTTP API:
each player's requests alternate between the two processes, and each player has a
socket on one of them (the players' sockets alternate too). Checked: every move
applied exactly once (the log holds each acknowledged client_action_id once, versions
1..n), every socket receives every version's events in order, the match is rated once.

The failover test kills, with SIGKILL, the primary holding the table mid-match: the
players' requests get a short "unavailable, try again" (503) while its replica takes
over, play resumes by itself (the same client_action_id retried), and no move a
player was told was committed is missing. The killed node is started again (it
rejoins as a replica), so later tests have a whole cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import CLUSTER_URL

import engine
from store import LobbySettings, Seat, Store
from webapp.auth import sign_init_data

pytestmark = [
    pytest.mark.redis,
    pytest.mark.skipif(CLUSTER_URL is None, reason="needs make test-cluster (KARTY_TEST_CLUSTER)"),
]

CALLOUTS = {"zevok", "one_card", "how_many"}
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-output" / "cluster"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_STARTED: list[Service] = []


@pytest.fixture(autouse=True)
def _stop_services():
    """Whatever happens to a test (a timeout too), every service it started is stopped by pid."""
    yield
    while _STARTED:
        _STARTED.pop().stop()


class Service:
    """``python -m webapp`` on a free port, on the cluster; stopped by its pid."""

    def __init__(self, env: dict[str, str], name: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**env, "PORT": str(self.port), "WEBHOOK_URL": f"{self.base}/telegram/webhook"}
        self.log = OUT / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    async def start(self, http) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "webapp"], cwd=ROOT, env=self.env,
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _STARTED.append(self)
        deadline = time.monotonic() + 180  # a loaded machine starts Python slowly
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the service exited: {self.log.read_text()[-2000:]}"
            with contextlib.suppress(Exception):
                async with http.get(f"{self.base}/healthz") as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.2)
        raise AssertionError(f"the service did not answer /healthz: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


class Player:
    def __init__(self, uid: int, name: str, token: str) -> None:
        self.id, self.name, self.token = uid, name, token
        self.seat = f"u{uid}"

    def headers(self) -> dict[str, str]:
        init = sign_init_data({"auth_date": int(time.time()), "query_id": "AAHdF6IQAAAAAN0XohDhrOrc",
                               "user": {"id": self.id, "first_name": self.name, "language_code": "en"}},
                              self.token)
        return {"Authorization": f"tma {init}"}


class Socket:
    """One player's table socket on one process: every message it receives, in order."""

    def __init__(self, http, base: str, table_id: str, player: Player) -> None:
        self.http, self.base, self.table_id, self.player = http, base, table_id, player
        self.messages: list[dict[str, Any]] = []
        self.task: asyncio.Task | None = None
        self.pinger: asyncio.Task | None = None
        self.ws = None

    async def open(self) -> None:
        self.ws = await self.http.ws_connect(f"{self.base}/ws/tables/{self.table_id}",
                                             headers=self.player.headers(), heartbeat=10)
        self.task = asyncio.create_task(self._read())
        self.pinger = asyncio.create_task(self._ping())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type.name == "TEXT":
                self.messages.append(json.loads(msg.data))

    async def _ping(self) -> None:
        """As the Mini App does: a ping every 20 s (presence; a socket without a message of
        its own for WS_IDLE_TIMEOUT is closed as idle)."""
        with contextlib.suppress(Exception):
            while not self.ws.closed:
                await asyncio.sleep(20)
                await self.ws.send_json({"type": "ping"})

    def states(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == "state"]

    async def close(self) -> None:
        if self.pinger is not None:
            self.pinger.cancel()
        if self.ws is not None:
            await self.ws.close()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 5)


class Deployment:
    """The fake Bot API, two service processes on the cluster, a Store of the test's own."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prefix = f"karty-cl-{uuid.uuid4().hex[:8]}"

    async def __aenter__(self) -> Deployment:
        import aiohttp
        from fake_bot_api import FakeBotAPI

        self.api = FakeBotAPI()
        await self.api.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WS_", "ACTION_", "RATE_"))}
        env.update({"BOT_TOKEN": self.api.token, "BOT_USERNAME": self.api.username, "WEBAPP_SHORT_NAME": "play",
                    "TELEGRAM_API_URL": self.api.url, "REDIS_URL": CLUSTER_URL, "KARTY_PREFIX": self.prefix,
                    "HOST": "127.0.0.1", "LOCAL_PLAY": "false", "PYTHONUNBUFFERED": "1",
                    "WEBHOOK_SECRET": "cl-" + uuid.uuid4().hex})
        self.services = [Service(env, f"{self.name}-service{i}") for i in (1, 2)]
        self.http = aiohttp.ClientSession()
        self.store = Store.from_url(CLUSTER_URL, prefix=self.prefix)
        try:
            await asyncio.gather(*(s.start(self.http) for s in self.services))
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in self.services:
            s.stop()
        await self.http.close()
        await self.api.stop()
        with contextlib.suppress(Exception):
            keys = [k async for k in self.store.redis.scan_iter(match=f"{self.prefix}:*", count=1000)]
            if keys:
                await self.store.redis.delete(*keys)
        await self.store.close()

    async def table(self, game: str, n: int) -> tuple[str, list[Player]]:
        base = 7_100_000_000 + int(uuid.uuid4().int % 10**6) * 10
        players = [Player(base + i, name, self.api.token) for i, name in enumerate(("Anna", "Boris", "Cyril")[:n])]
        seats = [Seat(seat=p.seat, user_id=p.id, name=p.name) for p in players]
        table = await self.store.create_table(game=game, seats=seats, seed=2026,
                                              settings=LobbySettings(players=n, turn_seconds=None))
        return table.id, players


class Match:
    """Plays a table through the two processes, alternating every request between them."""

    def __init__(self, d: Deployment, table_id: str, players: list[Player]) -> None:
        self.d, self.table_id = d, table_id
        self.by_seat = {p.seat: p for p in players}
        self.k = 0
        self.acked: dict[str, int] = {}  # client_action_id -> version the player was told
        self.errors: list[tuple[int, Any]] = []  # every answer but 200 the players saw

    async def post(self, player: Player, action: dict[str, Any], cid: str, version: int) -> tuple[int, Any]:
        base = self.d.services[self.k % 2].base
        self.k += 1
        body = {"action": action, "client_action_id": cid, "version": version}
        async with self.d.http.post(f"{base}/api/tables/{self.table_id}/actions", json=body,
                                    headers=player.headers()) as r:
            return r.status, await r.json(content_type=None)

    async def move(self, timeout: float = 60.0) -> bool:
        """One move by the awaited seat (the computer player's choice); False once the game is over."""
        table = await self._table(timeout)
        if table.state.over:
            return False
        seat = engine.awaiting(table.state)[0]
        action = engine.computer_action(table.state, seat)
        if action is None or action["a"] in CALLOUTS:  # the seat's own move, so the game goes on
            action = next(a for a in engine.legal_actions(table.state, seat) if a["a"] not in CALLOUTS)
        cid = uuid.uuid4().hex
        deadline = time.monotonic() + timeout
        while True:  # the same request again until it is answered: exactly once
            try:
                status, body = await self.post(self.by_seat[seat], action, cid, table.version)
            except Exception as exc:  # a dropped connection: the player's app tries again too
                status, body = 0, {"error": repr(exc)}
            if status == 200:
                self.acked[cid] = body["version"]
                return True
            self.errors.append((status, body))
            if status in (503, 0, 429):
                assert time.monotonic() < deadline, f"no answer but {status} {body} for {timeout} s"
                await asyncio.sleep(max(0.2, float(body.get("retry_after") or 0)) if status == 429 else 0.2)
                continue
            if status == 409 and body.get("error") == "stale":  # an earlier try was committed after all
                again = await self._table(timeout)
                assert again.version > table.version
                return True
            raise AssertionError(f"{status} {body} for {seat} {action}")

    async def _table(self, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            try:
                return await self.d.store.get_table(self.table_id)
            except Exception:
                assert time.monotonic() < deadline, "the store did not come back"
                await asyncio.sleep(0.2)

    async def check(self, sockets: list[Socket]) -> None:
        """Exactly once, in order, everywhere; rated once."""
        st = self.d.store
        table = await st.get_table(self.table_id)
        assert table.state.over
        log = await st.log(self.table_id)
        assert [e["version"] for e in log] == list(range(1, table.version + 1))
        cids = [e["cid"] for e in log]
        assert len(cids) == len(set(cids)), "a move was applied twice"
        in_log = {e["cid"]: e["version"] for e in log}
        missing = {c: v for c, v in self.acked.items() if in_log.get(c) != v}
        assert not missing, f"moves the players were told were committed are missing: {missing}"
        # each version's events, from the engine (a finished game's compacted log keeps none)
        events = {f["version"]: f["events"] for f in (await st.replay(self.table_id, None))["frames"]}
        assert sorted(events) == list(range(table.version + 1))
        for s in sockets:
            deadline = time.monotonic() + 30
            while not (s.states() and s.states()[-1]["version"] == table.version):
                assert time.monotonic() < deadline, f"{s.player.name}'s socket stopped at {s.states()[-1:]}"
                await asyncio.sleep(0.1)
            states = s.states()
            versions = [m["version"] for m in states]
            assert versions == sorted(set(versions)), f"out of order or repeated: {versions}"
            first = versions[0]
            seen = [ev for m in states[1:] for ev in m["events"]]
            assert seen == [ev for v in range(first + 1, table.version + 1) for ev in events[v]], s.player.name
        ledger = [m for m in await st.ledger() if m["table"] == self.table_id]
        assert len(ledger) == 1, ledger
        for p in self.by_seat.values():
            results = (await st.user_rating(table.game, p.id, last=50))["last"]
            assert [r["table"] for r in results].count(self.table_id) == 1, (p.name, results)


async def _play(game: str, n: int, failover: bool = False) -> None:
    async with Deployment(f"{game}{'-failover' if failover else ''}") as d:
        table_id, players = await d.table(game, n)
        m = Match(d, table_id, players)
        sockets = [Socket(d.http, d.services[i % 2].base, table_id, p) for i, p in enumerate(players)]
        for s in sockets:
            await s.open()
        supervisor = None
        moves = 0
        while await m.move(timeout=120):
            moves += 1
            if failover and moves == 15:
                killed = kill_primary_of(d.store, d.store.keys.table(table_id))
                # As systemd's Restart=always would: once the replica has taken over, the dead
                # node is started again and rejoins as its replica (commits need one, WAIT 1).
                supervisor = asyncio.create_task(supervise(killed))
        await m.check(sockets)
        for s in sockets:
            await s.close()
        if failover:
            assert supervisor is not None
            await supervisor
        # Whatever the players were told was short and clear: during a failover "unavailable,
        # try again" (the cluster client often rides out the failover within its own retries);
        # and a script playing faster than a person may be told to slow down (it waits, retries).
        allowed = {(429, "too_fast"), *([(503, "unavailable")] if failover else [])}
        assert all((st, b.get("error")) in allowed for st, b in m.errors), m.errors


async def test_a_prsi_match_across_two_processes_is_applied_once_seen_in_order_and_rated_once():
    await _play("prsi", 3)


async def test_a_penki_game_across_two_processes_is_applied_once_seen_in_order_and_rated_once():
    await _play("penki", 3)


async def test_a_primary_killed_mid_match_loses_no_acknowledged_move_and_play_resumes():
    await _play("prsi", 2, failover=True)


# --- the cluster's nodes (scripts/redis_cluster.py) ------------------------------------------------
def _nodes() -> list[dict[str, Any]]:
    return json.loads(os.environ["KARTY_TEST_CLUSTER_NODES"])


def kill_primary_of(store: Store, key: str) -> dict[str, Any]:
    """SIGKILL the primary that holds ``key``'s slot now; returns its node record."""
    port = store.redis.get_node_from_key(key).port
    node = next(n for n in _nodes() if n["port"] == port)
    pid = int(Path(node["pidfile"]).read_text().strip())
    os.kill(pid, signal.SIGKILL)
    return node


async def supervise(node: dict[str, Any]) -> None:
    """Wait until the cluster has failed ``node`` over to its replica, then start it again."""
    others = [n["port"] for n in _nodes() if n["port"] != node["port"]]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        info = subprocess.run(["redis-cli", "-p", str(others[0]), "cluster", "nodes"],
                              capture_output=True, text=True, check=False).stdout
        line = next((x for x in info.splitlines() if f":{node['port']}@" in x), "")
        state = subprocess.run(["redis-cli", "-p", str(others[0]), "cluster", "info"],
                               capture_output=True, text=True, check=False).stdout
        flags = line.split()[2].split(",") if line else []
        if "fail" in flags and "cluster_state:ok" in state:  # failed (not just suspected), replica promoted
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError(f"node {node['port']} was not failed over")
    await restart(node)


async def restart(node: dict[str, Any]) -> None:
    """Start a killed node again with its own command line; it rejoins as a replica."""
    with contextlib.suppress(FileNotFoundError):
        Path(node["pidfile"]).unlink()
    subprocess.Popen(node["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run(["redis-cli", "-p", str(node["port"]), "info", "replication"],
                             capture_output=True, text=True, check=False).stdout
        if "master_link_status:up" in out:
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"node {node['port']} did not rejoin as a replica")
