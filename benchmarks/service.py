"""The service benchmark (``python -m benchmarks --only service``): the real service under load.

What it does, end to end, on loopback only:

* **Redis.** A private ``redis-server`` on a free loopback port when one is on
  ``PATH`` (so ``INFO`` counts only this benchmark's traffic), else the Redis at
  ``--redis-url``; every key under a unique ``KARTY_PREFIX``, deleted afterwards.
* **Telegram.** A bot token made up here and a fake Bot API on loopback
  (``TELEGRAM_API_URL``) that answers ``getMe``, ``setWebhook``, ``sendMessage`` …;
  the service runs in webhook mode, so nothing ever reaches api.telegram.org.
  Every user's initData is signed with that token exactly as Telegram signs it.
* **The service.** ``python -m webapp`` as 1, 2 and 4 processes on that one Redis,
  each on its own port; a table's three seats are spread over the processes.
  Startup (wall and CPU seconds until ``/healthz`` answers) is reported too.
* **The load.** Prší tables of three people (created with ``Store.create_table`` as
  a lobby would, in a chat), every seat on the Mini App's WebSocket
  (``/ws/tables/{id}``, ``{"type": "auth"}`` first, pings every 20 s); the seat whose
  view has legal actions sends a random one of them, a card play when it has one
  (:func:`choose`), with ``client_action_id`` and ``version``, as soon as its socket
  shows the turn: POSTed to ``/api/tables/{id}/actions`` (``--moves http``) or as an
  ``act`` frame on its open socket, as the Mini App sends it (``--moves ws``; a POST
  with the same id when the socket is not open). Both by default, each (process
  count, table count) once per way. A finished table is replaced by a fresh one.
  Only the public HTTP/WS API is used.
* **Measured** over a window after a warm-up: committed moves/s; latency from the
  POST until every seat's socket has that version (p50/p95/p99); server CPU ms per
  move (``/proc/<pid>/stat`` of the service processes); Redis round trips per move
  (``INFO stats`` ``total_reads_processed``: one per request or pipeline a client
  sends, minus this benchmark's own, counted on its connection) and commands per
  move (``INFO commandstats``, script-internal calls included); rejections
  (429/503), errors, versions a socket never got or got out of order.
* **Floor.** In the same run, a raw one-round-trip compare-and-set (one Lua script:
  compare the version, write version and a document of a real table's size) on the
  same Redis, from as many client processes as service processes.
* **Overload.** At the largest table count, moves paced as a Poisson stream at twice
  the saturating rate (the best closed-loop moves/s of that process count).
* **Cluster** (``--cluster``, when ``redis-server`` and ``redis-cli`` are installed). In the
  same run, a Redis Cluster of 3 primaries with one replica each on free loopback ports
  (``scripts/redis_cluster.py``'s :func:`start_cluster`, stopped by pid afterwards), and the
  service as 2 processes on it (``REDIS_URL=redis+cluster://…``; a commit also waits for a
  replica, ``WAIT 1``), the same load and columns as the one-Redis 2-process runs; round
  trips and commands per move summed over every primary's ``INFO``, the replicas' apart
  (they take no client requests; the primaries' ``WAIT`` calls are reported per move).
  ``cluster_rounds`` > 1 alternates: one Redis, cluster, one Redis, cluster …
* **Memory.** Redis bytes per finished table (``MEMORY USAGE`` of every key under the
  table's hash tag) for Prší tables finished during the runs, and for Prší and Penki
  tables played to the end through the service.

Everything is bounded in time; processes this module starts are stopped by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

TABLES = (30, 100, 300)
PROCESSES = (1, 2, 4)
SECONDS = 10.0
MOVES = ("http", "ws")  # how seats send moves: POST, or an act frame on the open socket (the Mini App's way)
WARMUP = 3.0
IDLE = 2.0  # s with every socket open and nobody moving, before each run (the background rate)
READY_TIMEOUT = 240.0  # s for a service process to answer /healthz (today's start is slow on a busy box)
CONNECT_TIMEOUT = 180.0  # s for every seat's socket to get its first state
DRAIN = 30.0  # s at most after the window for in-flight moves to reach every socket
MEASURED_TABLES = 30  # finished tables of a run whose Redis bytes are measured (each a SCAN of the keyspace)
PING_EVERY = 20.0  # s, as webapp/static/api.js
MEMORY_TABLES = 3  # per game, played to the end for the memory figures
MEMORY_TIMEOUT = 120.0
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
LOG_DIR = Path("test-output/service")


# ---------------------------------------------------------------------------------- helpers
def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0–100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``), None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def new_bot_token() -> str:
    """A made-up token in the shape of a real one (``<bot id>:<35 chars>``); never a real bot's."""
    return f"{random.randint(10**9, 9 * 10**9)}:AA{secrets.token_urlsafe(26)[:33]}"


