"""The flood benchmark (``python -m benchmarks.flood``): other tables beside one user's flood.

Issue 16: one user's 2,495 table GETs pushed ``/healthz`` to 7.9 s and other tables' moves to
3.1 s p95. Here, with the helpers of :mod:`benchmarks.service` (a private Redis, the fake
Bot API, ``python -m webapp`` as one process, Prší tables of three people on their sockets):

* the tables play paced (a Poisson stream of ``PACE`` moves/s over all of them, well under
  what the process can carry, so that latency is not queueing for the CPU already);
* each **round** is two runs of the same window, one **unloaded** and one **beside a
  flood**, alternating, so the ratio compares like with like on a shared machine;
* the **flood** is a separate client process (not the load generator's loop) from an
  address of its own (``X-Forwarded-For`` through loopback, set as ``TRUSTED_PROXIES``):
  one user — seated at one of the tables — sending ``GET /api/tables/{id}`` on ``FLOOD_CONNECTIONS``
  keep-alive connections as fast as answers come, plus one WebSocket sending pings as fast
  as it can (reconnecting when closed), plus junk requests without auth;
* reported per run: the other tables' move latency (POST until every seat's socket has the
  version) p50/p99, ``/healthz`` p99 probed every 0.1 s, the flood's answers by status;
  and per mode the ratio flooded p99 / unloaded p99 (target ≤ 1.5);
* three **modes**: the request limits as configured (the defaults), the same with refusals
  answered at once (``LIMIT_DELAY=0``), and ``off`` (every limit raised out of the way: what
  the flood did before them).

CPU time per move is reported as well; ``uptime`` load before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from typing import Any

from benchmarks.service import (
    FakeTelegram,
    LoadRun,
    PrivateRedis,
    ServiceBench,
    counting_redis,
    load_average,
    percentile,
    start_services,
    stop_services,
    wait_bot,
    wait_ready,
)

TABLES = 20
PACE = 15.0  # moves/s over all tables
SECONDS = 10.0
WARMUP = 2.0
ROUNDS = 3
FLOOD_CONNECTIONS = 16
FLOOD_ADDRESS = "203.0.113.66"  # the flooder's address (X-Forwarded-For; the tables' clients are 127.0.0.1)
LIMITS_OFF = {k: "1000000" for k in ("READ_RATE", "READ_BURST", "WRITE_RATE", "WRITE_BURST", "ADDRESS_RATE",
                                     "ADDRESS_BURST", "HEALTH_RATE", "HEALTH_BURST", "WS_FRAME_RATE",
                                     "WS_FRAME_BURST")}


# --------------------------------------------------------------------- the flood (a process)
async def flood(base: str, table_id: str, init_data: str, seconds: float) -> dict[str, Any]:
    """One user's flood for ``seconds``: table GETs, a ping storm on a socket, junk without auth."""
    import aiohttp

    statuses: dict[str, int] = {}
    frames = [0]
    closes: dict[str, int] = {}
    end = time.perf_counter() + seconds
    fwd = {"X-Forwarded-For": FLOOD_ADDRESS}  # the service trusts loopback as its proxy (see FloodBench)
    headers = {"Authorization": f"tma {init_data}", **fwd}

    def count(key: str) -> None:
        statuses[key] = statuses.get(key, 0) + 1

    async def gets(session: aiohttp.ClientSession, url: str, hdrs: dict[str, str]) -> None:
        while time.perf_counter() < end:
            try:
                async with session.get(url, headers=hdrs) as resp:
                    await resp.read()
                    count(str(resp.status))
            except Exception as e:
                count(type(e).__name__)

    async def pings(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < end:
            try:
                async with session.ws_connect(f"{base}/ws/tables/{table_id}", headers=fwd) as ws:
                    await ws.send_str(json.dumps({"type": "auth", "init_data": init_data}))
                    closed = asyncio.Event()
                    code: list[Any] = [None]

                    async def reader(ws=ws, closed=closed, code=code) -> None:
                        async for _ in ws:  # pongs, states, the error before a close
                            pass
                        code[0] = ws.close_code
                        closed.set()

                    read = asyncio.create_task(reader())
                    while time.perf_counter() < end and not closed.is_set():
                        await ws.send_str('{"type": "ping"}')
                        frames[0] += 1
                        if frames[0] % 20 == 0:
                            await asyncio.sleep(0)  # let the reader see a close
                    if not closed.is_set():
                        read.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await read
                    closes[str(code[0])] = closes.get(str(code[0]), 0) + 1
            except Exception as e:
                closes[type(e).__name__] = closes.get(type(e).__name__, 0) + 1
                await asyncio.sleep(0.01)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [gets(session, f"{base}/api/tables/{table_id}", headers) for _ in range(FLOOD_CONNECTIONS)]
        tasks += [gets(session, f"{base}/api/me", fwd) for _ in range(2)]  # junk without auth
        tasks.append(pings(session))
        await asyncio.gather(*tasks)
    return {"statuses": statuses, "frames_sent": frames[0], "socket_closes": closes,
            "requests_per_s": round(sum(v for k, v in statuses.items() if k.isdigit()) / seconds, 1)}


# ----------------------------------------------------------------------------- the runs
class FloodRun(LoadRun):
    """A paced :class:`LoadRun`, with (``flooded``) the flood process started as it begins,
    and ``/healthz`` probed through the warm-up and window."""

    def __init__(self, *args: Any, flooded: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.flooded = flooded
        self.health: list[float] = []
        self.flood_result: dict[str, Any] | None = None

    async def execute(self) -> dict[str, Any]:
        self.proc = None
        if self.flooded:  # started (imports and all) before the tables open; it floods when told
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "benchmarks.flood", "--worker", "stdin",
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        side = asyncio.create_task(self._beside())
        try:
            out = await super().execute()
        finally:
            self.closing = True
            with contextlib.suppress(Exception):
                await side
        out["healthz_p99_ms"] = round(percentile(self.health, 99) or 0, 2)
        out["healthz_max_ms"] = round(max(self.health, default=0), 2)
        out["flooded"] = self.flooded
        if self.flood_result is not None:
            out["flood"] = self.flood_result
        return out

    async def _beside(self) -> None:
        await self.go.wait()
        base = self.services[0].base
        proc = self.proc
        if proc is not None:
            victim = self.clients[0]
            uid, name = victim.seats[0].user_id, victim.seats[0].name
            arg = json.dumps({"base": base, "table": victim.id, "init": self.init_data(uid, name),
                              "seconds": self.warmup + self.seconds})
            proc.stdin.write(arg.encode() + b"\n")  # type: ignore[union-attr]
            await proc.stdin.drain()  # type: ignore[union-attr]
        end = time.perf_counter() + self.warmup + self.seconds
        while time.perf_counter() < end and not self.closing:
            t0 = time.perf_counter()
            try:
                async with self.session.get(base + "/healthz") as resp:
                    await resp.read()
                self.health.append((time.perf_counter() - t0) * 1000)
            except Exception:
                self.health.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.1)
        if proc is not None:
            out, _ = await proc.communicate()
            with contextlib.suppress(Exception):
                self.flood_result = json.loads(out.decode().strip().splitlines()[-1])


class FloodBench(ServiceBench):
    async def run(self) -> dict[str, Any]:  # type: ignore[override]
        import aiohttp

        from store import Store

        private = PrivateRedis().start()
        self.url = private.url
        self.redis, self.sends = counting_redis(self.url)
        for _ in range(100):
            with contextlib.suppress(Exception):
                await self.redis.ping()
                break
            await asyncio.sleep(0.05)
        self.store = Store(self.redis, prefix=self.prefix)
        telegram = await FakeTelegram().start()
        base_env = {**os.environ, "BOT_TOKEN": self.token, "REDIS_URL": self.url, "KARTY_PREFIX": self.prefix,
                    "TELEGRAM_API_URL": telegram.url, "BOT_USERNAME": "karty_bench_bot",
                    "WEBAPP_SHORT_NAME": "play", "PYTHONUNBUFFERED": "1",
                    # Everything here comes from 127.0.0.1: loopback is taken as the proxy, so the
                    # flood process can have an address of its own (X-Forwarded-For), as it would.
                    "TRUSTED_PROXIES": "127.0.0.1"}
        base_env.pop("LOCAL_PLAY", None)
        results: dict[str, Any] = {"load_before": load_average(), "tables": self.tables[0], "pace_per_s": PACE,
                                   "seconds": self.seconds, "modes": {}}
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                             timeout=aiohttp.ClientTimeout(total=60))
        try:
            for mode, extra in (("limits", {}), ("limits_no_delay", {"LIMIT_DELAY": "0"}), ("off", LIMITS_OFF)):
                services = start_services(1, {**base_env, **extra}, self.log_level)
                runs = []
                try:
                    await wait_ready(self.session, services)
                    await wait_bot(telegram, services)
                    for r in range(ROUNDS):
                        for flooded in (False, True):
                            run = FloodRun(self, services, self.tables[0], pace=PACE, seconds=self.seconds,
                                           warmup=self.warmup, label=f"flood-{mode}-{r}-{int(flooded)}",
                                           flooded=flooded)
                            res = await run.execute()
                            runs.append(res)
                            print(f"  [{time.strftime('%H:%M:%S')}] {mode} round {r} flooded={flooded}: "
                                  f"p50 {res['p50_ms']} p99 {res['p99_ms']} ms, healthz p99 "
                                  f"{res['healthz_p99_ms']} ms, moves {res['moves']}, "
                                  f"flood {res.get('flood', {}).get('statuses')}", file=sys.stderr, flush=True)
                finally:
                    stop_services(services)
                results["modes"][mode] = {"runs": runs, **ratios(runs)}
        finally:
            await self.session.close()
            await telegram.stop()
            with contextlib.suppress(Exception):
                async for key in self.redis.scan_iter(match=f"{self.prefix}:*", count=1000):
                    await self.redis.delete(key)
            await self.redis.aclose()
            private.stop()
        results["load_after"] = load_average()
        return results


