"""Which Redis client a URL means: one server, or a Redis Cluster (redis-py's asyncio ``RedisCluster``).

=========================================================  ======================================
``REDIS_URL``                                              client
=========================================================  ======================================
``redis://host:6379/0``, ``rediss://…``                    ``redis.asyncio.Redis`` (one server)
``redis+cluster://h1:7000,h2:7001``, ``rediss+cluster://``  ``RedisCluster``; the nodes named are
                                                           where it starts to discover the rest
``redis://h1:7000`` with ``REDIS_CLUSTER=1``               ``RedisCluster`` from that one node
=========================================================  ======================================

Credentials and query options go where redis-py expects them
(``redis+cluster://user:secret@h1:7000,h2:7001/?ssl_cert_reqs=none``); a cluster has only
database 0. Part of ``store/``, the only package that talks to Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import MaxConnectionsError

try:
    import hiredis
except ImportError:  # redis-py without its [hiredis] extra: its own packer
    hiredis = None

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}


def cluster_env() -> bool:
    """``REDIS_CLUSTER`` is set to a true value (``1``, ``true``, …; :class:`store.StoreSettings`)."""
    from store.settings import StoreSettings

    return StoreSettings().redis_cluster


def wants_cluster(url: str, cluster: bool | None = None) -> bool:
    """Whether ``url`` (or ``cluster``, or else ``REDIS_CLUSTER``) asks for a cluster client."""
    if url.split("://", 1)[0].lower() in CLUSTER_SCHEMES:
        return True
    return cluster_env() if cluster is None else cluster


def split_cluster_url(url: str) -> tuple[str, list[tuple[str, int]]]:
    """``redis+cluster://u:p@h1:7000,h2:7001/?q`` → (``redis://u:p@h1:7000/?q``, ``[(h1, 7000), (h2, 7001)]``).

    A plain ``redis://`` URL gives itself and its one node. Raises ``ValueError`` for a
    URL without hosts or with a port that is not a number.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a Redis URL: {url!r}")
    base = CLUSTER_SCHEMES.get(scheme.lower(), scheme)
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    userinfo, at, hosts = netloc.rpartition("@")
    nodes: list[tuple[str, int]] = []
    for part in hosts.split(","):
        part = part.strip()
        if not part:
            continue
        host, colon, port = part.rpartition(":")
        if not colon:
            host, port = part, "6379"
        host = host.strip("[]")
        if not host or not port.isdigit():
            raise ValueError(f"bad cluster node {part!r} in the Redis URL")
        nodes.append((host, int(port)))
    if not nodes:
        raise ValueError("the Redis URL names no host")
    first = f"{nodes[0][0]}:{nodes[0][1]}" if ":" not in nodes[0][0] else f"[{nodes[0][0]}]:{nodes[0][1]}"
    return f"{base}://{userinfo}{at}{first}{tail}", nodes


