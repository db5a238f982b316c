"""store.connect: which client a REDIS_URL means (one server or a Redis Cluster), and, under
``make test-cluster``, that a cluster Store really finds and uses every primary."""

from __future__ import annotations

import asyncio

import pytest
from conftest import CLUSTER_URL, unique_prefix
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from store import Store
from store.connect import display_url, split_cluster_url, wants_cluster
from store.embedded import redis_answers


def test_cluster_urls_name_every_node_and_keep_credentials_and_options():
    single, nodes = split_cluster_url("redis+cluster://ann:s3cret@h1:7000,h2:7001,[::1]:7002/?ssl_cert_reqs=none")
    assert single == "redis://ann:s3cret@h1:7000/?ssl_cert_reqs=none"
    assert nodes == [("h1", 7000), ("h2", 7001), ("::1", 7002)]
    assert split_cluster_url("rediss+cluster://h1:7000")[0] == "rediss://h1:7000"
    assert split_cluster_url("redis://h1") == ("redis://h1:6379", [("h1", 6379)])
    for bad in ("redis+cluster://", "redis+cluster://h1:port", "h1:7000"):
        with pytest.raises(ValueError):
            split_cluster_url(bad)
    assert display_url("redis+cluster://ann:s3cret@h1:7000,h2:7001") == "redis+cluster://ann:***@h1:7000,h2:7001"


def test_the_scheme_or_redis_cluster_picks_the_cluster_client(monkeypatch):
    monkeypatch.delenv("REDIS_CLUSTER", raising=False)
    assert wants_cluster("redis+cluster://h1:7000")
    assert not wants_cluster("redis://h1:7000")
    assert wants_cluster("redis://h1:7000", cluster=True)
    monkeypatch.setenv("REDIS_CLUSTER", "1")
    assert wants_cluster("redis://h1:7000")
    assert not wants_cluster("redis://h1:7000", cluster=False)
    # Building a client does not connect yet: no server needed to see which one it is.
    assert isinstance(Store.from_url("redis://127.0.0.1:1").redis, RedisCluster)
    monkeypatch.setenv("REDIS_CLUSTER", "0")
    single = Store.from_url("redis://127.0.0.1:1")
    assert isinstance(single.redis, Redis) and not isinstance(single.redis, RedisCluster)
    assert isinstance(Store.from_url("redis+cluster://127.0.0.1:1,127.0.0.1:2").redis, RedisCluster)


cluster_only = pytest.mark.skipif(CLUSTER_URL is None, reason="needs make test-cluster (KARTY_TEST_CLUSTER)")


@cluster_only
@pytest.mark.redis
async def test_one_named_node_is_enough_to_find_every_primary(monkeypatch, real_store):
    first = split_cluster_url(CLUSTER_URL)[0]
    assert await redis_answers(CLUSTER_URL)
    monkeypatch.setenv("REDIS_CLUSTER", "1")
    st = Store.from_url(first, prefix=real_store.keys.prefix)
    try:
        assert await st.ping()
        primaries = st.redis.get_primaries()
        assert len(primaries) == 3
        assert len(await st.redis.cluster_nodes()) == 6  # and their replicas
        # Tables land on every primary (their keys are spread by the {g:<id>} hash tag) …
        tables = [await st.create_table(game="prsi", seats=_seats(), seed=i) for i in range(24)]
        owners = {st.redis.get_node_from_key(st.keys.table(t.id)).name for t in tables}
        assert owners == {n.name for n in primaries}
        # … and every one of them is read back through the same client.
        for t in tables:
            assert (await st.get_table(t.id)).version == t.version
    finally:
        await st.close()


def _seats():
    from store import Seat

    return [Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in (1, 2)]


@cluster_only
@pytest.mark.redis
async def test_a_burst_beyond_the_cluster_pool_waits_its_turn_then_fails_as_unavailable(real_store):
    from redis.exceptions import MaxConnectionsError

    from store import UNAVAILABLE
    from store.connect import connect

    client = connect(CLUSTER_URL, max_in_flight=2, in_flight_wait=0.05, decode_responses=True)
    key = real_store.keys.once("gate", "empty")
    try:
        blocking = [asyncio.create_task(client.blpop([key], timeout=2)) for _ in range(2)]
        while client._gate._value:  # both permits taken by the blocked pops
            await asyncio.sleep(0.01)
        with pytest.raises(MaxConnectionsError) as caught:
            await client.get(key)
        assert isinstance(caught.value, UNAVAILABLE)
        await real_store.redis.rpush(key, "a", "b")  # the pops return: their permits come back
        assert sorted([(await t)[1] for t in blocking]) == ["a", "b"]
        assert await client.get(key) is None
    finally:
        await client.aclose()


ARGS = [
    ("SET", "k", "žluťoučký kůň ♠", "EX", 30),
    ("EVALSHA", "a" * 40, 2, "k1", "k2", 0.1, 1e20, -3, 1733000000.123456, b"\x00\xff raw", "x" * 70000),
    ("CONFIG GET", "maxmemory"),
    (b"CLIENT SETNAME", b"karty"),
]


@pytest.mark.parametrize("args", ARGS)
def test_hiredis_packs_every_command_as_redis_py_does(args):
    """The C packer's bytes are redis-py's own, command words split, every argument type we send."""
    from redis.asyncio.connection import Connection

    from store.connect import HiredisPacking, hiredis

    if hiredis is None:
        pytest.skip("hiredis is not installed")
    fast = type("Fast", (HiredisPacking, Connection), {})()
    assert b"".join(fast.pack_command(*args)) == b"".join(Connection().pack_command(*args))


def test_what_hiredis_does_not_take_goes_to_redis_pys_packer():
    from redis.asyncio.connection import Connection
    from redis.exceptions import DataError

    from store.connect import HiredisPacking

    fast = type("Fast", (HiredisPacking, Connection), {})()
    assert b"".join(fast.pack_command("SET", "k", memoryview(b"abc"))) == \
        b"".join(Connection().pack_command("SET", "k", memoryview(b"abc")))
    with pytest.raises(DataError):
        fast.pack_command("SET", "k", True)
    with pytest.raises(DataError):
        fast.pack_command("SET", "k", None)


@pytest.mark.redis
async def test_a_store_on_one_redis_packs_with_hiredis_unless_turned_off(monkeypatch, redis_url):
    """``Store.from_url`` packs with hiredis (when installed) and really talks to Redis so;
    ``KARTY_HIREDIS=0`` gives redis-py's own packer and parser."""
    from store.connect import HiredisPacking, hiredis

    if wants_cluster(redis_url):  # make test-cluster: its nodes' pools are the cluster client's own
        pytest.skip("hiredis packing is for the pool of one Redis")
    prefix = unique_prefix()
    for off in (False, True):
        if off:
            monkeypatch.setenv("KARTY_HIREDIS", "0")
        store = Store.from_url(redis_url, prefix=prefix)
        try:
            pool = store.redis.connection_pool
            assert issubclass(pool.connection_class, HiredisPacking) == (hiredis is not None and not off)
            key = f"{prefix}:packed"
            await store.redis.set(key, "žluť ♠ " + "x" * 70000, ex=30)
            assert await store.redis.get(key) == "žluť ♠ " + "x" * 70000
            await store.redis.delete(key)
        finally:
            await store.close()
