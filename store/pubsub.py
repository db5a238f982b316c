"""The live feed's subscriptions: one process's pub/sub connections (:mod:`store.live`).

Two kinds, one interface (:class:`Feed`):

* :class:`SingleFeed` — one Redis: one ``SUBSCRIBE`` connection for every table's
  channel; commits ``PUBLISH`` (``commit.lua``). redis-py reconnects it and
  resubscribes by itself; each reconnect is reported as a gap in every channel.
* :class:`ShardedFeed` — a Redis Cluster: sharded pub/sub. Commits ``SPUBLISH`` on the
  table's channel (``P:{g:<table>}:events``: the table's hash tag, so its slot), which
  reaches only the subscribers on the nodes of that slot's shard; this process holds
  one ``SSUBSCRIBE`` connection per primary that owns a channel it listens to
  (:class:`_NodeSub`), with the channels of that node. A channel is moved to its
  slot's current owner when its node's connection is lost (a killed or failed-over
  primary), when the node answers ``MOVED``, or when the node itself drops the
  subscription (Redis sends ``sunsubscribe`` for the channels of a slot it no longer
  serves: a slot migration, a primary turned replica). The new owner is learnt through
  the cluster client (a keyed ``EXISTS`` on the channel's name follows ``MOVED`` and
  refreshes the slot map); once it confirms the subscription the channels are reported
  as a gap, so :class:`store.live.Live` reads those tables' versions once and delivers
  what was missed meanwhile.

``on_message(channel, data)`` is called for every message (``data`` text: the commit's
``store.live.pack`` message), ``on_gap(channels)`` after a reconnect or a move
(``None``: every channel). Both are called from the feed's reader tasks, synchronously;
``on_gap`` must not block (it schedules the reads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from redis.asyncio.client import PubSub
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import ResponseError
from redis.retry import Retry

from store.common import _s

log = logging.getLogger("karty.store.live")

SUBSCRIBE_TIMEOUT = 5.0  # seconds a subscription may take to be confirmed
CHECK_EVERY = 1.0  # seconds a reader waits for a message before it looks around (ping, closing)
PING_EVERY = 5.0  # seconds of silence after which a node connection is pinged
DEAD_AFTER = 15.0  # seconds without any answer (message, confirmation, pong) before it is given up
REROUTE_BACKOFF = (0.05, 2.0)  # seconds between tries to find a channel's new owner: first, at most

OnMessage = Callable[[str, str], None]
OnGap = Callable[[list[str] | None], None]


class Feed(Protocol):
    #: the command ``commit.lua`` publishes with: ``PUBLISH`` or ``SPUBLISH``
    publish: str

    async def subscribe(self, channel: str) -> None:
        """Subscribe to ``channel``; returns once the server confirmed it. Raises
        ``TimeoutError`` or a Redis error when that cannot be had within
        :data:`SUBSCRIBE_TIMEOUT` seconds."""

    async def unsubscribe(self, *channels: str) -> None:
        """Stop receiving ``channels`` (best effort)."""

    async def close(self) -> None:
        """Stop the readers, close the connections."""


def _waiters(table: dict[str, asyncio.Future[None]], channels: Iterable[str]) -> list[asyncio.Future[None]]:
    loop = asyncio.get_running_loop()
    out = []
    for ch in channels:
        fut = table.get(ch)
        if fut is None or fut.done():
            fut = table[ch] = loop.create_future()
        out.append(fut)
    return out


def _settle(table: dict[str, asyncio.Future[None]], channel: str, exc: BaseException | None = None) -> None:
    fut = table.pop(channel, None)
    if fut is not None and not fut.done():
        if exc is None:
            fut.set_result(None)
        else:
            fut.set_exception(exc)
            fut.exception()  # retrieved: nobody may be waiting any more


# ------------------------------------------------------------------------------------ one Redis
class _ReportingPubSub(PubSub):
    """redis-py's pub/sub, telling its feed of every reconnect (after it resubscribed)."""

    def __init__(self, feed: SingleFeed, pool: Any) -> None:
        super().__init__(pool)
        self.feed = feed

    async def on_connect(self, connection: Any) -> None:
        await super().on_connect(connection)
        self.feed._reconnected()


