"""The live path in the store: one round trip per committed move, apply on the known
document, conflicts answered with the current one, compact finished tables."""

from __future__ import annotations

import time
import uuid

import pytest

import engine
from engine.errors import Rejected
from store import LobbySettings, Seat, StoreError

OFF = LobbySettings(players=3, turn_seconds=None)


def people(n: int = 3) -> list[Seat]:
    return [Seat(seat=f"u{100 + i}", user_id=100 + i, name=f"Player {i}") for i in range(n)]


def next_move(state) -> tuple[str, dict]:
    seat = engine.awaiting(state)[0]
    return seat, engine.computer_action(state, seat)


def _queued(pipe) -> list[str]:
    """The command names queued on a pipeline, of the single-server or the cluster client."""
    stack = getattr(pipe, "command_stack", None)
    if stack is not None:
        return [str(c[0][0]) for c in stack]
    return [str(c.args[0]) for c in pipe._execution_strategy._command_queue]  # redis-py's ClusterPipeline


class Trips:
    """Counts round trips of a store's Redis client: each command or pipeline sent (on its
    pipelined connection too, :mod:`store.pipelined`, where a move's call goes)."""

    def __init__(self, store) -> None:
        self.store = store
        self.commands: list[str] = []
        self._real = store.redis.execute_command
        self._real_pipeline = store.redis.pipeline

        async def counting(*args, **kwargs):
            self.commands.append(str(args[0]))
            return await self._real(*args, **kwargs)

        def pipeline(*args, **kwargs):
            pipe = self._real_pipeline(*args, **kwargs)
            real_execute = pipe.execute

            async def execute(*a, **k):
                self.commands.append("PIPELINE:" + ",".join(_queued(pipe)))
                return await real_execute(*a, **k)

            pipe.execute = execute
            return pipe

        store.redis.execute_command = counting
        store.redis.pipeline = pipeline
        if store.pipelined is not None:
            real_pipelined = store.pipelined.execute

            async def pipelined(*args):
                self.commands.append(str(args[0]))
                return await real_pipelined(*args)

            store.pipelined.execute = pipelined

    def close(self) -> None:
        del self.store.redis.execute_command
        del self.store.redis.pipeline
        if self.store.pipelined is not None:
            del self.store.pipelined.execute


TIMED = LobbySettings(players=3, turn_seconds=30)


async def test_a_move_on_a_known_table_is_one_round_trip(store):
    """POST → apply on the known document → one script: on a single Redis the action bucket's
    token, the commit (log, id, publish) and its follow-up (due time, outbox entries) at once
    (move.lua); on a cluster the bucket, the commit and the batched follow-up are three calls."""
    table = await store.create_table(game="prsi", seats=people(), settings=TIMED, seed=3, chat_id=-7)
    known = await store.current(table.id)  # subscribes and reads once
    # the scripts are loaded now (the bucket's too: on a cluster its key's node loads it then)
    began = time.monotonic()
    warm = await store.apply(table.id, *next_move(known.state), limit=(100, 10.0, 20))
    trips = Trips(store)
    try:
        seat, action = next_move(warm.table.state)
        res = await store.apply(table.id, seat, action, client_action_id=uuid.uuid4().hex,
                                limit=(100, 10.0, 20))
    finally:
        trips.close()
    assert res.version == table.version + 2
    if store.fused:
        assert trips.commands == ["EVALSHA"], trips.commands
    else:  # the bucket, then the commit (pipelined with WAIT 1, store.durable), then the follow-up
        assert trips.commands[1] == "PIPELINE:EVALSHA,WAIT" and len(trips.commands) == 3, trips.commands
    assert store.live.peek(table.id).version == res.version  # known here without a read
    # … and the follow-up is there: the next turn's due time, its version, the turn's outbox entry
    shard = store._shard(table.id)
    due = await store.redis.zscore(store.keys.deadlines_of(shard), table.id)
    assert due == pytest.approx(res.table.deadline, abs=0.01)
    assert int(await store.redis.hget(store.keys.deadline_versions_of(shard), table.id)) == res.version
    entries = await store.redis.xrange(store.keys.outbox_of(shard))
    assert any('"kind": "turn"' in f["data"] or '"kind":"turn"' in f["data"] for _, f in entries
               if f"{res.version}" in f["data"]), entries
    # two tokens taken of 20; the bucket refills at 10 a second meanwhile (a loaded machine is slow)
    refill = 10.0 * (time.monotonic() - began)
    assert 18 - 1e-6 <= float(await store.redis.hget(store.keys.action_bucket(100), "t")) <= 18 + refill + 1e-6


