"""``python -m benchmarks.socket_memory``: the memory one service process spends per table WebSocket.

What it does, on loopback only (the helpers of :mod:`benchmarks.service`):

* a private ``redis-server`` on a free loopback port (else the Redis at ``--redis-url``, every
  key under a unique ``KARTY_PREFIX``, deleted afterwards), and a fake Bot API on loopback;
* **one** ``python -m webapp`` process as the service benchmark starts it (bot token, webhook
  mode, the bot mounted), with ``ADDRESS_RATE``/``ADDRESS_BURST`` raised (every socket comes
  from 127.0.0.1) and ``WS_IDLE_TIMEOUT`` raised (the sockets send no pings; a socket's memory
  does not depend on them); ``WS_PER_USER`` (12) stays as it is: each seat is a user of its own;
* Prší tables of three people made through ``Store.create_table`` (as a lobby would), and
  sockets opened on ``/ws/tables/{id}`` as the Mini App opens them: the upgrade, then the
  ``{"type": "auth", "init_data": …}`` frame (initData signed as Telegram signs it), each
  socket read until its first ``state`` and kept open with a reader (the protocol pings);
* at each step (``--steps``: total table sockets, three to a table, every seat of a table its
  own user), once every socket has its state and the process has been quiet ``--settle`` s:
  the process's ``VmRSS`` (``/proc/PID/status``) and ``/proc/PID/smaps_rollup`` (Rss, Pss,
  Anonymous), and its ``karty_sockets_open`` gauge (``GET /metrics``);
* then ``--extra`` more sockets on tables already watched (a seated user's second device:
  another socket of the same user on the same table), the same readings;
* then every socket closed, the same readings (what the process keeps).

Derived: bytes per socket with its table (a third of a table's feed and state each), the
least-squares slope of RSS over the steps that have sockets (the first step also pays one-time
costs), and each step's own; bytes per extra socket on a watched table; what RSS the process
keeps once every socket is closed (Python's allocator keeps most of its arenas). The figures include the client's kernel buffers only on the client side (not
this process); the server's socket buffers are kernel memory, not RSS.

The load generator runs in this process; run the whole under ``nice`` on a shared machine. Every
process it starts is stopped by its pid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.service import (
    FakeTelegram,
    PrivateRedis,
    load_average,
    new_bot_token,
    sign_init_data,
    start_services,
    stop_services,
    wait_bot,
    wait_ready,
)

STEPS = (0, 1000, 3000, 5000)
EXTRA = 1000
SETTLE = 5.0  # s the process is left alone before a reading
CONCURRENCY = 50  # handshakes in flight at once (the admission queue is 64 + 256)
OPEN_TIMEOUT = 120.0  # s for one socket to get its first state (a busy shared machine)


def read_memory(pid: int) -> dict[str, int]:
    """The process's VmRSS and smaps_rollup's Rss, Pss and Anonymous, in bytes."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0].lower()] = int(line.split()[1]) * 1024
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss", "Anonymous", "Private_Dirty"):
                out["smaps_" + key.lower()] = int(rest.split()[0]) * 1024
    return out


class Sockets:
    """The client side: every open socket and the reader keeping it alive."""

    def __init__(self, session: Any, base: str, token: str) -> None:
        self.session, self.base, self.token = session, base, token
        self.open: list[tuple[Any, asyncio.Task]] = []
        self.failed: dict[str, int] = {}
        self._init: dict[int, str] = {}
        self._gate = asyncio.Semaphore(CONCURRENCY)

    def init_data(self, user_id: int) -> str:
        if user_id not in self._init:
            self._init[user_id] = sign_init_data({"id": user_id, "first_name": f"P{user_id % 10_000}",
                                                  "language_code": "cs", "allows_write_to_pm": True}, self.token)
        return self._init[user_id]

    async def connect(self, table_id: str, user_id: int) -> None:
        """Open one socket as the Mini App does (upgrade, auth frame) and wait for its first state."""
        async with self._gate:
            for attempt in range(5):
                try:
                    ws = await self.session.ws_connect(f"{self.base}/ws/tables/{table_id}", autoping=True,
                                                       max_msg_size=0)
                except Exception as e:  # 503 overloaded on a burst of handshakes: again, a little later
                    self.failed[type(e).__name__] = self.failed.get(type(e).__name__, 0) + 1
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                await ws.send_str(json.dumps({"type": "auth", "init_data": self.init_data(user_id)}))
                async with asyncio.timeout(OPEN_TIMEOUT):
                    msg = await ws.receive()
                data = json.loads(msg.data) if msg.type.name == "TEXT" else {}
                if data.get("type") != "state":
                    await ws.close()
                    key = str(data.get("error") or msg.type.name)
                    self.failed[key] = self.failed.get(key, 0) + 1
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                self.open.append((ws, asyncio.create_task(self._read(ws))))
                return
            raise RuntimeError(f"a socket could not be opened: {self.failed}")

    @staticmethod
    async def _read(ws: Any) -> None:
        with contextlib.suppress(Exception):
            async for _ in ws:  # the protocol's pings are answered while reading
                pass

    async def close_all(self) -> None:
        for ws, _ in self.open:
            with contextlib.suppress(Exception):
                await ws.close()
        tasks = [task for _, task in self.open]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.open.clear()


