"""Faults (issue 16): live matches through the real service while the service and Redis fail.

The test starts a Redis of its own (``redis-server`` on a free loopback port, ``--appendonly
yes --appendfsync always`` in a temporary directory; the shared Redis on 6379 is never
touched), the fake Bot API (:mod:`fake_bot_api`) and ``python -m webapp`` as deployed
(:class:`test_e2e.Service`: bot token, webhook, ``REDIS_URL`` on that Redis). Matches of
Prší and Penki run at once, each in a group chat of its own, with a computer or with people
only, a 30 s turn timer at every table; their people are scripted (:class:`Table`): each
posts legal moves with a ``client_action_id`` (the same one again after a dropped connection
or a 503, as the Mini App does), holds a socket (:class:`Held`: reconnects, pings), and once
per match lets its turn run out so the timer must move for it. New matches start while
faults remain, so every fault meets live play.

Meanwhile, at random moments drawn from a seeded RNG (``KARTY_FAULTS_SEED``), one after the
other: the service is SIGKILLed and started again; Redis is SIGKILLed and started again from
its append-only file; Redis is stopped (SIGSTOP) for ``KARTY_FAULTS_OUTAGE`` seconds, then
continued (SIGCONT).

Checked at the end (hang guards only, never a wall-clock bound):

* every move a client was answered 200 is in its table's log exactly once, at the version
  it was told; versions run 1..n; no ``client_action_id`` twice (no move applied twice);
* every match finishes; every stalled turn was played by the timer;
* every group got "the game begins", each Prší round's result (as many as the replayed log
  has ``round_end`` events) and the final table, each exactly once (the Bot API records);
* every answer to a move sent while Redis was down was a 503 ``unavailable`` with
  ``Retry-After`` (a read: that, or the table as the process knows it), and no request
  hung (each has a 60 s hang guard);
* every socket reached its table's last version.

Measured and reported (``test-output/faults/summary.json``, BENCHMARKS.md "Reliability"):
the figures above, how long the answers during the outage took, how many moves answered
503 were committed once Redis went on (the Mini App's retry with the same id then gets the
move's own answer), and the time from Redis answering again to ``/healthz`` 200, to the
first move answered 200 and to the first commit of any kind.

``make test`` runs a short version (4 matches, 2 service kills, a Redis kill, a 5 s
outage); ``make soak`` a long one (``KARTY_FAULTS_MATCHES=20 KARTY_FAULTS_KILLS=5
KARTY_FAULTS_OUTAGE=20``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_cluster_service import Player, Socket  # signed initData headers; a socket's messages in order
from test_e2e import Service, free_port  # python -m webapp as deployed; SIGKILL and start again

import engine
from store import LobbySettings, Seat, Store

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-output" / "faults"
REDIS_SERVER = shutil.which("redis-server")

MATCHES = int(os.environ.get("KARTY_FAULTS_MATCHES", "4"))  # at least this many, more while faults remain
LIVE = int(os.environ.get("KARTY_FAULTS_LIVE", str(min(MATCHES, 10))))  # matches at once
KILLS = int(os.environ.get("KARTY_FAULTS_KILLS", "2"))  # service SIGKILLs
REDIS_KILLS = int(os.environ.get("KARTY_FAULTS_REDIS_KILLS", "1"))
OUTAGE = float(os.environ.get("KARTY_FAULTS_OUTAGE", "5"))  # seconds Redis is stopped (SIGSTOP)
SEED = int(os.environ.get("KARTY_FAULTS_SEED", "16"))
TURN_SECONDS = 30
HANG = 60.0  # a request unanswered this long hangs (a failure)
STUCK = 600.0  # a table whose version does not move for this long never finishes (a failure)
CALLOUTS = {"zevok", "one_card", "how_many"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(int(os.environ.get("KARTY_FAULTS_TIMEOUT", "2400"))),
    pytest.mark.skipif(REDIS_SERVER is None and os.environ.get("KARTY_ALLOW_NO_REDIS", "") not in ("", "0"),
                       reason="no redis-server (KARTY_ALLOW_NO_REDIS)"),
]

_STARTED: list[Any] = []


@pytest.fixture(autouse=True)
def _stop_processes():
    """Whatever happens (a timeout too), every process the test started is stopped by its pid."""
    yield
    while _STARTED:
        with contextlib.suppress(Exception):
            _STARTED.pop().stop()


class RedisServer:
    """A ``redis-server`` of the test's own: loopback, a free port, AOF fsynced on every write."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    def argv(self) -> list[str]:
        assert REDIS_SERVER is not None, "redis-server is not installed (make system-deps)"
        return [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log")]

    async def start(self) -> float:
        """Start (again, from the AOF); returns the monotonic time it first answered PING."""
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        if self not in _STARTED:
            _STARTED.append(self)
        return await self.answers()

    async def answers(self) -> float:
        import redis.asyncio as aredis

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, (self.dir / "redis.log").read_text()[-2000:]
            client = aredis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)
            try:
                if await client.ping():
                    return time.monotonic()
            except Exception:  # refused, or still loading the AOF
                pass
            finally:
                await client.aclose()
            await asyncio.sleep(0.05)
        raise AssertionError(f"redis-server did not answer: {(self.dir / 'redis.log').read_text()[-2000:]}")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        self.paused = sig == signal.SIGSTOP

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.paused:
            self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@dataclass
