"""``python -m benchmarks.metrics_cost``: the CPU the metrics add to one move (issue 26).

What a committed move pays for metrics, exactly as the service does it: the move's counter
and histogram (:func:`webapp.metrics.move_done`), the ``move.lua`` call's timing wrapper
(:class:`store.metrics.Timed` around an awaitable that is already answered, so only the
wrapper's own cost shows) and the fan-out timer of a table with two local sockets
(:class:`webapp.metrics.FanoutTimer`, the writers' check and :meth:`sent`). Rounds of the
instrumented and the bare path alternate in one run; the result is CPU µs per move (median
of the rounds' differences) beside the ~700 µs a move costs (BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time


async def _answer(keys=(), args=()):  # an already answered Redis call
    return 1


async def _bare(n: int) -> None:
    for _ in range(n):
        await _answer(keys=(), args=())
        msg = {"version": 1}
        for _s in range(2):
            _ = msg.get("version")


async def _instrumented(n: int) -> None:
    from store.metrics import Timed
    from webapp.metrics import FanoutTimer, move_done

    timed = Timed("move", _answer)
    for i in range(n):
        started = time.perf_counter()
        await timed(keys=(), args=())
        timer = FanoutTimer(i, 2)
        msg = {"version": i}
        for _s in range(2):
            if timer is not None and msg.get("version") == timer.version:
                timer.sent()
        move_done("prsi", "socket", "committed", started)


def measure(moves: int = 20_000, rounds: int = 9) -> dict[str, float]:
    """CPU µs per move of the metrics (instrumented minus bare, alternating rounds)."""
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_instrumented(1000))  # children made, code warm
        diffs, bare_us, inst_us = [], [], []
        for _ in range(rounds):
            t0 = time.process_time()
            loop.run_until_complete(_bare(moves))
            t1 = time.process_time()
            loop.run_until_complete(_instrumented(moves))
            t2 = time.process_time()
            bare_us.append((t1 - t0) / moves * 1e6)
            inst_us.append((t2 - t1) / moves * 1e6)
            diffs.append(inst_us[-1] - bare_us[-1])
    finally:
        loop.close()
    return {"metrics_cpu_us_per_move": round(statistics.median(diffs), 2),
            "bare_us": round(statistics.median(bare_us), 2), "instrumented_us": round(statistics.median(inst_us), 2),
            "share_of_a_700us_move_pct": round(statistics.median(diffs) / 700 * 100, 2),
            "rounds": rounds, "moves_per_round": moves, "load": os.getloadavg()[0]}


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