async def test_an_empty_bucket_refuses_the_move_and_applies_nothing(store):
    """``limit``: a move with no token left raises TooFast (seconds to wait) and changes nothing;
    a move the rules refuse still costs its token (a held-down button is limited either way)."""
    from store import TooFast

    table = await store.create_table(game="prsi", seats=people(), settings=TIMED, seed=8, chat_id=-7)
    state = (await store.current(table.id)).state
    seat, action = next_move(state)
    wrong = next(s for s in state.players if s != seat)
    with pytest.raises(Rejected):
        await store.apply(table.id, wrong, action, limit=(100, 1.0, 2))
    first = await store.apply(table.id, seat, action, limit=(100, 1.0, 2))  # the second token
    due = await store.redis.zscore(store.keys.deadlines_of(store._shard(table.id)), table.id)
    with pytest.raises(TooFast) as err:
        await store.apply(table.id, *next_move(first.table.state), client_action_id="late", limit=(100, 1.0, 2))
    assert 0 < err.value.wait <= 1.0
    assert (await store.get_table(table.id)).version == first.version
    assert [e["version"] for e in await store.log(table.id)] == [first.version]
    assert await store.redis.zscore(store.keys.deadlines_of(store._shard(table.id)), table.id) == due
    assert not await store.redis.hget(store.keys.cids(table.id), f"{seat}|late")
    assert store.live.peek(table.id).version == first.version


async def test_a_stale_known_document_costs_one_retry_and_no_reload(store, store_factory):
    table = await store.create_table(game="prsi", seats=people(), settings=OFF, seed=4)
    old = await store.current(table.id)
    other = await store_factory()
    seat, action = next_move(table.state)
    await other.apply(table.id, seat, action)  # another process moves; we have not heard yet
    seat2, action2 = next_move((await other.get_table(table.id)).state)
    trips = Trips(store)
    try:
        # on the old document the move is not legal (another seat's turn): the store checks first
        res = await store.apply(table.id, seat2, action2, known=old)
    finally:
        trips.close()
    assert res.version == table.version + 2
    log = await store.log(table.id)
    assert [(e["seat"], e["action"]) for e in log] == [(seat, action), (seat2, action2)]


async def test_a_conflict_answers_with_the_current_document(store, store_factory):
    """Two processes on the same version of a Penki table: the loser retries on the document
    the conflict answered with (no extra read), and both moves are judged in order."""
    table = await store.create_table(game="penki", seats=people(), settings=OFF, seed=9)
    a, b = store, await store_factory()
    ka, kb = await a.current(table.id), await b.current(table.id)
    seat, action = next_move(table.state)
    first = await a.apply(table.id, seat, action, known=ka)
    trips = Trips(b)
    try:
        with pytest.raises(Rejected):  # the same move again is no longer legal
            await b.apply(table.id, seat, action, known=kb)
    finally:
        trips.close()
    assert first.version == table.version + 1
    # judged again on the answer's document: no read (on a cluster the script is pipelined with WAIT 1)
    assert trips.commands in (["EVALSHA"], ["PIPELINE:EVALSHA,WAIT"])


async def test_expected_version_ahead_of_the_known_one_reads_again_instead_of_stale(store, store_factory):
    table = await store.create_table(game="prsi", seats=people(), settings=OFF, seed=5)
    old = await store.current(table.id)
    other = await store_factory()
    seat, action = next_move(table.state)
    done = await other.apply(table.id, seat, action)
    seat2, action2 = next_move(done.table.state)
    res = await store.apply(table.id, seat2, action2, expected_version=done.version, known=old)
    assert res.version == done.version + 1
    with pytest.raises(StoreError) as err:  # behind the real version: stale, as before
        await store.apply(table.id, *next_move(res.table.state), expected_version=done.version)
    assert err.value.code == "stale"


