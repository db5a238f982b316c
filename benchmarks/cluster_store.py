"""The store on one Redis beside a Redis Cluster, in the same run: moves/s and CPU per move.

``python scripts/redis_cluster.py --primaries 3 --replicas 1 -- python -m benchmarks.cluster_store``
(the cluster is started on free loopback ports and stopped by pid afterwards; the single
Redis is ``--redis-url``, default ``redis://127.0.0.1:6379/0``, under a key prefix of its
own, deleted afterwards).

For each backend, ``--processes`` (2) worker processes each play Prší tables of three
through ``Store.apply`` for ``--seconds`` (the engine's choice for the awaited seat), with
every table watched by a second store in the same process (the live feed's fan-out: a
message per commit, as another service process would receive it). Reported per
backend: committed moves/s (all workers), client CPU ms per move (the workers'
``process_time``), and whether every watched version arrived. On the cluster a commit
also waits for one replica (``WAIT 1``, store.durable) and publishes by ``SPUBLISH``.
Backends alternate (one Redis, cluster, one Redis, cluster) so load drifts hit both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid


class _Count:
    def __init__(self) -> None:
        self.n = 0

    def deliver(self, *args, **kwargs) -> None:
        self.n += 1

    def gone(self) -> None:
        pass


async def _worker(url: str, seconds: float, seed: int) -> dict:
    import engine
    from store import LobbySettings, Seat, Store

    prefix = f"karty-bench-cl-{uuid.uuid4().hex[:8]}"
    mover, watcher = Store.from_url(url, prefix=prefix), Store.from_url(url, prefix=prefix)
    rng = random.Random(seed)
    heard = _Count()
    moves = 0
    try:
        await mover.warm()
        await watcher.warm()
        start_cpu, start = time.process_time(), time.monotonic()
        while time.monotonic() - start < seconds:
            t = await mover.create_table(game="prsi", seats=[Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in (1, 2, 3)],
                                         seed=rng.randrange(10**9), settings=LobbySettings(players=3, turn_seconds=None))
            await watcher.watch(t.id, heard)
            known = await mover.current(t.id)
            while not known.state.over and time.monotonic() - start < seconds:
                seat = engine.awaiting(known.state)[0]
                await mover.apply(t.id, seat, engine.computer_action(known.state, seat))
                moves += 1
                known = await mover.current(t.id)
        wall, cpu = time.monotonic() - start, time.process_time() - start_cpu
        deadline = time.monotonic() + 10
        while heard.n < moves and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        keys = [k async for k in mover.redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await mover.redis.delete(*keys)
        await mover.close()
        await watcher.close()
    return {"moves": moves, "wall": wall, "cpu": cpu, "heard": heard.n}


def _run(url: str, processes: int, seconds: float) -> dict:
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.cluster_store", "--worker", url, str(seconds), str(i)],
                              stdout=subprocess.PIPE, text=True) for i in range(processes)]
    results = [json.loads(p.communicate(timeout=seconds + 120)[0].strip().splitlines()[-1]) for p in procs]
    moves = sum(r["moves"] for r in results)
    return {"moves_per_s": round(sum(r["moves"] / r["wall"] for r in results), 1),
            "cpu_ms_per_move": round(1000 * sum(r["cpu"] for r in results) / max(moves, 1), 3),
            "all_heard": all(r["heard"] >= r["moves"] for r in results), "moves": moves}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, seconds, seed = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(asyncio.run(_worker(url, seconds, seed))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--cluster-url", default=os.environ.get("KARTY_TEST_CLUSTER"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not args.cluster_url:
        parser.error("no cluster: run under scripts/redis_cluster.py or give --cluster-url")
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    out: dict = {"processes": args.processes, "seconds": args.seconds, "load_before": load_before,
                 "one_redis": [], "cluster": []}
    for _ in range(args.rounds):
        out["one_redis"].append(_run(args.redis_url, args.processes, args.seconds))
        out["cluster"].append(_run(args.cluster_url, args.processes, args.seconds))
    with open("/proc/loadavg") as f:
        out["load_after"] = f.read().split()[:3]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
