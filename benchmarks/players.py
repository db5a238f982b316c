"""The computer levels' strength (``python -m benchmarks --only players``, issue 14).

Per game, a round robin of ``matches`` games (3 seats; a Prší match is 5 rounds)
split over :data:`PAIRINGS` by :data:`SHARES`: one level against two of another, and
one of each (the two pairings the targets are about get the larger shares). The seats rotate (match k puts the first level of the pairing at seat k mod 3)
and every pairing plays the same seeds. Games run through :func:`engine.arena.play`:
every seat decides from its view and the public log with the service's human
reaction times, the expert with the service's search budget (a count of simulated
actions, calibrated to ≤ 50 ms of CPU per decision).

Reported per pairing: each level's mean balance (P14 for Prší, R19 for Penki) with
its 95% interval (normal approximation, ±1.96·s/√n), Penki first places; per game a
Bradley–Terry fit over every pair of seats of different levels in every game (a better
final place wins, equal places count half), shown on the Elo scale with regular at
1500; the Penki beginner's blunders (R5) and missed «ОДНА КАРТА!» declarations (R17)
per 100 of its turns; the expert's CPU per searched decision. Targets
(:data:`TARGETS`): expert beats two regular with the interval clear of zero in both
games and wins Penki first place ≥ 45% of those games; beginner loses to two regular
with the interval clear of zero.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from engine import arena

GAMES = ("prsi", "penki")
PAIRINGS: tuple[tuple[str, str, str], ...] = (
    ("expert", "regular", "regular"),
    ("beginner", "regular", "regular"),
    ("expert", "beginner", "beginner"),
    ("beginner", "regular", "expert"),
)
SHARES = (0.5, 0.25, 0.125, 0.125)
SEATS = ("a", "b", "c")
MATCHES = 2000  # per game, over all pairings
FIRST_SEED = 10_000
TARGETS = {"expert_first_place": 0.45}


def _levels_for(pairing: tuple[str, ...], k: int) -> dict[str, str]:
    """Seat → level for match ``k``: the pairing rotated by ``k mod 3``."""
    r = k % 3
    order = pairing[-r:] + pairing[:-r] if r else pairing
    return dict(zip(SEATS, order, strict=True))


def _one(args: tuple[str, tuple[str, ...], int]) -> dict[str, Any]:
    game, pairing, k = args
    levels = _levels_for(pairing, k)
    res = arena.play(game, levels, FIRST_SEED + k, sample_cpu=True)
    return {
        "levels": levels, "balances": res.balances, "places": res.places, "rejected": res.rejected,
        "stats": {s: {"turns": st.turns, "blunders": st.blunders, "debts": st.debts, "declared": st.declared,
                      "missed": st.missed, "calls": st.calls} for s, st in res.stats.items()},
        "cpu": res.cpu_samples,
    }


def _interval(xs: list[float]) -> dict[str, float]:
    n = len(xs)
    mean = statistics.fmean(xs) if xs else 0.0
    half = 1.96 * statistics.stdev(xs) / math.sqrt(n) if n > 1 else float("inf")
    return {"mean": round(mean, 3), "lo": round(mean - half, 3), "hi": round(mean + half, 3), "n": n}


def bradley_terry(games: list[dict[str, Any]], iterations: int = 500) -> dict[str, float]:
    """Bradley–Terry strengths from every pair of seats of different levels in every game
    (better place wins, equal places half each), by the MM algorithm; Elo scale, regular 1500."""
    wins: dict[tuple[str, str], float] = {}
    levels: set[str] = set()
    for g in games:
        if not g["places"]:
            continue
        seats = list(g["levels"])
        for i, x in enumerate(seats):
            for y in seats[i + 1:]:
                lx, ly = g["levels"][x], g["levels"][y]
                if lx == ly:
                    continue
                levels |= {lx, ly}
                px, py = g["places"][x], g["places"][y]
                sx = 1.0 if px < py else 0.0 if px > py else 0.5
                wins[(lx, ly)] = wins.get((lx, ly), 0.0) + sx
                wins[(ly, lx)] = wins.get((ly, lx), 0.0) + 1 - sx
    if not levels:
        return {}
    p = dict.fromkeys(levels, 1.0)
    for _ in range(iterations):
        new = {}
        for i in levels:
            w = sum(wins.get((i, j), 0.0) for j in levels if j != i)
            d = sum((wins.get((i, j), 0.0) + wins.get((j, i), 0.0)) / (p[i] + p[j]) for j in levels if j != i)
            new[i] = max(w, 1e-9) / d if d else p[i]
        norm = math.exp(statistics.fmean(math.log(v) for v in new.values()))
        p = {k: v / norm for k, v in new.items()}
    anchor = p.get("regular", 1.0)
    return {k: round(1500 + 400 * math.log10(v / anchor), 1) for k, v in sorted(p.items())}


def _summarise(game: str, games: list[dict[str, Any]]) -> dict[str, Any]:
    by_pairing: dict[str, Any] = {}
    for pairing in PAIRINGS:
        name = " vs ".join(pairing) if len(set(pairing)) == 3 else f"{pairing[0]} vs 2 {pairing[1]}"
        mine = [g for g in games if sorted(g["levels"].values()) == sorted(pairing)]
        if not mine:
            continue
        entry: dict[str, Any] = {"games": len(mine)}
        for lv in dict.fromkeys(pairing):
            per_game = [statistics.fmean(g["balances"][s] for s, v in g["levels"].items() if v == lv)
                        for g in mine if g["balances"]]
            entry[lv] = _interval(per_game)
            if game == "penki":
                entry[lv]["first_place"] = round(statistics.fmean(
                    sum(g["places"][s] == 1 for s, v in g["levels"].items() if v == lv)
                    / sum(v == lv for v in g["levels"].values()) for g in mine if g["places"]), 3)
        by_pairing[name] = entry
    out: dict[str, Any] = {"pairings": by_pairing, "rating": bradley_terry(games),
                           "rejected": sum(g["rejected"] for g in games)}
    if game == "penki":
        for lv in ("beginner", "regular", "expert"):
            turns = blunders = missed = debts = 0
            for g in games:
                for s, v in g["levels"].items():
                    if v == lv:
                        st = g["stats"][s]
                        turns += st["turns"]
                        blunders += st["blunders"]
                        missed += st["missed"]
                        debts += st["debts"]
            if turns:
                out[f"{lv}_per_100_turns"] = {"blunders": round(100 * blunders / turns, 2),
                                              "missed_declarations": round(100 * missed / turns, 2),
                                              "owed_declarations": round(100 * debts / turns, 2)}
    cpu = sorted(x for g in games for x in g["cpu"])
    if cpu:
        out["expert_cpu_ms"] = {"searches": len(cpu), "mean": round(1000 * statistics.fmean(cpu), 1),
                                "p50": round(1000 * cpu[len(cpu) // 2], 1),
                                "p99": round(1000 * cpu[min(len(cpu) - 1, int(0.99 * len(cpu)))], 1),
                                "max": round(1000 * cpu[-1], 1)}
    return out


def _verdict(results: dict[str, Any]) -> dict[str, bool]:
    ok: dict[str, bool] = {}
    for game in GAMES:
        pr = results.get(game, {}).get("pairings", {})
        er = pr.get("expert vs 2 regular", {}).get("expert")
        br = pr.get("beginner vs 2 regular", {}).get("beginner")
        if er:
            ok[f"{game}: expert beats 2 regular (interval > 0)"] = er["lo"] > 0
        if br:
            ok[f"{game}: beginner loses to 2 regular (interval < 0)"] = br["hi"] < 0
        if game == "penki" and er:
            ok["penki: expert first place ≥ 45% vs 2 regular"] = er["first_place"] >= TARGETS["expert_first_place"]
    return ok


def _per_pairing(matches: int) -> dict[tuple[str, str, str], int]:
    return {pairing: max(3, round(matches * share / 3) * 3) for pairing, share in zip(PAIRINGS, SHARES, strict=True)}


def measure(matches: int = MATCHES, jobs: int | None = None, games: tuple[str, ...] = GAMES,
            progress: Any = None, raw: str | None = None) -> dict[str, Any]:
    """Run the round robins (``matches`` per game, over :data:`PAIRINGS` by :data:`SHARES`) on
    ``jobs`` processes. ``progress(results)`` is called after each game's summary.

    ``raw``: a JSON-lines file each finished game is appended to as it ends, the work
    interleaved over games and pairings in proportion to their shares, so a run cut short
    still gives every pairing its share (summarise it with :func:`summarise_raw`); games
    already in the file are not played again (a run can be resumed)."""
    jobs = jobs or min(2, os.cpu_count() or 1)
    per = _per_pairing(matches)
    results: dict[str, Any] = {"matches_per_game": sum(per.values()),
                               "per_pairing": {" ".join(p): n for p, n in per.items()}, "jobs": jobs}
    start = time.monotonic()
    if raw is not None:
        _run_raw(per, jobs, games, raw)
        out = summarise_raw(raw)
        return {**results, **out, "seconds": round(time.monotonic() - start, 1)}
    with ProcessPoolExecutor(jobs) as pool:
        for game in games:
            work = [(game, pairing, k) for pairing in PAIRINGS for k in range(per[pairing])]
            done = list(pool.map(_one, work, chunksize=4))
            results[game] = _summarise(game, done)
            results["seconds"] = round(time.monotonic() - start, 1)
            if progress is not None:
                progress(results)
    results["targets"] = _verdict(results)
    return results


def _run_raw(per: dict[tuple[str, str, str], int], jobs: int, games: tuple[str, ...], raw: str) -> None:
    work = [(g, p, k) for g in games for p in PAIRINGS for k in range(per[p])]
    # proportional interleaving: a seat rotation (3 matches) of every pairing of every game in turn
    work.sort(key=lambda w: ((w[2] // 3) / (per[w[1]] / 3), games.index(w[0]), PAIRINGS.index(w[1]), w[2]))
    done: set[tuple[str, tuple[str, ...], int]] = set()
    if os.path.exists(raw):
        with open(raw) as f:
            for line in f:
                r = json.loads(line)
                done.add((r["game"], tuple(r["pairing"]), r["k"]))
    work = [w for w in work if w not in done]
    with ProcessPoolExecutor(jobs) as pool, open(raw, "a") as f:
        for w, r in zip(work, pool.map(_one, work, chunksize=1), strict=True):
            r.update(game=w[0], pairing=list(w[1]), k=w[2])
            f.write(json.dumps(r) + "\n")
            f.flush()


def summarise_raw(raw: str) -> dict[str, Any]:
    """The summaries and target verdicts of the games in a ``raw`` file (see :func:`measure`)."""
    with open(raw) as f:
        games = [json.loads(line) for line in f]
    out: dict[str, Any] = {"played": {g: sum(r["game"] == g for r in games) for g in GAMES}}
    for game in GAMES:
        mine = [r for r in games if r["game"] == game]
        if mine:
            out[game] = _summarise(game, mine)
    out["targets"] = _verdict(out)
    return out


def rows(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Lines for ``python -m benchmarks``' table."""
    out: list[tuple[str, str, str]] = []
    for game in GAMES:
        g = data.get(game)
        if not g:
            continue
        for name, entry in g["pairings"].items():
            parts = []
            for lv, iv in entry.items():
                if lv == "games":
                    continue
                fp = f", 1st {iv['first_place']:.0%}" if "first_place" in iv else ""
                parts.append(f"{lv} {iv['mean']:+.2f} [{iv['lo']:+.2f}, {iv['hi']:+.2f}]{fp}")
            out.append(("players", f"{game} {name} ({entry['games']})", "; ".join(parts)))
        out.append(("players", f"{game} Bradley–Terry (Elo scale)",
                    ", ".join(f"{k} {v:.0f}" for k, v in g["rating"].items())))
        for lv in ("beginner", "regular", "expert"):
            rate = g.get(f"{lv}_per_100_turns")
            if rate:
                out.append(("players", f"penki {lv} per 100 turns",
                            f"blunders {rate['blunders']}, missed declarations {rate['missed_declarations']}"
                            f" (of {rate['owed_declarations']} owed)"))
        if "expert_cpu_ms" in g:
            c = g["expert_cpu_ms"]
            out.append(("players", f"{game} expert CPU per search, ms",
                        f"mean {c['mean']}, p50 {c['p50']}, p99 {c['p99']}, max {c['max']} ({c['searches']})"))
    for target, ok in data.get("targets", {}).items():
        out.append(("players", target, "meets" if ok else "MISSES"))
    return out
