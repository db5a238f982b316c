"""Shared test fixtures.

Redis:

* ``redis_url`` — ``REDIS_URL`` or ``redis://127.0.0.1:6379/0``.
* ``real_store`` — a :class:`store.Store` on the real Redis under a unique key
  prefix; every key of that prefix is deleted afterwards. ``real_store_factory``
  makes more on the same prefix. Races run on these only: fakeredis runs each
  command to its end without yielding, so a race there cannot interleave and a
  broken compare-and-set would pass.
* No Redis answering is an error, not a skip: a run that selects a test needing the
  real Redis stops at collection with how to start one. ``KARTY_ALLOW_NO_REDIS=1``
  (on purpose, e.g. a laptop without Redis) skips those tests instead.
* ``fake_store`` — a :class:`store.Store` on a private in-memory fakeredis server.
* ``store`` — parametrized over both (``[fake]`` and ``[real]``).
* ``store_factory`` — ``await store_factory(kind)`` makes another Store on the same
  backend and prefix as the test's ``store`` (a second process, a restart).

Redis Cluster (``make test-cluster``, :mod:`scripts.redis_cluster`): when
``KARTY_TEST_CLUSTER`` names a cluster (``redis+cluster://h1:p1,...``), ``redis_url`` is
that URL, ``store`` runs on it only (``[cluster]``; fakeredis is ``make test``'s) and
``real_store`` is a cluster Store.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

# The browser tests' fixtures (embedded_redis, server, kstore, browser), shared by every
# tests/test_browser*.py (a module may override one).
pytest_plugins = ["browser_support"]

_real_redis_ok: bool | None = None

#: The Redis Cluster of ``make test-cluster`` (None: the single Redis of ``make test``).
CLUSTER_URL: str | None = os.environ.get("KARTY_TEST_CLUSTER") or None


@pytest.fixture(scope="session")
def redis_url() -> str:
    """Where the real Redis is: ``KARTY_TEST_CLUSTER``, ``REDIS_URL`` or ``redis://127.0.0.1:6379/0``."""
    return CLUSTER_URL or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def real_redis_answers(url: str) -> bool:
    """Whether a Redis answers PING at ``url`` (checked once per session)."""
    global _real_redis_ok
    if _real_redis_ok is None:
        import redis

        try:
            from store.connect import split_cluster_url

            client = redis.Redis.from_url(split_cluster_url(url)[0], socket_connect_timeout=1, socket_timeout=1)
            _real_redis_ok = bool(client.ping())
            client.close()
        except Exception:
            _real_redis_ok = False
    return _real_redis_ok


def redis_optional() -> bool:
    """Whether a missing Redis may skip tests (``KARTY_ALLOW_NO_REDIS=1``) instead of failing them."""
    return os.environ.get("KARTY_ALLOW_NO_REDIS", "") not in ("", "0")


def no_redis_message(url: str) -> str:
    return (f"no Redis answers at {url}: start one (make test starts redis-server on 127.0.0.1:6379, "
            "scripts/ensure-redis.sh), point REDIS_URL at one, or set KARTY_ALLOW_NO_REDIS=1 to skip "
            "the tests that need it")


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: only what will run counts
def pytest_collection_modifyitems(config, items) -> None:
    """Stop the run loudly when selected tests need the real Redis and none answers."""
    needing = [item for item in items if item.get_closest_marker("redis")]
    if not needing or redis_optional():
        return
    url = CLUSTER_URL or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if not real_redis_answers(url):
        raise pytest.UsageError(f"{len(needing)} selected tests need the real Redis, but {no_redis_message(url)}")


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

        if self.kind in ("real", "cluster"):
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
        if self.kind in ("real", "cluster") and self.stores:
            from store.connect import connect

            r = connect(self.url)
            try:  # on a cluster: SCAN visits every primary, DEL is split by slot
                keys = [k async for k in r.scan_iter(match=f"{self.prefix}:*", count=1000)]
                if keys:
                    await r.delete(*keys)
            finally:
                await r.aclose()
        for st in self.stores:
            with contextlib.suppress(Exception):
                await st.close()


async def _backend(kind: str, url: str) -> AsyncIterator[_Backend]:
    if kind in ("real", "cluster") and not real_redis_answers(url):
        if redis_optional():
            pytest.skip(f"no Redis answers at {url} (KARTY_ALLOW_NO_REDIS)")
        pytest.fail(no_redis_message(url), pytrace=False)
    backend = _Backend(kind, url)
    try:
        yield backend
    finally:
        await backend.cleanup()


_BACKENDS = (
    [pytest.param("cluster", marks=pytest.mark.redis)] if CLUSTER_URL
    else ["fake", pytest.param("real", marks=pytest.mark.redis)]
)


@pytest_asyncio.fixture(params=_BACKENDS)
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
async def real_backend(redis_url) -> AsyncIterator[_Backend]:
    """The real Redis only (an error when none answers, see above), own prefix, cleaned up."""
    async for backend in _backend("cluster" if CLUSTER_URL else "real", redis_url):
        yield backend


@pytest_asyncio.fixture
async def real_store(real_backend):
    """A Store on the real Redis only, own prefix, cleaned up (mark the test ``redis``)."""
    return await real_backend.new_store()


@pytest_asyncio.fixture
async def real_store_factory(real_backend) -> Callable[[], Awaitable]:
    """``await real_store_factory()``: another Store on the real Redis with ``real_store``'s prefix."""
    return real_backend.new_store


