"""store under races: 50 coroutines and 2 OS processes firing actions (and Penki callouts) at one table.

Checks, whatever the interleaving: every committed action is in the log exactly
once with the version its caller was told; the versions are 1..n without gaps; a
repeated client_action_id is never applied twice; the stored state equals the log
replayed through the engine from the seed.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys

import pytest

import engine
from engine.errors import Rejected
from store import Seat

CALLOUTS = [{"a": "zevok"}, {"a": "one_card"}, {"a": "how_many"}]

RACER = r'''
import asyncio, json, random, sys
import engine
from engine.errors import Rejected
from store import Store

CALLOUTS = [{"a": "zevok"}, {"a": "one_card"}, {"a": "how_many"}]

async def racer(st, table_id, name, rng, committed, stop_at):
    i = 0
    while True:
        t = await st.get_table(table_id)
        if t.state.over or t.version >= stop_at:
            return
        waiting = engine.awaiting(t.state)
        seat = rng.choice(waiting) if waiting and rng.random() < 0.8 else rng.choice(t.state.players)
        options = engine.legal_actions(t.state, seat) or [{"a": "draw"}]
        if t.game == "penki" and rng.random() < 0.3:
            options = CALLOUTS
        action = rng.choice(options)
        cid = f"{name}-{i}"
        i += 1
        try:
            res = await st.apply(table_id, seat, action, client_action_id=cid)
        except Rejected:
            continue
        assert not res.duplicate
        committed[cid] = res.version
        if rng.random() < 0.2:  # a client's retry of the same request
            again = await st.apply(table_id, seat, action, client_action_id=cid)
            assert again.duplicate and again.version == res.version, (again, res)

async def main(url, prefix, table_id, name, n, stop_at):
    st = Store.from_url(url, prefix=prefix)
    committed = {}
    try:
        await st.get_table(table_id)  # connected and warm: then wait for the start
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await asyncio.gather(*(racer(st, table_id, f"{name}.{k}", random.Random(f"{name}.{k}"), committed,
                                     stop_at) for k in range(n)))
    finally:
        await st.close()
    print(json.dumps(committed))

if __name__ == "__main__":
    url, prefix, table_id, name, n, stop_at = sys.argv[1:]
    asyncio.run(main(url, prefix, table_id, name, int(n), int(stop_at)))
'''


def _namespace() -> dict:
    ns: dict = {"__name__": "racer"}
    exec(compile(RACER, "racer", "exec"), ns)
    return ns


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


async def check_consistent(store, table_id: str, committed: dict[str, int]) -> int:
    """The log holds exactly the committed actions, versions 1..n, and replays to the stored state."""
    table = await store.get_table(table_id)
    log = await store.log(table_id)
    assert [e["version"] for e in log] == list(range(1, table.version + 1))
    cids = [e["cid"] for e in log]
    assert len(cids) == len(set(cids))
    assert {e["cid"]: e["version"] for e in log} == committed
    case = await store.export_case(table_id)
    state = engine.new_game(case["game"], case["players"], dealer=case["dealer"], seed=case["seed"])
    for entry in log:
        state = engine.apply(state, entry["seat"], entry["action"]).state
    assert engine.dump(state) == engine.dump(table.state)
    return table.version


# Races run on the real Redis only: fakeredis runs each call to its end without yielding, so
# coroutines there never interleave inside a commit and a broken compare-and-set would pass.
@pytest.mark.redis
@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_fifty_coroutines_racing_commit_each_action_exactly_once(real_store, game):
    store = real_store
    table = await store.create_table(game=game, seats=people(4), seed=2026)
    ns = _namespace()
    committed: dict[str, int] = {}
    await asyncio.gather(*(
        ns["racer"](store, table.id, f"co{k}", random.Random(k), committed, 60) for k in range(50)
    ))
    version = await check_consistent(store, table.id, committed)
    assert version >= 60 or (await store.get_table(table.id)).state.over


@pytest.mark.redis
@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_two_processes_and_local_coroutines_racing_commit_each_action_exactly_once(real_store, redis_url, game):
    table = await real_store.create_table(game=game, seats=people(3), seed=77)
    stop_at = 80
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", RACER, redis_url, real_store.keys.prefix, table.id, f"p{i}", "10", str(stop_at),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        for i in range(2)
    ]
    # All three start together once both processes are up (their start-up takes seconds on a
    # loaded machine, long enough for this process alone to reach stop_at otherwise).
    for p in procs:
        assert (await asyncio.wait_for(p.stdout.readline(), 240)).strip() == b"ready"
    for p in procs:
        p.stdin.write(b"go\n")
        await p.stdin.drain()
    ns = _namespace()
    local: dict[str, int] = {}
    outs = await asyncio.wait_for(asyncio.gather(
        *(p.communicate() for p in procs),
        *(ns["racer"](real_store, table.id, f"main{k}", random.Random(k), local, stop_at) for k in range(10)),
    ), 240)
    committed = dict(local)
    for proc, (out, err) in zip(procs, outs[:2], strict=True):
        assert proc.returncode == 0, err.decode()
        theirs = json.loads(out)
        assert not set(theirs) & set(committed)
        committed.update(theirs)
    assert any(c.startswith("p0") for c in committed) and any(c.startswith("p1") for c in committed)
    version = await check_consistent(real_store, table.id, committed)
    assert version >= stop_at or (await real_store.get_table(table.id)).state.over


@pytest.mark.redis
async def test_penki_callouts_racing_an_action_are_ordered_by_the_first_commit(real_store):
    """Two seats call «СКОЛЬКО КАРТ?» / race the player's action: one commit wins, the rest are judged after it."""
    store = real_store
    rng = random.Random(5)
    table = await store.create_table(game="penki", seats=people(3), seed=31)
    outcomes: list[str] = []
    while not table.state.over and table.version < 150:
        waiting = engine.awaiting(table.state)
        seat = waiting[0]
        tries = [(seat, engine.computer_action(table.state, seat) or {"a": "draw"})]
        tries += [(s, rng.choice(CALLOUTS)) for s in table.state.players if s != seat]
        results = await asyncio.gather(
            *(store.apply(table.id, s, a, expected_version=table.version) for s, a in tries),
            return_exceptions=True,
        )
        wins = [r for r in results if not isinstance(r, BaseException)]
        assert len(wins) <= 1  # every caller named the same version: only one commit can win
        for r in results:
            if isinstance(r, Rejected):
                outcomes.append(r.code)
            elif isinstance(r, BaseException):
                assert getattr(r, "code", None) == "stale", r
                outcomes.append("stale")
            else:
                outcomes.append("ok")
        table = await store.get_table(table.id)
    assert "ok" in outcomes and "stale" in outcomes
    log = await store.log(table.id)
    assert [e["version"] for e in log] == list(range(1, table.version + 1))
