"""The table WebSocket ``/ws/tables/{id}`` (CONTRACTS §3) and its fan-out hub.

Protocol (JSON text frames):

* client → ``{"type": "auth", "init_data": "<initData>", "since": <version>?}`` first,
  within ``WS_AUTH_TIMEOUT`` seconds. (A non-browser client may instead send
  ``Authorization: tma <initData>`` with the upgrade request, and ``?since=``; then it
  is checked before the upgrade and a bad one is an HTTP 401.) An unknown table is an
  HTTP 404 before the upgrade.
* server → ``{"type": "state", "table", "version", "view", "events", "deadline", "seats",
  "by", "seat"}`` at once (the current snapshot; ``events`` are those after ``since``
  from the table's log when given and at most 100 versions back, else ``[]``: the
  view's ``last`` has the recent ones), then on every new version. ``view`` is
  the recipient's own (``engine.view(state, seat)``; spectators ``seat`` null get the
  public view). ``by``: ``"player"``, ``"timer"`` or ``"computer"`` (null on a snapshot).
  Views are full snapshots: a client that falls behind gets the newest snapshot with the
  events it missed merged (``"lagged": true``).
* client ``{"type": "ping"}`` → ``{"type": "pong"}``, refreshing presence
  (batched per process: :mod:`webapp.presence`) for a seated user. Send one every 10–20 s: a socket silent for
  ``WS_IDLE_TIMEOUT`` (90 s) is closed.
* server ``{"type": "error", "error": code, "detail"}`` then a close: codes
  ``unauthorized``/``auth_expired`` (close 4401), ``bad_message`` (4400),
  ``idle`` (4408), ``gone`` (4404: the table expired), ``too_many`` (4429: more than
  ``WS_PER_USER`` sockets of one user in this process), ``internal`` (1011).

One subscription (``store.subscribe``) per table per process feeds every local socket
of that table; each socket has its own bounded send queue and writer task, so a slow
client never stalls its table. Sockets are tracked in the app and closed on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

import engine
from webapp.auth import Identity
from webapp.clock import stamp_text
from webapp.errors import ApiError, dumps
from webapp.keys import ADMISSION_RELEASE, AUTH, HUB, LEASES, PRESENCE, SETTINGS, SOCKETS, STORE
from webapp.presence import Presence
from webapp.privacy import may_see_table

log = logging.getLogger(__name__)

MAX_CATCHUP = 100  # versions a reconnecting client is sent the events of; further behind: snapshot only
MAX_EVENTS = 400  # events merged into one collapsed message at most

PONG = dumps({"type": "pong"})

CLOSE_BAD_MESSAGE = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403  # a spectator not known in the table's chat (webapp.privacy)
CLOSE_GONE = 4404
CLOSE_IDLE = 4408
CLOSE_TOO_MANY = 4429


class Client:
    """One connected socket: its seat (None for a spectator), send queue and writer task.

    Queued items are ``(message, text)``: ``text`` is the message already serialised
    (a table's state message is serialised once per seat and version and shared by
    every socket of that seat), or None to serialise when sent. :meth:`offer` never
    blocks: when the queue is full, queued state messages collapse into the newest one
    (their events merged), so the client catches up by snapshot.
    """

    def __init__(self, ws: web.WebSocketResponse, user_id: int, seat: str | None, queue_size: int) -> None:
        self.ws = ws
        self.user_id = user_id
        self.seat = seat
        self.version = -1  # the newest version queued for this client
        self.queue: asyncio.Queue[tuple[dict[str, Any], str | None]] = asyncio.Queue(maxsize=max(1, queue_size))

    def offer(self, msg: dict[str, Any], text: str | None = None) -> None:
        """Queue ``msg`` (a state older than what is queued is dropped; a full queue collapses)."""
        if msg.get("type") == "state":
            if msg["version"] <= self.version:
                return
            self.version = msg["version"]
        try:
            self.queue.put_nowait((msg, text))
        except asyncio.QueueFull:
            self._collapse(msg)

    def _collapse(self, msg: dict[str, Any]) -> None:
        others: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        newest: dict[str, Any] | None = None
        while not self.queue.empty():
            queued, _ = self.queue.get_nowait()
            if queued.get("type") == "state":
                events.extend(queued.get("events") or [])
                newest = queued
            else:
                others.append(queued)
        if msg.get("type") == "state":
            events.extend(msg.get("events") or [])
            newest = msg
        else:
            others.append(msg)
        keep = others[-(self.queue.maxsize - 1) :] if self.queue.maxsize > 1 else []
        for other in keep:
            self.queue.put_nowait((other, None))
        if newest is not None:
            if self.queue.full():  # only with a queue of 1: the snapshot wins
                self.queue.get_nowait()
            self.queue.put_nowait(({**newest, "events": events[-MAX_EVENTS:], "lagged": True}, None))

    async def writer(self, send_timeout: float) -> None:
        """Send queued messages in order; a send stuck ``send_timeout`` s closes the socket."""
        try:
            while True:
                msg, text = await self.queue.get()
                out = stamp_text(dumps(msg) if text is None else text)  # server_time at sending
                await asyncio.wait_for(self.ws.send_str(out), send_timeout)
                if msg.get("error") == "gone":
                    await self.ws.close(code=CLOSE_GONE, message=b"gone")
                    return
        except (TimeoutError, ConnectionError, RuntimeError):
            # RuntimeError/ConnectionResetError: the socket closed under us.
            with contextlib.suppress(Exception):
                await self.ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"too slow")


def state_message(
    table: Any, seat: str | None, events: list[dict[str, Any]], by: str | None,
    seats: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``state`` message of ``table`` for ``seat`` (``seats``: the dumped seats, if at hand)."""
    return {
        "type": "state",
        "table": table.id,
        "version": table.version,
        "seat": seat,
        "view": engine.view(table.state, seat),
        "events": events,
        "deadline": table.deadline,
        "seats": [s.model_dump() for s in table.seats] if seats is None else seats,
        "by": by,
    }