@pytest.fixture
def pinned_table_ids(monkeypatch) -> None:
    """New tables get the ids ``table0``, ``table1``, … (``store.tables`` draws them at random).

    A computer's choices are seeded from its table's id (``store.computers.seat_seed``), so
    a test that plays games with computers and looks for a situation in them needs this
    (and a fixed clock) to play the same games on every run and on every backend."""
    import itertools
    import secrets
    from types import SimpleNamespace

    from store import tables

    ids = (f"table{n}" for n in itertools.count())
    monkeypatch.setattr(tables, "secrets", SimpleNamespace(token_urlsafe=lambda _size: next(ids),
                                                           randbits=secrets.randbits))


@pytest_asyncio.fixture
async def fake_store(redis_url):
    """A Store on a private fakeredis server."""
    async for backend in _backend("fake", redis_url):
        yield await backend.new_store()


# --- webapp (tests/test_webapp*.py) -----------------------------------------------------
WEB_BOT_TOKEN = "123456789:AAHk-webapp-test-token_0123456789abcd"


@pytest.fixture
def web_init_data() -> Callable[..., str]:
    """``web_init_data(user_id, name="Ann", token=WEB_BOT_TOKEN, auth_date=None, **fields)``:
    initData signed exactly as Telegram signs it (a ``user`` JSON with the given id and
    first name, ``auth_date`` now by default, ``query_id`` unless a field is given
    instead, e.g. ``chat_type``/``chat_instance`` for a direct link)."""
    import time

    from webapp.auth import sign_init_data

    def make(user_id: int, name: str = "Ann", *, token: str = WEB_BOT_TOKEN,
             auth_date: int | None = None, user: dict | str | None = None, **fields) -> str:
        data: dict = {"auth_date": int(time.time()) if auth_date is None else auth_date}
        if not fields:
            data["query_id"] = "AAHdF6IQAAAAAN0XohDhrOrc"
        data.update(fields)
        data["user"] = user if user is not None else {"id": user_id, "first_name": name, "language_code": "en"}
        return sign_init_data(data, token)

    return make


@pytest_asyncio.fixture
async def web_client(aiohttp_client, store):
    """``await web_client(**settings)``: an aiohttp test client of ``create_app`` on ``store``.

    Defaults: a bot token (:data:`WEB_BOT_TOKEN`), no worker, a short WebSocket auth timeout.
    The client's ``app`` holds the store as ``client.app[webapp.keys.STORE]``.
    """
    from webapp.app import create_app
    from webapp.settings import WebSettings

    async def make(**overrides):
        values = {"bot_token": WEB_BOT_TOKEN, "local_play": False, "run_worker": False,
                  "ws_auth_timeout": 2.0, **overrides}
        settings = WebSettings(**values)
        return await aiohttp_client(create_app(settings, store))

    return make


# --- bot (tests/test_bot*.py; reusable for end-to-end tests) ------------------------------
@pytest_asyncio.fixture
async def fake_bot_api():
    """A running :class:`fake_bot_api.FakeBotAPI` (records every Bot API call)."""
    from fake_bot_api import FakeBotAPI

    async with FakeBotAPI() as api:
        yield api


@pytest_asyncio.fixture
async def bot_runtime(fake_bot_api):
    """``await bot_runtime(store, **settings)``: a :class:`bot.BotRuntime` whose real aiogram
    Bot talks to ``fake_bot_api``. Fast defaults for tests (lobby edits after 0.2 s, 50
    msg/s per chat); pass ``rate_chat=1`` etc. to test the limits. Stopped afterwards."""
    from bot import BotRuntime, BotSettings

    made = []

    async def make(store, **overrides):
        values = {"bot_token": fake_bot_api.token, "telegram_api_url": fake_bot_api.url,
                  "public_url": "https://karty.example", "webapp_short_name": None,
                  "lobby_edit_delay": 0.2, "rate_chat": 50.0, "rate_global": 100.0,
                  "rate_group_per_minute": 100.0, **overrides}
        runtime = BotRuntime(store, BotSettings(**values), bot=fake_bot_api.make_bot())
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        with contextlib.suppress(Exception):
            await runtime.stop()


# --- waiting on conditions, never on the clock ------------------------------------------
async def until(condition: Callable[[], Awaitable[bool] | bool], timeout: float = 60.0, every: float = 0.02):
    """Poll ``condition`` (sync or async) until it is truthy; returns its value.

    ``timeout`` only stops a test that would otherwise hang (a failure, never a pass)."""
    import asyncio
    import inspect

    async def poll():
        while True:
            got = condition()
            if inspect.isawaitable(got):
                got = await got
            if got:
                return got
            await asyncio.sleep(every)

    return await asyncio.wait_for(poll(), timeout)


async def play_to_last_move(store, table, now: float):
    """Apply the computer player's choice for every awaited seat until the next action would
    end the game: returns ``(table, seat, action)``, that last move left to the test."""
    import engine

    while True:
        seat = engine.awaiting(table.state)[0]
        action = engine.computer_action(table.state, seat)
        if engine.apply(table.state, seat, action).state.over:
            return table, seat, action
        table = (await store.apply(table.id, seat, action, now=now)).table


async def wait_subscribed(store, table_id: str, count: int = 1, timeout: float = 60.0) -> None:
    """Until ``count`` pub/sub subscribers listen on ``table_id``'s event channel (Redis PUBSUB
    NUMSUB; on a cluster PUBSUB SHARDNUMSUB on the channel's primary: sharded pub/sub, store.pubsub)."""
    from store.connect import is_cluster

    channel = store.keys.events(table_id)

    async def enough() -> bool:
        if is_cluster(store.redis):
            node = store.redis.get_node_from_key(channel)
            reply = await store.redis.execute_command("PUBSUB SHARDNUMSUB", channel, target_nodes=node)
            flat = [x for pair in reply for x in (pair if isinstance(pair, (list, tuple)) else [pair])]
            n = int(flat[1])
        else:
            [(_, n)] = await store.redis.pubsub_numsub(channel)
        return n >= count

    await until(enough, timeout)
