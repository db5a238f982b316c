"""How a conformance case's expectation is compared with a replay (FORMAT.md, "Output").

The project's own copy of the comparison, so the project's tests stand without
``../shared``: ``results`` must be equal, each listed board equal, each listed
``state`` key equal, with ``hands`` and ``stumps`` compared as multisets (every
seat's cards sorted). ``tests/test_conformance.py`` checks that it agrees with
``../shared/conformance/run.py`` on the shared cases when they are there.
"""

from __future__ import annotations

import json
from typing import Any

MULTISET_KEYS = frozenset({"hands", "stumps"})
MISSING = "<missing>"


def normalise(key: str, value: Any) -> Any:
    """``hands``/``stumps`` as ``{seat: sorted cards}``; any other value unchanged."""
    if key in MULTISET_KEYS and isinstance(value, dict):
        return {seat: sorted(cards) if isinstance(cards, list) else cards for seat, cards in value.items()}
    return value


def compare(expect: dict[str, Any], got: dict[str, Any]) -> list[str]:
    """Differences between a case's ``expect`` and a replay's output, one line each ([] when all match)."""
    diffs: list[str] = []
    if "results" in expect and expect["results"] != got.get("results"):
        diffs.append(f"results: want {expect['results']}, got {got.get('results')}")
    boards = got.get("boards") or {}
    for period, want in (expect.get("boards") or {}).items():
        have = boards.get(period, MISSING)
        if want != have:
            diffs.append(f"boards[{period}]: want {json.dumps(want)}, got {json.dumps(have)}")
    state = got.get("state") or {}
    for key, want in (expect.get("state") or {}).items():
        have = state.get(key, MISSING)
        if normalise(key, want) != normalise(key, have):
            diffs.append(f"state.{key}: want {json.dumps(want)}, got {json.dumps(have)}")
    return diffs
