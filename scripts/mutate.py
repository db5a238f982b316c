"""Mutation run over the store (``make mutate``; issue 16): do the store's tests fail when its code is broken?

For each target file (``store/*.lua``, ``store/*.py``) this makes small mutants, one
change each, and runs that file's store tests against each (``pytest -x``, the real
Redis of the tests' own fixtures, per-test key prefixes). A mutant is *killed* when the
tests fail (or time out), *survived* when they pass. Nothing is changed in the working
tree: every worker mutates its own copy of the tree (a temporary directory) and puts
each file back in a ``finally`` block before the next mutant.

Operators (one occurrence each, outside strings and comments):

* both: comparisons flipped (``<``/``<=``, ``>``/``>=``, ``==``/``~=`` or ``!=``),
  ``and``/``or`` swapped, ``not`` dropped, binary ``+``/``-`` swapped, integer
  literals changed (``0``/``1`` swapped, ``n`` → ``n + 1``), an ``if`` condition made
  false (the guard or branch dropped).
* Lua: a ``redis.call(...)`` statement deleted, an ``if … then return … end`` guard
  deleted, ``return 1``/``return 0`` swapped.
* Python: ``True``/``False`` swapped, ``is``/``is not``, ``in``/``not in``, a one-line
  ``await …`` statement replaced by ``pass``, ``+=``/``-=`` swapped.

A Lua mutant Redis cannot compile (``SCRIPT LOAD``) and a Python mutant that is not
valid Python are dropped, not counted. ``--max N`` samples at most N mutants per file
(``--seed``, default 16), so a run stays bounded; ``--jobs`` runs that many files at
once. Mutants in ``EQUIVALENT`` (checked by hand: no behaviour can tell them apart)
are reported but left out of the rate.

Usage: ``python scripts/mutate.py [FILE ...] [--max N] [--seed S] [--jobs J] [--json OUT]``
(no FILE: every target in ``TESTS``). Exit status 0 always (a report, not a gate).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import difflib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

# Which tests each target's mutants face (fast first: -x stops at the first failure).
_SCHED = ["tests/test_store_worker.py", "tests/test_store_timers.py", "tests/test_store_outbox.py",
          "tests/test_store_round_hold.py", "tests/test_store_service_state.py", "tests/test_store_unplayed.py",
          "tests/test_store_computers.py"]
# The scripts of the schedule face the tests that drive it (the computers' own file is slow: issue 14's levels).
_SCHED_LUA = ["tests/test_store_timers.py", "tests/test_store_worker.py", "tests/test_store_outbox.py",
              "tests/test_store_round_hold.py"]
_TABLES = ["tests/test_store_tables.py", "tests/test_store_live.py", "tests/test_store_durable.py",
           "tests/test_store_race.py"]
TESTS: dict[str, list[str]] = {
    "store/bucket.lua": ["tests/test_store_limits.py"],
    "store/sockets.lua": ["tests/test_store_limits.py"],
    "store/cas.lua": ["tests/test_store_lobbies.py", "tests/test_store_tables.py"],
    "store/claim.lua": _SCHED_LUA,
    "store/release.lua": _SCHED_LUA,
    "store/schedule.lua": _SCHED_LUA,
    "store/commit.lua": _TABLES,
    # move.lua: bucket, commit and follow-up in one call (its own glue; the three are mutated in their files)
    "store/move.lua": [*_TABLES, "tests/test_store_limits.py", "tests/test_store_timers.py", "tests/test_store_outbox.py"],
    "store/compact.lua": ["tests/test_store_live.py", "tests/test_store_replays.py", "tests/test_store_tables.py"],
    "store/record.lua": ["tests/test_store_ratings.py", "tests/test_store_worker.py"],
    "store/schedule.py": _SCHED,
    "store/computers.py": ["tests/test_store_computers.py", "tests/test_store_worker.py"],
    "store/limits.py": ["tests/test_store_limits.py"],
    "store/lobbies.py": ["tests/test_store_lobbies.py", "tests/test_store_rematch.py"],  # the "Play again" lobby fills in lobbies.py
    "store/ratings.py": ["tests/test_store_ratings.py"],
    "store/tables.py": ["tests/test_store_tables.py", *_SCHED[:4], "tests/test_store_live.py"],
    "store/outbox.py": ["tests/test_store_outbox.py"],
    "store/rematch.py": ["tests/test_store_rematch.py"],
    "store/replays.py": ["tests/test_store_replays.py"],
}

# Mutants no test can kill because they change nothing observable, with why (key: file, mutant id).
_IGNORED = "the caller never reads the script's answer"
EQUIVALENT: dict[tuple[str, str], str] = {
    ("store/release.lua", "return 0->1@return 0"): _IGNORED,
    ("store/release.lua", "return 1->0@return 1"): _IGNORED,
    ("store/schedule.lua", "1->0@out[#out + 1] = 1"): _IGNORED,
    ("store/schedule.lua", "0->1@out[#out + 1] = 0"): _IGNORED,
    ("store/schedule.lua", "1->0@out[#out + 1] = 1#2"): _IGNORED,
    ("store/schedule.lua", "<-><=@if finished or (known and version < known) then"):
        "the same version's follow-up again sets the due time it set before (from the same document)",
    ("store/move.lua", "0->1@if b > 0 then"): "b is 0 or 3 (no token to take, or bucket.lua's three values)",
    ("store/move.lua", "2->3@local wait = bucket({KEYS[5]}, part(3 + c, 2 + c + b))"):
        "one value more after bucket.lua's three: it reads only ARGV[1..3]",
    ("store/move.lua", "2->3@local res = commit({KEYS[1], KEYS[2], KEYS[3], KEYS[4]}, part(3, 2 + c))"):
        "one value more after commit.lua's: it reads only its own twelve",
    ("store/bucket.lua", ">->>=@if now > at then"): "at now == at the refill adds 0 tokens: the same bucket",
    ("store/commit.lua", "0->1@return {-1, 0}"): "the second value of a 'no such table' answer is never read",
    ("store/commit.lua", ">->>=@if others > 0 and redis.call('SISMEMBER', KEYS[4], ARGV[12]) == 1 then"):
        "an empty set has no member: with others 0 the membership test is false either way",
    ("store/compact.lua", "return 0->1@return 0"): _IGNORED,
    ("store/compact.lua", "return 1->0@return 1"): _IGNORED,
    ("store/compact.lua", "delete-guard@if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[1]) then"):
        "Store._compact checks the same length just before; a compaction racing it writes the same entry",
    ("store/compact.lua", ">->>=@if ttl > 0 then"):
        "TTL answers 0 only in a key's last second (then either way the log outlives its table by < 1 s)",
    ("store/bucket.lua", "<-><=@if tokens < 1 - 1e-6 then  -- (epoch seconds as doubles are exact to about 1e-7 s)"):
        "differs only when the tokens are exactly 1 - 1e-6, below what the clock can express",
    ("store/schedule.py", "condition-false@if len(batch) >= 200:"):
        "batching only: the sweep's last flush then looks at every table at once",
    ("store/schedule.py", "True->False@for table_id, result in zip(claimed, done, strict=True):"):
        "gather answers one result per claimed table: the lengths are always equal",
    ("store/schedule.py", ">=->>@if time.monotonic() >= next_sweep:"):
        "the monotonic clock never gives the same float twice across a sweep interval",
    ("store/limits.py", "0->1@repr(float(lease)), 0])"):
        "sockets.lua reads ARGV[5] (the cap) only for 'open'; 'keep' passes it as a placeholder",
    ("store/ratings.py", "1->0@raw = await self.redis.lrange(self.keys.results(game, user_id), 0, RESULTS_KEPT - 1)"):
        "a results list never holds more than RESULTS_KEPT (record.lua trims it, the rebuild writes at most that)",
    ("store/ratings.py", "500->501@old = [k async for k in self.redis.scan_iter(match=self.keys.board_pattern, count=500)]"):
        "SCAN's COUNT is a batch-size hint: every matching key is returned either way",
    ("store/rematch.py", 'and->or@people = [s["user_id"] for s in doc["seats"] if s["user_id"] is not None and not s.get("computer")]'):
        "people only feeds said_no, which only takes ids out of reserved, and reserved never holds a computer seat",
    ("store/computers.py", """8->9@digest = hashlib.blake2b(f"{doc['id']}:{doc['seed']}:{seat}".encode(), digest_size=8, person=b"karty-ai").digest()"""):
        "another stable seed per seat, as unrelated to the deal's: no rule says which seed a computer plays with",
    ("store/computers.py", "2->3@self.workers = workers or max(1, min(2, (os.cpu_count() or 2) - 1))#2"):
        "os.cpu_count() answers on Linux, the only platform the store runs on: its fallback is never used",
}


@dataclass
class Mutant:
    file: str
    line: int
    op: str
    text: str  # the whole mutated file
    original: str
    run_text: str = ""  # what is written to run it (Lua: text with its loops bounded)

    nth: int = 0  # the same operator on the same line text before this one

    @property
    def id(self) -> str:
        """Stable across runs while the line itself is unchanged: operator, line text, occurrence."""
        src_line = self.original.splitlines()[self.line - 1].strip()
        return f"{self.op}@{src_line}" + (f"#{self.nth + 1}" if self.nth else "")

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.original.splitlines(True), self.text.splitlines(True),
                                            f"a/{self.file}", f"b/{self.file}", n=1))


@dataclass
class FileResult:
    file: str
    total: int = 0  # mutants made (valid), before sampling
    killed: list[str] = field(default_factory=list)
    survived: list[tuple[str, str]] = field(default_factory=list)  # id, diff
    equivalent: list[tuple[str, str]] = field(default_factory=list)
    baseline_failed: str = ""
    seconds: float = 0.0


# ---------------------------------------------------------------- Lua mutants

_LUA_TOKEN = re.compile(r"""
    (?P<comment>--[^\n]*)
  | (?P<string>'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")
  | (?P<op><=|>=|==|~=|<|>|\+|-)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>\d+(?:\.\d+)?(?:e-?\d+)?)
  | (?P<close>[)\]])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "~=", "~=": "=="}


