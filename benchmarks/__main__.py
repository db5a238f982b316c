"""``python -m benchmarks`` (``make bench``): print a table, write test-output/bench.json.

Exits 1 when Prší's random playouts are slower than 3.5× RLCard's UNO or Penki's than
3× (actions per CPU second, alternating rounds of one run), or when that
comparison could not be made; ``--quick`` shortens every budget.
The service section adds a cluster column (2 processes on a 3-primary + 3-replica Redis
Cluster on loopback, beside one Redis) when ``redis-server`` and ``redis-cli`` are
installed, or with ``--cluster``; ``--no-cluster`` skips it.
``--only players`` runs the computer levels' round robins (:mod:`benchmarks.players`;
``--matches`` per game, 2,000 by default). ``--only race`` plays Penki's callout race of
simulated people against each level (:mod:`benchmarks.race`; ``--race-games`` per level and
person, 2,000 by default) and prints its targets (issue 24).
``--only notify`` measures notifications against Telegram's budget (:mod:`benchmarks.notify`:
100 tables at 10/50/100% of players away, one table a chat and 20 tables a group, plus 1,000
tables at 10% and 100% by default; ``--notify-tables 1000 10000`` for the whole matrix at
those sizes, which takes about 5 ms of CPU per turn played).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import memory, notify, players, playouts, race, service, store_latency

PLAYERS = ["a", "b", "c"]
SECTIONS = ("engine", "penki", "play_out", "store", "memory", "service", "players", "race", "notify")


def _guard(fn, *args, **kwargs) -> dict[str, Any]:
    """Run one measure; an exception becomes ``{"error": ...}`` so the other sections still run."""
    try:
        return fn(*args, **kwargs)
    except ImportError as exc:
        return {"skipped": f"{exc.name or exc}: not installed / not landed"}
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"}


async def _store(url: str, actions: int) -> dict[str, Any]:
    try:
        return await store_latency.measure(url, actions)
    except ImportError as exc:
        return {"skipped": f"{exc.name or exc}: not installed / not landed"}
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"}


def run(args: argparse.Namespace) -> dict[str, Any]:
    budget = args.seconds if args.seconds is not None else 3.0
    out: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "players_per_game": len(PLAYERS),  # not "players": that is the round robins' section
    }
    only = set(args.only or SECTIONS)
    if "engine" in only or "penki" in only:
        # Alternating rounds (Prší, Penki, UNO), twice the usual budget per side: the pass/fail figures.
        prsi_play = _guard_factory(playouts.engine_random_playout, "prsi", PLAYERS)
        penki_play = _guard_factory(playouts.engine_random_playout, "penki", PLAYERS)
        uno_play = _guard_factory(playouts.uno_random_playout, len(PLAYERS))
        compared = _guard(playouts.compare_many, [prsi_play, penki_play, uno_play], 2 * budget)
        if isinstance(compared, tuple):
            (prsi, penki, uno), (ratio, penki_ratio) = compared
        else:  # one side missing: time the others alone, for the record
            prsi, penki, uno = (_guard(playouts.timed, p, budget) for p in (prsi_play, penki_play, uno_play))
            ratio = penki_ratio = None
        out["engine"] = {"prsi_random": prsi, "uno_random": uno, "ratio": ratio,
                         "target": playouts.PRSI_VS_UNO_TARGET,
                         "ok": ratio is not None and ratio >= playouts.PRSI_VS_UNO_TARGET}
        out["penki"] = {"penki_random": penki, "ratio": penki_ratio, "target": playouts.PENKI_VS_UNO_TARGET,
                        "ok": penki_ratio is not None and penki_ratio >= playouts.PENKI_VS_UNO_TARGET}
    if "play_out" in only:
        out["play_out"] = {
            game: _guard(playouts.timed, _guard_factory(playouts.computer_play_out, game, PLAYERS), budget)
            for game in ("prsi", "penki")
        }
    if "store" in only:
        out["store"] = asyncio.run(_store(args.redis_url, args.store_actions))
    if "memory" in only:
        out["memory"] = {game: _guard(memory.measure, game, PLAYERS, args.live_states)
                         for game in ("prsi", "penki")}
    if "service" in only:
        service_seconds = getattr(args, "service_seconds", None) or (
            args.seconds if args.seconds is not None else service.SECONDS)
        out["service"] = _guard(
            service.measure, redis_url=args.service_redis_url, tables=tuple(args.tables),
            processes=tuple(args.processes),
            seconds=service_seconds, warmup=min(service.WARMUP, service_seconds),
            overload=not args.no_overload, memory=not args.no_table_memory, profile=getattr(args, "service_profile", None),
            cluster=wants_cluster(args), cluster_rounds=getattr(args, "cluster_rounds", 1),
            affinity=getattr(args, "affinity", False), moves=tuple(getattr(args, "moves", None) or service.MOVES))
    if "players" in only:
        out["players"] = _guard(players.measure, args.matches, args.jobs, raw=args.players_raw)
    if "race" in only:
        out["race"] = _guard(race.measure, args.race_games, jobs=args.jobs)
    if "notify" in only:
        out["notify"] = _guard(notify.measure, tables=tuple(args.notify_tables) if args.notify_tables else None,
                               absent=tuple(args.notify_absent), spreads=tuple(args.notify_spread),
                               seconds=args.notify_seconds, latency=args.notify_latency,
                               progress=lambda run: print(notify.summary_rows({"runs": [run]})[0][1], "done",
                                                          file=sys.stderr, flush=True))
    return out


def wants_cluster(args: argparse.Namespace) -> bool:
    """The service's cluster column: ``--cluster`` (which adds a one-Redis 2-process run when
    ``--processes`` has none); by default on when ``redis-server`` and ``redis-cli`` are
    installed and 2 processes are among ``--processes`` (``--no-cluster`` turns it off)."""
    choice = getattr(args, "cluster", None)
    if choice is not None:
        return choice
    return (2 in getattr(args, "processes", ()) and shutil.which("redis-server") is not None
            and shutil.which("redis-cli") is not None)


def _guard_factory(factory, *args):
    """Build a ``play(seed)``; on ImportError return a function that re-raises it inside ``timed``."""
    try:
        return factory(*args)
    except ImportError as exc:
        err = exc

        def missing(_seed: int) -> tuple[int, bool]:
            raise err

        return missing


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(results: dict[str, Any]) -> str:
    """The results as an aligned text table (section, measure, figures)."""
    rows: list[tuple[str, str, str]] = []

    def add(section: str, name: str, data: dict[str, Any], keys: tuple[str, ...]) -> None:
        if "skipped" in data or "error" in data:
            rows.append((section, name, data.get("skipped") or data.get("error")))
            return
        rows.append((section, name, ", ".join(f"{k} {_fmt(data[k])}" for k in keys if k in data)))

    speed = ("actions_per_s", "best_actions_per_s", "matches_per_s", "actions_per_game", "games", "cut_off")
    if "engine" in results:
        eng = results["engine"]
        add("engine", "Prší random, 3 players", eng["prsi_random"], speed)
        add("engine", "UNO (RLCard) random, 3 players", eng["uno_random"], speed)
        verdict = "n/a" if eng["ratio"] is None else (
            f"{eng['ratio']}× ({'meets' if eng['ok'] else 'MISSES'} target ≥ {eng['target']}×)")
        rows.append(("engine", "Prší / UNO actions/s (median of rounds)", verdict))
    if "penki" in results:
        pen = results["penki"]
        add("engine", "Penki random, 3 players", pen["penki_random"], speed)
        if "ratio" in pen:
            verdict = "n/a" if pen["ratio"] is None else (
                f"{pen['ratio']}× ({'meets' if pen['ok'] else 'MISSES'} target ≥ {pen['target']}×)")
            rows.append(("engine", "Penki / UNO actions/s (median of rounds)", verdict))
    for game, data in results.get("play_out", {}).items():
        add("play_out", f"{game} computer vs computer", data, speed)
    if "store" in results:
        add("store", "store.apply round trip", results["store"],
            ("p50_ms", "p99_ms", "mean_ms", "max_ms", "actions", "tables"))
    for game, data in results.get("memory", {}).items():
        add("memory", f"{game} state", data,
            ("dump_bytes_after_0", "dump_bytes_after_20", "dump_bytes_after_60",
             "live_bytes", "peak_bytes", "bytes_per_state"))
    if "service" in results:
        data = results["service"]
        if "skipped" in data or "error" in data:
            rows.append(("service", "service benchmark", data.get("skipped") or data.get("error")))
        else:
            rows += service.summary_rows(data)
    if isinstance(results.get("notify"), dict):
        data = results["notify"]
        if "skipped" in data or "error" in data:
            rows.append(("notify", "notifications", data.get("skipped") or data.get("error")))
        else:
            rows += notify.summary_rows(data)
    if isinstance(results.get("players"), dict):
        data = results["players"]
        if "skipped" in data or "error" in data:
            rows.append(("players", "round robins", data.get("skipped") or data.get("error")))
        else:
            rows += players.rows(data)
    if isinstance(results.get("race"), dict):
        data = results["race"]
        if "skipped" in data or "error" in data:
            rows.append(("race", "callout race", data.get("skipped") or data.get("error")))
        else:
            rows += race.rows(data)
    w0 = max(len("section"), *(len(r[0]) for r in rows))
    w1 = max(len("measure"), *(len(r[1]) for r in rows))
    lines = [f"{'section':<{w0}}  {'measure':<{w1}}  figures", f"{'-' * w0}  {'-' * w1}  {'-' * 40}"]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--seconds", type=float, default=None,
                        help="time budget per speed measure (default 3) and per measured service run (default 10)")
    parser.add_argument("--quick", action="store_true",
                        help="short budgets (0.5 s, 100 store actions, 200 states; service: 3 s, 30 tables, 1 and 2 processes)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--store-actions", type=int, default=store_latency.ACTIONS)
    parser.add_argument("--live-states", type=int, default=memory.LIVE_STATES)
    parser.add_argument("--tables", type=int, nargs="+", default=list(service.TABLES),
                        help="service: table counts (default %(default)s)")
    parser.add_argument("--processes", type=int, nargs="+", default=list(service.PROCESSES),
                        help="service: process counts (default %(default)s)")
    parser.add_argument("--service-redis-url", default=None,
                        help="service: use this Redis (default: a private redis-server on a free loopback port "
                             "when installed, so INFO counts only this run; else REDIS_URL)")
    parser.add_argument("--no-overload", action="store_true", help="service: skip the overload runs")
    parser.add_argument("--no-table-memory", action="store_true",
                        help="service: skip playing tables to the end for Redis bytes per table")
    parser.add_argument("--cluster", action=argparse.BooleanOptionalAction, default=None,
                        help="service: also run 2 processes on a 3-primary + 3-replica Redis Cluster on loopback "
                             "(scripts/redis_cluster.py), beside one Redis (default: on when redis-server and "
                             "redis-cli are installed and --processes includes 2)")
    parser.add_argument("--cluster-rounds", type=int, default=1,
                        help="service: one Redis / cluster rounds, alternating (default %(default)s)")
    parser.add_argument("--moves", nargs="+", choices=service.MOVES, default=list(service.MOVES),
                        help="service: how seats send moves, a run each: http (POST) and/or ws (an act frame on "
                             "the open socket, as the Mini App does); default %(default)s")
    parser.add_argument("--affinity", action="store_true",
                        help="service: after each run on 2+ processes, the same with every seat of a table on "
                             "one process (as deploy/nginx.conf and deploy/Caddyfile route by table)")
    parser.add_argument("--service-profile", default=None, metavar="DIR",
                        help="service: py-spy (when installed) records each service process over each measured "
                             "window into DIR as raw collapsed stacks")
    parser.add_argument("--matches", type=int, default=players.MATCHES,
                        help="players: games per game kind, over all pairings (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=None, help="players: worker processes (default 2)")
    parser.add_argument("--players-raw", default=None,
                        help="players: append each game to this JSON-lines file as it ends, interleaved over "
                             "pairings, resuming a run cut short (summary from what the file holds)")
    parser.add_argument("--race-games", type=int, default=race.GAMES,
                        help="race: Penki games per level and simulated person (default %(default)s)")
    parser.add_argument("--notify-tables", type=int, nargs="+", default=None,
                        help="notify: table counts, each with every --notify-absent and --notify-spread "
                             "(default: 100 so, and 1,000 at 10%% and 100%% away, one table a chat)")
    parser.add_argument("--notify-absent", type=float, nargs="+", default=list(notify.ABSENT),
                        help="notify: shares of players with the Mini App closed (default %(default)s)")
    parser.add_argument("--notify-spread", nargs="+", choices=notify.SPREADS, default=list(notify.SPREADS),
                        help="notify: chat = one table a group chat, group = 20 tables a group (default %(default)s)")
    parser.add_argument("--notify-seconds", type=float, default=notify.SECONDS,
                        help="notify: simulated seconds of play per run (default %(default)s)")
    parser.add_argument("--notify-latency", type=float, default=0.0,
                        help="notify: Bot API round trip in seconds, half each way (default %(default)s)")
    parser.add_argument("--out", default="test-output/bench.json", help="results JSON (default %(default)s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.store_actions, args.live_states = 0.5, 100, 200
        args.service_seconds = 3.0
        if args.tables == list(service.TABLES):
            args.tables = [30]
        if args.processes == list(service.PROCESSES):
            args.processes = [1, 2]
        args.matches = min(args.matches, 40)
        args.race_games = min(args.race_games, 200)
        args.notify_seconds = min(args.notify_seconds, 20.0)
        if args.notify_tables is None:
            args.notify_tables = [30]
    results = run(args)
    print(table(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwritten {out}")
    svc = results.get("service")
    if isinstance(svc, dict) and "runs" in svc:
        md = out.with_name(out.stem + "-service.md")
        md.write_text(service.markdown(svc, results["when"], results["machine"]), encoding="utf-8")
        print(f"written {md} (the service figures as BENCHMARKS.md's tables)")
    nfy = results.get("notify")
    if isinstance(nfy, dict) and "runs" in nfy:
        md = out.with_name(out.stem + "-notify.md")
        md.write_text(notify.markdown(nfy), encoding="utf-8")
        print(f"written {md} (the notification figures as BENCHMARKS.md's table)")
    failed = False
    for key, game in (("engine", "Prší"), ("penki", "Penki")):
        eng = results.get(key)
        if eng is None or eng.get("ok"):
            continue
        why = (f"{game} is {eng['ratio']}× UNO, below the {eng['target']}× target" if eng["ratio"] is not None
               else f"the {game}/UNO comparison could not run (pip install -e '.[bench]'; engine landed?)")
        print(f"FAIL: {why}", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
