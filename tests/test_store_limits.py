"""store.limits: the per-user action bucket and the open-socket cap hold across processes
(two Store objects on one Redis stand for two service processes). Time is the store's clock."""

from __future__ import annotations

import pytest

from webapp.ratelimit import SocketLeases


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def two(store, store_factory):
    """Two stores on one backend and prefix, one clock: two processes behind a proxy."""
    clock = Clock()
    other = await store_factory()
    store.clock = other.clock = clock
    return store, other, clock


async def test_a_held_down_button_gets_one_bucket_whatever_process_it_hits(two):
    a, b, clock = two
    taken = [await (a if i % 2 else b).take_action(7, rate=10, burst=20) for i in range(20)]
    assert taken == [0.0] * 20  # the burst, split over both processes
    wait = await a.take_action(7, rate=10, burst=20)
    assert wait == pytest.approx(0.1)  # the 21st waits for the next token, on either process
    assert await b.take_action(7, rate=10, burst=20) == pytest.approx(0.1)
    assert await a.take_action(8, rate=10, burst=20) == 0.0  # another user has a bucket of their own
    clock.t += 0.1
    assert await b.take_action(7, rate=10, burst=20) == 0.0
    assert await a.take_action(7, rate=10, burst=20) > 0
    clock.t += 60  # refilled to the burst, not beyond
    assert [await a.take_action(7, rate=10, burst=20) for _ in range(20)] == [0.0] * 20
    assert await b.take_action(7, rate=10, burst=20) > 0


async def test_a_process_with_a_clock_behind_refills_nothing(two):
    a, b, clock = two
    for _ in range(20):
        await a.take_action(7, rate=10, burst=20)
    assert await b.take_action(7, rate=10, burst=20, now=clock.t - 5) > 0


async def test_a_full_bucket_is_not_kept(store):
    store.clock = Clock()
    await store.take_action(7, rate=10, burst=20)
    ttl = await store.redis.pttl(store.keys.action_bucket(7))
    assert 0 < ttl <= 3000  # 20 tokens at 10/s: full again after 2 s


async def test_the_socket_cap_counts_every_process_and_frees_on_close(two):
    a, b, _ = two
    assert await a.open_socket(7, "s1", cap=2)
    assert await b.open_socket(7, "s2", cap=2)
    assert not await a.open_socket(7, "s3", cap=2)
    assert not await b.open_socket(7, "s3", cap=2)
    assert await a.open_socket(7, "s1", cap=2)  # an admitted socket asking again is still in
    assert await b.open_socket(9, "t1", cap=2)  # another user is not affected
    assert await a.open_sockets(7) == 2
    await b.close_socket(7, "s1")
    await b.close_socket(7, "s1")  # idempotent
    assert await a.open_socket(7, "s3", cap=2)


async def test_a_dead_process_frees_its_sockets_when_their_leases_run_out(two):
    a, b, clock = two
    assert await a.open_socket(7, "s1", cap=2, lease=60)
    assert await a.open_socket(7, "s2", cap=2, lease=60)
    clock.t += 40
    await a.keep_socket(7, "s2", lease=60)  # s2's process is alive and renews; s1's died
    assert not await b.open_socket(7, "s3", cap=2)
    clock.t += 21
    assert await a.open_sockets(7) == 1
    assert await b.open_socket(7, "s3", cap=2)
    assert not await b.open_socket(7, "s4", cap=2)


async def test_socket_leases_hold_renew_and_release(two):
    a, b, _ = two
    la, lb = SocketLeases(a, cap=1), SocketLeases(b, cap=1)
    async with la.hold(7) as first:
        assert first
        async with lb.hold(7) as second:
            assert not second
        assert await a.open_sockets(7) == 1
    assert await a.open_sockets(7) == 0
    async with lb.hold(7) as again:
        assert again


async def test_a_bucket_that_never_refills_spends_its_burst_then_waits_a_minute(store):
    """ACTION_RATE=0 (a setting, not a crash): the burst is spent once, then every take
    answers the fixed 60 s (never a division by zero); the bucket is kept that minute."""
    store.clock = Clock()
    assert [await store.take_action(7, rate=0, burst=2) for _ in range(2)] == [0.0, 0.0]
    assert await store.take_action(7, rate=0, burst=2) == 60.0
    store.clock.t += 3600
    assert await store.take_action(7, rate=0, burst=2) == 60.0
    assert 0 < await store.redis.pttl(store.keys.action_bucket(7)) <= 61_000


async def test_a_spent_bucket_is_kept_until_it_would_be_full_again(store):
    store.clock = Clock()
    for _ in range(20):
        await store.take_action(7, rate=10, burst=20)
    ttl = await store.redis.pttl(store.keys.action_bucket(7))
    assert 1_500 < ttl <= 3_000  # full after 2 s (+1 s to spare): not forgotten sooner


async def test_a_slow_bucket_waits_the_time_to_its_next_token_and_is_kept_till_full(store):
    """At 1 token/s (a slow setting, not "never"): the wait is what is left of the next
    token, not a fixed minute, and the bucket is kept until it would be full again."""
    store.clock = Clock()
    assert [await store.take_action(8, rate=1, burst=2) for _ in range(2)] == [0.0, 0.0]
    assert await store.take_action(8, rate=1, burst=2) == pytest.approx(1.0)
    store.clock.t += 0.25
    assert await store.take_action(8, rate=1, burst=2) == pytest.approx(0.75)  # (1 - 0.25 tokens) / rate
    ttl = await store.redis.pttl(store.keys.action_bucket(8))
    assert 2_000 < ttl <= 3_000  # full after 2 s (+1 s to spare), not a minute


async def test_a_users_socket_set_lives_one_lease_and_a_second(store):
    """The open-sockets set expires a second after its newest lease (a user whose process
    died leaves nothing behind), and every renewal pushes that back."""
    store.clock = Clock()
    assert await store.open_socket(9, "s1", cap=3, lease=60.0)
    ttl = await store.redis.pttl(store.keys.user_sockets(9))
    assert 60_000 < ttl <= 61_000
    await store.redis.pexpire(store.keys.user_sockets(9), 5_000)
    await store.keep_socket(9, "s1", lease=60.0)
    assert 60_000 < await store.redis.pttl(store.keys.user_sockets(9)) <= 61_000
