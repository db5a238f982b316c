"""store.durable: a commit is reported only once enough replicas have it (WAIT); otherwise
"try again" (one of store.UNAVAILABLE), and the retry with the same client_action_id is
exactly-once. Runs on the real Redis (no replica: asking for one can never be met) and,
under ``make test-cluster``, on the cluster (one replica per primary)."""

from __future__ import annotations

import pytest

import engine
from store import UNAVAILABLE, LobbySettings, Seat, Store
from store.connect import is_cluster
from store.durable import NotReplicated


def seats():
    return [Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in (1, 2)]


def demanding(store: Store, replicas: int) -> Store:
    """Another Store on the same client and prefix that asks ``replicas`` replicas per commit."""
    st = Store(store.redis, prefix=store.keys.prefix, replicas=replicas)
    st._commit.timeout_ms = 100
    return st


@pytest.mark.redis
async def test_an_unconfirmed_commit_is_try_again_and_its_retry_is_exactly_once(real_store):
    table = await real_store.create_table(game="prsi", seats=seats(), seed=5,
                                          settings=LobbySettings(players=2, turn_seconds=None))
    seat = engine.awaiting(table.state)[0]
    action = engine.computer_action(table.state, seat)
    impossible = demanding(real_store, 5)  # more replicas than any node has
    with pytest.raises(NotReplicated) as caught:
        await impossible.apply(table.id, seat, action, client_action_id="tap-1")
    assert isinstance(caught.value, UNAVAILABLE)  # the web app's 503 "unavailable", retry later
    # The retry is judged against what the primary holds: the first try is there, once.
    settled = demanding(real_store, 1 if is_cluster(real_store.redis) else 0)
    again = await settled.apply(table.id, seat, action, client_action_id="tap-1")
    assert again.duplicate and again.version == 1
    log = await real_store.log(table.id)
    assert [e["cid"] for e in log] == ["tap-1"]


@pytest.mark.redis
async def test_conflicts_and_refusals_wait_for_nothing(real_store):
    table = await real_store.create_table(game="prsi", seats=seats(), seed=5,
                                          settings=LobbySettings(players=2, turn_seconds=None))
    impossible = demanding(real_store, 5)
    seat = engine.awaiting(table.state)[0]
    other = next(s for s in ("u1", "u2") if s != seat)
    with pytest.raises(engine.Rejected):  # the rules refuse it before anything is written
        await impossible.apply(table.id, other, {"a": "draw"})
    from store import StoreError

    with pytest.raises(StoreError) as stale:  # refused before any write: nothing to wait for
        await impossible.apply(table.id, seat, engine.computer_action(table.state, seat), expected_version=7)
    assert stale.value.code == "stale"