class SingleFeed:
    """Every channel on one ``SUBSCRIBE`` connection of ``redis``'s pool (one Redis)."""

    publish = "PUBLISH"

    def __init__(self, redis: Any, on_message: OnMessage, on_gap: OnGap) -> None:
        self.redis = redis
        self.on_message = on_message
        self.on_gap = on_gap
        self.channels: set[str] = set()
        self._pubsub: PubSub | None = None
        self._reader: asyncio.Task | None = None
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._closed = False
        self.connects = 0  # reconnects and restarts (tests)

    async def subscribe(self, channel: str) -> None:
        if self._closed:
            raise RuntimeError("the feed is closed")
        if self._pubsub is None:
            self._pubsub = _ReportingPubSub(self, self.redis.connection_pool)
        (fut,) = _waiters(self._waiting, [channel])
        self.channels.add(channel)
        try:
            await self._pubsub.subscribe(channel)
            if self._reader is None or self._reader.done():
                self._reader = asyncio.create_task(self._read(), name="store-live")
            await asyncio.wait_for(asyncio.shield(fut), SUBSCRIBE_TIMEOUT)
        except BaseException:
            self.channels.discard(channel)
            raise

    async def unsubscribe(self, *channels: str) -> None:
        self.channels.difference_update(channels)
        if self._pubsub is not None and not self._closed and channels:
            with contextlib.suppress(Exception):
                await self._pubsub.unsubscribe(*channels)

    def _reconnected(self) -> None:
        """redis-py reconnected (and resubscribed): commits may have been missed meanwhile.
        (A pool connection's first connect calls no callback.)"""
        self.connects += 1
        self.on_gap(None)

    async def _read(self) -> None:
        backoff = 0.1
        while not self._closed:
            pubsub = self._pubsub
            try:
                msg = await pubsub.get_message(timeout=CHECK_EVERY)
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the connection is gone and redis-py gave up: start afresh
                log.warning("live: pub/sub failed: %s", e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                await self._restart(pubsub)
                continue
            if msg is None:
                continue
            kind = msg.get("type")
            if kind == "message":
                self.on_message(_s(msg["channel"]), _s(msg["data"]))
            elif kind == "subscribe":
                _settle(self._waiting, _s(msg["channel"]))

    async def _restart(self, old: PubSub) -> None:
        with contextlib.suppress(Exception):
            await old.aclose()
        self._pubsub = _ReportingPubSub(self, self.redis.connection_pool)
        self.connects += 1
        try:
            if self.channels:
                await self._pubsub.subscribe(*self.channels)
        except Exception as e:
            log.warning("live: resubscribing failed: %s", e)
        self.on_gap(None)

    async def close(self) -> None:
        self._closed = True
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        self._pubsub = None


# ------------------------------------------------------------------------------------ a cluster
class _NodeSub:
    """The ``SSUBSCRIBE`` connection of one primary (a connection of its own, not the
    cluster's pool), and its reader.

    Nothing reconnects it: a lost connection ends this object, and the feed moves its
    channels (wherever their slots are served now) and has them resynced.
    """

    def __init__(self, feed: ShardedFeed, node: Any) -> None:
        self.feed = feed
        self.name: str = node.name
        kwargs = {**node.connection_kwargs, "retry": Retry(NoBackoff(), 0)}
        kwargs.pop("retry_on_error", None)
        self.conn = node.connection_class(**kwargs)
        self.channels: set[str] = set()  # asked for or confirmed, not dropped since
        self.asked: set[str] = set()  # channels we asked to leave (their sunsubscribe is ours)
        self.waiting: dict[str, asyncio.Future[None]] = {}
        self.dead = False
        self.heard = time.monotonic()
        self._lock = asyncio.Lock()
        self._opened = asyncio.Event()
        self.reader = asyncio.create_task(self._read(), name=f"store-live-{self.name}")

    async def _send(self, command: str, channels: list[str]) -> None:
        """``command`` once per slot (a node refuses channels of two slots in one)."""
        by_slot: dict[int, list[str]] = {}
        for ch in channels:
            by_slot.setdefault(key_slot(ch.encode()), []).append(ch)
        async with self._lock:
            if self.dead:
                raise ConnectionError(f"pub/sub of {self.name} is closed")
            try:
                if not self._opened.is_set():
                    await self.conn.connect()
                    self.heard = time.monotonic()
                    self._opened.set()
                for group in by_slot.values():
                    await self.conn.send_command(command, *group, check_health=False)
            except Exception as e:
                self.feed._lost(self, e)
                raise

    async def ssubscribe(self, channels: list[str]) -> list[asyncio.Future[None]]:
        """Send ``SSUBSCRIBE``; the futures settle with the confirmations (or the error)."""
        futs = _waiters(self.waiting, channels)
        self.channels.update(channels)
        self.asked.difference_update(channels)
        await self._send("SSUBSCRIBE", channels)
        return futs

    async def sunsubscribe(self, channels: list[str]) -> None:
        mine = [ch for ch in channels if ch in self.channels]
        if not mine:
            return
        self.channels.difference_update(mine)
        self.asked.update(mine)
        await self._send("SUNSUBSCRIBE", mine)

    async def _read(self) -> None:
        pinged = False
        try:
            await self._opened.wait()
            while not self.dead:
                try:
                    if not self.conn.is_connected:
                        raise ConnectionError(f"connection to {self.name} closed")
                    msg = await self.conn.read_response(timeout=CHECK_EVERY, disconnect_on_error=False,
                                                        push_request=True)
                except asyncio.CancelledError:
                    raise
                except ResponseError as e:  # MOVED/ASK/CLUSTERDOWN to an SSUBSCRIBE: find the owner again
                    self.heard = time.monotonic()
                    self._refused(e)
                    continue
                except Exception as e:  # the connection is gone (a killed or unreachable node)
                    if not self.dead:
                        log.warning("live: pub/sub of %s lost: %s", self.name, e)
                        self.feed._lost(self, e)
                    return
                now = time.monotonic()
                if msg is None:
                    if now - self.heard > DEAD_AFTER:
                        self.feed._lost(self, TimeoutError(f"{self.name} silent for {DEAD_AFTER} s"))
                        return
                    if not pinged and now - self.heard > PING_EVERY:
                        pinged = True
                        with contextlib.suppress(Exception):
                            async with self._lock:
                                await self.conn.send_command("PING", check_health=False)
                    continue
                self.heard, pinged = now, False
                self._handle(msg)
        finally:
            self.dead = True

    def _handle(self, response: Any) -> None:
        if not isinstance(response, list) or len(response) < 2:  # PONG
            return
        kind = _s(response[0]).lower()
        if kind == "smessage":
            self.feed.on_message(_s(response[1]), _s(response[2]))
        elif kind == "ssubscribe":
            ch = _s(response[1])
            _settle(self.waiting, ch)
            self.feed._confirmed(self, ch)
        elif kind == "sunsubscribe":
            ch = _s(response[1])
            if ch in self.asked:
                self.asked.discard(ch)
            elif ch in self.channels:  # the node dropped it: its slot is served elsewhere now
                self.channels.discard(ch)
                self.feed._homeless([ch])
        elif kind == "pong":
            return

    def _refused(self, error: ResponseError) -> None:
        """An ``SSUBSCRIBE`` was answered with an error: which one is not said (a refused
        command names no channel), so every channel still unconfirmed here looks for its
        owner again."""
        pending = [ch for ch, fut in self.waiting.items() if not fut.done()]
        self.channels.difference_update(pending)
        for ch in pending:
            _settle(self.waiting, ch, ConnectionError(f"refused by {self.name}: {error}"))
        self.feed._homeless(pending)

    async def close(self) -> None:
        self.dead = True
        if self.reader is not asyncio.current_task():
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader
        for ch in list(self.waiting):
            _settle(self.waiting, ch, ConnectionError(f"pub/sub of {self.name} closed"))
        with contextlib.suppress(Exception):
            await self.conn.disconnect()


class ShardedFeed:
    """Sharded pub/sub on a Redis Cluster: one ``SSUBSCRIBE`` connection per primary
    owning a subscribed channel, channels moved after a failover or a slot move."""

    publish = "SPUBLISH"

    def __init__(self, cluster: Any, on_message: OnMessage, on_gap: OnGap) -> None:
        self.cluster = cluster
        self.on_message = on_message
        self.on_gap = on_gap
        self.home: dict[str, _NodeSub] = {}  # channel -> the node connection it is (being) subscribed on
        self.subs: dict[str, _NodeSub] = {}  # node name -> its connection
        self.homeless: set[str] = set()  # channels waiting for their new owner
        self._refresh = False
        self._mover: asyncio.Task | None = None
        self._closing: set[asyncio.Task] = set()
        self._closed = False
        self.moves = 0  # channels moved to another node (tests)
        self.lost = 0  # node connections lost (tests)

    def _sub(self, node: Any) -> _NodeSub:
        sub = self.subs.get(node.name)
        if sub is None or sub.dead:
            sub = self.subs[node.name] = _NodeSub(self, node)
        return sub

    async def _owner(self, channel: str, refresh: bool = False) -> Any:
        """The primary serving ``channel``'s slot now; ``refresh`` first asks the cluster
        client (a keyed command on that slot: it follows MOVED and relearns the map)."""
        if self._closed:
            raise RuntimeError("the feed is closed")
        if refresh or self.cluster._initialize:
            await self.cluster.exists(channel)
        return self.cluster.get_node_from_key(channel)

    async def subscribe(self, channel: str) -> None:
        refresh = False
        async with asyncio.timeout(SUBSCRIBE_TIMEOUT):
            while True:
                sub = self._sub(await self._owner(channel, refresh))
                self.homeless.discard(channel)
                self.home[channel] = sub
                try:
                    (fut,) = await sub.ssubscribe([channel])
                    await asyncio.shield(fut)
                    return
                except asyncio.CancelledError:
                    self._forget(channel)
                    raise
                except Exception as e:  # a lost node, a MOVED: ask the cluster again, until the timeout
                    log.info("live: subscribing %s on %s failed: %s", channel, sub.name, e)
                    refresh = True
                    await asyncio.sleep(REROUTE_BACKOFF[0])

    def _forget(self, channel: str) -> None:
        sub = self.home.pop(channel, None)
        self.homeless.discard(channel)
        if sub is not None:
            sub.channels.discard(channel)

    async def unsubscribe(self, *channels: str) -> None:
        by_sub: dict[_NodeSub, list[str]] = {}
        for ch in channels:
            sub = self.home.pop(ch, None)
            self.homeless.discard(ch)
            if sub is not None and not sub.dead:
                by_sub.setdefault(sub, []).append(ch)
        for sub, group in by_sub.items():
            with contextlib.suppress(Exception):
                await sub.sunsubscribe(group)

    # -- called by the node readers ------------------------------------------------------------
    def _confirmed(self, sub: _NodeSub, channel: str) -> None:
        if self.home.get(channel) is not sub:  # unsubscribed or moved meanwhile: leave it there
            sub.channels.add(channel)
            self._spawn(self._leave(sub, channel))

    async def _leave(self, sub: _NodeSub, channel: str) -> None:
        with contextlib.suppress(Exception):
            await sub.sunsubscribe([channel])

    def _lost(self, sub: _NodeSub, error: BaseException) -> None:
        self.lost += 1
        sub.dead = True
        if self.subs.get(sub.name) is sub:
            del self.subs[sub.name]
        for ch in list(sub.waiting):
            _settle(sub.waiting, ch, ConnectionError(f"pub/sub of {sub.name} lost: {error}"))
        self._homeless([ch for ch, s in self.home.items() if s is sub], refresh=True)
        self._spawn(sub.close())

    def _homeless(self, channels: list[str], refresh: bool = True) -> None:
        """``channels`` are subscribed nowhere now: find their owners, subscribe, resync."""
        channels = [ch for ch in channels if ch in self.home]
        if not channels or self._closed:
            return
        self.homeless.update(channels)
        self._refresh = self._refresh or refresh
        if self._mover is None or self._mover.done():
            self._mover = asyncio.get_running_loop().create_task(self._move(), name="store-live-move")

    async def _move(self) -> None:
        delay = REROUTE_BACKOFF[0]
        while self.homeless and not self._closed:
            await asyncio.sleep(delay)
            channels = [ch for ch in self.homeless if ch in self.home]
            self.homeless.clear()
            refresh, self._refresh = self._refresh, False
            placed: dict[_NodeSub, list[str]] = {}
            failed: list[str] = []
            refreshed: set[int] = set()
            for ch in channels:
                try:
                    slot = key_slot(ch.encode())
                    node = await self._owner(ch, refresh and slot not in refreshed)
                    refreshed.add(slot)
                    placed.setdefault(self._sub(node), []).append(ch)
                except Exception as e:
                    log.info("live: no owner for %s yet: %s", ch, e)
                    failed.append(ch)
            done: list[str] = []
            for sub, group in placed.items():
                group = [ch for ch in group if ch in self.home or ch in self.homeless]
                for ch in group:
                    self.home[ch] = sub
                try:
                    futs = await sub.ssubscribe(group)
                    results = await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True),
                                                     SUBSCRIBE_TIMEOUT)
                except Exception as e:
                    log.info("live: resubscribing on %s failed: %s", sub.name, e)
                    failed.extend(group)
                    continue
                for ch, res in zip(group, results, strict=True):
                    (failed if isinstance(res, BaseException) else done).append(ch)
            if done:
                self.moves += len(done)
                log.info("live: %d channel(s) subscribed again after a move or a lost connection", len(done))
                self.on_gap(done)
            again = [ch for ch in failed if ch in self.home]
            if again:
                self.homeless.update(again)
                self._refresh = True
                delay = min(delay * 2, REROUTE_BACKOFF[1])
            else:
                delay = REROUTE_BACKOFF[0]

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        self._closed = True
        tasks = [t for t in (self._mover, *self._closing) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for sub in list(self.subs.values()):
            await sub.close()
        self.subs.clear()
        self.home.clear()


def feed_for(redis: Any, on_message: OnMessage, on_gap: OnGap) -> SingleFeed | ShardedFeed:
    """The feed for ``redis``: :class:`ShardedFeed` on a cluster client, else :class:`SingleFeed`."""
    from store.connect import is_cluster

    cls = ShardedFeed if is_cluster(redis) else SingleFeed
    return cls(redis, on_message, on_gap)