class Frames:
    """One version's state messages, built and serialised once per seat, for every socket.

    ``frames.get(seat)`` → ``(message, text)`` for :meth:`Client.offer`.
    """

    __slots__ = ("_by", "_events", "_out", "_seats", "_table")

    def __init__(self, table: Any, events: list[dict[str, Any]], by: str | None) -> None:
        self._table, self._events, self._by = table, events, by
        self._seats: list[dict[str, Any]] | None = None
        self._out: dict[str | None, tuple[dict[str, Any], str]] = {}

    def get(self, seat: str | None) -> tuple[dict[str, Any], str]:
        got = self._out.get(seat)
        if got is None:
            if self._seats is None:
                self._seats = [s.model_dump() for s in self._table.seats]
            msg = state_message(self._table, seat, self._events, self._by, self._seats)
            got = self._out[seat] = (msg, dumps(msg))
        return got


def log_events(entries: list[dict[str, Any]], upto: int) -> tuple[list[dict[str, Any]], str | None]:
    """Events of log ``entries`` up to version ``upto`` in order, and the last entry's ``by``."""
    events: list[dict[str, Any]] = []
    by = None
    for entry in entries:
        if entry.get("version", 0) > upto:
            break
        events.extend(entry.get("events") or [])
        by = entry.get("by", by)
    return events, by