class Answer:
    """One HTTP request a player made: when sent and answered (monotonic), status (0: no
    connection, -1: hung past :data:`HANG`), the ``error`` code, ``Retry-After``."""

    table: str
    kind: str
    t0: float
    t1: float
    status: int
    error: str | None = None
    retry_after: str | None = None


@dataclass
class Fault:
    kind: str  # "service" | "redis_kill" | "outage"
    at: float  # when it began (monotonic)
    resumed: float = 0.0  # Redis: when it was continued (SIGCONT) or started again
    back: float = 0.0  # when Redis answered PING again / the killed service's port was free
    ready: float = 0.0  # service: when it answered /api/config
    back_wall: float = 0.0  # ``back`` on the wall clock (the log's ``ts``)
    healthy: float = 0.0  # Redis: when the service's /healthz answered 200 again


@dataclass
class Run:
    """Everything the players and the faults saw."""

    http: Any
    service: Service
    redis: RedisServer
    store: Store
    token: str
    answers: list[Answer] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    calm: asyncio.Lock = field(default_factory=asyncio.Lock)  # held while a fault is injected or a table made
    probes: dict[str, str] = field(default_factory=dict)  # client_action_id → table: taps during the outage

    async def request(self, table: str, kind: str, method: str, path: str, headers: dict[str, str],
                      body: Any = None) -> tuple[int, dict[str, Any]]:
        import aiohttp

        t0 = time.monotonic()
        data: dict[str, Any] = {}
        retry_after = None
        try:
            async with self.http.request(method, f"{self.service.base}{path}", json=body, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=HANG)) as r:
                status = r.status
                retry_after = r.headers.get("Retry-After")
                with contextlib.suppress(Exception):
                    data = await r.json(content_type=None)
        except TimeoutError:
            status = -1
        except aiohttp.ClientError as exc:
            status, data = 0, {"error": type(exc).__name__}
        error = data.get("error") if isinstance(data, dict) else None
        self.answers.append(Answer(table, kind, t0, time.monotonic(), status, error, retry_after))
        return status, data if isinstance(data, dict) else {}


