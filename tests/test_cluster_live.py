"""The live feed on a real Redis Cluster (``make test-cluster`` only; skipped elsewhere).

Two stores stand for two service processes. Checked: commits ``SPUBLISH`` on the table's
own slot and reach the other process's listeners through one ``SSUBSCRIBE`` connection
per primary; every version arrives once and in order (with every event, also when a
gap was bridged from the log) after the table's slot moved to another primary, after
the node dropped the pub/sub connection, and after a manual failover of the table's
primary to its replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from typing import Any

import pytest
from conftest import CLUSTER_URL
from redis.asyncio import Redis

import engine
from store import LobbySettings, Seat

pytestmark = [
    pytest.mark.redis,
    pytest.mark.skipif(CLUSTER_URL is None, reason="needs make test-cluster (KARTY_TEST_CLUSTER)"),
]


class Recorder:
    """A live-feed listener: every version it is given, with its events."""

    def __init__(self) -> None:
        self.got: list[tuple[int, list]] = []
        self.arrived = asyncio.Event()

    def deliver(self, known, events, by, lagged, texts=None) -> None:
        if events is None:  # the move's own
            events = known.move.get("events")
        self.got.append((known.version, list(events or [])))
        self.arrived.set()

    def gone(self) -> None:
        pass

    async def until(self, version: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not (self.got and self.got[-1][0] >= version):
            left = deadline - time.monotonic()
            assert left > 0, f"stopped at {self.got[-1:]} waiting for version {version}"
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), min(left, 1.0))


async def new_table(store, seed: int = 5):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in (111, 222)]
    return await store.create_table(game="prsi", seats=seats, seed=seed,
                                    settings=LobbySettings(players=2, turn_seconds=None))


async def move(store, table_id: str, retry_for: float = 30.0):
    """One legal move on the table's current version, retried while the cluster is unavailable."""
    deadline = time.monotonic() + retry_for
    while True:
        try:
            table = await store.get_table(table_id)
            seat = engine.awaiting(table.state)[0]
            return await store.apply(table_id, seat, engine.computer_action(table.state, seat))
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def check_in_order(store, rec: Recorder, table_id: str, first: int) -> None:
    """``rec`` got versions after ``first`` once each, ascending, with every event of the log."""
    versions = [v for v, _ in rec.got]
    assert versions == sorted(set(versions)), versions
    log = {e["version"]: e["events"] for e in await store.log(table_id)}
    last = versions[-1]
    assert [ev for _, evs in rec.got for ev in evs] == [ev for v in range(first + 1, last + 1) for ev in log[v]]


def nodes() -> list[dict[str, Any]]:
    return json.loads(os.environ["KARTY_TEST_CLUSTER_NODES"])


class Admin:
    """One plain connection per node of the test cluster, for CLUSTER commands."""

    def __init__(self) -> None:
        self.by_port = {n["port"]: Redis(host="127.0.0.1", port=n["port"], decode_responses=True) for n in nodes()}
        for r in self.by_port.values():
            r.response_callbacks.pop("CLUSTER NODES", None)  # the text itself, parsed below

    async def close(self) -> None:
        for r in self.by_port.values():
            await r.aclose()

    async def topology(self) -> list[dict[str, Any]]:
        """``[{id, port, primary: bool, of: primary id or None, slots: [(a, b)]}]`` (CLUSTER NODES)."""
        text = ""
        for r in self.by_port.values():
            try:
                text = await r.execute_command("CLUSTER NODES")
                break
            except Exception:  # a node killed by another test, not back yet
                continue
        out = []
        for line in text.splitlines():
            parts = line.split()
            if "fail" in parts[2] or "noaddr" in parts[2]:
                continue
            slots = []
            for rng in parts[8:]:
                if rng.startswith("["):
                    continue
                a, _, b = rng.partition("-")
                slots.append((int(a), int(b or a)))
            out.append({"id": parts[0], "port": int(parts[1].split("@")[0].rsplit(":", 1)[1]),
                        "primary": "master" in parts[2], "of": None if parts[3] == "-" else parts[3],
                        "slots": slots})
        return out

    async def owner(self, slot: int) -> dict[str, Any]:
        for n in await self.topology():
            if n["primary"] and any(a <= slot <= b for a, b in n["slots"]):
                return n
        raise AssertionError(f"slot {slot} has no owner")

    async def move_slot(self, slot: int, to: dict[str, Any]) -> None:
        """Migrate ``slot`` with its keys to the primary ``to`` (the redis-cli --cluster reshard steps)."""
        src = await self.owner(slot)
        s, d = self.by_port[src["port"]], self.by_port[to["port"]]
        await d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src["id"])
        await s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", to["id"])
        while keys := await s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):
            await s.execute_command("MIGRATE", "127.0.0.1", to["port"], "", 0, 5000, "KEYS", *keys)
        for r in (d, s, *(r for p, r in self.by_port.items() if p not in (src["port"], to["port"]))):
            with contextlib.suppress(Exception):  # a replica refuses SETSLOT: it learns from its primary
                await r.execute_command("CLUSTER", "SETSLOT", slot, "NODE", to["id"])

    async def failover(self, replica_port: int) -> None:
        """A manual failover: the replica takes over its primary's slots (the primary becomes its
        replica). Asked once the replica is in sync (a node refuses or lets it time out before),
        and again should it time out on a loaded machine."""
        r = self.by_port[replica_port]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            info = await r.info("replication")
            if info.get("role") == "slave" and info.get("master_link_status") == "up":
                break
            await asyncio.sleep(0.1)
        for _ in range(3):
            await r.execute_command("CLUSTER", "FAILOVER")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                me = next((n for n in await self.topology() if n["port"] == replica_port), None)
                took_over = me is not None and me["primary"] and me["slots"]
                if took_over and (await r.info("replication")).get("connected_slaves") == 1:
                    return
                await asyncio.sleep(0.1)
        raise AssertionError(f"{replica_port} did not take over")