class Feed:
    """One table's subscription, fanned out to the local :class:`Client` sockets.

    Each pub/sub message triggers one ``get_table``; every client gets the view of its
    seat (computed once per seat). Versions pub/sub missed (a reconnect, or commits
    before the subscription was live) are caught up from ``store.log`` and by polling
    the table version every ``resync`` seconds.
    """

    def __init__(self, store: Any, table_id: str, resync: float) -> None:
        self.store = store
        self.table_id = table_id
        self.resync = resync
        self.clients: set[Client] = set()
        self.version = -1  # newest version fanned out
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"feed:{self.table_id}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    async def _run(self) -> None:
        poller = asyncio.create_task(self._poll())
        try:
            backoff = 0.2
            while True:
                try:
                    async for msg in self.store.subscribe(self.table_id):
                        backoff = 0.2
                        await self.publish(msg)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("feed %s: subscription failed: %s", self.table_id, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                await self.publish(None)  # catch up whatever the gap hid
        finally:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await poller

    async def _poll(self) -> None:
        # The first pass comes soon: commits made while the subscription was being set up.
        delay = min(self.resync, 0.5)
        while True:
            await asyncio.sleep(delay)
            delay = self.resync
            try:
                await self.publish(None)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("feed %s: resync failed: %s", self.table_id, e)

    async def publish(self, msg: dict[str, Any] | None) -> None:
        """Fan out the table's newest version (``msg``: the pub/sub message, None to resync)."""
        async with self._lock:
            if msg is not None and msg.get("version", 0) <= self.version:
                return
            if msg is None and self.version >= 0:  # a resync: load the table only when it moved on
                version = await self.store.table_version(self.table_id)
                if version is not None and version <= self.version:
                    return
            table = await self.store.get_table(self.table_id)
            if table is None:
                self._offer_all({"type": "error", "error": "gone", "detail": "the table expired"})
                return
            if table.version <= self.version:
                return
            if msg is not None and msg.get("version") == table.version and (
                self.version < 0 or self.version == table.version - 1
            ):
                events, by = list(msg.get("events") or []), msg.get("by")
            else:
                # Versions came together (or pub/sub lost some): their events from the log.
                base = self.version if self.version >= 0 else (msg["version"] - 1 if msg else table.version)
                base = max(base, table.version - MAX_CATCHUP)
                events, by = [], None
                if base < table.version:
                    entries = await self.store.log(self.table_id, since=base)
                    events, by = log_events(entries, table.version)
            self.version = table.version
            frames = Frames(table, events, by)
            for client in list(self.clients):
                client.offer(*frames.get(client.seat))

    def _offer_all(self, msg: dict[str, Any]) -> None:
        for client in list(self.clients):
            client.offer(msg)


class Hub:
    """All :class:`Feed` s of this process: ``join`` starts a table's feed, the last ``leave`` stops it."""

    def __init__(self, store: Any, resync: float = 5.0) -> None:
        self.store = store
        self.resync = resync
        self.feeds: dict[str, Feed] = {}

    def count(self, user_id: int) -> int:
        """Open sockets of ``user_id`` in this process."""
        return sum(1 for feed in self.feeds.values() for c in feed.clients if c.user_id == user_id)

    def join(self, table_id: str, client: Client) -> Feed:
        feed = self.feeds.get(table_id)
        if feed is None:
            feed = self.feeds[table_id] = Feed(self.store, table_id, self.resync)
            feed.start()
        feed.clients.add(client)
        return feed

    async def leave(self, table_id: str, client: Client) -> None:
        feed = self.feeds.get(table_id)
        if feed is None:
            return
        feed.clients.discard(client)
        if not feed.clients:
            del self.feeds[table_id]
            await feed.stop()

    async def close(self) -> None:
        feeds, self.feeds = list(self.feeds.values()), {}
        for feed in feeds:
            await feed.stop()


async def hub_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: the :class:`Hub` and the batched :class:`~webapp.presence.Presence`
    writer for the app's lifetime; the feeds stopped and pending presence written at cleanup."""
    settings = app[SETTINGS]
    app[HUB] = Hub(app[STORE], resync=settings.ws_resync_seconds)
    app[PRESENCE] = Presence(app[STORE], ttl=settings.presence_ttl, flush=settings.presence_flush)
    app[PRESENCE].start()
    yield
    await app[HUB].close()
    await app[PRESENCE].close()


async def close_sockets(app: web.Application) -> None:
    """on_shutdown: close every open WebSocket with 1001 (going away)."""
    for ws in list(app[SOCKETS]):
        with contextlib.suppress(Exception):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")


MAX_SINCE = 10**12  # far beyond any table's version; larger is junk


def _since(value: Any) -> int | None:
    """``since`` from an auth message (an int) or the query (digits); None when absent.

    ``ValueError`` with a text fit for the client for anything else (``true``, ``1.5``,
    ``Infinity``, ``"x"``, a negative or absurdly large number)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 13:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SINCE:
        raise ValueError("since must be a whole number of versions, 0 or more")
    return value


async def _fail(ws: web.WebSocketResponse, code: int, error: str, detail: str) -> web.WebSocketResponse:
    with contextlib.suppress(Exception):
        await ws.send_str(stamp_text(dumps({"type": "error", "error": error, "detail": detail})))
        await ws.close(code=code, message=error.encode())
    return ws


async def _first_message(ws: web.WebSocketResponse, request: web.Request) -> tuple[Identity, int | None]:
    """Read and check the auth message; raises ApiError (401 / 400) on a bad one."""
    settings = request.app[SETTINGS]
    try:
        msg = await ws.receive(timeout=settings.ws_auth_timeout)
    except TimeoutError:
        raise ApiError(401, "unauthorized", "no auth message in time") from None
    if msg.type != WSMsgType.TEXT:
        raise ApiError(400, "bad_message", "expected a JSON auth message")
    try:
        data = json.loads(msg.data)
        if not isinstance(data, dict) or data.get("type") != "auth":
            raise ValueError("first message must be {type: auth}")
        init_data = data.get("session") or data.get("init_data")  # a server-issued session, or initData
        if not isinstance(init_data, str):
            raise ApiError(401, "unauthorized", "init_data missing")
        since = _since(data.get("since"))
    except RecursionError:  # nested deeper than the JSON parser goes
        raise ApiError(400, "bad_message", "not a JSON auth message") from None
    except (ValueError, TypeError) as e:
        detail = str(e) if isinstance(e, ValueError) and not isinstance(e, json.JSONDecodeError) else ""
        raise ApiError(400, "bad_message", detail or "not a JSON auth message") from None
    who = await request.app[AUTH].identify(init_data)
    return who, since


async def table_socket(request: web.Request) -> web.StreamResponse:
    """``GET /ws/tables/{id}``: the table's live feed (protocol in the module docstring).

    Before the upgrade: 404 ``not_found`` for an unknown table, 401 for a bad
    ``Authorization`` header when one is sent, 400 when not a WebSocket request.
    """
    app = request.app
    settings, store = app[SETTINGS], app[STORE]
    table_id = request.match_info["id"]
    who: Identity | None = None
    since: int | None = None
    if "Authorization" in request.headers:  # authenticate before prepare() when we can
        who = await app[AUTH].request(request)
        try:
            since = _since(request.query.get("since"))
        except ValueError as e:
            raise ApiError(400, "bad_request", str(e)) from None
    table = await store.get_table(table_id)
    if table is None:
        raise ApiError(404, "not_found", "no such table (or it expired)")
    ws = web.WebSocketResponse(
        heartbeat=settings.ws_heartbeat, max_msg_size=settings.ws_max_msg_size, autoping=True
    )
    if not ws.can_prepare(request).ok:
        raise ApiError(400, "bad_request", "WebSocket upgrade expected")
    await ws.prepare(request)
    release = request.get(ADMISSION_RELEASE)
    if release is not None:  # the handshake is done: an open socket holds no admission slot
        release()
    app[SOCKETS].add(ws)
    try:
        if who is None:
            try:
                who, since = await _first_message(ws, request)
            except ApiError as e:
                close = CLOSE_UNAUTHORIZED if e.status == 401 else CLOSE_BAD_MESSAGE
                return await _fail(ws, close, e.code, e.detail)
            except Exception:  # after the upgrade no HTTP answer is possible: close instead
                log.exception("ws %s: auth failed", table_id)
                return await _fail(ws, WSCloseCode.INTERNAL_ERROR, "internal", "internal error")
        async with app[LEASES].hold(who.id) as admitted:  # the cap counts every process's sockets
            if not admitted:
                return await _fail(ws, CLOSE_TOO_MANY, "too_many", "too many open connections")
            try:
                await _serve(ws, request, table_id, who, since)
            except Exception:
                log.exception("ws %s: serving user %s failed", table_id, who.id)
                await _fail(ws, WSCloseCode.INTERNAL_ERROR, "internal", "internal error")
    finally:
        app[SOCKETS].discard(ws)
        if not ws.closed:
            await ws.close()
    return ws


async def _serve(
    ws: web.WebSocketResponse, request: web.Request, table_id: str, who: Identity, since: int | None
) -> None:
    app = request.app
    settings, store, hub = app[SETTINGS], app[STORE], app[HUB]
    table = await store.get_table(table_id)
    if table is None:
        await _fail(ws, CLOSE_GONE, "gone", "the table expired")
        return
    seat = table.seat_of(who.id)
    if seat is None and not await may_see_table(store, table, who.id):
        await _fail(ws, CLOSE_FORBIDDEN, "not_in_chat", "only people in that chat see its tables")
        return
    client = Client(ws, who.id, seat, settings.ws_send_queue)
    writer = asyncio.create_task(client.writer(settings.ws_send_timeout), name=f"ws-writer:{table_id}")
    hub.join(table_id, client)
    try:
        if seat is not None:
            app[PRESENCE].touch(table_id, who.id)
        # The snapshot, read after joining the feed so no version falls in between.
        table = await store.get_table(table_id) or table
        events: list[dict[str, Any]] = []
        by = None
        if since is not None and 0 < table.version - since <= MAX_CATCHUP:
            entries = await store.log(table_id, since=since)
            events, by = log_events(entries, table.version)
        client.offer(state_message(table, seat, events, by))
        await _read(ws, client, request, table_id)
    finally:
        await hub.leave(table_id, client)
        writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer


async def _read(ws: web.WebSocketResponse, client: Client, request: web.Request, table_id: str) -> None:
    """The one reader of ``ws``: pings (presence), until close, error or idleness."""
    settings = request.app[SETTINGS]
    while not ws.closed:
        try:
            msg = await ws.receive(timeout=settings.ws_idle_timeout)
        except TimeoutError:
            await _fail(ws, CLOSE_IDLE, "idle", "no message for too long")
            return
        if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            return
        if msg.type != WSMsgType.TEXT:
            await _fail(ws, CLOSE_BAD_MESSAGE, "bad_message", "text JSON frames only")
            return
        try:
            data = json.loads(msg.data)
            kind = data.get("type") if isinstance(data, dict) else None
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            kind = None
        if kind == "ping":
            if client.seat is not None:
                request.app[PRESENCE].touch(table_id, client.user_id)
            client.offer({"type": "pong"}, PONG)
        elif kind == "auth":
            continue  # a repeated auth (e.g. after a client-side retry) is harmless
        else:
            client.offer({"type": "error", "error": "bad_message", "detail": "expected {type: ping}"})


def add_routes(app: web.Application) -> None:
    """Register ``/ws/tables/{id}``."""
    app.router.add_get("/ws/tables/{id}", table_socket, name="table_socket")
