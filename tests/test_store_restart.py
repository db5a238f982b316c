"""After a Redis restart the store's pool heals (issue 27.3), on a redis-server of the test's own
(a free loopback port, stopped by pid) reached through the fault proxy of tests/faultproxy.py.

A restart whose closing the client did not see (a proxy, a container network between them) leaves
the pooled connections looking alive until used: :meth:`FaultProxy.forget` makes exactly that,
with the server restarted behind it. The first burst after it must be served (idempotent calls
retried once on a fresh connection, idle connections health-checked), a call that is not
idempotent is never run twice, and the per-user socket cap never admits uncounted.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from faultproxy import FaultProxy

from store import UNAVAILABLE, Store
from webapp.ratelimit import SocketLeases

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="no redis-server (make system-deps)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnRedis:
    """``redis-server`` on a free loopback port, no persistence, in ``directory``; stopped by pid."""

    def __init__(self, directory: Path) -> None:
        self.dir, self.port = directory, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        self.proc = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.dir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        import redis.asyncio as aredis

        for _ in range(600):
            client = aredis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)
            try:
                if await client.ping():
                    return
            except Exception:
                await asyncio.sleep(0.02)
            finally:
                await client.aclose()
        raise AssertionError("redis-server did not answer")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)

    async def restart(self) -> None:
        self.stop()
        await self.start()


@pytest.fixture
async def restarted(tmp_path):
    """``(server, proxy, store)``: a store on a warm pool through the proxy to a server of its own."""
    server = OwnRedis(tmp_path)
    await server.start()
    proxy = await FaultProxy("127.0.0.1", server.port).start()
    store = Store.from_url(proxy.url, prefix="restart", timeout=5, pool_timeout=5)
    try:
        await store.warm()
        yield server, proxy, store
    finally:
        with contextlib.suppress(Exception):
            await store.close()
        await proxy.close()
        server.stop()


async def _burst(calls) -> Counter:
    async def one(call):
        try:
            await call()
            return "ok"
        except UNAVAILABLE as e:
            return f"unavailable: {type(e).__name__}"

    return Counter(await asyncio.gather(*(one(c) for c in calls)))


async def test_the_first_burst_after_a_restart_is_served(restarted):
    server, proxy, store = restarted
    open_before = proxy.forget()
    assert open_before >= 10  # the warm pool: connections that will look alive until used
    await server.restart()
    calls = []
    for i in range(40):
        calls.append(lambda i=i: store.open_socket(i, f"s{i}", 3))  # a socket's admission (a script)
        calls.append(lambda i=i: store.get_user(i))  # reads
        calls.append(lambda i=i: store.redis.zrem(store.keys.user_sockets(i), "gone"))  # idempotent writes
    assert await _burst(calls) == Counter({"ok": 120})
    assert proxy.resets >= 10  # the stale connections were found dead, and healed
    assert all(await asyncio.gather(*(store.open_sockets(i) for i in range(40))))


async def test_a_call_that_is_not_idempotent_is_never_run_twice(restarted):
    server, proxy, store = restarted
    proxy.forget()
    await server.restart()
    outcomes = await _burst([lambda: store.redis.incr("restart:counter") for _ in range(40)])
    assert sum(outcomes.values()) == 40
    assert int(await store.redis.get("restart:counter") or 0) == outcomes["ok"]  # none applied twice


async def test_the_socket_cap_fails_closed_when_the_store_cannot_say(restarted):
    _server, proxy, store = restarted
    leases = SocketLeases(store, cap=2)
    async with leases.hold(7) as first:
        assert first
        proxy.blackhole("down")  # its answers are lost: whether the lease was taken is unknown
        store.redis.connection_pool.connection_kwargs["socket_timeout"] = 0.5
        await store.redis.connection_pool.disconnect()
        with pytest.raises(UNAVAILABLE):
            async with leases.hold(7):
                raise AssertionError("admitted though the cap could not be checked")
        proxy.heal()
        await store.redis.connection_pool.disconnect()
        async with leases.hold(7) as second, leases.hold(7) as third:
            assert second and not third  # at most the cap, counted