class Held:
    """A player's socket, held for the whole match: reconnects whenever it drops, pings."""

    def __init__(self, run: Run, table_id: str, player: Player) -> None:
        self.run, self.table_id, self.player = run, table_id, player
        self.versions: list[int] = []  # the versions of closed connections' state messages
        self.connects = 0
        self.sock: Socket | None = None
        self.task = asyncio.create_task(self._hold())

    @property
    def last(self) -> int:
        """The newest version this player's sockets have shown."""
        now = [m["version"] for m in self.sock.states()] if self.sock is not None else []
        return max(self.versions + now, default=0)

    async def _hold(self) -> None:
        while True:
            sock = self.sock = Socket(self.run.http, self.run.service.base, self.table_id, self.player)
            try:
                await sock.open()
                self.connects += 1
                while not sock.task.done():
                    with contextlib.suppress(Exception):
                        await sock.ws.send_json({"type": "ping"})
                    await asyncio.wait([sock.task], timeout=10)
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await sock.close()
                raise
            except Exception:
                pass
            finally:
                self.versions += [m["version"] for m in sock.states()]
                self.sock = None
            await asyncio.sleep(0.3)

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


class Table:
    """One match: its people scripted, a computer or not, one turn left to the timer."""

    def __init__(self, run: Run, index: int, run_id: int) -> None:
        self.run, self.index = run, index
        self.game = ("prsi", "penki")[index % 2]
        self.computer = (index // 2) % 2 == 0
        self.rng = random.Random(SEED * 1000 + index)
        base = 7_300_000_000 + run_id * 1000 + index * 10
        names = ("Anna", "Boris", "Cyril")[: 2 if self.computer else 3]
        self.people = [Player(base + i, f"{n}{index}", run.token) for i, n in enumerate(names)]
        self.by_seat = {p.seat: p for p in self.people}
        self.chat_id = -1_002_000_000_000 - run_id * 1000 - index
        self.id = ""
        self.acked: dict[str, int] = {}  # client_action_id → the version the player was told
        self.refused: list[tuple[int, str | None]] = []  # moves answered 409/422 (the table moved on)
        self.stall_at = self.rng.randint(10, 40)  # after this many of its people's moves, one turn is let lapse
        self.stalls: list[tuple[str, int]] = []  # (seat, version) left to the timer
        self.unfired: list[tuple[str, int]] = []
        self.moves = 0
        self.final: Any = None
        self.stuck = False
        self.sockets: list[Held] = []

    async def create(self) -> None:
        seats = [Seat(seat=p.seat, user_id=p.id, name=p.name) for p in self.people]
        if self.computer:
            seats.append(Seat(seat="c1", name="Computer", computer=True, level="regular"))
        settings = LobbySettings(players=len(seats), turn_seconds=TURN_SECONDS)
        table = await self.run.store.create_table(game=self.game, seats=seats, chat_id=self.chat_id,
                                                  settings=settings, seed=SEED * 1000 + self.index)
        self.id = table.id
        self.sockets = [Held(self.run, self.id, p) for p in self.people]

    async def read(self):
        """The table from Redis, retried through faults (the test's own reads are not the subject)."""
        deadline = time.monotonic() + STUCK
        while True:
            try:
                return await self.run.store.get_table(self.id)
            except Exception:
                assert time.monotonic() < deadline, f"table {self.id}: Redis did not come back"
                await asyncio.sleep(0.2)

    async def version(self) -> int:
        while True:
            try:
                return int(await self.run.store.table_version(self.id) or 0)
            except Exception:
                await asyncio.sleep(0.2)

    async def wait_past(self, version: int, seat: str | None = None) -> bool:
        """Until the table is past ``version`` (with ``seat``: until ``seat`` has acted after it).
        False when nothing moved for :data:`STUCK` seconds."""
        deadline = time.monotonic() + STUCK
        seen = version
        while time.monotonic() < deadline:
            now = await self.version()
            if now > seen:
                if seat is None:
                    return True
                with contextlib.suppress(Exception):
                    if any(e["seat"] == seat for e in await self.run.store.log(self.id, since=version)):
                        return True
                    seen = now
                    deadline = time.monotonic() + STUCK  # the table moves: not stuck
            await asyncio.sleep(0.1)
        return False

    def choose(self, state, seat: str) -> dict[str, Any] | None:
        legal = [a for a in engine.legal_actions(state, seat) if a["a"] not in CALLOUTS]
        if not legal:
            return None
        want = engine.computer_action(state, seat)
        if want is not None and want["a"] not in CALLOUTS and self.rng.random() < 0.7:
            return want
        return self.rng.choice(legal)

    async def from_the_app(self) -> tuple[str, dict[str, Any], int] | None:
        """While the test cannot read Redis: what the players' apps show (``GET`` the table, as
        the process knows it); a seat whose view offers a move makes it, as a player would."""
        for p in self.people:
            status, data = await self.run.request(self.id, "get", "GET", f"/api/tables/{self.id}", p.headers())
            view = data.get("view") if status == 200 else None
            legal = [a for a in (view or {}).get("legal") or [] if a["a"] not in CALLOUTS]
            if legal and not view.get("over"):
                return p.seat, self.rng.choice(legal), int(view["version"])
        return None

    async def play(self) -> None:
        while True:
            try:
                table = await _soon(self.run.store.get_table(self.id))
            except Exception:  # Redis is down (or its answer late)
                move = await self.from_the_app()
                if move is None:
                    await asyncio.sleep(0.2)
                else:
                    await self.post(*move)
                continue
            if table.state.over:
                self.final = table
                return
            action = seat = None
            for s in engine.awaiting(table.state):
                if s in self.by_seat:
                    action = self.choose(table.state, s)
                    if action is not None:
                        seat = s
                        break
            if seat is None:  # the computer's, the timer's or the round hold's turn
                if not await self.wait_past(table.version):
                    self.stuck = True
                    return
                continue
            if self.moves >= self.stall_at and not self.stalls:
                # This player does not move: the turn timer must play for them (S4).
                self.stalls.append((seat, table.version))
                if not await self.wait_past(table.version, seat=seat):
                    self.unfired.append((seat, table.version))
                    self.stuck = True
                    return
                continue
            await asyncio.sleep(self.rng.uniform(0.05, 0.3))  # a player's reaction
            await self.post(seat, action, table.version)

    async def post(self, seat: str, action: dict[str, Any], version: int) -> None:
        """POST the move; the same ``client_action_id`` again until it is answered."""
        player = self.by_seat[seat]
        cid = uuid.uuid4().hex
        body = {"action": action, "client_action_id": cid, "version": version}
        deadline = time.monotonic() + STUCK
        while True:
            status, data = await self.run.request(self.id, "post", "POST", f"/api/tables/{self.id}/actions",
                                                  player.headers(), body)
            if status == 200:
                assert data.get("version", 0) > version or data.get("duplicate"), data
                self.acked[cid] = data["version"]
                self.moves += 1
                return
            if status in (409, 422):  # the table moved on meanwhile (a timer, a computer): not committed
                self.refused.append((status, data.get("error")))
                return
            if status in (0, 503, 429, -1):
                assert time.monotonic() < deadline, f"no answer but {status} {data} for {STUCK} s"
                pause = 0.2 if status != 429 else float(data.get("retry_after") or 0.5)
                await asyncio.sleep(pause)
                continue
            raise AssertionError(f"table {self.id}: {status} {data} for {seat} {action}")

    async def look(self) -> None:
        """A player glances at the table (GET), as an open app does now and then."""
        p = self.rng.choice(self.people)
        await self.run.request(self.id, "get", "GET", f"/api/tables/{self.id}", p.headers())

    # -- the checks ---------------------------------------------------------------------------
    async def verdict(self, api) -> dict[str, Any]:
        st = self.run.store
        log = await st.log(self.id)
        table = self.final or await self.read()
        versions = [e["version"] for e in log]
        cids = [e["cid"] for e in log if e.get("cid")]
        in_log: dict[str, list[int]] = {}
        for e in log:
            if e.get("cid"):
                in_log.setdefault(e["cid"], []).append(e["version"])
        lost = {c: v for c, v in self.acked.items() if in_log.get(c) != [v]}
        twice = len(cids) - len(set(cids))
        # The timer moved for each stalled seat: the seat's first entry after the stall.
        unfired = list(self.unfired)
        for seat, v in self.stalls:
            first = next((e for e in log if e["version"] > v and e["seat"] == seat), None)
            if first is None or first["by"] not in ("timer", "computer"):  # "computer": the seat went auto (S4)
                unfired.append((seat, v))
        # What the group should have been told: replay the log through the engine for the rounds.
        doc = await st.export_case(self.id)
        state = engine.new_game(self.game, doc["players"], dealer=doc["dealer"], seed=doc["seed"])
        rounds = 0
        for e in log:
            out = engine.apply(state, e["seat"], e["action"])
            state = out.state
            rounds += sum(1 for ev in out.events if ev.get("a") == "round_end")
        texts = [c.text or "" for c in api.sent_messages(self.chat_id)]
        begins = sum(1 for t in texts if "the game begins" in t)
        finals = sum(1 for t in texts if "final table" in t)
        # (a post may tell several rounds: results queued behind the chat's budget are merged, issue 28)
        round_nos = [int(n) for t in texts for n in re.findall(r"round (\d+)/\d+ is over", t)]
        want_rounds = list(range(1, rounds + 1))
        lost_posts = (begins == 0) + (finals == 0) + len(set(want_rounds) - set(round_nos))
        doubled_posts = max(0, begins - 1) + max(0, finals - 1) + sum(
            round_nos.count(r) - 1 for r in set(round_nos) if round_nos.count(r) > 1)
        by: dict[str, int] = {}
        for e in log:
            by[e["by"]] = by.get(e["by"], 0) + 1
        return {
            "table": self.id, "game": self.game, "computer": self.computer, "version": table.version,
            "by": by, "acked": len(self.acked), "refused": len(self.refused),
            "versions_ok": versions == list(range(1, table.version + 1)),
            "lost": lost, "twice": twice, "stalls": len(self.stalls), "unfired": unfired,
            "rounds": rounds, "posts": len(texts), "lost_posts": lost_posts, "doubled_posts": doubled_posts,
            "socket_last": [s.last for s in self.sockets],
            "socket_connects": [s.connects for s in self.sockets],
        }


async def _soon(coro: Any, timeout: float = 1.0) -> Any:
    """``await coro`` for at most ``timeout`` s, else ``TimeoutError`` (the call itself is left to
    end by its own bound: a Redis call cancelled midway can hold its caller much longer)."""
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait([task], timeout=timeout)
    if not done:
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        raise TimeoutError
    return task.result()


async def _probe(run: Run) -> None:
    """A person at a live table taps a move in the app: one offered by their view (as the
    process knows it), else a draw; one POST, not retried. Its id is kept (``run.probes``)."""
    live = [t for t in run.tables if t.id and t.final is None]
    if not live:
        return
    t = random.Random(len(run.answers)).choice(live)
    # Never the person letting a turn run out (Table.stalls): their turn is the timer's to play.
    people = [p for p in t.people if all(p.seat != seat for seat, _ in t.stalls)]
    for p in people:
        status, data = await run.request(t.id, "get", "GET", f"/api/tables/{t.id}", p.headers())
        view = data.get("view") if status == 200 else None
        legal = [a for a in (view or {}).get("legal") or [] if a["a"] not in CALLOUTS]
        if legal or p is people[-1]:
            cid = uuid.uuid4().hex
            run.probes[cid] = t.id
            body = {"action": legal[0] if legal else {"a": "draw"}, "client_action_id": cid}
            await run.request(t.id, "probe", "POST", f"/api/tables/{t.id}/actions", p.headers(), body)
            return


async def _inject(run: Run, fault: str) -> Fault:
    """One fault, and back to service: the service answering, Redis answering."""
    async with run.calm:
        f = Fault(fault, time.monotonic())
        if fault == "service":
            run.service.kill()
            f.back = time.monotonic()
            await run.service.start_ready(run.http)
            f.ready = time.monotonic()
        elif fault == "redis_kill":
            run.redis.kill()
            f.resumed = time.monotonic()
            f.back = await run.redis.start()  # from its append-only file
        else:
            run.redis.signal(signal.SIGSTOP)
            # The outage itself: the players keep playing meanwhile, and once a second someone
            # opens the app and taps a move (whoever's turn it is; it may be all computers').
            # The first tap's answer is awaited before Redis goes on, however long it takes (its
            # own hang guard aside): what a player sees while Redis is down is always measured.
            until = time.monotonic() + OUTAGE
            await _probe(run)
            while time.monotonic() < until - 1.0:
                await asyncio.sleep(min(1.0, max(0.0, until - 1.0 - time.monotonic())))
                await _probe(run)
            await asyncio.sleep(max(0.0, until - time.monotonic()))
            f.resumed = time.monotonic()
            run.redis.signal(signal.SIGCONT)
            f.back = await run.redis.answers()
        if fault != "service":
            f.back_wall = time.time()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):
                    async with run.http.get(f"{run.service.base}/healthz") as r:
                        if r.status == 200:
                            f.healthy = time.monotonic()
                            break
                await asyncio.sleep(0.05)
        run.faults.append(f)
        return f


