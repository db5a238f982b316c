"""The benchmark's summary table (``python -m benchmarks``) prints whatever sections ran.

Regression: ``--only service`` crashed while printing because the run's own metadata
(the players per game, an int) was taken for the ``players`` section's results.
"""

from __future__ import annotations

import argparse

from benchmarks.__main__ import run, table

SERVICE = {  # the shape of benchmarks.service.measure's answer, one closed run, no memory
    "runs": [{"processes": 1, "tables": 30, "moves_per_s": 100.0, "p50_ms": 10.0, "p95_ms": 20.0,
              "p99_ms": 30.0, "server_cpu_ms_per_move": 1.5, "redis_round_trips_per_move": 3.0}],
    "overload": [], "floor": [{"processes": 1, "keys": 30, "cas_per_s": 1000.0, "p50_ms": 1.0,
                               "p99_ms": 3.0, "doc_bytes": 2000}],
    "start": [], "memory": {},
}


def _args(**over) -> argparse.Namespace:
    base = dict(seconds=0.1, only=["memory"], live_states=5, redis_url="redis://unused", store_actions=1,
                service_redis_url=None, tables=[30], processes=[1], no_overload=True, no_table_memory=True,
                matches=1, jobs=1)
    base.update(over)
    return argparse.Namespace(**base)


def test_summary_of_a_service_only_run_prints_its_rows():
    results = run(_args())  # the real metadata of a run, and a cheap section
    del results["memory"]
    results["service"] = SERVICE
    text = table(results)
    assert "1p × 30 tables" in text and "10.0% of raw CAS" in text
    assert "round robins" not in text


def test_summary_of_the_players_section_still_prints():
    results = run(_args())
    results["players"] = {"skipped": "not run here"}
    assert "round robins" in table(results) and "not run here" in table(results)
