"""One connection that carries many coroutines' commands at once: the live path's Redis calls.

redis-py runs each command on a connection of its own, taken from the pool and given
back: a condition and a lock, a timer for the read, its metrics hooks. For the one call
a move costs (``move.lua``) that is ~100 µs of CPU of the ~145 µs the call takes
(``benchmarks``, "The service", fifth pass). :class:`Pipelined` instead writes each
command to one open connection as it is made (the commands made in one turn of the
event loop in one write) and hands the answers back in order as its protocol reads
them (Redis answers the commands of a connection in the order they came): a move's call
costs a hiredis pack, its share of a write and a future. Auto-pipelining, as ioredis
and Jedis call it.

* **Timeouts** are one timer per connection, not one per command: when the oldest
  unanswered command has waited ``timeout`` seconds the connection is dropped and every
  caller waiting on it gets :class:`redis.exceptions.TimeoutError`.
* **A lost connection** (Redis restarted, a network fault) fails every caller waiting on
  it with :class:`redis.exceptions.ConnectionError`; the next call connects again. Nothing
  is sent twice: whether a command whose answer was lost ran is for the caller to find
  out (a move's retry with the same ``client_action_id`` is exactly-once, ``commit.lua``).
* **Errors** Redis answers are redis-py's exceptions (``NoScriptError``, ``ResponseError``,
  ``BusyLoadingError``, …), so the rest of the store handles them as before; every one
  of :data:`store.UNAVAILABLE` is a ``ConnectionError`` or ``TimeoutError``.
* :meth:`evalsha` loads a script the server does not know (restarted, flushed) and runs
  it again: ``NOSCRIPT`` means it did not run.

Only for one server reached over TCP or a Unix socket without TLS
(:meth:`Pipelined.for_client`); a cluster, TLS or fakeredis keep redis-py's own path.
Part of ``store/``, the only package that talks to Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from typing import Any

from redis._parsers.base import BaseParser
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError

from store.connect import pipelined_wanted

try:
    import hiredis
except ImportError:  # redis-py without its [hiredis] extra: Pipelined.for_client gives None
    hiredis = None

_NO_ANSWER = False  # what hiredis.Reader.gets() returns while a reply is incomplete


class _ReplyError(Exception):
    """hiredis's error replies, before :meth:`BaseParser.parse_error` names redis-py's class."""


class _Protocol(asyncio.Protocol):
    """The connection's reader: each complete reply resolves the oldest waiting future."""

    def __init__(self, owner: Pipelined) -> None:
        self.owner = owner
        self.reader = hiredis.Reader(replyError=_ReplyError, encoding="utf-8")
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        waiting = self.owner._waiting
        while True:
            try:
                reply = reader.gets()
            except hiredis.ProtocolError as e:  # not Redis's protocol: nothing more can be trusted
                self.owner._drop(self, RedisConnectionError(f"Redis protocol error: {e}"))
                return
            if reply is _NO_ANSWER:
                return
            if not waiting:  # an answer nobody asked for: the connection is out of step
                self.owner._drop(self, RedisConnectionError("Redis answered a command never sent"))
                return
            future, _sent = waiting.popleft()
            if not future.done():
                if isinstance(reply, _ReplyError):
                    future.set_exception(BaseParser.parse_error(str(reply)))
                    future.exception()  # its caller may have given up (execute_many): no "never retrieved"
                else:
                    future.set_result(reply)
            self.owner._answered()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self.owner._drop(self, RedisConnectionError(f"Connection to Redis lost: {exc or 'closed by the server'}"))


