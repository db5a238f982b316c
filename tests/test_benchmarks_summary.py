"""The benchmark's summary table (``python -m benchmarks``) prints whatever sections ran.

Regression: ``--only service`` crashed while printing because the run's own metadata
(the players per game, an int) was taken for the ``players`` section's results.
"""

from __future__ import annotations

import argparse

from benchmarks.__main__ import run, table
from benchmarks.service import markdown

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


def _run_row(backend: str, moves: float, cpu: float) -> dict:
    return {"backend": backend, "processes": 2, "tables": 30, "moves_per_s": moves, "p50_ms": 10.0,
            "p95_ms": 20.0, "p99_ms": 30.0, "server_cpu_ms_per_move": cpu, "redis_round_trips_per_move": 3.0,
            "undelivered": 0}


def test_summary_shows_the_cluster_column_beside_one_redis():
    cluster_run = dict(_run_row("cluster", 80.0, 3.0), wait_per_move=1.0, replica_reads_per_move=1.5)
    service_results = dict(SERVICE, runs=[dict(SERVICE["runs"][0], undelivered=0)], cluster={
        "processes": 2, "topology": "3 primaries + 3 replicas", "server": "7.0",
        # two alternating rounds: the means (100, 120 → 110 moves/s; 2.0, 2.4 → 2.2 ms) are compared
        "single_runs": [dict(_run_row("one Redis", 100.0, 2.0), round=0), dict(_run_row("one Redis", 120.0, 2.4), round=1)],
        "runs": [dict(cluster_run, round=0), dict(cluster_run, moves_per_s=96.0, server_cpu_ms_per_move=3.6, round=1)],
    })
    results = run(_args())
    del results["memory"]
    results["service"] = service_results
    text = table(results)
    assert "2p × 30 tables on the cluster, round 2" in text and "1.0 WAIT/move" in text
    assert "2p × 30 tables on one Redis, round 2" in text
    assert "moves/s 0.8× (88.0 vs 110.0)" in text  # (80 + 96) / 2 ÷ 110
    assert "CPU/move 1.5× (3.3 vs 2.2 ms)" in text
    md = markdown(service_results)
    assert "| 2 | cluster | 30 | 96.0 |" in md and "| 2 | one Redis | 30 | 120.0 |" in md
    order = [md.index(f"| {k} | {b} | 30 |") for k, b in ((1, "one Redis"), (1, "cluster"), (2, "one Redis"), (2, "cluster"))]
    assert order == sorted(order)  # as they ran: alternating
    assert "| 30 | 0.8× | 1.5× |" in md


def test_summary_says_why_there_is_no_cluster_column():
    results = run(_args())
    del results["memory"]
    results["service"] = dict(SERVICE, cluster={"error": "ClusterError: no free ports"})
    assert "ClusterError: no free ports" in table(results)


def test_the_cluster_column_is_asked_for_or_follows_the_process_counts(monkeypatch):
    from benchmarks import __main__ as bench

    monkeypatch.setattr(bench.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert bench.wants_cluster(_args(processes=[1, 2, 4]))
    assert not bench.wants_cluster(_args(processes=[1]))  # no one-Redis 2-process run to stand beside
    assert bench.wants_cluster(_args(processes=[1], cluster=True))
    assert not bench.wants_cluster(_args(processes=[2], cluster=False))
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    assert not bench.wants_cluster(_args(processes=[2]))  # no redis-server: no cluster