async def _faults(run: Run, rng: random.Random, started: asyncio.Event) -> None:
    plan = ["service"] * KILLS + ["redis_kill"] * REDIS_KILLS + ["outage"]
    rng.shuffle(plan)
    await started.wait()
    for fault in plan:
        await asyncio.sleep(rng.uniform(2.0, 8.0))  # a random (seeded) moment
        f = await _inject(run, fault)
        # Play resumes before the next fault (a hang guard, not a bound): a move answered 200.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
                a.kind == "post" and a.status == 200 and a.t1 > f.back for a in run.answers[-50:]):
            await asyncio.sleep(0.1)


def _outage_answers(run: Run) -> tuple[list[Answer], list[Answer]]:
    """Requests sent while Redis was down (killed or stopped): (those answered before it was
    started again or continued, those answered after)."""
    before, after = [], []
    for f in run.faults:
        if f.kind in ("redis_kill", "outage"):
            sent = [a for a in run.answers if f.at <= a.t0 <= f.resumed]
            before += [a for a in sent if a.t1 <= f.resumed]
            after += [a for a in sent if a.t1 > f.resumed]
    return before, after


async def _recovery(run: Run) -> list[dict[str, Any]]:
    """Per Redis fault, seconds from Redis answering PING again to: the service's ``/healthz``
    answering 200, the first move answered 200, the first commit of any kind (a person's, the
    timer's, a computer's: the log's wall-clock ``ts``)."""
    out = []
    ts = [e["ts"] for t in run.tables for e in await run.store.log(t.id) if e.get("ts")]
    for f in run.faults:
        if f.kind not in ("redis_kill", "outage"):
            continue
        posts = [a.t1 for a in run.answers if a.kind == "post" and a.status == 200 and a.t1 >= f.back]
        after = [x for x in ts if x >= f.back_wall]
        out.append({
            "kind": f.kind, "down_s": round(f.back - f.at, 2),
            "healthz_s": round(f.healthy - f.back, 2) if f.healthy else None,
            "first_move_200_s": round(min(posts) - f.back, 2) if posts else None,
            "first_commit_s": round(min(after) - f.back_wall, 2) if after else None,
        })
    return out


