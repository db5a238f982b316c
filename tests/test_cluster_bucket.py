"""One dead cluster primary does not stall the healthy shards (issue 27.4; ``make test-cluster``
only, skipped elsewhere).

On a Redis Cluster a move's action bucket is taken in a call of its own (its key is on its own
slot). With the primary holding a user's bucket SIGKILLed, moves of that user on a table whose
primary is healthy are applied at once — the bucket fails open within
``store.common.BUCKET_WAIT``, as the request limits do (``buckets_skipped`` counts it; before,
each move waited for the failover or failed 503) — and none is applied twice. Then the killed
node's replica takes over and the node is started again as a replica
(``tests/test_cluster_service.supervise``), so the cluster is whole for what follows.
"""

from __future__ import annotations

import asyncio

import pytest
from conftest import CLUSTER_URL

import engine
from store import LobbySettings, Seat

pytestmark = [
    pytest.mark.redis,
    pytest.mark.skipif(CLUSTER_URL is None, reason="needs make test-cluster (KARTY_TEST_CLUSTER)"),
]


async def test_a_dead_primary_holding_the_bucket_does_not_refuse_moves_on_a_healthy_shard(real_store):
    import json
    import os
    import signal
    import subprocess
    from pathlib import Path

    from test_cluster_service import supervise

    store = real_store
    humans = (111, 222)
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in humans]
    table = await store.create_table(game="prsi", seats=seats, seed=5,
                                     settings=LobbySettings(players=2, turn_seconds=None))
    table_node = store.redis.get_node_from_key(store.keys.table(table.id)).port
    user = next(n for n in range(10_000)  # someone whose action bucket lives on another primary
                if store.redis.get_node_from_key(store.keys.action_bucket(n)).port != table_node)
    port = store.redis.get_node_from_key(store.keys.action_bucket(user)).port
    replication = subprocess.run(["redis-cli", "-p", str(port), "info", "replication"], capture_output=True,
                                 text=True, check=True).stdout
    replicas = [int(part.split("=")[1]) for line in replication.splitlines() if line.startswith("slave")
                for part in line.split(":", 1)[1].split(",") if part.startswith("port=")]
    nodes = {n["port"]: n for n in json.loads(os.environ["KARTY_TEST_CLUSTER_NODES"])}
    frozen = [int(Path(nodes[p]["pidfile"]).read_text().strip()) for p in (port,)]
    assert port != table_node and replicas
    os.kill(frozen[0], signal.SIGKILL)
    try:
        applied = 0
        for _ in range(6):
            state = (await store.get_table(table.id)).state
            mover = state.to_move
            action = engine.legal_actions(state, mover)[0]
            result = await store.apply(table.id, mover, action, client_action_id=f"m{applied}",
                                       limit=(user, 10.0, 20))
            applied += 1
            assert result.version == table.version + applied and not result.duplicate
        assert getattr(store, "buckets_skipped", 0) >= 1  # the bucket was not there: the moves went on
        log = await store.log(table.id)
        assert [e["version"] for e in log] == list(range(table.version + 1, table.version + applied + 1))
    finally:
        await supervise(nodes[port])  # its replica took over; the killed node starts again as a replica
    # the bucket is back once its slot is served again
    for _ in range(100):
        try:
            assert await store.take_action(user, 10.0, 20) == 0.0
            break
        except Exception:
            await asyncio.sleep(0.2)
