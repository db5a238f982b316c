"""The network between the service and Redis, faulted (issue 27.6, a first part): moves through
:class:`faultproxy.FaultProxy` (latency with jitter each way, every connection reset now and
then, connections left dead until used), every operation recorded (invoke, then ok / fail /
unknown) and the history checked against the store's logs by :func:`check`.

Short in ``make test`` (``KARTY_NETFAULT_TABLES`` × ``KARTY_NETFAULT_MOVES``); ``make soak`` runs it
larger. Figures in ``test-output/netfaults/summary.json``: per fault mix, moves acknowledged,
lost (must be 0), doubled (must be 0), unknown outcomes resolved by retrying the same
``client_action_id``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy
from test_store_restart import REDIS_SERVER, OwnRedis

import engine
from store import UNAVAILABLE, LobbySettings, Seat, Store, StoreError

TABLES = int(os.environ.get("KARTY_NETFAULT_TABLES", "4"))
MOVES = int(os.environ.get("KARTY_NETFAULT_MOVES", "25"))  # per table
OUT = Path(__file__).resolve().parent.parent / "test-output" / "netfaults"

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="no redis-server (make system-deps)")


def check(history: list[dict[str, Any]], logs: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    """The checker. ``history``: ``{table, cid, version?, outcome: ok|fail|unknown}`` in order of
    completion; ``logs``: each table's committed log (``store.log``). Raises AssertionError when
    the acknowledged versions of a table do not form one chain without a gap, an acknowledged
    move is missing from the log (lost) or at another version, a move is in the log twice
    (doubled), or the log has a gap. Returns the counts."""
    counts = {"acknowledged": 0, "lost": 0, "doubled": 0, "unknown": 0, "failed": 0}
    for table, log in logs.items():
        versions = [e["version"] for e in log]
        assert versions == list(range(1, len(log) + 1)), f"{table}: the log has a gap: {versions}"
        cids = [e["cid"] for e in log if e.get("cid")]
        doubled = len(cids) - len(set(cids))
        counts["doubled"] += doubled
        at = {e["cid"]: e["version"] for e in log if e.get("cid")}
        acked = [h for h in history if h["table"] == table and h["outcome"] == "ok"]
        chain = [h["version"] for h in acked]
        assert chain == sorted(set(chain)), f"{table}: acknowledged versions out of order or repeated: {chain}"
        for h in acked:
            counts["acknowledged"] += 1
            if at.get(h["cid"]) != h["version"]:
                counts["lost"] += 1
        counts["unknown"] += sum(1 for h in history if h["table"] == table and h["outcome"] == "unknown")
        counts["failed"] += sum(1 for h in history if h["table"] == table and h["outcome"] == "fail")
    assert counts["lost"] == 0 and counts["doubled"] == 0, counts
    return counts


async def _player(store: Store, table_id: str, history: list[dict[str, Any]], moves: int) -> None:
    """One table's moves, one at a time, each retried with its own client_action_id until its
    outcome is known (a lost answer is ``unknown`` until a retry says ``duplicate`` or applies it)."""
    done = 0
    while done < moves:
        try:
            table = await store.get_table(table_id)
        except UNAVAILABLE:
            await asyncio.sleep(0.02)
            continue
        if table.state.over:
            return
        seat = table.state.to_move
        legal = engine.legal_actions(table.state, seat)
        cid = f"{table_id}:{table.version}"
        while True:
            try:
                result = await store.apply(table_id, seat, legal[0], client_action_id=cid,
                                           expected_version=table.version)
            except UNAVAILABLE:
                history.append({"table": table_id, "cid": cid, "outcome": "unknown"})
                await asyncio.sleep(0.01)
                continue  # the same move again: applied once at most (commit.lua)
            except StoreError as e:  # stale: someone else (the timer) moved; judged afresh
                history.append({"table": table_id, "cid": cid, "outcome": "fail", "error": e.code})
                break
            history.append({"table": table_id, "cid": cid, "outcome": "ok", "version": result.version,
                            "duplicate": result.duplicate})
            done += 1
            break


async def _settled(read):
    """The checker's own read, retried until the network lets it through (not under test)."""
    for _ in range(50):
        try:
            return await read()
        except UNAVAILABLE:
            await asyncio.sleep(0.05)
    return await read()


async def _faults(proxy: FaultProxy, stop: asyncio.Event, rng: random.Random, mix: str) -> None:
    while not stop.is_set():
        await asyncio.sleep(rng.uniform(0.05, 0.2))
        if mix == "resets":
            proxy.reset_all()
        elif mix == "dead connections":
            proxy.forget()


@pytest.mark.parametrize("mix", ["latency 0.5 ms ± 0.3", "resets", "dead connections"])
async def test_moves_through_a_faulty_network_are_never_lost_or_doubled(tmp_path, mix):
    server = OwnRedis(tmp_path)
    await server.start()
    proxy = await FaultProxy("127.0.0.1", server.port, seed=27).start()
    proxy.delay(0.5, 0.3)
    store = Store.from_url(proxy.url, prefix="netfault", timeout=2, pool_timeout=2)
    stop = asyncio.Event()
    try:
        seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in (1, 2, 3)]
        tables = [await store.create_table(game="prsi", seats=seats, seed=n,
                                           settings=LobbySettings(players=3, turn_seconds=None))
                  for n in range(TABLES)]
        history: list[dict[str, Any]] = []
        faults = asyncio.create_task(_faults(proxy, stop, random.Random(27), mix))
        await asyncio.gather(*(_player(store, t.id, history, MOVES) for t in tables))
        stop.set()
        await faults
        proxy.heal()
        proxy.delay(0)
        logs = {t.id: await _settled(lambda t=t: store.log(t.id)) for t in tables}
        counts = check(history, logs)
        assert counts["acknowledged"] >= TABLES * min(MOVES, 10)
        if mix != "latency 0.5 ms ± 0.3":
            assert proxy.resets > 0  # the faults happened
        OUT.mkdir(parents=True, exist_ok=True)
        name = mix.split()[0]
        (OUT / f"{name}.json").write_text(json.dumps({"mix": mix, **counts, "resets": proxy.resets,
                                                      "duplicates_answered": sum(1 for h in history
                                                                                 if h.get("duplicate"))}))
    finally:
        stop.set()
        await store.close()
        await proxy.close()
        server.stop()


def test_the_checker_finds_a_lost_and_a_doubled_move():
    log = [{"version": 1, "cid": "a"}, {"version": 2, "cid": "b"}]
    assert check([{"table": "t", "cid": "a", "outcome": "ok", "version": 1}], {"t": log})["acknowledged"] == 1
    with pytest.raises(AssertionError):  # acknowledged, not in the log
        check([{"table": "t", "cid": "c", "outcome": "ok", "version": 3}], {"t": log})
    with pytest.raises(AssertionError):  # in the log twice
        check([], {"t": [*log, {"version": 3, "cid": "a"}]})
    with pytest.raises(AssertionError):  # a gap
        check([], {"t": [{"version": 1, "cid": "a"}, {"version": 3, "cid": "b"}]})
    with pytest.raises(AssertionError):  # acknowledged versions out of order
        check([{"table": "t", "cid": "b", "outcome": "ok", "version": 2},
               {"table": "t", "cid": "a", "outcome": "ok", "version": 1}], {"t": log})