def _replace(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def lua_mutants(file: str, text: str) -> list[Mutant]:
    out: list[Mutant] = []

    def add(pos: int, op: str, new_text: str) -> None:
        out.append(Mutant(file, _line_of(text, pos), op, new_text, text))

    prev_kind = ""
    depth = 0  # inside [ ]: an index (ARGV[i + 1], out[#out + 1]) is wiring, not a rule
    for m in _LUA_TOKEN.finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind == "comment" or (kind == "other" and tok.isspace()):
            continue
        s, e = m.span()
        depth += (tok == "[") - (tok == "]")
        if depth and kind in ("op", "number") and tok not in _FLIP:
            prev_kind = kind
            continue
        if kind == "op":
            if tok in _FLIP:
                add(s, f"{tok}->{_FLIP[tok]}", _replace(text, s, e, _FLIP[tok]))
            elif prev_kind in ("word", "number", "close", "string"):  # binary + or -
                new = "-" if tok == "+" else "+"
                add(s, f"{tok}->{new}", _replace(text, s, e, new))
        elif kind == "word" and tok in ("and", "or"):
            new = "or" if tok == "and" else "and"
            add(s, f"{tok}->{new}", _replace(text, s, e, new))
        elif kind == "word" and tok == "not":
            add(s, "drop-not", _replace(text, s, m.end() + 1 if text[e:e + 1] == " " else e, ""))
        elif kind == "number" and re.fullmatch(r"\d+", tok) \
                and not re.match(r"\s*return \d+\s*$", text[text.rfind("\n", 0, s) + 1:text.find("\n", s)]):
            new = {"0": "1", "1": "0"}.get(tok, str(int(tok) + 1))
            add(s, f"{tok}->{new}", _replace(text, s, e, new))
        prev_kind = kind if kind != "other" else ("close" if tok in ")]" else "other")
    lines = text.splitlines(True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for i, line in enumerate(lines):
        stripped = line.strip()
        pos = offsets[i]
        if stripped.startswith("redis.call(") and stripped.endswith(")"):
            add(pos, "delete-call", text[:pos] + "\n" + text[offsets[i + 1]:])
        cond = re.match(r"(\s*)(if|elseif) (.*) then\s*$", line)
        if cond:
            start = pos + len(cond.group(1)) + len(cond.group(2)) + 1
            add(pos, "condition-false", _replace(text, start, start + len(cond.group(3)), "false"))
            if (cond.group(2) == "if" and i + 2 < len(lines) and lines[i + 1].strip().startswith("return")
                    and lines[i + 2].strip() == "end"):
                add(pos, "delete-guard", text[:pos] + "\n\n\n" + text[offsets[i + 3]:])
        ret = re.match(r"(\s*)return ([01])\s*$", line)
        if ret:
            start = pos + len(ret.group(1)) + len("return ")
            add(pos, f"return {ret.group(2)}->{1 - int(ret.group(2))}",
                _replace(text, start, start + 1, str(1 - int(ret.group(2)))))
    return out


# ------------------------------------------------------------- Python mutants

_PY_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "+=": "-=", "-=": "+="}


def py_mutants(file: str, text: str) -> list[Mutant]:
    out: list[Mutant] = []
    lines = text.splitlines(True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def pos(rc: tuple[int, int]) -> int:
        return offsets[rc[0] - 1] + rc[1]

    def add(line: int, op: str, new_text: str) -> None:
        try:
            compile(new_text, file, "exec")
        except SyntaxError:
            return
        out.append(Mutant(file, line, op, new_text, text))

    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for k, t in enumerate(toks):
        s, e = pos(t.start), pos(t.end)
        prev = toks[k - 1] if k else None
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if t.type == tokenize.OP:
            if t.string in _PY_FLIP:
                add(t.start[0], f"{t.string}->{_PY_FLIP[t.string]}", _replace(text, s, e, _PY_FLIP[t.string]))
            elif t.string in "+-" and prev is not None and (
                    prev.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING) or prev.string in ")]"):
                if prev.type == tokenize.NAME and prev.string in ("return", "and", "or", "not", "in", "if", "else"):
                    continue
                new = "-" if t.string == "+" else "+"
                add(t.start[0], f"{t.string}->{new}", _replace(text, s, e, new))
        elif t.type == tokenize.NAME:
            if t.string in ("and", "or"):
                new = "or" if t.string == "and" else "and"
                add(t.start[0], f"{t.string}->{new}", _replace(text, s, e, new))
            elif t.string == "not" and not (prev is not None and prev.string in ("is",)) and \
                    not (nxt is not None and nxt.string == "in"):
                add(t.start[0], "drop-not", _replace(text, s, pos(nxt.start) if nxt else e, ""))
            elif t.string in ("True", "False"):
                new = "False" if t.string == "True" else "True"
                add(t.start[0], f"{t.string}->{new}", _replace(text, s, e, new))
            elif t.string == "is" and nxt is not None and nxt.string == "not":
                add(t.start[0], "is not->is", _replace(text, s, pos(nxt.end), "is"))
            elif t.string == "is":
                add(t.start[0], "is->is not", _replace(text, s, e, "is not"))
            elif t.string == "in" and prev is not None and prev.string == "not":
                add(t.start[0], "not in->in", _replace(text, pos(prev.start), e, "in"))
            elif t.string == "in" and not _in_for(toks, k):
                add(t.start[0], "in->not in", _replace(text, s, e, "not in"))
        elif t.type == tokenize.NUMBER and re.fullmatch(r"\d+", t.string):
            new = {"0": "1", "1": "0"}.get(t.string, str(int(t.string) + 1))
            add(t.start[0], f"{t.string}->{new}", _replace(text, s, e, new))
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if stripped.startswith("await ") and _balanced(stripped):
            add(i + 1, "await->pass", text[: offsets[i]] + f"{indent}pass\n" + text[offsets[i + 1]:])
        cond = re.match(r"(\s*)(if|elif) (.*):\s*$", line)
        if cond and _balanced(cond.group(3)):
            start = offsets[i] + len(cond.group(1)) + len(cond.group(2)) + 1
            add(i + 1, "condition-false", _replace(text, start, start + len(cond.group(3)), "False"))
    return out


def _in_for(toks: list[tokenize.TokenInfo], k: int) -> bool:
    """Whether the ``in`` at ``toks[k]`` belongs to a ``for`` (a loop or a comprehension)."""
    depth = 0
    for j in range(k - 1, -1, -1):
        s = toks[j].string
        if s in ")]}":
            depth += 1
        elif s in "([{":
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and s == "for":
            return True
        elif toks[j].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or s in ("if", "and", "or", ","):
            return False
    return False


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


# ------------------------------------------------------------------ running


def lua_compiles(text: str, redis_url: str) -> bool:
    import redis

    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        client.script_load(text)
        return True
    except redis.ResponseError:
        return False
    finally:
        client.close()


def bound_loops(text: str) -> str:
    """``text`` with every Lua ``while`` loop stopped after 100,000 turns: a mutant that never
    leaves its loop would block the shared Redis (same lines, so the tests' errors still point right)."""
    return re.sub(r"^(\s*)while (.*) do\s*$",
                  r"\1local __turns = 0 while \2 do __turns = __turns + 1 "
                  r"if __turns > 100000 then error('mutant: endless loop') end",
                  text, flags=re.MULTILINE)


def make_mutants(file: str, text: str, redis_url: str) -> list[Mutant]:
    if file.endswith(".lua"):
        made = []
        for m in lua_mutants(file, text):
            m.run_text = bound_loops(m.text)
            if lua_compiles(m.run_text, redis_url):
                made.append(m)
    else:
        made = py_mutants(file, text)
    seen: dict[str, int] = {}
    for m in made:
        m.nth = seen.get(m.id, 0)
        seen[m.id] = m.nth + 1
    return made


def copy_tree(dest: Path, src: Path = ROOT) -> None:
    skip = {".git", ".venv", "docs", "test-output", "node_modules", ".pytest_cache", ".ruff_cache", "build"}
    for item in src.iterdir():
        if item.name in skip or item.name.endswith(".egg-info"):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(item, dest / item.name)


# The fast subset: the real Redis only (fakeredis runs the same scripts, slower to fail), and
# not the expert's searches or the processes' start-up (seconds each, and no script of theirs).
SELECT = "not fake and not expert and not peek and not two_processes and not worker_processes"
# The expert's own tests (its pool, fallback and shutdown: about 2 s) for the module that runs it.
SELECT_FOR = {"store/computers.py": "not fake and not peek and not two_processes and not worker_processes"}


def _pytest_args(tests: list[str], tree: Path, select: str = SELECT) -> list[str]:
    existing = [t for t in tests if (tree / t).exists()]
    return ["-x", "-q", "-p", "no:cacheprovider", "--timeout", "120", "-k", select, *existing]


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}


