"""The live tables of one process: the last document it saw of each, kept fresh by the commits.

A move's path is one straight line (DESIGN.md, issue 11):

    POST → :meth:`Live.current` (the known document, no Redis read)
         → ``Tables.apply`` (the engine on that document, then ``commit.lua``: one round trip)
         → the commit publishes the new document itself
         → :meth:`Live.committed` here, and :meth:`Live._on_message` in every other process
         → each listener (``webapp.ws.Feed``) → each socket.

* **One pub/sub connection per process** carries the channels of every table this
  process knows (on a Redis Cluster one per primary, sharded pub/sub:
  :mod:`store.pubsub`); a table is subscribed when first asked for (:meth:`Live.current`,
  :meth:`Live.watch`) and dropped once nothing listens and it was not used for
  :data:`IDLE` seconds (checked once a second for all tables, not a timer per table).
* **The message is the commit** (:func:`pack`): the new version, its document (holding
  the move's ``{seat, by, events}`` as ``move``) and each seat's ready state message,
  rendered and serialised once by the committing process (:attr:`Live.render`, set by
  the web app). Other processes send those texts to their sockets as they are, and
  parse the document only when they need it (a move posted to them, a new socket);
  the process that committed skips its own echo by the version prefix alone.
* **Resync only after a real gap**: a version more than one ahead of the known one
  reads the missing events from the log (one ``LRANGE``); a reconnect of the pub/sub
  connection re-reads every known table once (on a cluster: the tables whose channels
  were on the lost node, or moved with their slot, once subscribed again on the
  slot's new owner). Nothing polls.

Listeners are objects with ``deliver(known, events, by, lagged, texts)`` (called in
version order, never twice for a version, synchronously from the reader or the
committing call; ``events``/``by`` None mean the move's own, ``known.move``; ``texts``
the ready seat messages, if any) and ``gone()`` (the table expired).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

from redis.exceptions import TimeoutError as RedisTimeoutError

import engine
from store.common import _loads, _s
from store.models import LobbySettings, Seat, Table
from store.pubsub import feed_for

log = logging.getLogger("karty.store.live")

IDLE = 120.0  # seconds a table nobody listens to stays subscribed after its last use
MAX_TABLES = 20_000  # tables one process keeps at most (least recently used dropped first)
CHECK_EVERY = 1.0  # seconds between looks for idle tables
RESYNC_AFTER = 0.2  # seconds after a reconnect of the single Redis's feed before every known table is read again
MAX_CATCHUP = 100  # versions of missing events read from the log at most (older: snapshot only)
WATCHERS_TTL = 48 * 3600  # seconds a table's watchers set lives after its last subscription (a table's TTL)


class Known:
    """One version of a table as this process knows it.

    ``doc``: the stored document (dict; never changed in place); ``state``: its engine
    state; ``version``; :meth:`table` the :class:`~store.models.Table` (built once).
    """

    __slots__ = ("_doc", "_raw", "_state", "_table", "rendered", "version")

    def __init__(self, doc: dict[str, Any] | None = None, state: Any = None, *,
                 raw: str | None = None, version: int | None = None) -> None:
        self._doc = doc
        self._raw = raw  # the document's JSON text, parsed on first use (a message's)
        self._state = state
        self.version: int = doc["version"] if doc is not None else int(version)  # type: ignore[arg-type]
        self._table: Table | None = None
        self.rendered: Any = None  # what Live.render made of this version (the web app's)

    @classmethod
    def parse(cls, raw: str | bytes) -> Known:
        """From the stored document's JSON text."""
        return cls(_loads(_s(raw)))

    @property
    def doc(self) -> dict[str, Any]:
        """The stored document (parsed on first use)."""
        if self._doc is None:
            self._doc = _loads(self._raw)  # type: ignore[arg-type]
        return self._doc

    @property
    def state(self) -> Any:
        """The engine state (loaded on first use)."""
        if self._state is None:
            self._state = engine.load(self.doc["state"])
        return self._state

    @property
    def table(self) -> Table:
        """The :class:`Table` of this version (built on first use)."""
        if self._table is None:
            doc = self.doc
            self._table = Table(
                id=doc["id"], game=doc["game"], chat_id=doc["chat_id"], thread_id=doc["thread_id"],
                lobby_id=doc["lobby_id"], seats=[Seat(**s) for s in doc["seats"]],
                settings=LobbySettings(**doc["settings"]), state=self.state, version=doc["version"],
                deadline=doc.get("deadline"), rated=doc["rated"], created=doc["created"],
            )
        return self._table

    def seat_of(self, user_id: int) -> str | None:
        """The seat id of ``user_id`` here, or ``None`` (no model built)."""
        return next((s["seat"] for s in self.doc["seats"] if s["user_id"] == user_id), None)

    @property
    def move(self) -> dict[str, Any]:
        """``{seat, by, events}`` of the commit that made this version (empty at version 0)."""
        return self.doc.get("move") or {}