class Pipelined:
    """Commands on one connection to one Redis server, from any number of coroutines at once.

    ``host``/``port`` (or ``path``, a Unix socket), ``db``, ``username``/``password``: the
    server; ``timeout``: seconds an answer may take (and the connection to open) before
    :class:`redis.exceptions.TimeoutError`. Answers are decoded as UTF-8 text, as the
    store's redis-py client decodes them.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 6379, path: str | None = None, db: int = 0,
                 username: str | None = None, password: str | None = None, timeout: float = 30.0,
                 connect_timeout: float | None = None) -> None:
        self.host, self.port, self.path, self.db = host, int(port), path, int(db or 0)
        self.username, self.password = username, password
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout if connect_timeout is not None else timeout)
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Task[_Protocol] | None = None
        self._waiting: deque[tuple[asyncio.Future[Any], float]] = deque()  # oldest first, with its send time
        self._out: list[bytes] = []  # packed commands of this turn of the loop, written by _flush
        self._flushing = False
        self._watchdog: asyncio.TimerHandle | None = None
        self._closed = False
        self.connects = 0  # connections opened (tests, benchmarks)
        self.calls = 0  # commands sent

    @classmethod
    def for_client(cls, client: Any) -> Pipelined | None:
        """A :class:`Pipelined` to the server of redis-py's asyncio ``client`` (its pool's
        address, database, credentials and socket timeout), or ``None`` when that is not one
        plain server (a cluster client, TLS, a client without a connection pool: fakeredis)."""
        if not pipelined_wanted():
            return None
        pool = getattr(client, "connection_pool", None)
        kwargs = getattr(pool, "connection_kwargs", None)
        if pool is None or not isinstance(kwargs, dict) or "server" in kwargs:  # fakeredis's FakeConnection
            return None
        kind = pool.connection_class
        if issubclass(kind, SSLConnection) or not kwargs.get("decode_responses"):
            return None
        timeout = kwargs.get("socket_timeout") or 30.0
        common = {"db": kwargs.get("db", 0), "username": kwargs.get("username"), "password": kwargs.get("password"),
                  "timeout": timeout, "connect_timeout": kwargs.get("socket_connect_timeout") or timeout}
        if issubclass(kind, UnixDomainSocketConnection):
            return cls(path=kwargs["path"], **common)
        if "host" not in kwargs or kwargs.get("credential_provider") is not None:
            return None
        return cls(host=kwargs["host"], port=kwargs.get("port", 6379), **common)

    # ------------------------------------------------------------------ calls
    async def execute(self, *args: Any) -> Any:
        """Send one command (``"GET", key``) and return its answer.

        Raises redis-py's ``ResponseError`` family for an error reply,
        ``ConnectionError`` when the connection cannot be opened or is lost before the
        answer, ``TimeoutError`` after ``timeout`` s without one; ``DataError``-like
        ``TypeError`` for an argument hiredis cannot pack (str, bytes, int, float only).
        """
        (future,) = await self._send([args])
        return await future

    async def execute_many(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Send ``commands`` together (one write) and return their answers in order, as a
        redis-py pipeline without a transaction does; the first error reply is raised
        once all have been answered. Same errors as :meth:`execute`."""
        if not commands:
            return []
        answers = []
        error: BaseException | None = None
        for future in await self._send(commands):
            try:
                answers.append(await future)
            except (RedisConnectionError, RedisTimeoutError, asyncio.CancelledError):
                raise
            except Exception as e:  # an error reply: the others are still read, as a pipeline does
                error = error or e
                answers.append(e)
        if error is not None:
            raise error
        return answers

    async def _send(self, commands: Sequence[Sequence[Any]]) -> list[asyncio.Future[Any]]:
        """Queue ``commands`` on the connection (opened first if need be) for this turn's
        write; their futures, in order. Nothing is queued if one cannot be packed."""
        protocol = self._protocol
        if protocol is None or protocol.transport is None or protocol.transport.is_closing():
            await self._connect()
        packed = [hiredis.pack_command(tuple(command)) for command in commands]
        loop = asyncio.get_running_loop()
        now = loop.time()
        futures = [loop.create_future() for _ in packed]
        self._waiting.extend((future, now) for future in futures)
        self._out.extend(packed)
        self.calls += len(packed)
        if not self._flushing:
            self._flushing = True
            loop.call_soon(self._flush)
        if self._watchdog is None:
            self._watchdog = loop.call_at(now + self.timeout, self._check)
        return futures

    async def evalsha(self, sha: str, script: str, keys: Sequence[Any], args: Sequence[Any]) -> tuple[Any, str]:
        """Run a script by its ``sha``; if the server does not know it (``NOSCRIPT``: it did
        not run), load ``script`` and run it again. Returns ``(answer, sha)``, the sha as
        the server has it (the same unless the script's text changed)."""
        try:
            return await self.execute("EVALSHA", sha, len(keys), *keys, *args), sha
        except NoScriptError:
            sha = await self.execute("SCRIPT", "LOAD", script)
            return await self.execute("EVALSHA", sha, len(keys), *keys, *args), sha

    def _flush(self) -> None:
        """Write this turn's commands (all for the current connection: a drop clears them)."""
        self._flushing = False
        out, self._out = self._out, []
        protocol = self._protocol
        if out and protocol is not None and protocol.transport is not None:
            protocol.transport.write(out[0] if len(out) == 1 else b"".join(out))

    # ------------------------------------------------------------------ the connection
    async def _connect(self) -> _Protocol:
        if self._closed:
            raise RedisConnectionError("the Redis connection is closed")
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._open())
        return await asyncio.shield(self._connecting)

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.path is not None:
                    _, protocol = await loop.create_unix_connection(lambda: _Protocol(self), self.path)
                else:
                    _, protocol = await loop.create_connection(lambda: _Protocol(self), self.host, self.port)
        except TimeoutError:
            raise RedisTimeoutError(f"connecting to Redis took over {self.connect_timeout} s") from None
        except OSError as e:
            raise RedisConnectionError(f"cannot connect to Redis: {e}") from e
        hello: list[tuple[Any, ...]] = []
        if self.password is not None:
            hello.append(("AUTH", self.username, self.password) if self.username else ("AUTH", self.password))
        if self.db:
            hello.append(("SELECT", self.db))
        self._protocol = protocol
        self.connects += 1
        try:
            for command in hello:  # before any caller's command: this connection is not handed out yet
                future = loop.create_future()
                self._waiting.append((future, loop.time()))
                protocol.transport.write(hiredis.pack_command(command))
                async with asyncio.timeout(self.connect_timeout):
                    await future
        except BaseException as e:
            self._drop(protocol, e if isinstance(e, Exception) else RedisConnectionError("cancelled"))
            if isinstance(e, TimeoutError):
                raise RedisTimeoutError("Redis did not answer AUTH/SELECT in time") from None
            raise
        return protocol

    def _answered(self) -> None:
        if not self._waiting and self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def _check(self) -> None:
        """The watchdog: drop the connection once its oldest unanswered command waited ``timeout`` s."""
        self._watchdog = None
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        oldest = self._waiting[0][1]
        if loop.time() - oldest >= self.timeout:
            if self._protocol is not None:
                self._drop(self._protocol, RedisTimeoutError(f"no answer from Redis within {self.timeout} s"))
            return
        self._watchdog = loop.call_at(oldest + self.timeout, self._check)

    def _drop(self, protocol: _Protocol, error: BaseException) -> None:
        """Close ``protocol``'s connection (if it is the current one) and fail everyone waiting on it."""
        if protocol is not self._protocol:
            return
        self._protocol = None
        if protocol.transport is not None:
            protocol.transport.abort()
        waiting, self._waiting = self._waiting, deque()
        self._out.clear()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        for future, _ in waiting:
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: a caller that gave up meanwhile leaves no warning

    async def close(self) -> None:
        """Close the connection; waiting callers get ``ConnectionError``; later calls too."""
        self._closed = True
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting
        protocol = self._protocol
        if protocol is not None:
            self._drop(protocol, RedisConnectionError("the Redis connection is closed"))
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await protocol.closed