def ratios(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Flooded p99 / unloaded p99 of each round (the runs alternate), and the worst."""
    pairs = [(runs[i], runs[i + 1]) for i in range(0, len(runs) - 1, 2)]
    each = [round(b["p99_ms"] / a["p99_ms"], 2) if a.get("p99_ms") and b.get("p99_ms") else None for a, b in pairs]
    health = [round(b["healthz_p99_ms"] / a["healthz_p99_ms"], 2) if a.get("healthz_p99_ms") else None
              for a, b in pairs]
    known = [x for x in each if x is not None]
    return {"p99_ratio_by_round": each, "p99_ratio_worst": max(known) if known else None,
            "healthz_p99_ratio_by_round": health}


def measure(*, tables: int = TABLES, seconds: float = SECONDS, log_level: str = "WARNING") -> dict[str, Any]:
    bench = FloodBench(redis_url=None, tables=(tables,), processes=(1,), seconds=seconds, warmup=WARMUP,
                       overload=False, memory=False, log_level=log_level)
    return asyncio.run(bench.run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tables", type=int, default=TABLES)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--out", default="test-output/flood.json")
    args = parser.parse_args()
    if args.worker:
        import aiohttp  # noqa: F401  (imported before the go: the flood starts at once)

        a = json.loads(sys.stdin.readline() if args.worker == "stdin" else args.worker)
        print(json.dumps(asyncio.run(flood(a["base"], a["table"], a["init"], a["seconds"]))))
        return
    res = measure(tables=args.tables, seconds=args.seconds)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    for mode, m in res["modes"].items():
        print(f"{mode}: p99 ratio by round {m['p99_ratio_by_round']}, healthz ratio {m['healthz_p99_ratio_by_round']}")
    print(f"load before {res['load_before']}, after {res['load_after']}")


if __name__ == "__main__":
    main()