#: ``render(known, events, by)`` → ``{seat: text}``: each seat's message of a version,
#: made once by the committing process and carried by the commit's message to all.
Render = Callable[[Known, list, str | None], dict[str, str]]


def pack(version: int, doc: str, texts: dict[str, str] | None) -> tuple[str, str]:
    """The commit message's head and tail around the document: ``head + doc + tail`` is
    ``"<version>|<len(doc)>|<seat>:<len>;…|<doc><text>…"`` (lengths in characters)."""
    texts = texts or {}
    index = ";".join(f"{seat}:{len(text)}" for seat, text in texts.items())
    return f"{version}|{len(doc)}|{index}|", "".join(texts.values())


def unpack(data: str) -> tuple[int, str, dict[str, str]]:
    """``(version, document text, {seat: text})`` of a commit message (:func:`pack`)."""
    head, _, rest = data.partition("|")
    size, _, rest = rest.partition("|")
    index, _, body = rest.partition("|")
    n = int(size)
    texts: dict[str, str] = {}
    pos = n
    if index:
        for part in index.split(";"):
            seat, _, length = part.rpartition(":")
            end = pos + int(length)
            texts[seat] = body[pos:end]
            pos = end
    return int(head), body[:n], texts


class Listener(Protocol):
    def deliver(self, known: Known, events: list[dict[str, Any]], by: str | None, lagged: bool,
                texts: dict[str, str] | None = None) -> None: ...

    def gone(self) -> None: ...


class _Entry:
    __slots__ = ("channel", "deferred", "expect", "known", "listeners", "pending", "ready", "table_id", "used")

    def __init__(self, table_id: str, channel: str) -> None:
        self.table_id = table_id
        self.channel = channel
        self.known: Known | None = None
        self.listeners: set[Listener] = set()
        self.pending: list[Known] | None = None  # while catching up: newer versions waiting
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # subscribed
        self.used = time.monotonic()
        self.expect: int | None = None  # a version this process is committing right now
        self.deferred: str | None = None  # its message, if it came before the commit's answer


