"""store.pipelined: many coroutines' commands on one connection, answered in order.

Against the real Redis (marked ``redis``) and against small scripted servers on loopback
(a server that never answers, one that hangs up, one that answers what nobody asked), so
the failure paths run for real: every waiting caller fails with one of
:data:`store.UNAVAILABLE`, nothing is answered to the wrong caller, and the next call
connects again.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import fakeredis
import pytest
import redis.asyncio as aioredis
from conftest import CLUSTER_URL
from conftest import unique_prefix as new_prefix
from redis.exceptions import AuthenticationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from store import UNAVAILABLE, Store
from store.pipelined import Pipelined

#: On ``make test-cluster`` the real Redis is a cluster, where the store keeps redis-py's own
#: path (Pipelined.for_client gives None): the tests of one plain server's connection skip.
one_server = pytest.mark.skipif(bool(CLUSTER_URL), reason="a pipelined connection is for one plain server")


@pytest.fixture
def prefix() -> str:
    return new_prefix()


def _address(url: str) -> tuple[str, int]:
    rest = url.split("://", 1)[1].split("/", 1)[0].rpartition("@")[2]
    host, _, port = rest.rpartition(":")
    return host or "127.0.0.1", int(port or 6379)


class Scripted:
    """A loopback TCP server speaking just enough RESP: ``answer(command) -> bytes | None``
    (None: no answer) for each command it reads; ``hang_up_after`` commands, it closes."""

    def __init__(self, answer, hang_up_after: int | None = None) -> None:
        self.answer = answer
        self.hang_up_after = hang_up_after
        self.connections = 0
        self.commands: list[list[str]] = []
        self.server: asyncio.base_events.Server | None = None

    async def __aenter__(self) -> Scripted:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        seen = 0
        try:
            while True:
                head = await reader.readline()
                if not head:
                    return
                assert head.startswith(b"*")
                parts = []
                for _ in range(int(head[1:])):
                    size = int((await reader.readline())[1:])
                    parts.append((await reader.readexactly(size + 2))[:-2].decode())
                self.commands.append(parts)
                seen += 1
                if self.hang_up_after is not None and seen >= self.hang_up_after:
                    return
                reply = self.answer(parts)
                if reply is not None:
                    writer.write(reply)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()


@pytest.mark.redis
@one_server
async def test_concurrent_callers_each_get_their_own_answer_on_one_connection(redis_url, prefix):
    host, port = _address(redis_url)
    channel = Pipelined(host=host, port=port)
    writes = []
    keys = [f"{prefix}:p{i}" for i in range(300)]
    try:
        await channel.execute("PING")
        transport = channel._protocol.transport
        real_write = transport.write
        transport.write = lambda data: (writes.append(data), real_write(data))[1]
        assert await asyncio.gather(*(channel.execute("SET", k, f"v{i}") for i, k in enumerate(keys))) == ["OK"] * 300
        got = await asyncio.gather(*(channel.execute("GET", k) for k in reversed(keys)))
        assert got == [f"v{i}" for i in reversed(range(300))]
        assert await channel.execute("INCRBY", keys[0] + "n", 7) == 7  # integers stay integers
        assert channel.connects == 1
        assert len(writes) <= 3  # the commands of one turn of the loop go out in one write
        with pytest.raises(ResponseError, match="WRONGTYPE"):  # an error reply is redis-py's exception
            await channel.execute("LPUSH", keys[1], "x")
        assert await channel.execute("GET", keys[1]) == "v1"  # … and the connection goes on
    finally:
        await channel.execute("DEL", *keys, keys[0] + "n")
        await channel.close()


@pytest.mark.redis
@one_server
async def test_evalsha_loads_a_script_the_server_does_not_know(redis_url, prefix):
    host, port = _address(redis_url)
    channel = Pipelined(host=host, port=port)
    script = f"-- {uuid.uuid4().hex}\nreturn {{KEYS[1], ARGV[1], 5}}"  # new text: not cached on the server
    try:
        answer, sha = await channel.evalsha("0" * 40, script, [f"{prefix}:k"], ["a"])
        assert answer == [f"{prefix}:k", "a", 5]
        assert sha == await channel.execute("SCRIPT", "LOAD", script)
        before = channel.calls
        assert (await channel.evalsha(sha, script, ["x"], ["y"]))[0] == ["x", "y", 5]
        assert channel.calls == before + 1  # known now: one call
    finally:
        await channel.close()


@pytest.mark.redis
@one_server
async def test_it_selects_the_database_of_the_url(redis_url, prefix):
    host, port = _address(redis_url)
    channel = Pipelined(host=host, port=port, db=9)
    other = aioredis.Redis(host=host, port=port, db=9, decode_responses=True)
    key = f"{prefix}:db9"
    try:
        await channel.execute("SET", key, "nine")
        assert await other.get(key) == "nine"
    finally:
        await other.delete(key)
        await other.aclose()
        await channel.close()


async def test_a_server_that_never_answers_times_out_every_caller_and_the_next_call_reconnects():
    answering = False

    def answer(parts):
        return b"+PONG\r\n" if answering else None

    async with Scripted(answer) as server:
        channel = Pipelined(port=server.port, timeout=0.3)
        calls = [asyncio.ensure_future(channel.execute("PING")) for _ in range(5)]
        done = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(e, RedisTimeoutError) for e in done), done
        assert all(isinstance(e, UNAVAILABLE) for e in done)
        answering = True
        assert await channel.execute("PING") == "PONG"
        assert server.connections == 2
        await channel.close()


async def test_a_lost_connection_fails_its_callers_and_the_next_call_connects_again():
    async with Scripted(lambda parts: b"+PONG\r\n", hang_up_after=2) as server:
        channel = Pipelined(port=server.port, timeout=30)
        assert await channel.execute("PING") == "PONG"
        with pytest.raises(RedisConnectionError):  # the second command: the server hangs up
            await channel.execute("PING")
        assert await channel.execute("PING") == "PONG"  # a new connection
        assert server.connections == 2
        await channel.close()
        with pytest.raises(RedisConnectionError):  # closed for good
            await channel.execute("PING")


async def test_an_answer_nobody_asked_for_drops_the_connection():
    async with Scripted(lambda parts: b"+PONG\r\n+EXTRA\r\n") as server:
        channel = Pipelined(port=server.port, timeout=30)
        assert await channel.execute("PING") == "PONG"  # then the unasked answer: out of step, dropped
        assert await channel.execute("PING") == "PONG"  # on a new connection
        assert server.connections == 2
        await channel.close()


async def test_a_caller_that_gives_up_leaves_the_answers_in_step():
    pending: list[bytes] = []

    def answer(parts):
        pending.append(f"+{parts[1]}\r\n".encode())
        return None  # answers are held back, then sent all at once

    async with Scripted(answer) as server:
        channel = Pipelined(port=server.port, timeout=30)
        first = asyncio.ensure_future(channel.execute("ECHO", "one"))
        second = asyncio.ensure_future(channel.execute("ECHO", "two"))
        while len(server.commands) < 2:
            await asyncio.sleep(0.01)
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        # the held answers arrive: "one" is nobody's now, "two" is the second caller's
        channel._protocol.data_received(b"".join(pending))
        assert await second == "two"
        await channel.close()


async def test_auth_is_sent_first_with_the_credentials():
    async with Scripted(lambda parts: b"+OK\r\n") as server:
        channel = Pipelined(port=server.port, username="karty", password="s3cret", db=2)
        assert await channel.execute("SET", "k", "v") == "OK"
        assert server.commands[:3] == [["AUTH", "karty", "s3cret"], ["SELECT", "2"], ["SET", "k", "v"]]
        await channel.close()


async def test_refused_credentials_fail_the_call():
    async with Scripted(lambda parts: b"-WRONGPASS invalid username-password pair\r\n") as server:
        channel = Pipelined(port=server.port, password="nope")
        with pytest.raises(AuthenticationError):  # redis-py's, a ConnectionError: one of UNAVAILABLE
            await channel.execute("PING")
        await channel.close()


async def test_nothing_listening_is_a_connection_error():
    async with Scripted(lambda parts: None) as server:
        port = server.port
    channel = Pipelined(port=port, timeout=5)
    with pytest.raises(RedisConnectionError):
        await channel.execute("PING")
    await channel.close()


def test_which_clients_get_one(monkeypatch):
    real = Store.from_url("redis://127.0.0.1:6399/4", prefix="x")  # not connected: only its pool's settings
    channel = Pipelined.for_client(real.redis)
    assert channel is not None and (channel.host, channel.port, channel.db) == ("127.0.0.1", 6399, 4)
    assert real.pipelined is not None and real._move.channel is real.pipelined
    assert Pipelined.for_client(fakeredis.FakeAsyncRedis(decode_responses=True)) is None
    assert Pipelined.for_client(aioredis.Redis.from_url("rediss://127.0.0.1:6399/0", decode_responses=True)) is None
    assert Pipelined.for_client(aioredis.Redis.from_url("redis://127.0.0.1:6399/0")) is None  # bytes answers
    unix = Pipelined.for_client(aioredis.Redis.from_url("unix:///tmp/redis.sock?db=3", decode_responses=True))
    assert unix is not None and (unix.path, unix.db) == ("/tmp/redis.sock", 3)
    monkeypatch.setenv("KARTY_PIPELINED", "0")
    assert Pipelined.for_client(real.redis) is None


@pytest.mark.redis
@one_server
async def test_commands_sent_together_answer_in_order_and_an_error_reply_is_raised_after_all(redis_url, prefix):
    host, port = _address(redis_url)
    channel = Pipelined(host=host, port=port)
    try:
        assert await channel.execute_many([]) == []
        got = await channel.execute_many([("SET", f"{prefix}:a", "1"), ("EXISTS", f"{prefix}:a"),
                                          ("GET", f"{prefix}:a"), ("GET", f"{prefix}:none")])
        assert got == ["OK", 1, "1", None]
        with pytest.raises(ResponseError, match="WRONGTYPE"):
            await channel.execute_many([("LPUSH", f"{prefix}:a", "x"), ("SET", f"{prefix}:b", "2")])
        assert await channel.execute("GET", f"{prefix}:b") == "2"  # the command after the error ran, in step
    finally:
        await channel.execute("DEL", f"{prefix}:a", f"{prefix}:b")
        await channel.close()


async def test_the_notifiers_hints_are_one_call_on_either_path(store):
    """store.notice_hints (presence and live turn notices of a batch of outbox entries): on the
    real Redis through the pipelined connection, on fakeredis through a redis-py pipeline;
    the same answers either way."""
    await store.heartbeat("t1", 5)
    await store.set_turn_notice(6, {"message_id": 9, "tables": ["t1"]})
    if store.pipelined is not None:
        before = store.pipelined.calls
    seen, notices = await store.notice_hints([("t1", 5), ("t1", 6), ("t1", 5)], [6, 5, 6])
    assert seen == {("t1", 5): True, ("t1", 6): False}
    assert notices == {6: {"message_id": 9, "tables": ["t1"]}, 5: None}
    if store.pipelined is not None:
        assert store.pipelined.calls == before + 4  # each pair and person once
    assert await store.notice_hints([], []) == ({}, {})