class Cluster(RedisCluster):
    """redis-py's asyncio ``RedisCluster`` with two changes for a service under load.

    * It learns the cluster's layout before it routes a command. redis-py 8.1 looks up
      a command's keys on a startup node before its first discovery of the cluster;
      many coroutines doing that at once while the discovery recycles the startup
      node's connections can hand one connection to two of them (``'NoneType' object
      has no attribute 'writelines'``). Finishing the discovery first (under the
      client's own lock) avoids that.
    * ``max_in_flight`` commands at most run at once; the next waits up to
      ``in_flight_wait`` seconds for one to finish, then fails with
      ``MaxConnectionsError`` (a ``ConnectionError``), as the single-server client's
      blocking pool does. Without it, a burst beyond a node's ``max_connections``
      fails at once.
    """

    def __init__(self, *args: Any, max_in_flight: int | None = None, in_flight_wait: float = 0.5,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate = asyncio.Semaphore(max_in_flight) if max_in_flight else None
        self._gate_wait = in_flight_wait

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self._initialize:
            await self.initialize()
        if self._gate is None:
            return await super().execute_command(*args, **kwargs)
        if self._gate.locked():
            try:
                async with asyncio.timeout(self._gate_wait):
                    await self._gate.acquire()
            except TimeoutError:
                raise MaxConnectionsError(f"no Redis connection free within {self._gate_wait} s") from None
        else:
            await self._gate.acquire()
        try:
            return await super().execute_command(*args, **kwargs)
        finally:
            self._gate.release()


def connect(url: str, *, cluster: bool | None = None, **options: Any) -> Redis | RedisCluster:
    """A new client for ``url``: a ``RedisCluster`` when :func:`wants_cluster`, else a ``Redis``.

    ``options`` (``decode_responses``, ``socket_timeout``, …) go to the client; for a
    cluster they apply to each node's connections.
    """
    if not wants_cluster(url, cluster):
        return Redis.from_url(url, **options)
    single, nodes = split_cluster_url(url)
    return Cluster.from_url(single, startup_nodes=[ClusterNode(h, p) for h, p in nodes], **options)


def is_cluster(client: Any) -> bool:
    """Whether ``client`` is a cluster client (scans and reads must then visit every primary)."""
    return isinstance(client, RedisCluster)


def display_url(url: str) -> str:
    """``url`` without its password (for logs); works for cluster URLs with several hosts."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, hosts = rest.rpartition("@")
    if at and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    return f"{scheme}{sep}{userinfo}{at}{hosts}"


def _switched_on(name: str) -> bool:
    """hiredis is installed and the environment variable ``name`` is not ``0``/``false``/``off``/``no``."""
    return hiredis is not None and os.environ.get(name, "1").strip().lower() not in ("0", "false", "off", "no")


def hiredis_wanted() -> bool:
    """Whether hiredis parses replies and packs commands: installed, and ``KARTY_HIREDIS`` is
    not ``0``/``false``/``off`` (to compare the two in one benchmark run, or should it misbehave)."""
    return _switched_on("KARTY_HIREDIS")


def pipelined_wanted() -> bool:
    """Whether a move's call goes on the pipelined connection (:mod:`store.pipelined`, which
    needs hiredis): unless ``KARTY_PIPELINED`` is ``0``/``false``/``off`` (to compare the two in
    one benchmark run, or should it misbehave)."""
    return _switched_on("KARTY_PIPELINED")


class HiredisPacking:
    """Mixin for a redis-py asyncio connection class: commands packed by hiredis's C packer.

    redis-py's synchronous connections pack with hiredis when it is installed, its asyncio
    ones always with the pure-Python packer: 31 µs for a move's ``EVALSHA`` (a ~12 KB
    document and ready-made messages) against 5 µs here. Arguments hiredis does not take
    (``memoryview``, ``bytearray``, anything but str/bytes/int/float) go to redis-py's own
    packer, which converts them or raises its ``DataError`` as before.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        first = args[0]
        if isinstance(first, str):
            args = (*first.encode().split(), *args[1:])  # 'CONFIG GET': the command's words apart
        elif b" " in first:
            args = (*first.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return super().pack_command(*args)  # type: ignore[misc]


def hiredis_packing(pool: Any) -> Any:
    """``pool`` (a redis-py asyncio connection pool) making its connections with
    :class:`HiredisPacking` over the class its URL chose (TCP, TLS or a Unix socket); as it
    was when hiredis is not wanted (:func:`hiredis_wanted`). Returns ``pool``."""
    cls = pool.connection_class
    if hiredis_wanted() and not issubclass(cls, HiredisPacking):
        pool.connection_class = type(f"Hiredis{cls.__name__}", (HiredisPacking, cls), {})
    return pool


# -- a pool that heals after a Redis restart ---------------------------------------------------------
#: Seconds a pooled connection may sit unused before it is checked with a PING on its next use
#: (redis-py's ``health_check_interval``): a connection Redis closed while it sat in the pool —
#: restarted, or a proxy between them — is found dead and opened again before a command is
#: written on it. A connection in use all the time is never pinged.
HEALTH_CHECK_INTERVAL = 1.0

#: Commands run again once, on a fresh connection, when the connection is lost before their
#: answer came: reading, or writing what is the same whether done once or twice. Everything
#: else (``EVALSHA`` of a move, ``INCR``, ``XADD``, …) is not: whether it ran is unknown, and
#: the caller decides (a move's retry with the same ``client_action_id`` is applied once).
IDEMPOTENT = frozenset({
    "PING", "ECHO", "GET", "MGET", "EXISTS", "TYPE", "TTL", "PTTL", "STRLEN", "GETRANGE",
    "HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN", "HKEYS", "HVALS", "HSCAN",
    "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SSCAN",
    "ZRANGE", "ZRANGEBYSCORE", "ZREVRANGE", "ZREVRANGEBYSCORE", "ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT",
    "ZRANK", "ZREVRANK", "ZSCAN", "LRANGE", "LLEN", "LINDEX", "XRANGE", "XREVRANGE", "XLEN", "XINFO",
    "XPENDING", "SCAN", "SCRIPT", "DBSIZE", "INFO", "TIME", "CLIENT", "HELLO", "SELECT",
    "SET", "HSET", "HMSET", "HDEL", "SADD", "SREM", "ZADD", "ZREM", "DEL", "UNLINK", "EXPIRE",
    "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "XACK",
})

_SAFE_AGAIN: contextvars.ContextVar[bool] = contextvars.ContextVar("karty_redis_safe_again", default=False)


@contextlib.contextmanager
def idempotent() -> Iterator[None]:
    """Within: the store's calls are safe to run twice (e.g. a script whose second run changes
    nothing), so each is retried once on a lost connection like the :data:`IDEMPOTENT` commands."""
    token = _SAFE_AGAIN.set(True)
    try:
        yield
    finally:
        _SAFE_AGAIN.reset(token)


def _not_sent(error: BaseException) -> bool:
    """The connection was found closed before the command was written: it never ran."""
    text = str(error)
    return "before write" in text or text.startswith(("Error connecting", "Connection refused"))


def _retryable(error: BaseException) -> bool:
    return _SAFE_AGAIN.get() or _not_sent(error)


def retry_policy() -> Retry:
    """redis-py's ``Retry`` for the store's pool: once, at once, on a lost connection (never on a
    timeout: the bound a call has stays its own), when :func:`_retryable` says it is safe."""
    return Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,), is_retryable=_retryable)


