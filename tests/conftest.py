"""Shared test fixtures.

Redis:

* ``redis_url`` — ``REDIS_URL`` or ``redis://127.0.0.1:6379/0``.
* ``real_store`` — a :class:`store.Store` on the real Redis under a unique key
  prefix; every key of that prefix is deleted afterwards. Skips the test when no
  Redis answers.
* ``fake_store`` — a :class:`store.Store` on a private in-memory fakeredis server.
* ``store`` — parametrized over both (``[fake]`` and ``[real]``).
* ``store_factory`` — ``await store_factory(kind)`` makes another Store on the same
  backend and prefix as the test's ``store`` (a second process, a restart).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

_real_redis_ok: bool | None = None


@pytest.fixture(scope="session")
def redis_url() -> str:
    """Where the real Redis is: ``REDIS_URL`` or ``redis://127.0.0.1:6379/0``."""
    return os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def real_redis_answers(url: str) -> bool:
    """Whether a Redis answers PING at ``url`` (checked once per session)."""
    global _real_redis_ok
    if _real_redis_ok is None:
        import redis

        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
            _real_redis_ok = bool(client.ping())
            client.close()
        except Exception:
            _real_redis_ok = False
    return _real_redis_ok


def unique_prefix() -> str:
    """A key prefix of one's own, e.g. ``karty-test-3f9c0a1b2c``."""
    return f"karty-test-{uuid.uuid4().hex[:10]}"


class _Backend:
    """Makes Store objects sharing one backend (one Redis, one prefix)."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self.prefix = unique_prefix()
        self.stores: list = []
        self._server = None

    async def new_store(self):
        from store import Store

        if self.kind == "real":
            st = Store.from_url(self.url, prefix=self.prefix)
        else:
            import fakeredis

            if self._server is None:
                self._server = fakeredis.FakeServer()
            st = Store(fakeredis.aioredis.FakeRedis(server=self._server, decode_responses=True),
                       prefix=self.prefix)
        self.stores.append(st)
        return st

    async def cleanup(self) -> None:
        if self.kind == "real" and self.stores:
            from redis.asyncio import Redis

            r = Redis.from_url(self.url)
            try:
                keys = [k async for k in r.scan_iter(match=f"{self.prefix}:*", count=1000)]
                if keys:
                    await r.delete(*keys)
            finally:
                await r.aclose()
        for st in self.stores:
            with contextlib.suppress(Exception):
                await st.close()


async def _backend(kind: str, url: str) -> AsyncIterator[_Backend]:
    if kind == "real" and not real_redis_answers(url):
        pytest.skip(f"no Redis answers at {url}")
    backend = _Backend(kind, url)
    try:
        yield backend
    finally:
        await backend.cleanup()


@pytest_asyncio.fixture(params=["fake", pytest.param("real", marks=pytest.mark.redis)])
async def store_backend(request, redis_url) -> AsyncIterator[_Backend]:
    """The backend of ``store``: fakeredis or the real Redis, unique prefix, cleaned up."""
    async for backend in _backend(request.param, redis_url):
        yield backend


@pytest_asyncio.fixture
async def store(store_backend):
    """A Store on fakeredis and on the real Redis (parametrized), own prefix, cleaned up."""
    return await store_backend.new_store()


@pytest_asyncio.fixture
async def store_factory(store_backend) -> Callable[[], Awaitable]:
    """``await store_factory()``: another Store on the same backend and prefix as ``store``."""
    return store_backend.new_store


@pytest_asyncio.fixture
async def real_store(redis_url):
    """A Store on the real Redis only (skipped when none answers), own prefix, cleaned up."""
    async for backend in _backend("real", redis_url):
        yield await backend.new_store()


@pytest_asyncio.fixture
async def fake_store(redis_url):
    """A Store on a private fakeredis server."""
    async for backend in _backend("fake", redis_url):
        yield await backend.new_store()
