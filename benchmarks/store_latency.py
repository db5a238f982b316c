"""``store.apply`` round trips on the real Redis: p50/p99 for one table.

Plays random legal Prší actions on one table of three people through
``Store.apply`` (load, engine, compare-and-set commit, log, publish) and times each
call. Keys live under a prefix of their own and are deleted afterwards.
"""

from __future__ import annotations

import os
import random
import statistics
import time
import uuid
from typing import Any

ACTIONS = 500


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    k = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


async def measure(url: str, actions: int = ACTIONS, seed: int = 1) -> dict[str, Any]:
    """Time ``actions`` calls of ``store.apply``; new tables are opened as matches end."""
    from redis.asyncio import Redis

    import engine
    from store import Seat, Store

    probe = Redis.from_url(url, socket_connect_timeout=1)
    try:
        await probe.ping()
    except Exception as exc:
        await probe.aclose()
        return {"skipped": f"no Redis at {url}: {exc}"}
    prefix = f"karty-bench-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    st = Store.from_url(url, prefix=prefix)
    rng = random.Random(seed)
    seats = [Seat(seat=f"u{900000001 + i}", user_id=900000001 + i, name=f"Bench {i + 1}") for i in range(3)]
    latencies: list[float] = []
    tables = 0
    try:
        table = None
        while len(latencies) < actions:
            if table is None or table.state.over:
                table = await st.create_table(game="prsi", seats=seats, seed=seed + tables)
                tables += 1
            state = table.state
            seat = engine.awaiting(state)[0]
            action = rng.choice(engine.legal_actions(state, seat))
            t0 = time.perf_counter()
            result = await st.apply(table.id, seat, action, client_action_id=f"bench-{len(latencies)}",
                                    expected_version=state.version)
            latencies.append(time.perf_counter() - t0)
            table = result.table
    finally:
        await st.close()
        deleted = 0
        async for key in probe.scan_iter(match=f"{prefix}*", count=500):
            deleted += await probe.delete(key)
        await probe.aclose()
    ms = sorted(x * 1000 for x in latencies)
    return {
        "redis": url,
        "actions": len(ms),
        "tables": tables,
        "p50_ms": round(_percentile(ms, 50), 3),
        "p99_ms": round(_percentile(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "max_ms": round(ms[-1], 3),
        "keys_cleaned": deleted,
    }
