"""Every conformance case replays to its expectation (../shared/conformance/FORMAT.md).

Shared cases live beside the repository in ``../shared/conformance/cases`` (skipped
when it is absent); the project's own in ``tests/cases``. Each is replayed through
the CLI entry point (``python -m engine replay``, called in-process) and checked with
the project's own comparison (``conformance_support.compare``), which must agree with
the shared ``run.py`` wherever that is present.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from conformance_support import compare

from engine.__main__ import main as engine_main

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SHARED_CASES = SHARED / "conformance" / "cases"
SHARED_RUN = SHARED / "conformance" / "run.py"
OWN_CASES = ROOT / "tests" / "cases"
needs_shared = pytest.mark.skipif(not SHARED_RUN.exists(), reason=f"{SHARED_RUN} not found")


def _params(folder: Path) -> list:
    return [pytest.param(f, id=f"{f.parent.parent.name}/{f.name}") for f in sorted(folder.glob("*.json"))]


def _shared_cases() -> list:
    if not SHARED_CASES.is_dir():
        return [pytest.param(None, id="shared-missing", marks=pytest.mark.skip(reason=f"{SHARED_CASES} not found"))]
    return _params(SHARED_CASES)


def _replay(case: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, dict]:
    spec = json.loads(case.read_text(encoding="utf-8"))
    assert engine_main(["replay", str(case)]) == 0
    return spec, json.loads(capsys.readouterr().out)


def _shared_run_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", SHARED_RUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_project_has_cases_of_its_own() -> None:
    assert _params(OWN_CASES), f"no cases in {OWN_CASES}"


@pytest.mark.parametrize("case", _params(OWN_CASES))
def test_own_case(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, got = _replay(case, capsys)
    diffs = compare(spec.get("expect", {}), got)
    assert not diffs, f"{spec.get('title', '')}\n" + "\n".join(diffs)


@pytest.mark.parametrize("case", _shared_cases())
def test_shared_case(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, got = _replay(case, capsys)
    expect = spec.get("expect", {})
    diffs = compare(expect, got)
    assert not diffs, f"{spec.get('title', '')}\n" + "\n".join(diffs)
    if SHARED_RUN.exists():  # the shared runner judges the same way
        assert _shared_run_py().compare(expect, got) == diffs


def test_compare_reads_hands_and_stumps_as_multisets_and_the_rest_exactly() -> None:
    got = {"results": ["ok"], "state": {"hands": {"a": ["7h", "Ks"]}, "stumps": {"a": ["Ac", "6d"]},
                                        "stock": ["7h", "8h"]}}
    assert compare({"results": ["ok"], "state": {"hands": {"a": ["Ks", "7h"]}, "stumps": {"a": ["6d", "Ac"]}}},
                   got) == []
    assert compare({"state": {"stock": ["8h", "7h"]}}, got) == ['state.stock: want ["8h", "7h"], got ["7h", "8h"]']
    assert compare({"results": ["illegal"]}, got) == ["results: want ['illegal'], got ['ok']"]
    assert compare({"state": {"to_move": "a"}}, got) == ['state.to_move: want "a", got "<missing>"']
    assert compare({"boards": {"week 2026-W49": []}}, {"boards": {}}) == [
        'boards[week 2026-W49]: want [], got "<missing>"']
    assert compare({"state": {"hands": {"a": ["7h", "7h"]}}}, got) != []  # a multiset, not a set


@needs_shared
def test_compare_agrees_with_the_shared_runner_on_made_up_differences() -> None:
    run = _shared_run_py()
    got = {"results": ["ok", "illegal"], "boards": {"month 2026-11": [{"player": "u1"}]},
           "state": {"hands": {"a": ["7h", "Ks"]}, "to_move": "b", "over": False}}
    for expect in ({"results": ["ok", "ok"]}, {"boards": {"month 2026-11": []}, "state": {"over": True}},
                   {"state": {"hands": {"a": ["Ks", "7h"]}, "to_move": "a", "places": {}}}, {}):
        assert compare(expect, got) == run.compare(expect, got)
