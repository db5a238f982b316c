"""Every conformance case replays to its expectation (../shared/conformance/FORMAT.md).

Shared cases live beside the repository in ``../shared/conformance/cases``; the
project's own in ``tests/cases``. Each is replayed through the CLI entry point
(``python -m engine replay``, called in-process) and checked with run.py's own
``compare``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from engine.__main__ import main as engine_main

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
SHARED_CASES = SHARED / "conformance" / "cases"
OWN_CASES = ROOT / "tests" / "cases"


def _cases() -> list:
    files = sorted(SHARED_CASES.glob("*.json")) + sorted(OWN_CASES.glob("*.json"))
    params = []
    for f in files:
        params.append(pytest.param(f, id=f"{f.parent.parent.name}/{f.name}"))
    if not SHARED_CASES.is_dir():
        params.append(pytest.param(None, id="shared-missing",
                                   marks=pytest.mark.skip(reason=f"{SHARED_CASES} not found")))
    return params


def _run_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", SHARED / "conformance" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", _cases())
def test_conformance_case(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = json.loads(case.read_text(encoding="utf-8"))
    assert engine_main(["replay", str(case)]) == 0
    got = json.loads(capsys.readouterr().out)
    diffs = _run_py().compare(spec.get("expect", {}), got)
    assert not diffs, f"{spec.get('title', '')}\n" + "\n".join(diffs)