async def test_a_retried_id_is_a_duplicate_even_with_its_old_expected_version(store):
    table = await store.create_table(game="prsi", seats=people(), settings=OFF, seed=6)
    seat, action = next_move(table.state)
    first = await store.apply(table.id, seat, action, client_action_id="x1", expected_version=table.version)
    again = await store.apply(table.id, seat, action, client_action_id="x1", expected_version=table.version)
    assert again.duplicate and again.version == first.version and again.events == first.events
    assert await store.redis.hget(store.keys.cids(table.id), f"{seat}|x1") == str(first.version)


async def play_to_the_end(store, game: str, seed: int):
    table = await store.create_table(game=game, seats=people(), settings=OFF, seed=seed)
    cids = []
    state = table.state
    for _ in range(2000):
        if state.over:
            break
        seat, action = next_move(state)
        cid = uuid.uuid4().hex
        res = await store.apply(table.id, seat, action, client_action_id=cid)
        cids.append((seat, action, cid, res))
        state = res.table.state
    assert state.over
    return table, cids


async def test_a_finished_table_is_compacted_and_keeps_every_action_and_id(store):
    table, moves = await play_to_the_end(store, "prsi", 7)
    log = await store.log(table.id)
    assert [(e["version"], e["seat"], e["action"], e["cid"]) for e in log] == [
        (res.version, seat, action, cid) for seat, action, cid, res in moves
    ]
    assert all(e["events"] == [] and e["by"] == "player" for e in log)
    assert await store.redis.llen(store.keys.log(table.id)) == 1  # one compressed entry
    assert not await store.redis.exists(store.keys.cids(table.id))
    case = await store.export_case(table.id)
    state = engine.new_game(case["game"], case["players"], dealer=case["dealer"], seed=case["seed"])
    for entry in log:
        state = engine.apply(state, entry["seat"], entry["action"]).state
    assert state.over and state.version == len(moves)
    # a retry of the final move, and of an early one, after the end: duplicates, not errors
    seat, action, cid, res = moves[-1]
    again = await store.apply(table.id, seat, action, client_action_id=cid)
    assert again.duplicate and again.version == res.version and again.events == res.events
    seat, action, cid, res = moves[2]
    again = await store.apply(table.id, seat, action, client_action_id=cid)
    assert again.duplicate and again.version == res.version
    assert (await store.log(table.id, since=len(moves) - 2))[0]["version"] == len(moves) - 1
    assert not await store._compact((await store.current(table.id)).doc)  # idempotent


@pytest.mark.redis
@pytest.mark.parametrize(("game", "limit"), [("prsi", 16 * 1024), ("penki", 24 * 1024)])
async def test_a_finished_match_is_small_in_redis(real_store, game, limit):
    seed = {"prsi": 7, "penki": 1}[game]  # a Penki seed whose computer players finish the game
    table, moves = await play_to_the_end(real_store, game, seed)
    k = real_store.keys
    used = 0
    for key in (k.table(table.id), k.log(table.id), k.cids(table.id)):
        used += await real_store.redis.memory_usage(key, samples=0) or 0
    assert used <= limit, (game, len(moves), used)


async def test_a_move_that_loses_the_compare_and_set_leaves_the_winners_follow_up(store):
    """The follow-up rides in the commit's script (move.lua) only for a commit that wrote: a
    move computed on an old document (here the process's view from before the last commit)
    loses the compare-and-set, and the due time, version and outbox entries stay the
    winning commit's (a follow-up of the loser would move the turn timer to its own clock)."""
    table = await store.create_table(game="prsi", seats=people(), settings=TIMED, seed=5, chat_id=-7)
    old = await store.current(table.id)
    seat, action = next_move(old.state)
    won = await store.apply(table.id, seat, action, client_action_id="first", now=1_000.0)
    shard = store._shard(table.id)
    due = await store.redis.zscore(store.keys.deadlines_of(shard), table.id)
    versions = await store.redis.hget(store.keys.deadline_versions_of(shard), table.id)
    outbox = await store.redis.xlen(store.keys.outbox_of(shard))
    assert due == pytest.approx(1_000.0 + 30) and int(versions) == won.version
    with pytest.raises((Rejected, StoreError)):  # the same move again, 5 s later, on the old document
        await store.apply(table.id, seat, action, client_action_id="second", now=1_005.0, known=old)
    assert await store.redis.zscore(store.keys.deadlines_of(shard), table.id) == due
    assert await store.redis.hget(store.keys.deadline_versions_of(shard), table.id) == versions
    assert await store.redis.xlen(store.keys.outbox_of(shard)) == outbox
    assert (await store.get_table(table.id)).version == won.version


