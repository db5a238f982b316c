"""Ratings math (RULES.md P13–P16, R19; CONTRACTS.md §4). Pure: no clock, no I/O.

* Places with ties: equal values share a place and the next is skipped (1, 1, 3).
* Balances: Prší, for each opponent their total minus yours (P14); Penki, +1 for
  each opponent you placed above, −1 below, 0 level (R19). Both sum to zero.
* Periods: ISO week ``YYYY-Www`` and calendar month ``YYYY-MM`` of the moment a
  match ended, in the game's time zone (P15: Europe/Prague; R19: Europe/Moscow).
* Scores: the sum of a player's best 3 balances in a week, best 5 in a month;
  fewer matches count as they are (the missing ones are zeros, never added).
* Boards: higher score first, then more matches, then a shared rank (1, 1, 3);
  rows sorted by rank, then player id.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

TIMEZONES: dict[str, str] = {"prsi": "Europe/Prague", "penki": "Europe/Moscow"}
BEST_OF: dict[str, int] = {"week": 3, "month": 5}  # P15


def shared_places(values: Mapping[str, int], *, lower_is_better: bool) -> dict[str, int]:
    """Places from ``{player: value}`` (P13, R16): ``1 + the number of players strictly better``.

    ``shared_places({"a": 30, "b": 30, "c": 55}, lower_is_better=True)`` → ``{"a": 1, "b": 1, "c": 3}``.
    """
    vals = list(values.values())
    if lower_is_better:
        return {p: 1 + sum(1 for w in vals if w < v) for p, v in values.items()}
    return {p: 1 + sum(1 for w in vals if w > v) for p, v in values.items()}


def prsi_balances(totals: Mapping[str, int]) -> dict[str, int]:
    """P14: for each opponent add (their total − yours). Totals 20, 50, 90 → +100, +10, −110."""
    whole = sum(totals.values())
    k = len(totals)
    return {p: whole - k * t for p, t in totals.items()}


def penki_balances(places: Mapping[str, int]) -> dict[str, int]:
    """R19: for each opponent +1 if you placed better (lower place), −1 if worse, 0 if equal."""
    vals = list(places.values())
    return {p: sum(1 for q in vals if q > v) - sum(1 for q in vals if q < v) for p, v in places.items()}


@cache
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def period_keys(ruleset: str, ended: datetime) -> tuple[str, str]:
    """P15, R19: ``(ISO week key, month key)`` of ``ended`` in the ruleset's time zone.

    ``ended`` must be timezone-aware (``ValueError`` otherwise); ``ruleset`` is
    ``"prsi"`` or ``"penki"`` (``KeyError`` otherwise). Returns e.g.
    ``("2026-W49", "2026-11")``.
    """
    if ended.tzinfo is None or ended.utcoffset() is None:
        raise ValueError("ended must be a timezone-aware datetime")
    local = ended.astimezone(_zone(TIMEZONES[ruleset]))
    year, week, _ = local.isocalendar()
    return f"{year}-W{week:02d}", f"{local.year}-{local.month:02d}"


def period_score(balances: list[int], period: str) -> int:
    """P15: the sum of the best 3 (``period="week"``) or 5 (``"month"``) balances.

    With fewer matches, the sum of those there are: ``[-50]`` → −50;
    ``[120, -40]`` → 80; ``[120, -40, -10]`` → 70; ``[120, -40, -10, 5]`` → 115 (a week).
    """
    return sum(sorted(balances, reverse=True)[: BEST_OF[period]])


def board(rows: Mapping[str, list[int]], period: str) -> list[dict[str, Any]]:
    """P15: a leaderboard from ``{player: [balances in the period]}``.

    Returns ``[{"player", "score", "matches", "rank"}, ...]``: higher score first,
    then more matches; players equal on both share a rank and the next is skipped;
    sorted by rank, then player id. Players without matches are left out.
    """
    scored = [(p, period_score(b, period), len(b)) for p, b in rows.items() if b]
    keys = [(s, m) for _, s, m in scored]
    out = [
        {"player": p, "score": s, "matches": m, "rank": 1 + sum(1 for k in keys if k > (s, m))}
        for p, s, m in scored
    ]
    out.sort(key=lambda r: (r["rank"], r["player"]))
    return out


def replay(case: Mapping[str, Any]) -> dict[str, Any]:
    """Replay a FORMAT.md ratings case: ``{"boards": {"week YYYY-Www": rows, "month YYYY-MM": rows}}``.

    Only matches with ``rated`` true count (P16). One board per period that holds
    a rated match, over everyone (no per-chat boards). Raises ``KeyError``,
    ``ValueError`` or ``TypeError`` when the case is malformed.
    """
    ruleset = case["ruleset"]
    if ruleset not in TIMEZONES:
        raise ValueError(f"unknown ruleset {ruleset!r}")
    periods: dict[str, tuple[str, dict[str, list[int]]]] = {}
    for match in case["matches"]:
        if match.get("rated") is not True:
            continue
        ended = datetime.fromisoformat(match["ended"])
        week, month = period_keys(ruleset, ended)
        for name, kind in ((f"week {week}", "week"), (f"month {month}", "month")):
            rows = periods.setdefault(name, (kind, {}))[1]
            for player, balance in match["balances"].items():
                if not isinstance(balance, int) or isinstance(balance, bool):
                    raise TypeError(f"balance of {player!r} is not an int")
                rows.setdefault(player, []).append(balance)
    return {"boards": {name: board(rows, kind) for name, (kind, rows) in sorted(periods.items())}}


def series(ruleset: str, results: list[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """P15 per period for one player's chart (issue 15): ``{"weeks": [...], "months": [...]}``.

    ``results``: the player's matches ``{"ended": ISO time, "balance": int}`` (any order).
    Each entry ``{"key", "score", "matches"}``, oldest period first; ``score`` as the
    leaderboards count it (best 3 of a week, best 5 of a month, P15). Weeks and months
    in the ruleset's time zone (P15, R19).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for period, index in (("weeks", 0), ("months", 1)):
        groups: dict[str, list[int]] = {}
        for r in results:
            ended = datetime.fromisoformat(str(r["ended"]).replace("Z", "+00:00"))
            groups.setdefault(period_keys(ruleset, ended)[index], []).append(int(r["balance"]))
        name = "week" if period == "weeks" else "month"
        out[period] = [{"key": k, "score": period_score(v, name), "matches": len(v)} for k, v in sorted(groups.items())]
    return out