def run_tests(tree: Path, tests: list[str], timeout: float) -> tuple[int, str]:
    """Run ``tests`` in a fresh interpreter in ``tree`` (its packages first on the path);
    (return code, last output lines). For Python mutants: their module must be imported anew."""
    cmd = [PY, "-m", "pytest", *_pytest_args(tests, tree)]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=_env(tree), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return proc.returncode, "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])


class Server:
    """One interpreter in ``tree`` running pytest again for each mutant (``--serve``): the
    third-party imports and the engine are paid once; a script is read from its file at each
    Store's start (the ``store.common._lua`` cache is cleared before each run), and every
    other module of the tree is imported afresh."""

    def __init__(self, tree: Path, tests: list[str], select: str = SELECT) -> None:
        self.tree, self.tests, self.select = tree, tests, select
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        cmd = [PY, str(self.tree / "scripts" / "mutate.py"), "--serve",
               *_pytest_args(self.tests, self.tree, self.select)]
        return subprocess.Popen(cmd, cwd=self.tree, env=_env(self.tree), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def run(self, timeout: float) -> tuple[int, str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        box: list[str] = []
        failed: list[str] = []
        reader = threading.Thread(target=lambda: box.append(self._answer(failed)), daemon=True)
        reader.start()
        reader.join(timeout)
        if not box:
            self.close()
            return -1, "timeout"
        return int(box[0]), "\n".join(failed)

    def _answer(self, failed: list[str]) -> str:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            if line.startswith("MUTATE-FAILED "):
                failed.append(line.split(" ", 1)[1].rstrip())
            elif line.startswith("MUTATE-RC "):
                return line.split()[1]
        return "-2"  # the interpreter died: the mutant broke it

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


class _Failed:
    """pytest plugin: the failed tests' ids with the last line of their error."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            last = (str(report.longrepr).strip().splitlines() or [""])[-1]
            self.lines.append(f"{report.nodeid} ({report.when}): {last[:300]}")


def serve(pytest_args: list[str]) -> int:
    """``--serve``: for each ``run`` line on stdin, pytest once more in this interpreter."""
    import pytest

    import store.common

    tree = str(Path.cwd()) + os.sep
    kept = tree + "engine" + os.sep  # unchanged by any mutant, and the slowest to import
    for line in sys.stdin:
        if line.strip() != "run":
            continue
        store.common._lua.cache_clear()
        # A Python mutant: every module of the tree but the engine is imported afresh (the
        # store's mixins, and the tests that imported names from them).
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None) or ""
            if path.startswith(tree) and not path.startswith(kept):
                del sys.modules[name]
        failed = _Failed()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = int(pytest.main(list(pytest_args), plugins=[failed]))
        for line in failed.lines[:3]:  # which test failed (a baseline that fails says why)
            print(f"MUTATE-FAILED {line}", flush=True)
        print(f"MUTATE-RC {rc}", flush=True)
    return 0


def mutate_file(file: str, max_mutants: int, seed: int, redis_url: str, verbose: bool, src: Path,
                again: dict | None = None, tests: list[str] | None = None) -> FileResult:
    """Mutants of ``file`` against its tests. ``again``: an earlier run's result for the file;
    only its survivors run (against ``tests`` if given: the tests added since), its killed
    mutants count as killed (tests were only added, so they still fail)."""
    result = FileResult(file)
    started = time.monotonic()
    original = (src / file).read_text(encoding="utf-8")
    mutants = make_mutants(file, original, redis_url)
    result.total = len(mutants)
    if again is not None:
        left = {mid for mid, _ in again["survived"]}
        result.killed = [k for k in again["killed"] if k not in left]
        mutants = [m for m in mutants if m.id in left]
    elif max_mutants and len(mutants) > max_mutants:
        mutants = sorted(random.Random(f"{seed}:{file}").sample(mutants, max_mutants), key=lambda m: m.line)
    tests = tests or TESTS[file]
    if not mutants:
        return result
    with tempfile.TemporaryDirectory(prefix="karty-mutate-") as tmp:
        tree = Path(tmp)
        copy_tree(tree, src)
        server = Server(tree, tests, SELECT_FOR.get(file, SELECT))
        try:
            _run_mutants(file, original, mutants, tree, tests, server, result, verbose)
        finally:
            if server:
                server.close()
    result.seconds = time.monotonic() - started
    return result


def _run_mutants(file: str, original: str, mutants: list[Mutant], tree: Path, tests: list[str],
                 server: Server | None, result: FileResult, verbose: bool) -> None:
    def run(timeout: float) -> tuple[int, str]:
        return server.run(timeout) if server else run_tests(tree, tests, timeout)

    base_start = time.monotonic()
    rc, tail = run(900)
    if rc != 0:
        result.baseline_failed = f"pytest exit {rc}" + (f": {tail}" if tail else "")
        return
    timeout = max(60.0, 3 * (time.monotonic() - base_start) + 30)
    target = tree / file
    for m in mutants:
        eq = EQUIVALENT.get((file, m.id))
        if eq:
            result.equivalent.append((m.id, eq))
            continue
        try:
            target.write_text(m.run_text or m.text, encoding="utf-8")
            rc, tail = run(timeout)
        finally:
            target.write_text(original, encoding="utf-8")
        if rc == 0:
            result.survived.append((m.id, m.diff()))
        elif rc in (4, 5):  # usage error or no tests: nothing was tested
            result.baseline_failed = f"{m.id}: pytest exit {rc}: {tail}"
        else:
            result.killed.append(m.id)
        if verbose:
            print(f"  {file}:{m.line} {m.op}: {'survived' if rc == 0 else 'killed'}", file=sys.stderr, flush=True)


def report(results: list[FileResult]) -> str:
    rows = ["| file | mutants (made) | killed | survived | equivalent | killed % |", "|---|---|---|---|---|---|"]
    all_k = all_s = 0
    for r in results:
        if r.baseline_failed:
            why = r.baseline_failed.replace("\n", "; ").replace("|", "/")
            rows.append(f"| {r.file} | {r.total} | baseline failed: {why} | | | |")
            continue
        k, s = len(r.killed), len(r.survived)
        all_k, all_s = all_k + k, all_s + s
        rate = f"{100 * k / (k + s):.0f}%" if k + s else "-"
        rows.append(f"| {r.file} | {k + s + len(r.equivalent)} ({r.total}) | {k} | {s} | {len(r.equivalent)} | {rate} |")
    if all_k + all_s:
        rows.append(f"| all | | {all_k} | {all_s} | | {100 * all_k / (all_k + all_s):.0f}% |")
    out = ["\n".join(rows), ""]
    for r in results:
        for mid, diff in r.survived:
            out.append(f"SURVIVED {r.file} {mid}\n{diff}")
    return "\n".join(out)


def _stop(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="targets (default: every file in TESTS)")
    ap.add_argument("--max", type=int, default=0, help="at most this many mutants per file (sampled; 0: all)")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=1, help="files mutated at once")
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--list", action="store_true", help="only list the mutants")
    ap.add_argument("--again", help="an earlier run's --json: run only its survivors (its killed stay killed)")
    ap.add_argument("--tests", nargs="+", help="with --again: only these tests (the ones added since)")
    ap.add_argument("-v", "--verbose", action="store_true")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        return serve(argv[1:])
    signal.signal(signal.SIGTERM, _stop)  # killed: the finally blocks still put every file back
    args = ap.parse_args(argv)
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    earlier = {r["file"]: r for r in json.loads(Path(args.again).read_text())} if args.again else {}
    files = args.files or list(earlier) or list(TESTS)
    unknown = [f for f in files if f not in TESTS]
    if unknown:
        ap.error(f"no tests are set for {unknown} (scripts/mutate.py TESTS)")
    if args.list:
        for f in files:
            for m in make_mutants(f, (ROOT / f).read_text(encoding="utf-8"), redis_url):
                print(f"{f}:{m.line} {m.id}")
        return 0
    # One snapshot of the tree when the run starts: edits made while it runs change nothing.
    with tempfile.TemporaryDirectory(prefix="karty-mutate-src-") as snap, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        copy_tree(Path(snap))
        results = list(pool.map(lambda f: mutate_file(f, args.max, args.seed, redis_url, args.verbose, Path(snap),
                                                      earlier.get(f) if args.again else None, args.tests),
                                files))
    print(report(results))
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in results], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