def slot_of(store, table_id: str) -> int:
    return store.redis.keyslot(store.keys.table(table_id))


async def test_commits_reach_another_process_by_sharded_pub_sub_one_connection_per_primary(
    real_store, real_store_factory
):
    here, there = real_store, await real_store_factory()
    admin = Admin()
    try:
        owners: dict[int, str] = {}
        tables = []
        for seed in range(60):  # tables until every primary holds one
            t = await new_table(there, seed=seed)
            port = (await admin.owner(slot_of(there, t.id)))["port"]
            if port not in owners:
                owners[port] = t.id
                tables.append(t)
            if len(owners) == 3:
                break
        assert len(owners) == 3
        recs = {}
        for t in tables:
            recs[t.id] = Recorder()
            await here.watch(t.id, recs[t.id])
        feed = here.live.feed
        assert feed.publish == "SPUBLISH"
        assert sorted(int(name.rsplit(":", 1)[1]) for name in feed.subs) == sorted(owners)  # one per primary
        for _ in range(4):
            for t in tables:
                await move(there, t.id)
        for t in tables:
            await recs[t.id].until(t.version + 4)
            assert [v for v, _ in recs[t.id].got] == list(range(t.version + 1, t.version + 5))
            await check_in_order(there, recs[t.id], t.id, t.version)
        assert here.live.resyncs == 0
    finally:
        await admin.close()


async def test_a_table_whose_slot_moves_to_another_primary_is_followed_there(real_store, real_store_factory):
    here, there = real_store, await real_store_factory()
    admin = Admin()
    try:
        t = await new_table(there)
        rec = Recorder()
        await here.watch(t.id, rec)
        done = await move(there, t.id)
        await rec.until(done.version)
        slot = slot_of(there, t.id)
        src = await admin.owner(slot)
        dst = next(n for n in await admin.topology() if n["primary"] and n["id"] != src["id"])
        await admin.move_slot(slot, dst)
        last = done.version
        for _ in range(3):  # the committing process follows MOVED; the listener is moved by sunsubscribe
            last = (await move(there, t.id)).version
        await rec.until(last)
        await check_in_order(there, rec, t.id, t.version)
        assert here.live.feed.moves >= 1
        assert here.live.feed.home[there.keys.events(t.id)].name.endswith(f":{dst['port']}")
    finally:
        await admin.close()


async def test_a_dropped_pub_sub_connection_is_made_again_and_what_it_missed_delivered(
    real_store, real_store_factory
):
    here, there = real_store, await real_store_factory()
    admin = Admin()
    try:
        t = await new_table(there)
        rec = Recorder()
        await here.watch(t.id, rec)
        node = await admin.owner(slot_of(there, t.id))
        lost = here.live.feed.lost
        # The node drops every pub/sub client; commits go on meanwhile.
        await admin.by_port[node["port"]].execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        last = (await move(there, t.id)).version
        last = (await move(there, t.id)).version
        await rec.until(last)
        last = (await move(there, t.id)).version
        await rec.until(last)
        await check_in_order(there, rec, t.id, t.version)
        assert here.live.feed.lost > lost
    finally:
        await admin.close()


async def test_a_failover_of_the_tables_primary_keeps_the_feed_going(real_store, real_store_factory):
    here, there = real_store, await real_store_factory()
    admin = Admin()
    try:
        t = await new_table(there)
        rec = Recorder()
        await here.watch(t.id, rec)
        primary = await admin.owner(slot_of(there, t.id))
        replica = next(n for n in await admin.topology() if n["of"] == primary["id"])
        await admin.failover(replica["port"])
        last = t.version
        for _ in range(3):
            last = (await move(there, t.id)).version
        await rec.until(last)
        await check_in_order(there, rec, t.id, t.version)
        assert here.live.feed.home[there.keys.events(t.id)].name.endswith(f":{replica['port']}")
        await admin.failover(primary["port"])  # and back, as the other tests found it
        last = (await move(there, t.id)).version
        await rec.until(last)
        await check_in_order(there, rec, t.id, t.version)
    finally:
        await admin.close()
