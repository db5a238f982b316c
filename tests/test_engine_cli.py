"""``python -m engine replay`` and ``python -m engine simulate`` (FORMAT.md, engine/__main__.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine.__main__ import main, play_out, replay_case

ROOT = Path(__file__).resolve().parents[1]
SHARED_RUN = ROOT.parent / "shared" / "conformance" / "run.py"
# The project's own copy of the shared case prsi-17 (P2 P12 P13 P14, a whole match), so the
# CLI is tested without ../shared; only the shared runner's own test needs ../shared.
CASE = ROOT / "tests" / "cases" / "prsi-own-01-full-match-20-50-90.json"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_replay_prints_results_and_the_observer_state() -> None:
    done = run("replay", str(CASE))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    expect = json.loads(CASE.read_text())["expect"]
    assert out["results"] == expect["results"]
    assert out["state"]["balances"] == {"a": 100, "b": 10, "c": -110}


@pytest.mark.skipif(not SHARED_RUN.exists(), reason=f"{SHARED_RUN} not found")
def test_shared_run_py_passes_a_prsi_case() -> None:
    done = subprocess.run([sys.executable, str(SHARED_RUN), str(CASE)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "1 passed, 0 failed" in done.stdout, done.stdout


def test_replay_exits_2_on_an_unreadable_or_invalid_case(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run("replay", str(bad)).returncode == 2
    assert run("replay", str(tmp_path / "missing.json")).returncode == 2
    bad.write_text(json.dumps({"game": "chess", "players": ["a", "b"], "actions": []}))
    assert main(["replay", str(bad)]) == 2
    bad.write_text(json.dumps({"game": "prsi", "players": ["a", "b"], "decks": [["7h"]], "actions": []}))
    assert main(["replay", str(bad)]) == 2


def test_replay_reports_rejections_and_goes_on() -> None:
    case = {"game": "prsi", "players": ["a", "b", "c"], "seed": 1,
            "actions": [{"p": "z", "a": "draw"}, "junk", {"p": "b", "a": "draw"}, {"p": "a", "a": "draw"},
                        {"p": "b", "a": "fly"}]}
    out = replay_case(case)
    assert out["results"] == ["bad_action", "bad_action", "not_your_turn", "ok", "bad_action"]
    assert out["state"]["to_move"] == "b" and len(out["state"]["hands"]["a"]) == 5


def test_simulate_plays_whole_matches_and_reports_speed() -> None:
    done = run("simulate", "--game", "prsi", "--games", "3", "--seed", "5", "--players", "4")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["games"] == 3 and out["players"] == 4 and out["actions"] > 0 and out["actions_per_s"] > 0


@pytest.mark.parametrize("count", [2, 3, 5])
def test_play_out_finishes_a_prsi_match(count: int) -> None:
    players = [f"p{i}" for i in range(count)]
    state, n = play_out("prsi", players, seed=count)
    assert state.over and n == state.version and sorted(state.places) == sorted(players)
    assert engine.awaiting(state) == []