class HealthChecked:
    """Mixin for a redis-py asyncio connection class: the health check's ``PING``, which runs
    before any command is written, is always safe to retry on a fresh connection."""

    async def check_health(self) -> None:
        token = _SAFE_AGAIN.set(True)
        try:
            await super().check_health()  # type: ignore[misc]
        finally:
            _SAFE_AGAIN.reset(token)


class StoreRedis(Redis):
    """The single-server client of :meth:`store.Store.from_url`: a command of
    :data:`IDEMPOTENT` (or any command inside :func:`idempotent`) is marked safe to retry for
    :func:`retry_policy`, which redis-py's own retry loop consults on the same connection."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        name = args[0]
        name = (name.decode() if isinstance(name, bytes) else str(name)).split(" ", 1)[0].upper()
        if name not in IDEMPOTENT or _SAFE_AGAIN.get():
            return await super().execute_command(*args, **options)
        token = _SAFE_AGAIN.set(True)
        try:
            return await super().execute_command(*args, **options)
        finally:
            _SAFE_AGAIN.reset(token)


def healing(pool: Any) -> Any:
    """``pool`` (a redis-py asyncio connection pool) making health-checked connections
    (:class:`HealthChecked`, every :data:`HEALTH_CHECK_INTERVAL` s of idleness) with
    :func:`retry_policy`. Returns ``pool``."""
    cls = pool.connection_class
    if not issubclass(cls, HealthChecked):
        pool.connection_class = type(f"HealthChecked{cls.__name__}", (HealthChecked, cls), {})
    pool.connection_kwargs.setdefault("health_check_interval", HEALTH_CHECK_INTERVAL)
    pool.connection_kwargs.setdefault("retry", retry_policy())
    return pool