def sign_init_data(user: dict[str, Any], token: str, *, auth_date: int | None = None) -> str:
    """initData for ``user`` signed as Telegram signs it (HMAC-SHA256 keyed by
    ``HMAC-SHA256("WebAppData", token)`` over the sorted ``key=value`` lines)."""
    values = {
        "query_id": "AAH" + secrets.token_urlsafe(12),
        "user": json.dumps(user, ensure_ascii=False, separators=(",", ":")).replace("/", "\\/"),
        "auth_date": str(auth_date or int(time.time())),
        "chat_type": "supergroup",
        "chat_instance": str(random.randint(10**17, 10**18)),
    }
    check = "\n".join(f"{k}={v}" for k, v in sorted(values.items()))
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    values["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(values)


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


# ----------------------------------------------------------------------- Redis and counting
class PrivateRedis:
    """A ``redis-server`` of our own on a free loopback port (no persistence); stopped by pid."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--protected-mode", "yes", "--maxclients", "20000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def _counting_connection(counter: list[int]) -> type:
    """A redis-py asyncio ``Connection`` class adding 1 to ``counter[0]`` per send (round trip)."""
    from redis.asyncio.connection import Connection

    class CountingConnection(Connection):
        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            counter[0] += 1
            await super().send_packed_command(command, check_health)

    return CountingConnection


def counting_redis(url: str) -> tuple[Any, list[int]]:
    """A ``redis.asyncio.Redis`` on ``url`` whose sends are counted (one per command or
    pipeline, i.e. per round trip): returns ``(client, counter)``, ``counter[0]`` the count."""
    from redis.asyncio import Redis

    counter = [0]
    return Redis.from_url(url, connection_class=_counting_connection(counter), max_connections=64), counter


def counting_cluster_nodes(counter: list[int]) -> contextlib.AbstractContextManager:
    """While entered, every command or pipeline a cluster client of this process sends to
    one node (``ClusterNode.execute_command`` / ``execute_pipeline``: one round trip) adds 1
    to ``counter[0]`` (the load generator's own traffic on the cluster, subtracted)."""
    from redis.asyncio.cluster import ClusterNode

    @contextlib.contextmanager
    def patched():
        command, pipeline = ClusterNode.execute_command, ClusterNode.execute_pipeline

        async def counted_command(self, *args, **kwargs):
            counter[0] += 1
            return await command(self, *args, **kwargs)

        async def counted_pipeline(self, *args, **kwargs):
            counter[0] += 1
            return await pipeline(self, *args, **kwargs)

        ClusterNode.execute_command, ClusterNode.execute_pipeline = counted_command, counted_pipeline
        try:
            yield
        finally:
            ClusterNode.execute_command, ClusterNode.execute_pipeline = command, pipeline

    return patched()


class _Sum:
    """``[0]`` is the sum of several one-item counters (``counter[0]`` as :func:`counting_redis`'s)."""

    def __init__(self, counters: list[list[int]]) -> None:
        self.counters = counters

    def __getitem__(self, i: int) -> int:
        return sum(c[i] for c in self.counters)


def add_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of several :func:`redis_counts` (one per primary of a cluster)."""
    calls: dict[str, int] = {}
    for part in parts:
        for k, v in part["calls"].items():
            calls[k] = calls.get(k, 0) + v
    return {"reads": sum(p["reads"] for p in parts), "commands": sum(p["commands"] for p in parts),
            "calls": calls, "cpu": sum(p["cpu"] for p in parts)}


async def redis_counts(redis: Any) -> dict[str, Any]:
    """Server-wide counters: reads (client requests), commands, per-command calls, CPU."""
    stats = await redis.info("stats")
    cmds = await redis.info("commandstats")
    cpu = await redis.info("cpu")
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in cmds.items() if isinstance(v, dict)}
    return {
        "reads": stats.get("total_reads_processed", 0),
        "commands": stats.get("total_commands_processed", 0),
        "calls": calls,
        "cpu": float(cpu.get("used_cpu_sys", 0)) + float(cpu.get("used_cpu_user", 0)),
    }


# ------------------------------------------------------------------------- fake Bot API
class FakeTelegram:
    """A loopback stand-in for the Bot API (``TELEGRAM_API_URL``): answers every method as
    Telegram would in shape, remembers nothing, counts calls."""

    def __init__(self) -> None:
        self.port = free_port()
        self.calls: dict[str, int] = {}
        self.webhooks: set[str] = set()  # the URLs setWebhook was called with (one per process)
        self._runner: Any = None
        self._message_id = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FakeTelegram:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        method = request.match_info["method"].lower()
        self.calls[method] = self.calls.get(method, 0) + 1
        try:
            if request.content_type == "application/json":
                params = await request.json()
            else:
                params = dict(await request.post())
        except Exception:
            params = {}
        if method == "setwebhook":
            self.webhooks.add(str(params.get("url", "")))
        if method == "getme":
            result: Any = {"id": 1, "is_bot": True, "first_name": "Karty bench", "username": "karty_bench_bot",
                           "can_join_groups": True, "can_read_all_group_messages": False,
                           "supports_inline_queries": False}
        elif method in ("sendmessage", "editmessagetext", "sendphoto", "editmessagereplymarkup"):
            self._message_id += 1
            try:
                chat_id = int(params.get("chat_id", 1))
            except (TypeError, ValueError):
                chat_id = 1
            result = {"message_id": int(params.get("message_id") or self._message_id), "date": int(time.time()),
                      "chat": {"id": chat_id, "type": "supergroup" if chat_id < 0 else "private"},
                      "text": str(params.get("text", ""))[:100]}
        elif method == "getwebhookinfo":
            result = {"url": "", "has_custom_certificate": False, "pending_update_count": 0}
        else:
            result = True
        return web.json_response({"ok": True, "result": result})


# ---------------------------------------------------------------------- service processes
@dataclass
class Service:
    """One ``python -m webapp`` process: its port, pid and start figures."""

    index: int
    port: int
    proc: subprocess.Popen
    started: float
    log_path: Path
    ready_wall: float | None = None
    ready_cpu: float | None = None
    bot_wall: float | None = None
    bot_cpu: float | None = None

    @property
    def webhook_url(self) -> str:
        return f"{self.base}/telegram/webhook"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid


def start_services(count: int, env: dict[str, str], log_level: str, tag: str = "") -> list[Service]:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    services = []
    for i in range(count):
        port = free_port()
        log_path = LOG_DIR / f"webapp-{count}p{tag}-{i}.log"
        penv = {**env, "PORT": str(port),
                "WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram/webhook",
                "PUBLIC_URL": f"http://127.0.0.1:{port}"}
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "webapp", "--host", "127.0.0.1", "--port", str(port),
                 "--log-level", log_level],
                env=penv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        services.append(Service(i, port, proc, time.perf_counter(), log_path))
    return services


async def wait_ready(session: Any, services: list[Service], timeout: float = READY_TIMEOUT) -> None:
    """Poll each process's ``/healthz`` until 200; records wall and CPU seconds to ready."""
    deadline = time.perf_counter() + timeout

    async def one(svc: Service) -> None:
        while time.perf_counter() < deadline:
            if svc.proc.poll() is not None:
                raise RuntimeError(f"webapp process {svc.index} exited ({svc.proc.returncode}); see {svc.log_path}")
            try:
                async with session.get(svc.base + "/healthz") as resp:
                    if resp.status == 200:
                        svc.ready_wall = time.perf_counter() - svc.started
                        svc.ready_cpu = cpu_seconds(svc.pid)
                        return
            except Exception:
                pass
            await asyncio.sleep(0.05)
        raise TimeoutError(f"webapp process {svc.index} not ready after {timeout:.0f} s; see {svc.log_path}")

    await asyncio.gather(*(one(s) for s in services))


async def wait_bot(telegram: FakeTelegram, services: list[Service], timeout: float = READY_TIMEOUT) -> None:
    """Wait until each process's bot called ``setWebhook`` (its start is over: a bot started in
    the background must not be timed as part of the moves); records wall and CPU s to it."""
    deadline = time.perf_counter() + timeout
    waiting = list(services)
    while waiting and time.perf_counter() < deadline:
        for svc in list(waiting):
            if svc.webhook_url in telegram.webhooks:
                svc.bot_wall = time.perf_counter() - svc.started
                svc.bot_cpu = cpu_seconds(svc.pid)
                waiting.remove(svc)
        await asyncio.sleep(0.05)


def stop_services(services: list[Service]) -> None:
    for svc in services:
        if svc.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                svc.proc.send_signal(signal.SIGINT)  # aiohttp's run_app shuts down cleanly on SIGINT
    for svc in services:
        try:
            svc.proc.wait(15)
        except subprocess.TimeoutExpired:
            svc.proc.kill()
            svc.proc.wait(5)


# ------------------------------------------------------------------------------- the load
@dataclass
class Stats:
    """What one run's clients saw."""

    window: tuple[float, float] = (0.0, 0.0)
    committed: int = 0  # 200 answers, not duplicates, POST started in the window
    committed_all: int = 0
    latencies: list[float] = field(default_factory=list)  # s, POST → every seat has the version
    rejected: dict[int, int] = field(default_factory=dict)  # 429/503 in the window
    reject_latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    out_of_order: int = 0
    reconnects: int = 0  # sockets opened again after a close or a refused handshake (any time)
    fallbacks: int = 0  # moves sent on a socket that closed before the answer, then POSTed
    undelivered: int = 0
    undelivered_detail: list = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    offered: int = 0  # pacing: moves due in the window
    stalled: int = 0

    def in_window(self, t: float) -> bool:
        return self.window[0] <= t < self.window[1]

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


PLAY_FIRST_AVOIDS = ("draw", "take", "stand", "pass")


def choose(rng: random.Random, legal: list[dict[str, Any]]) -> dict[str, Any]:
    """A person's pick: a random card play (or Penki move/place/give) when there is one,
    else a random one of the rest (draw, take, stand, pass). Uniformly random legal play
    draws so often that a Prší match runs to ~1,300 moves; people's last ~100."""
    plays = [a for a in legal if a.get("a") not in PLAY_FIRST_AVOIDS]
    return rng.choice(plays or legal)


class SeatClient:
    """One person at a table: their WebSocket, and their POSTs when it is their turn."""

    def __init__(self, table: TableClient, user_id: int, name: str, init_data: str, base: str) -> None:
        self.table = table
        self.user_id = user_id
        self.name = name
        self.init_data = init_data
        self.base = base
        self.seat: str | None = None
        self.version = -1  # newest version this socket got
        self.arrivals: list[tuple[int, float]] = []  # (version, when) recent
        self.view: dict[str, Any] | None = None
        self.acted = -1  # the version this seat last acted on
        self.acting = False
        self.first_state = asyncio.Event()
        self.ws: Any = None
        self.task: asyncio.Task | None = None
        self.act_task: asyncio.Task | None = None
        self.answers: dict[int, asyncio.Future] = {}  # act frames' refs → their acted/refused frame
        self.refs = 0

    def first_arrival(self, version: int) -> float | None:
        for v, t in self.arrivals:
            if v >= version:
                return t
        return None

    async def run(self) -> None:
        """The socket, reconnected as the Mini App does (``webapp/static/api.js``: after any
        close or refused handshake, 400 ms × 2^attempt up to 8 s, ±25 %, ``since`` the last
        version seen) until the run closes or the table is gone; every failure is counted."""
        run = self.table.run
        attempt = 0
        while not run.closing and not self.table.done:
            outcome = await self._connection()
            if outcome == "gone" or run.closing or self.table.done:  # a finished table's close is no reconnect
                break
            if outcome == "served":
                attempt = 0
            run.stats.reconnects += 1
            delay = min(8.0, 0.4 * 2**attempt) * random.uniform(0.75, 1.25)
            attempt = min(attempt + 1, 6)
            if attempt >= 6:
                self.first_state.set()  # don't hold up the run's start for ever; it keeps trying
            await asyncio.sleep(delay)
        self.first_state.set()  # never leave a waiter hanging

    async def _connection(self) -> str:
        """One socket's life: ``"served"`` (it had a state, then closed), ``"failed"`` or ``"gone"``."""
        run = self.table.run
        url = self.base.replace("http", "ws", 1) + f"/ws/tables/{self.table.id}"
        served = False
        try:
            async with run.session.ws_connect(url, max_msg_size=0, autoping=True) as ws:
                self.ws = ws
                await ws.send_str(json.dumps({"type": "auth", "init_data": self.init_data,
                                              "since": max(0, self.version)}))
                pinger = asyncio.create_task(self._ping(ws))
                try:
                    async for msg in ws:
                        if msg.type.name != "TEXT":
                            break
                        data = json.loads(msg.data)
                        kind = data.get("type")
                        if kind == "state":
                            served = True
                            self._on_state(data)
                        elif kind in ("acted", "refused"):
                            fut = self.answers.pop(data.get("ref"), None)
                            if fut is not None and not fut.done():
                                fut.set_result(data)
                        elif kind == "error":
                            if not run.closing:
                                run.stats.error(f"ws:{data.get('error')}")
                            if data.get("error") == "gone":
                                return "gone"
                            break
                finally:
                    pinger.cancel()
                    self.ws = None
                    for fut in self.answers.values():  # their outcome is unknown: sent again by POST
                        if not fut.done():
                            fut.set_exception(ConnectionError("socket closed"))
                    self.answers.clear()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not run.closing:
                status = getattr(e, "status", None)
                run.stats.error(f"ws:{type(e).__name__}" + (f":{status}" if status else ""))
        return "served" if served else "failed"

    async def _ping(self, ws: Any) -> None:
        await asyncio.sleep(random.uniform(0, PING_EVERY))
        while not ws.closed:
            await ws.send_str('{"type":"ping"}')
            await asyncio.sleep(PING_EVERY)

    def _on_state(self, data: dict[str, Any]) -> None:
        now = time.perf_counter()
        version = int(data.get("version", -1))
        if version < self.version:
            self.table.run.stats.out_of_order += 1
            return
        if version == self.version and self.view is not None:
            return
        self.version = version
        self.seat = data.get("seat") or self.seat
        self.arrivals.append((version, now))
        if len(self.arrivals) > 16:
            del self.arrivals[:8]
        self.view = data.get("view") or {}
        self.first_state.set()
        self.table.arrived(self, version, now)
        self.maybe_act()

    def maybe_act(self) -> None:
        view = self.view
        if view is None or self.acting or self.table.run.closing or not self.table.run.go.is_set():
            return
        if view.get("over"):
            self.table.finish()
            return
        if self.version <= self.acted or not view.get("legal"):
            return
        self.acting = True
        self.act_task = asyncio.create_task(self._act(self.version, view))

    async def _act(self, version: int, view: dict[str, Any]) -> None:
        run = self.table.run
        try:
            await self.table.paced()
            if run.closing:
                return
            action = choose(run.rng, view["legal"])
            body = {"action": action, "client_action_id": uuid.uuid4().hex, "version": version}
            while not run.closing:
                t0 = time.perf_counter()
                status, data, headers = await run.send(self, body)
                t1 = time.perf_counter()
                if status == 200:
                    self.acted = version
                    if not data.get("duplicate"):
                        self.table.committed(int(data["version"]), t0)
                    return
                if status in (429, 503):
                    if run.stats.in_window(t0):
                        run.stats.rejected[status] = run.stats.rejected.get(status, 0) + 1
                        run.stats.reject_latencies.append(t1 - t0)
                    try:
                        wait = float(headers.get("Retry-After", "0.2"))
                    except ValueError:
                        wait = 0.2
                    await asyncio.sleep(min(max(wait, 0.05), 2.0) * random.uniform(0.5, 1.0))
                    continue
                # 409 stale / 422 (another seat moved first, Penki races): wait for the next state.
                self.acted = version
                if status not in (409, 422):
                    run.stats.error(f"http:{status}:{(data or {}).get('error')}")
                return
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not run.closing:
                run.stats.error(f"post:{type(e).__name__}")
        finally:
            self.acting = False
            if not run.closing and self.version > self.acted:
                self.maybe_act()


class TableClient:
    """One table: three :class:`SeatClient` s and the versions still on their way to a socket."""

    def __init__(self, run: LoadRun, table_id: str, users: list[tuple[int, str]], bases: list[str]) -> None:
        self.run = run
        self.id = table_id
        self.seats = [SeatClient(self, uid, name, run.init_data(uid, name), base)
                      for (uid, name), base in zip(users, bases, strict=True)]
        self.pending: dict[int, list[Any]] = {}  # version -> [t0, latest arrival, seats still waiting]
        self.done = False
        self.next_due = 0.0

    def start(self) -> None:
        for seat in self.seats:
            seat.task = asyncio.create_task(seat.run())

    async def wait_connected(self) -> None:
        await asyncio.gather(*(s.first_state.wait() for s in self.seats))

    async def close(self) -> None:
        for seat in self.seats:
            if seat.ws is not None and not seat.ws.closed:
                with contextlib.suppress(Exception):
                    await seat.ws.close()
        for seat in self.seats:
            if seat.act_task is not None:
                seat.act_task.cancel()
            if seat.task is not None:
                seat.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await seat.task

    async def paced(self) -> None:
        """Overload runs: wait for this table's next Poisson due time (already past: go now)."""
        rate = self.run.pace_per_table
        if not rate:
            return
        now = time.perf_counter()
        self.next_due = max(self.next_due, now - 1.0 / rate) + random.expovariate(rate)
        if self.run.stats.in_window(self.next_due):
            self.run.stats.offered += 1
        if self.next_due > now:
            await asyncio.sleep(self.next_due - now)

    def committed(self, version: int, t0: float) -> None:
        stats = self.run.stats
        stats.committed_all += 1
        if not stats.in_window(t0):
            return
        stats.committed += 1
        waiting = set()
        last = t0
        for seat in self.seats:
            t = seat.first_arrival(version)
            if t is None:
                waiting.add(seat)
            else:
                last = max(last, t)
        if waiting:
            self.pending[version] = [t0, last, waiting]
        else:
            stats.latencies.append(last - t0)

    def arrived(self, seat: SeatClient, version: int, now: float) -> None:
        if not self.pending:
            return
        for v in [v for v in self.pending if v <= version]:
            entry = self.pending[v]
            entry[2].discard(seat)
            entry[1] = max(entry[1], now)
            if not entry[2]:
                del self.pending[v]
                self.run.stats.latencies.append(entry[1] - entry[0])

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        self.run.table_finished(self)


class LoadRun:
    """``tables`` tables on ``services`` for one measured window (closed loop, or paced)."""

    def __init__(self, bench: ServiceBench, services: list[Service], tables: int, *,
                 pace: float | None = None, seconds: float, warmup: float, label: str,
                 affinity: bool = False, moves: str = "http") -> None:
        self.bench = bench
        self.moves = moves  # "http": POST each move; "ws": an act frame on the seat's open socket
        self.affinity = affinity  # every seat of a table on one process (the proxy's table routing)
        self.session = bench.session
        self.services = services
        self.tables = tables
        self.pace_per_table = (pace / tables) if pace else None
        self.seconds = seconds
        self.warmup = warmup
        self.label = label
        self.rng = random.Random(f"{label}-{tables}-{len(services)}")
        self.stats = Stats()
        self.clients: list[TableClient] = []
        self.closing = False
        self.go = asyncio.Event()
        self._replacements: set[asyncio.Task] = set()
        self._memory_tasks: set[asyncio.Task] = set()
        self.table_bytes: list[dict[str, int]] = []
        # Each measure SCANs the whole keyspace: a sample, a couple at a time (measuring every
        # finished table at ~1,000 moves/s kept hundreds of scans open and ran the benchmark's
        # own connection pool dry)
        self._measure_gate = asyncio.Semaphore(2)
        self.measure_failed = 0
        self.idle: tuple[dict[str, Any], dict[str, Any]] = ({}, {})

    def init_data(self, user_id: int, name: str) -> str:
        return self.bench.init_data(user_id, name)

    async def send(self, seat: SeatClient, body: dict[str, Any]) -> tuple[int, Any, Any]:
        """A move as ``(status, answer, headers)``: POSTed, or (``moves="ws"``) sent on the seat's
        open socket as the Mini App does, by POST with the same ``client_action_id`` when the
        socket is not open or closes before the answer (a committed move is then a duplicate)."""
        ws = seat.ws
        if self.moves == "ws" and ws is not None and not ws.closed:
            seat.refs += 1
            ref = seat.refs
            fut = seat.answers[ref] = asyncio.get_running_loop().create_future()
            try:
                await ws.send_str(json.dumps({"type": "act", "ref": ref, **body}))
                data = await asyncio.wait_for(fut, 30)
            except (ConnectionError, RuntimeError, TimeoutError):
                seat.answers.pop(ref, None)
                self.stats.fallbacks += 1
                return await self.post(seat, body)
            if data["type"] == "acted":
                return 200, data, {}
            wait = data.get("retry_after")
            return int(data["status"]), data, ({"Retry-After": str(wait)} if wait is not None else {})
        return await self.post(seat, body)

    async def post(self, seat: SeatClient, body: dict[str, Any]) -> tuple[int, Any, Any]:
        url = f"{seat.base}/api/tables/{seat.table.id}/actions"
        headers = {"Authorization": f"tma {seat.init_data}", "Content-Type": "application/json"}
        async with self.session.post(url, data=json.dumps(body), headers=headers) as resp:
            try:
                data = await resp.json(content_type=None)
            except Exception:
                data = None
            return resp.status, data, resp.headers

    async def open_table(self, slot: int) -> TableClient:
        table_id, users = await self.bench.new_table("prsi")
        n = len(self.services)
        if self.affinity:  # as deploy/nginx.conf and deploy/Caddyfile route: by the table's id
            bases = [self.services[zlib.crc32(table_id.encode()) % n].base] * len(users)
        else:  # the seats spread over the processes: each move reaches up to three of them
            bases = [self.services[(slot + i) % n].base for i in range(len(users))]
        client = TableClient(self, table_id, users, bases)
        self.clients.append(client)
        client.start()
        return client

    def table_finished(self, client: TableClient) -> None:
        self.stats.finished.append(client.id)
        task = asyncio.create_task(self._replace(client))
        self._replacements.add(task)
        task.add_done_callback(self._replacements.discard)

    async def _replace(self, client: TableClient) -> None:
        # The seat that saw the end first must not close its table-mates' sockets before
        # the last versions reach them (that counted as undelivered): wait for them a while,
        # and for a POST still in flight (the final move's answer can come after its version
        # reached a socket: only then is that version waited for).
        end = time.perf_counter() + 10.0
        while (client.pending or any(s.acting for s in client.seats)) and time.perf_counter() < end \
                and not self.closing:
            await asyncio.sleep(0.05)
        await client.close()
        if len(self._memory_tasks) < MEASURED_TABLES:
            self._memory_tasks.add(asyncio.create_task(self._measure_later(client.id)))
        if self.closing:
            return
        new = await self.open_table(self.clients.index(client))
        await new.wait_connected()
        for seat in new.seats:
            seat.maybe_act()

    async def _measure_later(self, table_id: str) -> None:
        await asyncio.sleep(1.0)  # what the commit's follow-ups (ratings, deadlines) leave behind
        async with self._measure_gate:
            try:
                self.table_bytes.append(await self.bench.table_bytes(table_id))
            except Exception as e:  # a lost sample, not a lost run
                self.measure_failed += 1
                print(f"  (bytes of finished table {table_id} not measured: {e!r})", file=sys.stderr)

    def _profile(self) -> list[subprocess.Popen]:
        """``--service-profile DIR``: py-spy records every service process over the window
        (raw collapsed stacks, ``DIR/<label>-<n>p-<tables>t-<i>.txt``); nothing without py-spy."""
        out_dir = self.bench.profile
        spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
        if out_dir is None or spy is None:
            return []
        out_dir.mkdir(parents=True, exist_ok=True)
        n = len(self.services)
        return [subprocess.Popen(
            [spy, "record", "-p", str(svc.pid), "-d", str(max(1, int(self.seconds))), "-r", "250", "-f", "raw",
             "--nonblocking", "-o", str(out_dir / f"{self.label}-{n}p-{self.tables}t-{svc.index}.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for svc in self.services]

    async def execute(self) -> dict[str, Any]:
        t_setup = time.perf_counter()
        sem = asyncio.Semaphore(60)

        async def opened(slot: int) -> TableClient:
            async with sem:
                client = await self.open_table(slot)
                await asyncio.wait_for(client.wait_connected(), CONNECT_TIMEOUT)
                return client

        await asyncio.gather(*(opened(i) for i in range(self.tables)))
        connect_s = time.perf_counter() - t_setup
        unconnected = sum(1 for c in self.clients for s in c.seats if s.view is None)
        # Idle: every socket open, nobody moving (the background a move's figures include).
        idle0 = await self.bench.sample(self.services)
        await asyncio.sleep(IDLE)
        idle1 = await self.bench.sample(self.services)
        self.idle = (idle0, idle1)
        start = time.perf_counter() + self.warmup
        self.stats.window = (start, start + self.seconds)
        self.go.set()
        for client in self.clients:
            for seat in client.seats:
                seat.maybe_act()
        await asyncio.sleep(self.warmup)
        profilers = self._profile()
        before = await self.bench.sample(self.services)
        await asyncio.sleep(self.seconds)
        after = await self.bench.sample(self.services)
        spy_end = time.perf_counter() + 30
        while any(p.poll() is None for p in profilers) and time.perf_counter() < spy_end:
            await asyncio.sleep(0.1)
        drain_end = time.perf_counter() + DRAIN
        while time.perf_counter() < drain_end and any(c.pending for c in self.clients):
            await asyncio.sleep(0.1)
        self.closing = True
        pending = sum(len(c.pending) for c in self.clients)
        self.stats.undelivered = sum(len(e[2]) for c in self.clients for e in c.pending.values())
        # Which: (table, version, the seat's newest version, the table's last version seen, finished, socket open)
        self.stats.undelivered_detail = [
            {"table": c.id, "version": v, "seat_has": s.version, "table_at": max(x.version for x in c.seats),
             "finished": c.done, "socket_open": s.ws is not None and not s.ws.closed, "service": s.base}
            for c in self.clients for v, e in c.pending.items() for s in e[2]][:20]
        for task in list(self._replacements):
            task.cancel()
        await asyncio.gather(*(c.close() for c in self.clients), return_exceptions=True)
        await self._abandon([c.id for c in self.clients if not c.done])
        if self._memory_tasks:
            await asyncio.gather(*self._memory_tasks, return_exceptions=True)
        return self.report(before, after, connect_s, unconnected, pending)

    async def _abandon(self, table_ids: list[str]) -> None:
        """Tables left unfinished by the run are deleted (their document, log and ids): else
        their turn timers (60 s) would fire in a later run, and after three the computer
        would play the rest of each game there, uncounted work inflating that run's CPU per
        move. The service's worker forgets a due table whose document is gone."""
        keys = self.bench.store.keys
        for i in range(0, len(table_ids), 100):
            batch = table_ids[i:i + 100]
            with contextlib.suppress(Exception):
                await self.bench.redis.delete(*(k for t in batch for k in (keys.table(t), keys.log(t), keys.cids(t))))

    def report(self, before: dict[str, Any], after: dict[str, Any], connect_s: float, unconnected: int,
               pending: int) -> dict[str, Any]:
        st = self.stats
        seconds = after["t"] - before["t"]
        moves = st.committed
        cpu = after["cpu"] - before["cpu"]
        own = after["own_sends"] - before["own_sends"]
        reads = after["redis"]["reads"] - before["redis"]["reads"] - own
        commands = after["redis"]["commands"] - before["redis"]["commands"] - own
        calls = {k: v - before["redis"]["calls"].get(k, 0) for k, v in after["redis"]["calls"].items()}
        calls = {k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v > 0}
        ms = [x * 1000 for x in st.latencies]
        per_move = (lambda x: round(x / moves, 3)) if moves else (lambda x: None)
        i0, i1 = self.idle
        idle_s = i1["t"] - i0["t"]
        idle_reads_per_s = (i1["redis"]["reads"] - i0["redis"]["reads"] - (i1["own_sends"] - i0["own_sends"])) / idle_s
        idle_cpu_share = (i1["cpu"] - i0["cpu"]) / idle_s
        idle_calls = {k: round((v - i0["redis"]["calls"].get(k, 0)) / idle_s, 1) for k, v in i1["redis"]["calls"].items()}
        idle_calls = dict(sorted(((k, v) for k, v in idle_calls.items() if v > 0), key=lambda kv: -kv[1])[:8])
        out: dict[str, Any] = {
            "processes": len(self.services),
            "tables": self.tables,
            "affinity": self.affinity,
            "moves_by": self.moves,
            "seconds": round(seconds, 2),
            "moves": moves,
            "moves_per_s": round(moves / seconds, 1) if seconds else None,
            "p50_ms": _r(percentile(ms, 50)),
            "p95_ms": _r(percentile(ms, 95)),
            "p99_ms": _r(percentile(ms, 99)),
            "max_ms": _r(max(ms) if ms else None),
            "server_cpu_ms_per_move": per_move(cpu * 1000),
            "server_cpu_share": round(cpu / seconds, 2) if seconds else None,  # cores busy
            "loadgen_cpu_ms_per_move": per_move((after["self_cpu"] - before["self_cpu"]) * 1000),
            "redis_round_trips_per_move": per_move(reads),
            # The same less what the processes do idle (worker ticks, polls) over as long a time.
            "redis_round_trips_per_move_net": per_move(max(0.0, reads - idle_reads_per_s * seconds)),
            "server_cpu_ms_per_move_net": per_move(max(0.0, cpu - idle_cpu_share * seconds) * 1000),
            "idle_round_trips_per_s": round(idle_reads_per_s, 1),
            "idle_cpu_share": round(idle_cpu_share, 3),
            "idle_calls_per_s": idle_calls,  # what the processes send with nobody moving (INFO commandstats)
            "redis_commands_per_move": per_move(commands),
            "redis_cpu_ms_per_move": per_move((after["redis"]["cpu"] - before["redis"]["cpu"]) * 1000),
            "redis_calls_per_move": {k: per_move(v) for k, v in list(calls.items())[:8]} if moves else {},
            "rejected": dict(st.rejected),
            "reject_p99_ms": _r(percentile([x * 1000 for x in st.reject_latencies], 99)),
            "errors": dict(st.errors),
            "out_of_order": st.out_of_order,
            "reconnects": st.reconnects,
            "fallbacks": st.fallbacks,
            "undelivered": st.undelivered,
            "undelivered_detail": st.undelivered_detail,
            "tables_finished": len(st.finished),
            "connect_s": round(connect_s, 1),
            "unconnected_seats": unconnected,
            "load": load_average(),
        }
        if "replicas" in after["redis"]:  # the cluster: primaries above; replicas take no requests
            ra, rb = after["redis"]["replicas"], before["redis"]["replicas"]
            out["replica_reads_per_move"] = per_move(ra["reads"] - rb["reads"])
            out["replica_cpu_ms_per_move"] = per_move((ra["cpu"] - rb["cpu"]) * 1000)
            out["wait_per_move"] = per_move(calls.get("wait", 0))
        if self.pace_per_table:
            out["offered_per_s"] = round(st.offered / seconds, 1) if seconds else None
        if self.table_bytes:
            out["finished_table_bytes_median"] = int(statistics.median(b["total"] for b in self.table_bytes))
        if self.measure_failed:
            out["finished_table_bytes_failed"] = self.measure_failed
        return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


# ---------------------------------------------------------------------------- raw CAS floor
CAS_LUA = """
local v = redis.call('HGET', KEYS[1], 'version')
if (v or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'doc', ARGV[3])
return 1
"""


async def cas_worker(url: str, prefix: str, loops: int, seconds: float, doc_bytes: int) -> dict[str, Any]:
    """``loops`` closed loops, each one key, compare-and-set as fast as answered, for ``seconds``."""
    from redis.asyncio import Redis

    redis = Redis.from_url(url, max_connections=max(4, loops))
    script = redis.register_script(CAS_LUA)
    doc = "x" * doc_bytes
    lat: list[float] = []
    ok = 0
    end = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        nonlocal ok
        key = f"{prefix}:{{cas:{os.getpid()}:{i}}}:table"
        version = ""
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            nxt = str(int(version or 0) + 1)
            done = await script(keys=[key], args=[version, nxt, doc])
            lat.append(time.perf_counter() - t0)
            if int(done):
                ok += 1
                version = nxt
        await redis.delete(key)

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    try:
        await asyncio.gather(*(loop(i) for i in range(loops)))
    finally:
        await redis.aclose()
    return {"ok": ok, "seconds": time.perf_counter() - t0, "latencies_ms": [x * 1000 for x in lat],
            "client_cpu": time.process_time() - cpu0}


def cas_worker_main(arg: str) -> None:
    """Entry of a CAS client process: JSON args in, JSON result on stdout."""
    cfg = json.loads(arg)
    result = asyncio.run(cas_worker(**cfg))
    sys.stdout.write(json.dumps(result))


async def raw_cas(url: str, prefix: str, processes: int, loops: int, seconds: float,
                  doc_bytes: int) -> dict[str, Any]:
    """The floor: ``processes`` client processes, ``loops`` concurrent keys in all."""
    per = max(1, loops // processes)
    cfg = {"url": url, "prefix": prefix, "loops": per, "seconds": seconds, "doc_bytes": doc_bytes}
    procs = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from benchmarks.service import cas_worker_main; cas_worker_main(sys.argv[1])",
        json.dumps(cfg), stdout=asyncio.subprocess.PIPE) for _ in range(processes)]
    outs = await asyncio.gather(*(asyncio.wait_for(p.communicate(), seconds + 60) for p in procs))
    results = [json.loads(o[0]) for o in outs]
    ok = sum(r["ok"] for r in results)
    secs = max(r["seconds"] for r in results)
    lat = [x for r in results for x in r["latencies_ms"]]
    return {"processes": processes, "keys": per * processes, "doc_bytes": doc_bytes,
            "cas_per_s": round(ok / secs, 1), "p50_ms": _r(percentile(lat, 50)),
            "p99_ms": _r(percentile(lat, 99)),
            "client_cpu_ms_per_cas": round(sum(r["client_cpu"] for r in results) * 1000 / max(ok, 1), 3)}


# ------------------------------------------------------------------------------ the bench
class ServiceBench:
    """The whole section: Redis, fake Telegram, services, runs; :meth:`run` returns the figures."""

    def __init__(self, *, redis_url: str | None, tables: tuple[int, ...], processes: tuple[int, ...],
                 seconds: float, warmup: float, overload: bool, memory: bool, log_level: str,
                 profile: str | None = None, cluster: bool = False, cluster_rounds: int = 1,
                 affinity: bool = False, moves: tuple[str, ...] = MOVES) -> None:
        self.redis_url_opt = redis_url
        self.moves = moves  # how the seats send their moves, each a run of its own: "http", "ws"
        self.tables = tables
        self.processes = processes
        self.seconds = seconds
        self.warmup = warmup
        self.overload = overload
        self.memory = memory
        self.log_level = log_level
        self.profile = Path(profile) if profile else None  # py-spy's samples of each measured window
        self.prefix = f"karty-bench-svc-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.token = new_bot_token()
        self._init: dict[int, str] = {}
        self._next_user = 7_100_000_000 + random.randint(0, 10**6) * 1000
        self._next_chat = 1
        self.session: Any = None
        self.cluster = cluster
        self.cluster_rounds = max(1, cluster_rounds)
        self.affinity = affinity  # also a run with each table's seats on one process, after each spread run
        self.redis: Any = None
        self.scan_clients: list[Any] = []
        # on the cluster: plain clients to its (primaries, replicas), counted in self.sends
        self.cluster_clients: tuple[list[Any], list[Any]] | None = None

    def init_data(self, user_id: int, name: str) -> str:
        if user_id not in self._init:
            user = {"id": user_id, "first_name": name, "last_name": "Bench", "username": f"bench{user_id}",
                    "language_code": "cs", "allows_write_to_pm": True}
            self._init[user_id] = sign_init_data(user, self.token)
        return self._init[user_id]

    async def new_table(self, game: str) -> tuple[str, list[tuple[int, str]]]:
        """A table of three people in a chat of its own, as a lobby would start it."""
        from store import Seat

        users = []
        for i in range(3):
            self._next_user += 1
            users.append((self._next_user, f"Hráč{i + 1}"))
        chat = -1009_000_000_000 - self._next_chat
        self._next_chat += 1
        seats = [Seat(seat=f"u{uid}", user_id=uid, name=name) for uid, name in users]
        table = await self.store.create_table(game=game, seats=seats, chat_id=chat)
        return table.id, users

    async def table_bytes(self, table_id: str) -> dict[str, int]:
        """``MEMORY USAGE`` of every key under the table's hash tag, by key kind, and the total."""
        out: dict[str, int] = {}
        version = None
        for client in self.scan_clients:  # one Redis, or every primary of the cluster (one has the tag's slot)
            found = False
            async for key in client.scan_iter(match=f"{self.prefix}:{{g:{table_id}}}:*", count=200):
                found = True
                size = await client.memory_usage(key, samples=0) or 0
                kind = key.decode().rsplit("}:", 1)[-1].split(":")[0]
                out[kind] = out.get(kind, 0) + size
            if found:
                version = await client.hget(f"{self.prefix}:{{g:{table_id}}}:table", "version")
        out["total"] = sum(out.values())
        out["moves"] = int(version) if version else 0
        return out

    async def sample(self, services: list[Service]) -> dict[str, Any]:
        if self.cluster_clients:
            primaries, replicas = self.cluster_clients
            counts = add_counts([await redis_counts(c) for c in primaries])
            counts["replicas"] = add_counts([await redis_counts(c) for c in replicas])
        else:
            counts = await redis_counts(self.redis)
        cpu = 0.0
        for svc in services:
            cpu += cpu_seconds(svc.pid) or 0.0
        return {"t": time.perf_counter(), "cpu": cpu, "redis": counts, "own_sends": self.sends[0],
                "self_cpu": time.process_time()}

    async def run(self) -> dict[str, Any]:
        import aiohttp

        private: PrivateRedis | None = None
        url = self.redis_url_opt
        if url is None:
            try:
                private = PrivateRedis().start()
                url = private.url
            except FileNotFoundError:
                url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        self.url = url
        from store import Store

        self.redis, self.sends = counting_redis(url)
        for _ in range(100):
            try:
                await self.redis.ping()
                break
            except Exception:
                await asyncio.sleep(0.05)
        self.store = Store(self.redis, prefix=self.prefix)
        self.scan_clients = [self.redis]
        telegram = await FakeTelegram().start()
        env = {**os.environ, "BOT_TOKEN": self.token, "REDIS_URL": url, "KARTY_PREFIX": self.prefix,
               "TELEGRAM_API_URL": telegram.url, "BOT_USERNAME": "karty_bench_bot",
               "WEBAPP_SHORT_NAME": "play", "ACTION_RATE": "1000", "ACTION_BURST": "1000",
               # every seat's client connects from 127.0.0.1: one address carries them all
               "ADDRESS_RATE": "1000000", "ADDRESS_BURST": "1000000",
               "PYTHONUNBUFFERED": "1"}
        env.pop("LOCAL_PLAY", None)
        server = await redis_server_info(self.redis)
        results: dict[str, Any] = {
            "redis": ("private redis-server " if private else "shared Redis ") + server,
            "redis_counts_exact": private is not None,
            "prefix": self.prefix,
            "load_before": load_average(),
            "runs": [], "overload": [], "floor": [], "start": [], "memory": {},
        }
        if self.cluster:
            results["cluster"] = {"runs": []}
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        self.session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60))
        try:
            doc_bytes = await self._doc_bytes()
            for n in self.processes:
                services = start_services(n, env, self.log_level)
                try:
                    await wait_ready(self.session, services)
                    await wait_bot(telegram, services)
                    results["start"].append({
                        "processes": n,
                        "ready_wall_s": [round(s.ready_wall or 0, 2) for s in services],
                        "ready_cpu_s": [round(s.ready_cpu or 0, 2) for s in services],
                        "bot_ready_wall_s": [None if s.bot_wall is None else round(s.bot_wall, 2) for s in services],
                        "bot_ready_cpu_s": [None if s.bot_cpu is None else round(s.bot_cpu, 2) for s in services],
                    })
                    best = 0.0
                    for m in self.tables:
                        for way in self.moves:  # the same tables, each way of sending moves in turn
                            res = await LoadRun(self, services, m, seconds=self.seconds, warmup=self.warmup,
                                                label=f"closed-{way}", moves=way).execute()
                            results["runs"].append(res)
                            if way == self.moves[0]:
                                best = max(best, res["moves_per_s"] or 0.0)
                            _progress(f"service {n}p {m} tables, moves by {way}", res)
                            if self.affinity and n > 1:  # the same processes, each table's seats on one of them
                                res = await LoadRun(self, services, m, seconds=self.seconds, warmup=self.warmup,
                                                    label=f"closed-affinity-{way}", affinity=True, moves=way).execute()
                                results["runs"].append(res)
                                _progress(f"service {n}p {m} tables, by table, moves by {way}", res)
                    if self.overload and best > 0:
                        m = max(self.tables)
                        res = await LoadRun(self, services, m, pace=2 * best, seconds=self.seconds,
                                            warmup=self.warmup, label="overload", moves=self.moves[0]).execute()
                        res["pace_per_s"] = round(2 * best, 1)
                        results["overload"].append(res)
                        _progress(f"service {n}p overload {m} tables", res)
                    if self.memory and n == self.processes[0]:
                        results["memory"] = await self._memory(services)
                finally:
                    stop_services(services)
                floor = await raw_cas(url, self.prefix, n, max(self.tables), self.seconds, doc_bytes)
                results["floor"].append(floor)
                _progress(f"raw CAS {n} client processes", floor)
            if self.cluster:
                try:
                    results["cluster"] = await self._cluster(env, telegram, results)
                except Exception as exc:  # the one-Redis figures still stand
                    import traceback

                    traceback.print_exc(file=sys.stderr)
                    results["cluster"] = {"error": f"{type(exc).__name__}: {exc}"}
            results["telegram_calls"] = telegram.calls
        finally:
            await self.session.close()
            await telegram.stop()
            deleted = 0
            with contextlib.suppress(Exception):
                async for key in self.redis.scan_iter(match=f"{self.prefix}:*", count=1000):
                    deleted += await self.redis.delete(key)
            await self.redis.aclose()
            if private is not None:
                private.stop()
            results["keys_cleaned"] = deleted
        results["load_after"] = load_average()
        return results

    async def _closed_runs(self, env: dict[str, str], telegram: FakeTelegram, n: int, backend: str,
                           round_: int) -> list[dict[str, Any]]:
        """``n`` service processes on ``env``'s Redis, one closed-loop run per table count."""
        tag = f"-{'cluster' if backend == 'cluster' else 'single'}-r{round_}"
        services = start_services(n, env, self.log_level, tag)
        out = []
        try:
            await wait_ready(self.session, services)
            await wait_bot(telegram, services)
            for m in self.tables:
                res = await LoadRun(self, services, m, seconds=self.seconds, warmup=self.warmup,
                                    label=f"closed-{backend}", moves=self.moves[0]).execute()
                res["backend"], res["round"] = backend, round_
                out.append(res)
                _progress(f"service {n}p {m} tables, {backend}, round {round_ + 1}", res)
        finally:
            stop_services(services)
        return out

    async def _cluster(self, env: dict[str, str], telegram: FakeTelegram, results: dict[str, Any]) -> dict[str, Any]:
        """The cluster column (module docstring): 2 processes on 3 primaries + 3 replicas.

        Round 1 sets the cluster beside the one-Redis 2-process runs made just before; each
        further round runs one Redis, then the cluster, again. The cluster is thrown away
        afterwards (every node stopped by pid, its directory removed)."""
        if not shutil.which("redis-server") or not shutil.which("redis-cli"):
            return {"skipped": "redis-server and redis-cli are needed for the cluster column"}
        import importlib.util

        from redis.asyncio import Redis

        from store import Store

        path = Path(__file__).resolve().parents[1] / "scripts" / "redis_cluster.py"
        spec = importlib.util.spec_from_file_location("karty_redis_cluster", path)
        rc = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rc)
        n = 2
        single = {"redis": self.redis, "sends": self.sends, "store": self.store, "scan": self.scan_clients}
        out: dict[str, Any] = {"processes": n, "rounds": self.cluster_rounds, "runs": [],
                               "single_runs": [dict(r, backend="one Redis", round=0) for r in results["runs"]
                                               if r["processes"] == n]}
        nodes, root, url = await asyncio.to_thread(rc.start_cluster, 3, 1)
        clients: list[Any] = []
        cstore = None
        routed = [0]  # the cluster client's own sends (all to primaries)
        counters: list[list[int]] = []
        try:
            out["topology"] = "3 primaries + 3 replicas, " + url
            for node in nodes:
                counters.append([0])
                clients.append(Redis.from_url(f"redis://127.0.0.1:{node.port}",
                                              connection_class=_counting_connection(counters[-1])))
            roles = [(await c.info("replication")).get("role") for c in clients]
            primaries = [c for c, r in zip(clients, roles, strict=True) if r == "master"]
            replicas = [c for c, r in zip(clients, roles, strict=True) if r != "master"]
            # what this process sends to the primaries: its INFO samples and its table creations
            counter = _Sum([routed, *(k for k, r in zip(counters, roles, strict=True) if r == "master")])
            out["server"] = await redis_server_info(primaries[0])
            cenv = {**env, "REDIS_URL": url}
            cstore = Store.from_url(url, prefix=self.prefix)
            with counting_cluster_nodes(routed):
                await cstore.warm()
                for r in range(self.cluster_rounds):
                    if r > 0:  # one Redis again, then the cluster: load drifts hit both
                        self.redis, self.sends, self.store = single["redis"], single["sends"], single["store"]
                        self.scan_clients, self.cluster_clients = single["scan"], None
                        out["single_runs"] += await self._closed_runs(env, telegram, n, "one Redis", r)
                    self.redis, self.sends, self.store = primaries[0], counter, cstore
                    self.scan_clients, self.cluster_clients = primaries, (primaries, replicas)
                    out["runs"] += await self._closed_runs(cenv, telegram, n, "cluster", r)
        finally:
            self.redis, self.sends, self.store = single["redis"], single["sends"], single["store"]
            self.scan_clients, self.cluster_clients = single["scan"], None
            if cstore is not None:
                with contextlib.suppress(Exception):
                    await cstore.close()
            for c in clients:
                with contextlib.suppress(Exception):
                    await c.aclose()
            await asyncio.to_thread(rc.stop_cluster, nodes, root)
        return out

    async def _doc_bytes(self) -> int:
        """The size of a fresh Prší table's Redis document (the raw CAS writes one as big)."""
        table_id, _ = await self.new_table("prsi")
        raw = await self.redis.hget(f"{self.prefix}:{{g:{table_id}}}:table", "doc")
        return len(raw) if raw else 2048

    async def _memory(self, services: list[Service]) -> dict[str, Any]:
        """Prší and Penki tables played to the end through the service; bytes of each in Redis."""
        out: dict[str, Any] = {}
        for game in ("prsi", "penki"):
            run = LoadRun(self, services, 0, seconds=0, warmup=0, label=f"memory-{game}")
            run.go.set()
            clients = []
            for slot in range(MEMORY_TABLES):
                table_id, users = await self.new_table(game)
                bases = [services[(slot + i) % len(services)].base for i in range(3)]
                client = TableClient(run, table_id, users, bases)
                run.clients.append(client)
                clients.append(client)
                client.start()
            run.table_finished = lambda c: None  # no replacements here
            end = time.perf_counter() + MEMORY_TIMEOUT
            while time.perf_counter() < end and not all(c.done for c in clients):
                for c in clients:
                    for seat in c.seats:
                        seat.maybe_act()
                await asyncio.sleep(0.2)
            run.closing = True
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
            await asyncio.sleep(1.0)
            sizes = [await self.table_bytes(c.id) for c in clients if c.done]
            out[game] = {
                "finished": len(sizes), "of": len(clients),
                "bytes_median": int(statistics.median(s["total"] for s in sizes)) if sizes else None,
                "by_key_median": {k: int(statistics.median(s.get(k, 0) for s in sizes))
                                  for k in sorted({k for s in sizes for k in s} - {"total", "moves"})} if sizes else {},
                "moves_median": int(statistics.median(s["moves"] for s in sizes)) if sizes else None,
                "bytes_per_move": round(statistics.median(s["total"] / max(1, s["moves"]) for s in sizes), 1)
                if sizes else None,
                "errors": dict(run.stats.errors),
            }
            _progress(f"memory {game}", out[game])
        return out


async def redis_server_info(redis: Any) -> str:
    info = await redis.info("server")
    return f"{info.get('redis_version')} at {info.get('tcp_port')}"


def _progress(what: str, data: dict[str, Any]) -> None:
    keys = ("moves_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_move", "redis_round_trips_per_move",
            "cas_per_s", "bytes_median", "rejected", "errors", "undelivered")
    shown = ", ".join(f"{k} {data[k]}" for k in keys if k in data and data[k] not in (None, {}, 0))
    print(f"  [{time.strftime('%H:%M:%S')}] {what}: {shown}", file=sys.stderr, flush=True)


def measure(*, redis_url: str | None = None, tables: tuple[int, ...] = TABLES,
            processes: tuple[int, ...] = PROCESSES, seconds: float = SECONDS, warmup: float = WARMUP,
            overload: bool = True, memory: bool = True, log_level: str = "WARNING",
            profile: str | None = None, cluster: bool = False, cluster_rounds: int = 1,
            affinity: bool = False, moves: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run the service benchmark (module docstring) and return its figures; ``cluster`` adds
    the 2-process cluster column (and a one-Redis 2-process run when ``processes`` lacks 2)."""
    if cluster and 2 not in processes:
        processes = (*processes, 2)
    bench = ServiceBench(redis_url=redis_url, tables=tables, processes=processes, seconds=seconds,
                         warmup=warmup, overload=overload, memory=memory, log_level=log_level,
                         profile=profile, cluster=cluster, cluster_rounds=cluster_rounds, affinity=affinity,
                         moves=tuple(moves or MOVES))
    return asyncio.run(bench.run())


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(section, measure, figures) rows for the text table of ``python -m benchmarks``."""
    rows: list[tuple[str, str, str]] = []
    floors = {f["processes"]: f for f in results.get("floor", [])}
    for s in results.get("start", []):
        rows.append(("service", f"start, {s['processes']} process(es)",
                     f"ready after {s['ready_wall_s']} s wall, {s['ready_cpu_s']} s CPU; bot started after "
                     f"{s.get('bot_ready_wall_s')} s wall, {s.get('bot_ready_cpu_s')} s CPU"))
    for r in results.get("runs", []) + results.get("overload", []):
        floor = floors.get(r["processes"])
        vs = ""
        if floor and floor.get("cas_per_s") and r.get("moves_per_s") is not None:
            vs = f", {100 * r['moves_per_s'] / floor['cas_per_s']:.1f}% of raw CAS"
            if r.get("p99_ms") is not None and floor.get("p99_ms"):
                vs += f", p99 {r['p99_ms'] / floor['p99_ms']:.0f}× raw CAS p99"
        name = f"{r['processes']}p × {r['tables']} tables" + (
            f" overload (paced {r.get('pace_per_s')}/s)" if "pace_per_s" in r else "") + (
            ", by table" if r.get("affinity") else "") + (f", moves by {r['moves_by']}" if r.get("moves_by") else "")
        rows.append(("service", name, run_figures(r, vs)))
    rows += cluster_rows(results.get("cluster"))
    for f in results.get("floor", []):
        rows.append(("service", f"raw CAS, {f['processes']} client process(es)",
                     f"{f['cas_per_s']} CAS/s, p50 {f['p50_ms']} ms, p99 {f['p99_ms']} ms ({f['doc_bytes']} B doc)"))
    for game, m in (results.get("memory") or {}).items():
        rows.append(("service", f"Redis bytes per finished {game} table",
                     f"{m['bytes_median']} B median of {m['finished']}/{m['of']}, {m.get('moves_median')} moves "
                     f"({m.get('bytes_per_move')} B/move; {m['by_key_median']})"))
    return rows


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def cluster_comparison(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """Per table count: the cluster's mean moves/s and server CPU ms/move over its runs, and the
    same of the one-Redis 2-process runs of the same run, with cluster ÷ one Redis ratios."""
    out = []
    for tables in sorted({r["tables"] for r in cluster.get("runs", [])}):
        row: dict[str, Any] = {"tables": tables}
        for key, runs in (("cluster", cluster.get("runs", [])), ("single", cluster.get("single_runs", []))):
            mine = [r for r in runs if r["tables"] == tables]
            row[f"{key}_moves_per_s"] = _mean([r.get("moves_per_s") for r in mine])
            row[f"{key}_cpu_ms"] = _mean([r.get("server_cpu_ms_per_move") for r in mine])
        if row["single_moves_per_s"] and row["cluster_moves_per_s"] is not None:
            row["moves_ratio"] = round(row["cluster_moves_per_s"] / row["single_moves_per_s"], 2)
        if row["single_cpu_ms"] and row["cluster_cpu_ms"] is not None:
            row["cpu_ratio"] = round(row["cluster_cpu_ms"] / row["single_cpu_ms"], 2)
        out.append(row)
    return out


def in_order(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The comparison's runs as they ran: round by round, one Redis before the cluster."""
    runs = cluster.get("single_runs", []) + cluster.get("runs", [])
    return sorted(runs, key=lambda r: (r.get("round", 0), r.get("backend") == "cluster"))


def run_figures(r: dict[str, Any], after_round_trips: str = "") -> str:
    """One service run's figures as a summary line (``after_round_trips`` goes right after
    the round trips: the raw-CAS comparison, or where a cluster's were counted)."""
    figs = (f"{r['moves_per_s']} moves/s, p50/p95/p99 {r['p50_ms']}/{r['p95_ms']}/{r['p99_ms']} ms, "
            f"CPU {r['server_cpu_ms_per_move']} ms/move, {r['redis_round_trips_per_move']} round trips/move"
            f"{after_round_trips}")
    if r.get("rejected"):
        figs += f", rejected {r['rejected']}"
    if r.get("errors"):
        figs += f", errors {r['errors']}"
    if r.get("undelivered") or r.get("out_of_order"):
        figs += f", undelivered {r['undelivered']}, out of order {r['out_of_order']}"
    return figs


def cluster_rows(cluster: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """The summary rows of the cluster column (``--cluster``): each run, then cluster ÷ one Redis."""
    if not cluster:
        return []
    if "skipped" in cluster or "error" in cluster:
        return [("service", "cluster (2 processes, 3 primaries + 3 replicas)",
                 str(cluster.get("skipped") or cluster.get("error")))]
    rows = []
    for r in in_order(cluster):
        on = ""
        if r.get("backend") == "cluster":
            on = (f" on the primaries ({r.get('wait_per_move')} WAIT/move; replicas "
                  f"{r.get('replica_reads_per_move')} reads/move)")
        figs = run_figures(r, on)
        where = "on the cluster" if r.get("backend") == "cluster" else "on one Redis"
        rows.append(("service", f"{r['processes']}p × {r['tables']} tables {where}, round {r.get('round', 0) + 1}", figs))
    for c in cluster_comparison(cluster):
        rows.append(("service", f"cluster ÷ one Redis, 2p × {c['tables']} tables",
                     f"moves/s {_fmt_ratio(c.get('moves_ratio'))} ({_r1(c['cluster_moves_per_s'])} vs "
                     f"{_r1(c['single_moves_per_s'])}), CPU/move {_fmt_ratio(c.get('cpu_ratio'))} "
                     f"({_r3(c['cluster_cpu_ms'])} vs {_r3(c['single_cpu_ms'])} ms)"))
    return rows


def _fmt_ratio(x: float | None) -> str:
    return "–" if x is None else f"{x}×"


def _r1(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def _r3(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def markdown(results: dict[str, Any], when: str = "", machine: str = "") -> str:
    """The figures as the Markdown tables of BENCHMARKS.md (written beside bench.json)."""
    floors = {f["processes"]: f for f in results.get("floor", [])}
    lines = [f"Run {when} on {machine}; {results.get('redis')}; load average {results.get('load_before')} "
             f"before, {results.get('load_after')} after.", "",
             "| processes | tables | moves/s | % of raw CAS | p50 / p95 / p99 ms | p99 ÷ raw CAS p99 "
             "| server CPU ms/move (net of idle) | Redis round trips/move (net of idle) | rejected | undelivered |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.get("runs", []) + results.get("overload", []):
        f = floors.get(r["processes"], {})
        pct = f"{100 * r['moves_per_s'] / f['cas_per_s']:.1f}%" if f.get("cas_per_s") and r["moves_per_s"] else "–"
        ratio = f"{r['p99_ms'] / f['p99_ms']:.0f}×" if f.get("p99_ms") and r.get("p99_ms") else "–"
        tables = f"{r['tables']} (overload: paced {r['pace_per_s']}/s)" if "pace_per_s" in r else str(r["tables"])
        if r.get("affinity"):
            tables += ", by table"
        if r.get("moves_by"):
            tables += f", moves by {r['moves_by']}"
        rej = sum((r.get("rejected") or {}).values())
        lines.append(f"| {r['processes']} | {tables} | {r['moves_per_s']} | {pct} | {r['p50_ms']} / {r['p95_ms']} / "
                     f"{r['p99_ms']} | {ratio} | {r['server_cpu_ms_per_move']} ({r.get('server_cpu_ms_per_move_net')}) "
                     f"| {r['redis_round_trips_per_move']} ({r.get('redis_round_trips_per_move_net')}) "
                     f"| {rej} | {r['undelivered']} |")
    cluster = results.get("cluster") or {}
    if cluster.get("runs"):
        lines += ["", f"Cluster column: {cluster.get('processes', 2)} processes on {cluster.get('topology', 'a cluster')} "
                  f"({cluster.get('server')}); one Redis and cluster runs in the order listed.", "",
                  "| round | backend | tables | moves/s | p50 / p95 / p99 ms | server CPU ms/move (net of idle) "
                  "| round trips/move, primaries (net of idle) | WAIT/move | replica reads/move | rejected | undelivered |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in in_order(cluster):
            rej = sum((r.get("rejected") or {}).values())
            lines.append(f"| {r.get('round', 0) + 1} | {r.get('backend')} | {r['tables']} | {r['moves_per_s']} | {r['p50_ms']} / {r['p95_ms']} / "
                         f"{r['p99_ms']} | {r['server_cpu_ms_per_move']} ({r.get('server_cpu_ms_per_move_net')}) "
                         f"| {r['redis_round_trips_per_move']} ({r.get('redis_round_trips_per_move_net')}) "
                         f"| {r.get('wait_per_move', '–')} | {r.get('replica_reads_per_move', '–')} "
                         f"| {rej} | {r['undelivered']} |")
        lines += ["", "| tables | moves/s cluster ÷ one Redis | server CPU/move cluster ÷ one Redis |", "|---|---|---|"]
        for c in cluster_comparison(cluster):
            lines.append(f"| {c['tables']} | {_fmt_ratio(c.get('moves_ratio'))} | {_fmt_ratio(c.get('cpu_ratio'))} |")
    elif cluster:
        lines += ["", f"Cluster column: {cluster.get('skipped') or cluster.get('error')}"]
    lines += ["", "| raw CAS client processes | keys | CAS/s | p50 ms | p99 ms |", "|---|---|---|---|---|"]
    for f in results.get("floor", []):
        lines.append(f"| {f['processes']} | {f['keys']} | {f['cas_per_s']} | {f['p50_ms']} | {f['p99_ms']} |")
    mem = results.get("memory") or {}
    if mem:
        lines += ["", "| finished table | Redis bytes (median) | moves | by key |", "|---|---|---|---|"]
        for game, m in mem.items():
            lines.append(f"| {game} | {m['bytes_median']} | {m.get('moves_median')} | {m['by_key_median']} |")
    starts = results.get("start", [])
    if starts:
        lines += ["", "| processes | ready after (wall s) | CPU s until ready | bot started (wall s) | CPU s until bot |",
                  "|---|---|---|---|---|"]
        for s in starts:
            lines.append(f"| {s['processes']} | {s['ready_wall_s']} | {s['ready_cpu_s']} | "
                         f"{s.get('bot_ready_wall_s')} | {s.get('bot_ready_cpu_s')} |")
    return "\n".join(lines) + "\n"