async def test_matches_survive_service_kills_a_redis_kill_and_an_outage(tmp_path_factory) -> None:
    import aiohttp
    from fake_bot_api import FakeBotAPI
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    assert REDIS_SERVER is not None, "redis-server is not installed (make system-deps installs it)"
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    run_id = int(uuid.uuid4().int % 10**5)
    tmp = Path(tempfile.mkdtemp(prefix="karty-faults-"))
    redis = RedisServer(tmp)
    await redis.start()
    api = FakeBotAPI()
    await api.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    prefix = f"karty-faults-{run_id}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WS_", "ACTION_", "RATE_", "REDIS_"))}
    env.update({
        "BOT_TOKEN": api.token, "BOT_USERNAME": api.username, "WEBAPP_SHORT_NAME": "play",
        "PUBLIC_URL": base, "WEBHOOK_URL": f"{base}/telegram/webhook", "WEBHOOK_PATH": "/telegram/webhook",
        "WEBHOOK_SECRET": "faults-" + uuid.uuid4().hex, "TELEGRAM_API_URL": api.url, "REDIS_URL": redis.url,
        "KARTY_PREFIX": prefix, "HOST": "127.0.0.1", "PORT": str(port), "LOCAL_PLAY": "false",
        "PYTHONUNBUFFERED": "1",
        # Every scripted person connects from 127.0.0.1: the per-address request limit is raised
        # so that one address carries them all (a restart's reconnects and retries come at once).
        "ADDRESS_RATE": "1000", "ADDRESS_BURST": "5000",
    })
    log_path = OUT / "service.log"
    log_path.write_bytes(b"")
    service = Service(env, port, log_path)
    _STARTED.append(service)
    http = aiohttp.ClientSession()
    store = Store.from_url(redis.url, prefix=prefix, timeout=2.0, pool_timeout=2.0)
    store.redis.set_retry(Retry(NoBackoff(), 0))  # the test's own reads fail at once, not retried for long
    run = Run(http=http, service=service, redis=redis, store=store, token=api.token)
    t_start = time.monotonic()
    try:
        await service.start_ready(http)
        started = asyncio.Event()
        chaos = asyncio.create_task(_faults(run, rng, started))
        plays: list[asyncio.Task] = []

        async def new_table() -> None:
            t = Table(run, len(run.tables), run_id)
            run.tables.append(t)
            async with run.calm:  # never made half-way through a fault (a retried create would make two)
                await t.create()
            plays.append(asyncio.create_task(t.play()))

        while len(run.tables) < min(LIVE, MATCHES):
            await new_table()
        started.set()
        while True:
            live = [t for t in plays if not t.done()]
            if not live and (chaos.done() and len(run.tables) >= MATCHES):
                break
            if len(live) < LIVE and (len(run.tables) < MATCHES or not chaos.done()):
                await new_table()
                continue
            if chaos.done() and chaos.exception() is not None:
                raise chaos.exception()
            with contextlib.suppress(Exception):
                await rng.choice(run.tables).look()
            await asyncio.sleep(0.5)
        await chaos
        for t in plays:
            await t  # a player's assertion (an unexpected answer) fails the test here
        # The sockets catch up; the group posts arrive (the notifier may be redelivering).
        await _settle(run, api)
        verdicts = [await t.verdict(api) for t in run.tables]
        for t in run.tables:
            await asyncio.gather(*(s.close() for s in t.sockets))
        seen, late = _outage_answers(run)
        posts = [a for a in seen + late if a.kind in ("post", "probe")]
        logged = {e["cid"] for t in run.tables for e in await store.log(t.id) if e.get("cid")}
        summary = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip(),
            "seed": SEED, "wall_s": round(time.monotonic() - t_start, 1),
            "matches": len(run.tables), "finished": sum(1 for t in run.tables if t.final is not None),
            "faults": [{"kind": f.kind, "back_after_s": round(f.back - f.at, 2),
                        "ready_after_s": round(f.ready - f.at, 2) if f.ready else None} for f in run.faults],
            "moves_logged": sum(v["version"] for v in verdicts),
            "moves_acked": sum(v["acked"] for v in verdicts),
            "moves_refused_as_moved_on": sum(v["refused"] for v in verdicts),
            "by": {k: sum(v["by"].get(k, 0) for v in verdicts) for k in ("player", "timer", "computer")},
            "lost": sum(len(v["lost"]) for v in verdicts), "applied_twice": sum(v["twice"] for v in verdicts),
            "never_finished": sum(1 for t in run.tables if t.final is None),
            "timers": sum(v["stalls"] for v in verdicts),
            "timers_never_fired": sum(len(v["unfired"]) for v in verdicts),
            "posts": sum(v["posts"] for v in verdicts),
            "posts_lost": sum(v["lost_posts"] for v in verdicts),
            "posts_doubled": sum(v["doubled_posts"] for v in verdicts),
            "requests": len(run.answers), "hung": sum(1 for a in run.answers if a.status == -1),
            "while_redis_down": {  # requests sent while Redis was down
                "answered_while_down": {k: sum(1 for a in seen if f"{a.kind} {a.status} {a.error}" == k)
                                        for k in sorted({f"{a.kind} {a.status} {a.error}" for a in seen})},
                "answered_once_back": {k: sum(1 for a in late if f"{a.kind} {a.status} {a.error}" == k)
                                       for k in sorted({f"{a.kind} {a.status} {a.error}" for a in late})},
                "probes_committed_once_back": sum(1 for c in run.probes if c in logged),
                "probes": len(run.probes),
                "post_answer_s": {"median": round(sorted(a.t1 - a.t0 for a in posts)[len(posts) // 2], 2)
                                  if posts else None,
                                  "max": round(max((a.t1 - a.t0 for a in posts), default=0.0), 2)},
            },
            "recovery": await _recovery(run),
            "service_log_errors": sum(1 for x in log_path.read_text(errors="replace").splitlines() if " ERROR " in x),
            "tables": verdicts,
        }
        (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        (OUT / "answers.json").write_text(json.dumps({  # every request and fault, for reading after a failure
            "faults": [f.__dict__ for f in run.faults], "answers": [a.__dict__ for a in run.answers]}))
        print(json.dumps({k: v for k, v in summary.items() if k != "tables"}, indent=1, default=str))

        assert {f.kind for f in run.faults} == {"service", "outage"} | ({"redis_kill"} if REDIS_KILLS else set())
        assert len(run.faults) == KILLS + REDIS_KILLS + 1
        assert summary["never_finished"] == 0, [v for v in verdicts if not v["versions_ok"]]
        assert all(v["versions_ok"] for v in verdicts), verdicts
        assert summary["lost"] == 0, [v["lost"] for v in verdicts if v["lost"]]
        assert summary["applied_twice"] == 0
        assert summary["timers"] >= len(run.tables) and summary["timers_never_fired"] == 0, \
            [v["unfired"] for v in verdicts]
        assert summary["posts_lost"] == 0 and summary["posts_doubled"] == 0, \
            [(v["table"], v["lost_posts"], v["doubled_posts"]) for v in verdicts]
        assert summary["hung"] == 0
        assert seen, "no request was answered while Redis was down"
        # A move: "unavailable, try again" (503 with Retry-After). A read may also be served from
        # what the process knows of the table (the live feed's last document), as 200.
        unavailable = [a for a in seen if a.status == 503 and a.error == "unavailable" and a.retry_after]
        assert [a for a in seen if a.kind == "probe"] and all(
            a in unavailable for a in seen if a.kind in ("post", "probe")), [a for a in seen if a not in unavailable][:10]
        assert all(a in unavailable or a.status == 200 for a in seen if a.kind == "get"), seen
        for v in verdicts:
            assert v["socket_last"] == [v["version"]] * len(v["socket_last"]), v
    finally:
        for t in run.tables:
            for s in t.sockets:
                await s.close()
        service.stop()
        await http.close()
        await store.close()
        await api.stop()
        redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)


async def _settle(run: Run, api) -> None:
    """Until every socket shows its table's last version and every group has its final table
    (hang guards: a failure shows in the checks that follow, not here)."""
    deadline = time.monotonic() + 180

    def done() -> bool:
        for t in run.tables:
            if t.final is None:
                continue
            if any(s.last < t.final.version for s in t.sockets):
                return False
            if not any("final table" in (c.text or "") for c in api.sent_messages(t.chat_id)):
                return False
        return True

    while time.monotonic() < deadline and not done():
        await asyncio.sleep(0.2)
    await api.settle(quiet=2.0, timeout=60)
