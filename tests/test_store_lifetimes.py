"""S7 lifetimes and the commit's exactly-once answers, where the mutation run (``make mutate``)
found them unchecked: what the worker and the sweeper forget when a table expires, a retry
that is legal again after the table moved on, a compacted log's lifetime.

Every test runs on fakeredis and on the real Redis; time is passed in, never waited for.
"""

from __future__ import annotations

import pytest
from conftest import play_to_last_move

import engine
from store import LobbySettings, Seat, StoreError
from store.common import FINISHED_TTL
from store.live import Known


def people(n: int) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


T30 = LobbySettings(players=2, turn_seconds=30)


async def test_s7_a_worker_finding_its_table_expired_forgets_it(store):
    """S4, S7: a table whose state expired (48 h) while a deadline was pending: the worker
    claims it, finds nothing, and drops both its due time and its version entry."""
    table = await store.create_table(game="prsi", seats=people(2), settings=T30, seed=3)
    assert await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id) is not None
    await store.redis.delete(store.keys.table(table.id))  # expired
    assert await store.tick(now=table.deadline + 0.01) == 0
    assert await store.next_due(table.id) is None
    assert await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id) is None


async def test_s7_the_sweeper_forgets_an_expired_table_and_its_due_time(store):
    table = await store.create_table(game="prsi", seats=people(2), settings=T30, seed=3)
    await store.redis.delete(store.keys.table(table.id))  # expired
    assert await store.sweep(now=table.deadline - 1, lease=None) == 0
    assert await store.next_due(table.id) is None  # no worker will claim a table that is gone
    assert await store.redis.hget(store.keys.deadline_versions_of(store._shard(table.id)), table.id) is None


async def test_a_retry_legal_again_after_the_table_moved_on_answers_its_first_outcome(store):
    """A client's retry of a committed move arrives after the others moved and the same
    action is legal again: it is the first outcome again (commit.lua finds its id), with
    that move's own events, and nothing is committed."""
    table = await store.create_table(game="prsi", seats=people(2), seed=5)
    a = engine.awaiting(table.state)[0]
    first = await store.apply(table.id, a, {"a": "draw"}, client_action_id="tap-1")
    b = engine.awaiting(first.table.state)[0]
    assert b != a
    second = await store.apply(table.id, b, {"a": "draw"})
    assert engine.awaiting(second.table.state) == [a]
    assert {"a": "draw"} in engine.legal_actions(second.table.state, a)  # the retry would be accepted
    again = await store.apply(table.id, a, {"a": "draw"}, client_action_id="tap-1")
    assert again.duplicate and again.version == first.version == 1
    assert again.events == first.events and again.events  # the first draw's, not the table's latest
    assert (await store.get_table(table.id)).version == 2
    assert [e["cid"] for e in await store.log(table.id)] == ["tap-1", None]


async def test_s7_a_finished_tables_compacted_log_is_kept_as_long_as_its_summary(store):
    table = await store.create_table(game="prsi", seats=people(2), seed=7)
    while not table.state.over:
        seat = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat),
                                   client_action_id=f"m{table.version}")).table
    r, k = store.redis, store.keys
    assert await r.llen(k.log(table.id)) == 1  # compacted: one entry
    for key in (k.table(table.id), k.log(table.id)):
        assert FINISHED_TTL - 5 <= await r.ttl(key) <= FINISHED_TTL, key
    assert [e["version"] for e in await store.log(table.id)] == list(range(1, table.version + 1))
    assert not await store._compact(await store._doc(table.id))  # once only
    assert await r.llen(k.log(table.id)) == 1


async def test_s7_a_move_on_a_table_that_expired_meanwhile_is_not_found(store):
    """A move made on the document a process holds (the worker's claimed copy) after the table
    expired in Redis: the commit itself refuses it as not found, never writes it into a fresh
    key nor retries it forever."""
    table = await store.create_table(game="prsi", seats=people(2), seed=5)
    seat = engine.awaiting(table.state)[0]
    held = Known.parse(await store.redis.hget(store.keys.table(table.id), "doc"))
    await store.redis.delete(store.keys.table(table.id))  # the 48 h ran out
    with pytest.raises(StoreError) as err:
        await store.apply(table.id, seat, engine.computer_action(table.state, seat), client_action_id="late",
                          known=held)
    assert err.value.code == "not_found"
    assert not await store.redis.exists(store.keys.table(table.id), store.keys.log(table.id))


async def test_s7_the_sweeper_compacts_a_finished_game_whose_follow_up_was_lost(store):
    """The last commit's process died before its follow-up: the sweeper's repair also turns
    the finished game's log into its one compact entry (kept 7 days like its summary)."""
    table = await store.create_table(game="prsi", seats=people(2), seed=9)
    now = store.clock()
    table, seat, action = await play_to_last_move(store, table, now)

    async def died(*args, **kwargs):
        del store._after_commit

    store._after_commit = died
    await store.apply(table.id, seat, action, now=now)
    assert await store.redis.llen(store.keys.log(table.id)) == table.version + 1  # not compacted
    assert await store.sweep(now=now + 30, lease=None) == 1
    assert await store.redis.llen(store.keys.log(table.id)) == 1
    assert [e["version"] for e in await store.log(table.id)] == list(range(1, table.version + 2))