class Live:
    """The known tables of one store (one process) and their one pub/sub connection.

    ``store``: the :class:`store.Store` (for its Redis client, keys and log reads). ``id``:
    this listener's id in each subscribed table's watchers set (``keys.watchers``): a commit
    publishes only when a listener other than the committing one is in it, so a table all of
    whose sockets are on one process (a proxy routing by table, or one process) costs no
    message at all.
    """

    def __init__(self, store: Any) -> None:
        self.store = store
        self.id = secrets.token_hex(8)
        self.entries: dict[str, _Entry] = {}
        self.by_channel: dict[str, _Entry] = {}
        self._feed: Any = None  # store.pubsub.SingleFeed or ShardedFeed, made on first use
        self._janitor: asyncio.Task | None = None
        self._connects = 0
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self.render: Render | None = None  # set by the web app: each seat's message, made once
        self.messages = 0  # pub/sub messages received (benchmarks, tests)
        self.parsed = 0  # of those, parsed (the rest were this process's own commits or old)
        self.resyncs = 0  # tables read again after a gap or a reconnect

    # ------------------------------------------------------------------ asking
    def peek(self, table_id: str) -> Known | None:
        """The known version of a subscribed table, without any I/O (None: not known here)."""
        entry = self.entries.get(table_id)
        if entry is None or not entry.ready.done() or entry.pending is not None:
            return None
        entry.used = time.monotonic()
        return entry.known

    async def current(self, table_id: str) -> Known | None:
        """The table as known here; the first call for a table subscribes and reads it once.

        None when the table does not exist (or expired). Later calls cost no Redis
        read: the commits keep it fresh.
        """
        entry = await self._entry(table_id)
        if entry.known is None:
            raw = await self.store.redis.hget(self.store.keys.table(table_id), "doc")
            if not raw:
                if entry.known is None and not entry.listeners:
                    self._drop(entry)
                return None
            self._incoming(entry, Known.parse(raw))
        entry.used = time.monotonic()
        return entry.known

    async def watch(self, table_id: str, listener: Listener) -> Known | None:
        """Call ``listener`` with every version after the returned one (the current, or None when gone)."""
        entry = await self._entry(table_id)
        entry.listeners.add(listener)
        known = await self.current(table_id)
        if known is None:
            entry.listeners.discard(listener)
        return known

    def unwatch(self, table_id: str, listener: Listener) -> None:
        """Stop calling ``listener`` (the table stays known until idle)."""
        entry = self.entries.get(table_id)
        if entry is not None:
            entry.listeners.discard(listener)
            entry.used = time.monotonic()

    # ------------------------------------------------------------------ news
    def expect(self, table_id: str, version: int) -> None:
        """This process is committing ``version``: should its message come before the
        commit's answer, it is kept unparsed (:meth:`committed` has the document at hand)."""
        entry = self.entries.get(table_id)
        if entry is not None:
            entry.expect = version

    def committed(self, known: Known, texts: dict[str, str] | None = None) -> None:
        """This process committed ``known`` (called by ``Tables.apply``): fan it out here now."""
        entry = self.entries.get(known.doc["id"])
        if entry is not None:
            entry.expect, entry.deferred = None, None
            if entry.ready.done():
                self._incoming(entry, known, texts)

    def abandon(self, table_id: str, current: Known | None = None) -> None:
        """The commit :meth:`expect` announced did not happen (a conflict answered with
        ``current``, or an error): whatever was held back is delivered after all."""
        entry = self.entries.get(table_id)
        if entry is None:
            return
        deferred, entry.expect, entry.deferred = entry.deferred, None, None
        if not entry.ready.done():
            return
        if current is not None:
            self._incoming(entry, current)
        if deferred is not None:
            try:
                version, doc, texts = unpack(deferred)
                self._incoming(entry, Known(raw=doc, version=version), texts)
            except Exception:
                log.exception("live: unreadable message of %s", table_id)

    def _on_message(self, channel: str, data: str) -> None:
        self.messages += 1
        entry = self.by_channel.get(channel)
        if entry is None:
            return
        head, _, _ = data.partition("|")
        try:
            version = int(head)
        except ValueError:
            log.warning("live: bad message on %s", channel)
            return
        newest = entry.pending[-1].version if entry.pending else (entry.known.version if entry.known else -1)
        if version <= newest:
            return  # our own commit (already delivered) or an old one
        if version == entry.expect:  # our own commit, its answer not read yet
            entry.deferred = data
            return
        self.parsed += 1
        try:
            version, doc, texts = unpack(data)
        except Exception:
            log.exception("live: unreadable message on %s", channel)
            return
        # The document is parsed only when needed: the seats' messages are ready-made.
        self._incoming(entry, Known(raw=doc, version=version), texts)

    def _incoming(self, entry: _Entry, known: Known, texts: dict[str, str] | None = None) -> None:
        """A version of ``entry`` arrived (commit, message, read): deliver in order, or catch up."""
        if entry.pending is not None:
            if known.version > (entry.pending[-1].version if entry.pending else -1):
                entry.pending.append(known)
            return
        have = entry.known
        if have is not None and known.version <= have.version:
            return
        if have is None or known.version == have.version + 1 or not entry.listeners:
            entry.known = known
            if have is not None and entry.listeners:
                # events/by None: the move's own (``known.move``), read only if a message must be made here
                self._deliver(entry, known, None, None, False, texts)
            return
        entry.pending = [known]  # a skipped version: its events come from the log
        self._spawn(self._catch_up(entry))

    async def _catch_up(self, entry: _Entry) -> None:
        try:
            while entry.pending:
                newest = entry.pending[-1]
                entry.pending = []
                base = entry.known.version if entry.known is not None else newest.version - 1
                base = max(base, newest.version - MAX_CATCHUP)
                events: list[dict[str, Any]] = []
                by = newest.move.get("by")
                try:
                    for item in await self.store.log(entry.table_id, since=base):
                        if item.get("version", 0) > newest.version:
                            break
                        events.extend(item.get("events") or [])
                        by = item.get("by", by)
                except Exception as e:  # the snapshot still goes out; only the events are lost
                    log.warning("live: events of %s after %s unreadable: %s", entry.table_id, base, e)
                    events = list(newest.move.get("events") or [])
                self.resyncs += 1
                if entry.known is None or newest.version > entry.known.version:
                    entry.known = newest
                    self._deliver(entry, newest, events, by, True)
        finally:
            entry.pending = None

    def _deliver(self, entry: _Entry, known: Known, events: list, by: str | None, lagged: bool,
                 texts: dict[str, str] | None = None) -> None:
        for listener in list(entry.listeners):
            try:
                listener.deliver(known, events, by, lagged, texts)
            except Exception:
                log.exception("live: a listener of %s failed", entry.table_id)

    def _gone(self, entry: _Entry) -> None:
        for listener in list(entry.listeners):
            with contextlib.suppress(Exception):
                listener.gone()
        self._drop(entry)

    # ------------------------------------------------------------------ subscriptions
    async def _entry(self, table_id: str) -> _Entry:
        entry = self.entries.get(table_id)
        if entry is None:
            if self._closed:
                raise RuntimeError("the store is closed")
            channel = self.store.keys.events(table_id)
            entry = self.entries[table_id] = self.by_channel[channel] = _Entry(table_id, channel)
            if len(self.entries) > MAX_TABLES:
                self._trim()
            try:
                await self._subscribe(entry)
            except BaseException as exc:
                self._drop(entry)
                if not entry.ready.done():  # whoever else waits for this table fails too
                    entry.ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
                    entry.ready.exception()
                raise
        if not entry.ready.done():
            await asyncio.shield(entry.ready)
        return entry

    @property
    def feed(self) -> Any:
        """This process's subscriptions (:func:`store.pubsub.feed_for`: sharded on a cluster)."""
        if self._feed is None:
            # late-bound: tests replace _on_message to lose messages on purpose
            self._feed = feed_for(self.store.redis, lambda ch, data: self._on_message(ch, data),
                                  lambda channels: self._on_gap(channels))
        return self._feed

    @property
    def publish(self) -> str:
        """The command ``commit.lua`` publishes with (``PUBLISH``, ``SPUBLISH`` on a cluster)."""
        return self.feed.publish

    async def _subscribe(self, entry: _Entry) -> None:
        """Subscribe to ``entry``'s channel. Raises ``redis.exceptions.TimeoutError`` (one of
        ``UNAVAILABLE``: the caller answers "try again", a socket closes 1013) when the server
        does not confirm it within ``store.pubsub.SUBSCRIBE_TIMEOUT`` s (a loaded server)."""
        # In the watchers set first, then subscribed, then (the caller) the document read: a
        # commit before the join is in the document; one after it is published, and received
        # once subscribed, else (between the two) in the document too. Joined first, a listener
        # that Redis counts as subscribed (PUBSUB NUMSUB) is always published to.
        key = self.store.keys.watchers(entry.table_id)
        pipe = self.store.redis.pipeline(transaction=False)
        pipe.sadd(key, self.id)
        pipe.expire(key, WATCHERS_TTL)
        await pipe.execute()
        try:
            await self.feed.subscribe(entry.channel)
        except TimeoutError as e:
            raise RedisTimeoutError(f"subscribing to {entry.channel} not confirmed in time") from e
        if self._janitor is None or self._janitor.done():
            self._janitor = asyncio.create_task(self._sweep_idle(), name="store-live-idle")
        if not entry.ready.done():
            entry.ready.set_result(None)

    def _on_gap(self, channels: list[str] | None) -> None:
        """Commits on ``channels`` (``None``: every channel) may have been missed: the feed
        reconnected or moved them to another node. Their tables are read again."""
        self._connects += 1
        if channels is None:
            self._spawn(self._resync(None, RESYNC_AFTER))
        else:
            entries = [e for e in (self.by_channel.get(ch) for ch in channels) if e is not None]
            if entries:
                self._spawn(self._resync(entries, 0.0))

    async def _sweep_idle(self) -> None:
        while not self._closed:
            await asyncio.sleep(CHECK_EVERY)
            try:
                await self._forget_idle(time.monotonic())
            except Exception:
                log.exception("live: forgetting idle tables failed")

    async def _resync(self, entries: list[_Entry] | None, delay: float) -> None:
        """Read the version of ``entries`` (``None``: every known table) once and deliver
        what moved on (after a reconnect or a move of their channels)."""
        await asyncio.sleep(delay)
        if entries is None:
            entries = list(self.entries.values())
        entries = [e for e in entries if e.known is not None and self.entries.get(e.table_id) is e]
        for start in range(0, len(entries), 200):
            chunk = entries[start:start + 200]
            pipe = self.store.redis.pipeline(transaction=False)
            for entry in chunk:
                pipe.hget(self.store.keys.table(entry.table_id), "version")
            try:
                versions = await pipe.execute()
            except Exception as e:
                log.warning("live: resync failed: %s", e)
                return
            for entry, version in zip(chunk, versions, strict=True):
                if version is None:
                    self._gone(entry)
                elif entry.known is not None and int(_s(version)) > entry.known.version:
                    raw = await self.store.redis.hget(self.store.keys.table(entry.table_id), "doc")
                    if raw:
                        self._incoming(entry, Known.parse(raw))

    async def _forget_idle(self, now: float) -> None:
        idle = [e for e in self.entries.values() if not e.listeners and now - e.used > IDLE and e.ready.done()]
        if not idle:
            return
        for entry in idle:
            self._drop(entry, unsubscribe=False)
        await self._unsubscribe(*(e.table_id for e in idle))

    def _trim(self) -> None:
        quiet = sorted((e for e in self.entries.values() if not e.listeners), key=lambda e: e.used)
        for entry in quiet[: max(1, len(self.entries) - MAX_TABLES)]:
            self._drop(entry)

    def _drop(self, entry: _Entry, unsubscribe: bool = True) -> None:
        if self.entries.get(entry.table_id) is entry:
            del self.entries[entry.table_id]
            self.by_channel.pop(entry.channel, None)
            if unsubscribe and self._feed is not None and not self._closed:
                self._spawn(self._unsubscribe(entry.table_id))

    async def _unsubscribe(self, *table_ids: str) -> None:
        """Stop listening on the tables' channels and leave their watchers sets (best effort:
        a member left behind, e.g. by a process that died, only makes commits publish)."""
        with contextlib.suppress(Exception):
            await self.feed.unsubscribe(*(self.store.keys.events(t) for t in table_ids))
        with contextlib.suppress(Exception):
            await self._leave(table_ids)

    async def _leave(self, table_ids: Any) -> None:
        """Leave the tables' watchers sets (one pipeline)."""
        pipe = self.store.redis.pipeline(transaction=False)
        for table_id in table_ids:
            pipe.srem(self.store.keys.watchers(table_id), self.id)
        await pipe.execute()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop the readers and close the pub/sub connections."""
        self._closed = True
        tasks = [t for t in (self._janitor, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.entries:  # leave the watchers sets (best effort, bounded: Redis may be gone)
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await self._leave(list(self.entries))
        if self._feed is not None:
            with contextlib.suppress(Exception):
                await self._feed.close()
        self._feed = None