async def sockets_gauge(session: Any, base: str) -> float | None:
    """The process's own count of open table sockets (``karty_sockets_open`` on ``/metrics``)."""
    with contextlib.suppress(Exception):
        async with session.get(f"{base}/metrics") as r:
            for line in (await r.text()).splitlines():
                if line.startswith("karty_sockets_open"):
                    return float(line.split()[-1])
    return None


async def measure(steps: tuple[int, ...] = STEPS, extra: int = EXTRA, settle: float = SETTLE,
                  redis_url: str | None = None, log_level: str = "WARNING") -> dict[str, Any]:
    """Open the sockets step by step and read the process's memory at each; the figures."""
    import aiohttp
    from redis.asyncio import Redis

    from store import Seat, Store

    steps = tuple(sorted(set(steps)))
    private = None
    if redis_url is None:
        private = PrivateRedis().start()
        redis_url = private.url
    prefix = f"karty-bench-sockmem-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    token = new_bot_token()
    redis = Redis.from_url(redis_url, max_connections=100)
    for _ in range(100):
        with contextlib.suppress(Exception):
            await redis.ping()
            break
        await asyncio.sleep(0.05)
    store = Store(redis, prefix=prefix)
    telegram = await FakeTelegram().start()
    env = {**os.environ, "BOT_TOKEN": token, "REDIS_URL": redis_url, "KARTY_PREFIX": prefix,
           "TELEGRAM_API_URL": telegram.url, "BOT_USERNAME": "karty_bench_bot", "WEBAPP_SHORT_NAME": "play",
           "ADDRESS_RATE": "1000000", "ADDRESS_BURST": "1000000", "WS_IDLE_TIMEOUT": "36000",
           "PYTHONUNBUFFERED": "1"}
    env.pop("LOCAL_PLAY", None)
    result: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_before": load_average(), "redis": "private" if private else redis_url,
                              "steps": [], "settle_s": settle}
    services = start_services(1, env, log_level, tag="-sockmem")
    svc = services[0]
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                    timeout=aiohttp.ClientTimeout(total=OPEN_TIMEOUT))
    clients = Sockets(session, svc.base, token)
    t0 = time.perf_counter()
    try:
        await wait_ready(session, services)
        await wait_bot(telegram, services)
        result["ready_s"] = round(svc.ready_wall or 0, 1)
        tables: list[tuple[str, list[int]]] = []
        next_user = 7_300_000_000 + (os.getpid() % 10_000) * 100_000

        async def new_table(k: int) -> tuple[str, list[int]]:
            users = [next_user + 3 * k + i for i in range(3)]
            seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid % 10_000}") for uid in users]
            table = await store.create_table(game="prsi", seats=seats, chat_id=-1009_100_000_000 - k)
            return table.id, users

        async def reading(label: str, sockets: int, tables_watched: int) -> dict[str, Any]:
            await asyncio.sleep(settle)
            row = {"label": label, "sockets": sockets, "tables": tables_watched,
                   "gauge": await sockets_gauge(session, svc.base), **read_memory(svc.pid),
                   "load": load_average(), "at_s": round(time.perf_counter() - t0, 1)}
            result["steps"].append(row)
            print(f"socket_memory: {label}: {sockets} sockets, {tables_watched} tables, "
                  f"RSS {row.get('vmrss', 0) / 2**20:.1f} MiB (gauge {row['gauge']}, load {row['load']})",
                  file=sys.stderr, flush=True)
            return row

        opened = 0
        for target in steps:
            need_tables = (target + 2) // 3
            while len(tables) < need_tables:
                batch = range(len(tables), min(need_tables, len(tables) + 50))
                tables += await asyncio.gather(*(new_table(k) for k in batch))
            todo = [(tables[i // 3][0], tables[i // 3][1][i % 3]) for i in range(opened, target)]
            await asyncio.gather(*(clients.connect(t, u) for t, u in todo))
            opened = target
            await reading("table sockets", opened, (opened + 2) // 3)
        if extra:
            watched = (opened + 2) // 3
            if watched == 0:
                raise ValueError("--extra needs a step with sockets before it")
            todo = [(tables[i % watched][0], tables[i % watched][1][(i // watched) % 3]) for i in range(extra)]
            await asyncio.gather(*(clients.connect(t, u) for t, u in todo))
            await reading("extra sockets on watched tables", opened + extra, watched)
        await clients.close_all()
        await reading("all closed", 0, 0)
    finally:
        with contextlib.suppress(Exception):
            await clients.close_all()
        await session.close()
        stop_services(services)
        await telegram.stop()
        with contextlib.suppress(Exception):
            keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
            for i in range(0, len(keys), 1000):
                await redis.delete(*keys[i:i + 1000])
        await redis.aclose()
        if private is not None:
            private.stop()
    result["handshake_retries"] = clients.failed
    result["load_after"] = load_average()
    result.update(derive(result["steps"]))
    return result


def derive(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Bytes per socket with its table (least-squares slope of RSS over the table steps, and
    each step's own), bytes per extra socket on a watched table, and what closing kept."""
    steps = [r for r in rows if r["label"] == "table sockets" and "vmrss" in r]
    out: dict[str, Any] = {}
    # the slope over the steps with sockets (the first sockets also pay one-time costs: code
    # first run, caches, the pub/sub feed's start), unless there are fewer than two of them
    fit = [r for r in steps if r["sockets"] > 0]
    fit = fit if len(fit) >= 2 else steps
    if len(fit) >= 2:
        xs = [r["sockets"] for r in fit]
        ys = [r["vmrss"] for r in fit]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        if sxx:
            out["bytes_per_socket_fit"] = round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx)
        out["bytes_per_socket_steps"] = [
            round((b["vmrss"] - a["vmrss"]) / (b["sockets"] - a["sockets"]))
            for a, b in itertools.pairwise(steps) if b["sockets"] > a["sockets"]]
        out["base_rss"] = steps[0]["vmrss"]
    extra = [r for r in rows if r["label"].startswith("extra") and "vmrss" in r]
    if extra and steps:
        last = steps[-1]
        added = extra[0]["sockets"] - last["sockets"]
        if added:
            out["bytes_per_extra_socket"] = round((extra[0]["vmrss"] - last["vmrss"]) / added)
    closed = [r for r in rows if r["label"] == "all closed" and "vmrss" in r]
    if closed and steps:
        out["rss_kept_after_close"] = closed[0]["vmrss"] - steps[0]["vmrss"]
    return out


def markdown(result: dict[str, Any]) -> str:
    head = "| step | sockets | tables | karty_sockets_open | VmRSS MiB | smaps Anonymous MiB | Pss MiB | load |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in result["steps"]:
        vmrss, anon, pss = (f"{r[k] / 2**20:.1f}" if k in r else "n/a"
                            for k in ("vmrss", "smaps_anonymous", "smaps_pss"))
        lines.append(f"| {r['label']} | {r['sockets']:,} | {r['tables']:,} | {r['gauge']} | {vmrss} "
                     f"| {anon} | {pss} | {r['load']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.socket_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=list(STEPS),
                        help="total table sockets at each reading, three to a table (default %(default)s)")
    parser.add_argument("--extra", type=int, default=EXTRA,
                        help="then this many more sockets on tables already watched (default %(default)s)")
    parser.add_argument("--settle", type=float, default=SETTLE, help="seconds before each reading")
    parser.add_argument("--redis-url", default=None,
                        help="a Redis to use (default: a private redis-server on a free loopback port)")
    parser.add_argument("--out", default="test-output/socket-memory.json", help="results JSON (default %(default)s)")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(tuple(args.steps), args.extra, args.settle, args.redis_url))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(markdown(result))
    print({k: result.get(k) for k in ("bytes_per_socket_fit", "bytes_per_socket_steps", "bytes_per_extra_socket",
                                     "rss_kept_after_close", "handshake_retries", "load_before", "load_after")})
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