class _Got:
    """A live-feed listener keeping the versions it is given."""

    def __init__(self) -> None:
        self.versions: list[int] = []

    def deliver(self, known, events, by, lagged, texts=None) -> None:
        self.versions.append(known.version)

    def gone(self) -> None:
        pass


async def test_a_commit_is_published_only_when_another_process_listens(store, store_factory):
    """commit.lua publishes when the table's watchers set holds a listener other than the
    committing process: not for a table only this process listens to (it feeds its own
    sockets from the commit), yes once another listens, and yes for a commit made by a
    process that does not listen at all."""
    from conftest import until

    table = await store.create_table(game="prsi", seats=people(), settings=OFF, seed=3)
    mine = _Got()
    await store.watch(table.id, mine)
    seat, action = next_move(table.state)
    first = await store.apply(table.id, seat, action)  # only this process listens: nothing published
    assert mine.versions == [first.version]

    other = await store_factory()
    theirs = _Got()
    await other.watch(table.id, theirs)
    members = {m.decode() if isinstance(m, bytes) else m for m in await store.redis.smembers(store.keys.watchers(table.id))}
    assert members == {store.live.id, other.live.id}
    seat, action = next_move(first.table.state)
    second = await store.apply(table.id, seat, action)  # published: another process listens
    await until(lambda: theirs.versions and theirs.versions[-1] == second.version)
    await until(lambda: store.live.messages >= 1)
    # Messages reach a connection in order: the echo of the second commit came first, so
    # the first was never published.
    assert store.live.messages == 1 and store.live.parsed == 0  # (the echo is skipped unparsed)

    third = await store_factory()  # listens to nothing: its commits are published
    seat, action = next_move(second.table.state)
    done = await third.apply(table.id, seat, action)
    await until(lambda: mine.versions[-1] == done.version and theirs.versions[-1] == done.version)
    assert store.live.parsed == 1
    await other.live.close()  # a clean shutdown leaves the watchers sets: one listener is left
    members = {m.decode() if isinstance(m, bytes) else m for m in await store.redis.smembers(store.keys.watchers(table.id))}
    assert members == {store.live.id}
    seat, action = next_move(done.table.state)
    last = await third.apply(table.id, seat, action)  # the one listener is not the committer
    await until(lambda: mine.versions[-1] == last.version)
    assert store.live.parsed == 2


async def test_a_listener_redis_counts_as_subscribed_is_already_a_watcher(store):
    """Joined before subscribing: once Redis counts a listener on the channel (PUBSUB
    NUMSUB, what tests and tools wait for), every commit publishes to it. The join is
    slowed here, so a listener that subscribed first would be seen outside the set."""
    import asyncio

    from conftest import wait_subscribed

    def members():
        return store.redis.scard(store.keys.watchers(table.id))

    real_sadd, real_pipeline = store.redis.sadd, store.redis.pipeline

    async def slow_sadd(*a, **k):
        await asyncio.sleep(0.3)
        return await real_sadd(*a, **k)

    def slow_pipeline(*a, **k):
        pipe = real_pipeline(*a, **k)
        real_execute = pipe.execute

        async def execute(*ea, **ek):
            await asyncio.sleep(0.3)
            return await real_execute(*ea, **ek)

        pipe.execute = execute
        return pipe

    store.redis.sadd, store.redis.pipeline = slow_sadd, slow_pipeline
    try:
        table = await store.create_table(game="prsi", seats=people(), settings=OFF, seed=4)
        agen = store.subscribe(table.id)  # store.events: a listener of its own
        first = asyncio.ensure_future(agen.__anext__())
        await wait_subscribed(store, table.id)
        assert await members() == 1
        watching = asyncio.ensure_future(store.watch(table.id, _Got()))  # store.live
        await wait_subscribed(store, table.id, count=2)
        assert await members() == 2
        await watching
    finally:
        store.redis.sadd, store.redis.pipeline = real_sadd, real_pipeline
    seat, action = next_move(table.state)
    done = await store.apply(table.id, seat, action)  # published: store.events listens
    assert (await asyncio.wait_for(first, 60))["version"] == done.version
    await agen.aclose()
