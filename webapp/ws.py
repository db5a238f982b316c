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
* client ``{"type": "act", "ref", "action", "client_action_id"?, "version"?, "seat"?}``: a
  move, as ``POST /api/tables/{id}/actions`` makes it (:mod:`webapp.moves`: the same checks,
  limits and error codes, and an admission slot while it runs), answered on this socket by
  ``{"type": "acted", "ref", "version", "duplicate", "deadline"}`` (after the new version's
  ``state``) or ``{"type": "refused", "ref", "status", "error", "detail", "retry_after"?}``;
  the socket stays open. A well-formed one takes a token of the user's write bucket instead
  of the socket's frame bucket (one refused there spends a frame token too).
* client ``{"type": "ping"}`` → ``{"type": "pong"}``, refreshing presence
  (batched per process: :mod:`webapp.presence`) for a seated user. Send one every 10–20 s: a socket silent for
  ``WS_IDLE_TIMEOUT`` (90 s) is closed.
* server ``{"type": "error", "error": code, "detail"}`` then a close: codes
  ``unauthorized``/``auth_expired`` (close 4401), ``bad_message`` (4400: a frame that is not
  a JSON object of a known ``type`` — not JSON, binary, nested past the parser, ``{"type":
  "x"}`` —, at any time: such a client is out of step with the protocol, and its reconnect
  starts it afresh; a well-formed ``act`` whose fields are wrong is a move's ``refused`` 400
  instead, the socket kept open),
  ``idle`` (4408), ``gone`` (4404: the table expired), ``too_many`` (4429: more than
  ``WS_PER_USER`` sockets of one user, in all processes), ``too_fast`` (4429: more client
  frames than ``WS_FRAME_RATE`` per second after a burst of ``WS_FRAME_BURST``, or the
  user's handshakes over their request limit), ``internal`` (1011).
  Frames are counted before they are parsed; a ping writes no presence itself (marks are
  batched and rewritten at most every third of ``PRESENCE_TTL``), so a flood of frames
  costs no Redis work and ends with the close.

The store's live feed (:mod:`store.live`: one pub/sub connection per process, the
commit's own document in each message) feeds one :class:`Feed` per table, which feeds
every local socket of that table; each socket has its own bounded send queue and
writer task, so a slow client never stalls its table. Sockets are tracked in the app and closed on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import WSCloseCode, WSMsgType, web
from pydantic import ValidationError

import engine
from engine import Rejected
from store import UNAVAILABLE, StoreError
from store.live import Known
from store.models import seat_dicts
from webapp import logs, metrics
from webapp.api import ActionRequest
from webapp.auth import Identity
from webapp.clock import stamp_text
from webapp.errors import ApiError, as_api_error, dumps
from webapp.keys import (
    ADMISSION,
    ADMISSION_RELEASE,
    AUTH,
    DRAIN,
    HUB,
    LEASES,
    LIMITS,
    PRESENCE,
    SETTINGS,
    SOCKETS,
    STORE,
)
from webapp.moves import apply_move, pay_refusal
from webapp.presence import Presence
from webapp.privacy import may_see_table

log = logging.getLogger(__name__)

MAX_CATCHUP = 100  # versions a reconnecting client is sent the events of; further behind: snapshot only
MAX_EVENTS = 400  # events merged into one collapsed message at most

PONG = dumps({"type": "pong"})
SMALL_FRAME = 16 * 1024  # characters of a frame sent without a timer when nothing is unsent

CLOSE_BAD_MESSAGE = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403  # a spectator not known in the table's chat (webapp.privacy)
CLOSE_GONE = 4404
CLOSE_IDLE = 4408
CLOSE_TOO_MANY = 4429
CLOSE_TOO_FAST = 4429  # the same code as HTTP's 429; the error message tells too_fast from too_many
#: The errors closing a socket that count as a refused handshake (karty_ws_refused_total).
REFUSALS = frozenset({"unauthorized", "auth_expired", "bad_message", "too_many", "too_fast", "not_in_chat",
                      "unavailable", "draining"})


class Client:
    """One connected socket: its seat (None for a spectator), send queue and writer task.

    Queued items are ``(message, text)``: ``text`` is the message already serialised
    (a table's state message is serialised once per seat and version and shared by
    every socket of that seat), or None to serialise when sent. :meth:`offer` never
    blocks: when the queue is full, queued state messages collapse into the newest one
    (their events merged), so the client catches up by snapshot.
    """

    def __init__(self, ws: web.WebSocketResponse, user_id: int, seat: str | None, queue_size: int,
                 transport: Any = None) -> None:
        self.ws = ws
        self.transport = transport  # the connection's (asyncio.WriteTransport), to see what is still unsent
        self.user_id = user_id
        self.seat = seat
        self.version = -1  # the newest version queued for this client
        self.fanout: metrics.FanoutTimer | None = None  # times the newest local commit to its send
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
            self._collapse(orjson.loads(text) if msg.get("lazy") else msg)  # type: ignore[arg-type]

    def _may_wait(self, text: str) -> bool:
        """Whether sending ``text`` may wait on the client (then it gets ``send_timeout``): unless
        nothing is left unsent on the connection and ``text`` is far below the transport's
        high-water mark (64 KiB), so the write cannot pause it and aiohttp's drain returns at once."""
        transport = self.transport
        return transport is None or len(text) > SMALL_FRAME or transport.get_write_buffer_size() > 0

    def _collapse(self, msg: dict[str, Any]) -> None:
        others: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        newest: dict[str, Any] | None = None
        while not self.queue.empty():
            queued, text = self.queue.get_nowait()
            if queued.get("lazy"):  # a ready-made text: its message is needed now
                queued = orjson.loads(text)  # type: ignore[arg-type]
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
                if self._may_wait(out):
                    async with asyncio.timeout(send_timeout):  # (wait_for would make a task per send)
                        await self.ws.send_str(out)
                else:  # nothing unsent and a small frame: the send cannot wait for the client
                    await self.ws.send_str(out)
                fanout = self.fanout
                if fanout is not None and msg.get("version") == fanout.version:
                    self.fanout = None
                    fanout.sent()
                if msg.get("error") == "gone":
                    await self.ws.close(code=CLOSE_GONE, message=b"gone")
                    return
        except (TimeoutError, ConnectionError, RuntimeError):
            # RuntimeError/ConnectionResetError: the socket closed under us.
            with contextlib.suppress(Exception):
                await self.ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"too slow")


def state_message(
    table: Any, seat: str | None, events: list[dict[str, Any]], by: str | None,
    seats: list[dict[str, Any]] | None = None, view: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``state`` message of ``table`` (a :class:`store.Table`) for ``seat`` (``seats``: the
    dumped seats, ``view``: ``seat``'s view, if at hand)."""
    return _state(table.id, table.version, table.deadline, seat,
                  engine.view(table.state, seat) if view is None else view, events, by,
                  [s.model_dump() for s in table.seats] if seats is None else seats)


def _state(table_id: str, version: int, deadline: float | None, seat: str | None, view: dict[str, Any],
           events: list[dict[str, Any]], by: str | None, seats: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "state", "table": table_id, "version": version, "seat": seat, "view": view,
            "events": events, "deadline": deadline, "seats": seats, "by": by}


class Frames:
    """One version's state messages, built and serialised once per seat, for every socket.

    ``known``: the version (:class:`store.live.Known`); ``events``/``by``: what the
    messages carry (None: the move's own); ``texts``: messages already made by the
    committing process (carried by the commit's pub/sub message), sent as they are.
    ``frames.get(seat)`` → ``(message, text)`` for :meth:`Client.offer` (``message``
    is a stub ``{type, version, lazy}`` for a ready-made text).
    """

    __slots__ = ("_by", "_events", "_known", "_out", "_seats", "_texts", "_views")

    def __init__(self, known: Any, events: list[dict[str, Any]] | None = None, by: str | None = None,
                 texts: dict[str, str] | None = None) -> None:
        self._known, self._events, self._by, self._texts = known, events, by, texts or {}
        self._seats: list[dict[str, Any]] | None = None
        self._views: dict[str | None, dict[str, Any]] | None = None
        self._out: dict[str | None, tuple[dict[str, Any], str]] = {}

    def get(self, seat: str | None) -> tuple[dict[str, Any], str]:
        got = self._out.get(seat)
        if got is None:
            text = self._texts.get(seat) if seat is not None else None
            if text is not None:
                got = ({"type": "state", "version": self._known.version, "lazy": True}, text)
            else:
                got = self._make(seat)
            self._out[seat] = got
        return got

    def _make(self, seat: str | None) -> tuple[dict[str, Any], str]:
        known = self._known
        events, by = self._events, self._by
        if events is None:
            move = known.move
            events, by = list(move.get("events") or []), move.get("by")
        doc = known.doc  # no Table model: the message is made from the document itself
        if self._seats is None:
            self._seats = seat_dicts(doc["seats"])
        if self._views is None:  # every seat's view and the spectators' at once (engine.views)
            self._views = engine.views(known.state, [*(s["seat"] for s in self._seats), None])
        msg = _state(doc["id"], known.version, doc.get("deadline"), seat, self._views[seat], events, by,
                     self._seats)
        return msg, dumps(msg)

    def view(self, seat: str | None) -> dict[str, Any] | None:
        """``seat``'s view if its message was made here (not ready-made elsewhere)."""
        got = self._out.get(seat)
        if got is None and seat not in self._texts:
            got = self.get(seat)
        return None if got is None or got[0].get("lazy") else got[0]["view"]


def render(known: Any, events: list[dict[str, Any]], by: str | None) -> dict[str, str]:
    """``store.live.Live.render``: every person's seat's message of ``known``, made once by
    the committing process (spectators' are made where they watch)."""
    # The messages keep a Known of their own: holding ``known``, which holds them, every
    # version would be a reference cycle left to the garbage collector.
    frames = known.rendered = Frames(Known(known.doc, known.state), events, by)
    return {s["seat"]: frames.get(s["seat"])[1] for s in known.doc["seats"] if s["user_id"] is not None}


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
    """One table's local sockets, fed by the store's live feed (:mod:`store.live`).

    A listener of ``store.watch``: :meth:`deliver` is called once per version, in
    order, with the new version's document already in memory (from this process's own
    commit or the commit's pub/sub message): no Redis read. Each seat's message is
    built and serialised once (:class:`Frames`) for all its sockets.
    """

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.clients: set[Client] = set()
        self.version = -1  # newest version fanned out
        self.watching: asyncio.Future | None = None  # store.watch, under way or done
        self.frames: Frames | None = None  # the newest version's messages

    def view(self, version: int, seat: str | None) -> dict[str, Any] | None:
        """``seat``'s view of ``version`` if that is the newest one fanned out (built once)."""
        if self.frames is None or self.version != version:
            return None
        return self.frames.view(seat)

    def deliver(self, known: Any, events: list[dict[str, Any]] | None, by: str | None, lagged: bool,
                texts: dict[str, str] | None = None) -> None:
        """Fan out ``known`` (a :class:`store.live.Known`) with the events since the last one
        (None: its move's own) and, when the committing process made them, each seat's text."""
        if known.version <= self.version:
            return
        self.version = known.version
        local = events is None and isinstance(known.rendered, Frames)
        # this process committed it: the messages are made
        frames = known.rendered if local else Frames(known, events, by, texts)
        self.frames = frames
        clients = list(self.clients)
        timer = metrics.FanoutTimer(known.version, len(clients)) if local and clients else None
        for client in clients:
            client.offer(*frames.get(client.seat))
            client.fanout = timer

    def gone(self) -> None:
        """The table expired: every socket is told and closed."""
        for client in list(self.clients):
            client.offer({"type": "error", "error": "gone", "detail": "the table expired"})


class Hub:
    """All :class:`Feed` s of this process: the first socket of a table starts watching it,
    the last one to leave stops. (The per-user cap is ``webapp.ratelimit.SocketLeases``, across processes.)"""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.feeds: dict[str, Feed] = {}

    async def feed(self, table_id: str) -> Feed:
        """The table's feed, watching the table (started on first use)."""
        feed = self.feeds.get(table_id)
        if feed is None:
            feed = self.feeds[table_id] = Feed(table_id)
            feed.watching = asyncio.ensure_future(self.store.watch(table_id, feed))
        try:
            await asyncio.shield(feed.watching)
        except BaseException:
            if self.feeds.get(table_id) is feed and not feed.clients:
                del self.feeds[table_id]
            raise
        return feed

    def join(self, feed: Feed, client: Client) -> None:
        feed.clients.add(client)

    def leave(self, table_id: str, client: Client) -> None:
        feed = self.feeds.get(table_id)
        if feed is None or client not in feed.clients:
            return
        feed.clients.discard(client)
        if not feed.clients:
            del self.feeds[table_id]
            self.store.unwatch(table_id, feed)

    async def close(self) -> None:
        feeds, self.feeds = list(self.feeds.values()), {}
        for feed in feeds:
            self.store.unwatch(feed.table_id, feed)


async def hub_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: the :class:`Hub` and the batched :class:`~webapp.presence.Presence`
    writer for the app's lifetime; the feeds stopped and pending presence written at cleanup."""
    settings = app[SETTINGS]
    app[HUB] = Hub(app[STORE])
    app[STORE].live.render = render  # each seat's message made once, by the committing process
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
    if error in REFUSALS:
        metrics.WS_REFUSED.labels(error).inc()
    with contextlib.suppress(Exception):
        await ws.send_str(stamp_text(dumps({"type": "error", "error": error, "detail": detail})))
        await ws.close(code=code, message=error.encode())
    return ws


async def _unavailable(ws: web.WebSocketResponse, table_id: str, error: BaseException) -> web.WebSocketResponse:
    """Redis did not answer in time (one line in the log, as the HTTP side's 503): close 1013."""
    log.warning("ws %s: redis unavailable: %s", table_id, error)
    return await _fail(ws, WSCloseCode.TRY_AGAIN_LATER, "unavailable", "storage unavailable, try again")


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
    ``Authorization`` header when one is sent, 403 ``not_in_chat`` when its caller may not see
    the table (after the upgrade, signed in by the first frame: close 4403), 400 when not a
    WebSocket request.
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
    if app[DRAIN].draining:  # before the upgrade: the proxy tries the next process (webapp.drain)
        metrics.WS_REFUSED.labels("draining").inc()
        raise ApiError(503, "draining", "this server is restarting: connect again", retry_after=0)
    known = await store.current(table_id)
    if known is None:
        raise ApiError(404, "not_found", "no such table (or it expired)")
    if who is not None and known.seat_of(who.id) is None and not await may_see_table(store, known.table, who.id):
        raise ApiError(403, "not_in_chat", "only people in that chat see its tables")  # as GET /api/tables/{id}
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
            except UNAVAILABLE as e:
                return await _unavailable(ws, table_id, e)
            except Exception:  # after the upgrade no HTTP answer is possible: close instead
                log.exception("ws %s: auth failed", table_id)
                return await _fail(ws, WSCloseCode.INTERNAL_ERROR, "internal", "internal error")
            if app[LIMITS].user(who.id, "GET"):  # signed in by its first frame: the user's reads count it
                app[LIMITS].refused += 1
                return await _fail(ws, CLOSE_TOO_FAST, "too_fast", "too many requests, slow down")
        logs.bind_user(who.id)
        try:
            async with app[LEASES].hold(who.id) as admitted:  # the cap counts every process's sockets
                if not admitted:
                    return await _fail(ws, CLOSE_TOO_MANY, "too_many", "too many open connections")
                await _serve(ws, request, table_id, who, since)
        except UNAVAILABLE as e:  # also the cap not checked: not admitted (fails closed), 1013
            await _unavailable(ws, table_id, e)
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
    feed = await hub.feed(table_id)  # watching from here on: no version can fall in between
    client: Client | None = None
    writer: asyncio.Task | None = None
    try:
        first = await store.current(table_id)
        if first is not None and first.seat_of(who.id) is None and not await may_see_table(
            store, first.table, who.id
        ):
            await _fail(ws, CLOSE_FORBIDDEN, "not_in_chat", "only people in that chat see its tables")
            return
        while True:
            known = await store.current(table_id)
            if known is None:
                await _fail(ws, CLOSE_GONE, "gone", "the table expired")
                return
            events: list[dict[str, Any]] = []
            by = None
            if since is not None and 0 < known.version - since <= MAX_CATCHUP:
                entries = await store.log(table_id, since=since)
                events, by = log_events(entries, known.version)
            newest = store.live.peek(table_id)
            if newest is None or newest.version == known.version:
                break  # nothing moved on while the log was read (else: again, on the newer one)
        seat = known.seat_of(who.id)
        client = Client(ws, who.id, seat, settings.ws_send_queue, request.transport)
        client.offer(*Frames(known, events, by).get(seat))  # the snapshot, then every version
        hub.join(feed, client)
        writer = asyncio.create_task(client.writer(settings.ws_send_timeout), name=f"ws-writer:{table_id}")
        if seat is not None:
            app[PRESENCE].touch(table_id, who.id)
        await _read(ws, client, request, table_id)
    finally:
        if client is not None:
            hub.leave(table_id, client)
        elif table_id in hub.feeds and not hub.feeds[table_id].clients:
            hub.feeds.pop(table_id)
            store.unwatch(table_id, feed)
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer


async def _read(ws: web.WebSocketResponse, client: Client, request: web.Request, table_id: str) -> None:
    """The one reader of ``ws``: pings (presence), until close, error or idleness."""
    settings = request.app[SETTINGS]
    limits = request.app[LIMITS]
    frames = limits.frames()
    loop = asyncio.get_running_loop()
    # Idle means no message of the app's own for ws_idle_timeout s. A deadline, not
    # receive(timeout=…): aiohttp restarts that timeout on every protocol pong it swallows,
    # so a socket answering the heartbeat's pings would never be idle.
    deadline = loop.time() + settings.ws_idle_timeout
    while not ws.closed:
        try:
            async with asyncio.timeout_at(deadline):
                msg = await ws.receive()
        except TimeoutError:
            await _fail(ws, CLOSE_IDLE, "idle", "no message for too long")
            return
        if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            return
        deadline = loop.time() + settings.ws_idle_timeout
        if msg.type != WSMsgType.TEXT:
            await _fail(ws, CLOSE_BAD_MESSAGE, "bad_message", "text JSON frames only")
            return
        try:  # at most WS_MAX_MSG_SIZE bytes (aiohttp refuses more): parsing first costs little
            data = orjson.loads(msg.data)
            kind = data.get("type") if isinstance(data, dict) else None
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
            kind = None
        if kind == "act":  # a move: the user's write bucket, not the socket's frame rate
            if not limits.user(client.user_id, "POST"):
                await _act(client, request, table_id, data)
                continue
            limits.refused += 1
            client.offer(_refused(data, ApiError(429, "too_fast", "too many requests, slow down", retry_after=1)))
        if frames.take(0):  # over the socket's frame rate: told, then closed (no Redis)
            limits.refused += 1
            await _fail(ws, CLOSE_TOO_FAST, "too_fast", "too many messages, slow down")
            return
        if kind == "act":
            continue
        if kind == "ping":
            if client.seat is not None:
                request.app[PRESENCE].touch(table_id, client.user_id)
            client.offer({"type": "pong"}, PONG)
        elif kind == "auth":
            continue  # a repeated auth (e.g. after a client-side retry) is harmless
        else:  # not JSON, not an object, nested past the parser, an unknown type: the client is broken
            await _fail(ws, CLOSE_BAD_MESSAGE, "bad_message", "expected {type: ping} or {type: act}")
            return


MAX_REF = 64  # characters of an act frame's ``ref``


def _refused(data: Any, err: ApiError) -> dict[str, Any]:
    """The ``refused`` frame answering the act frame ``data`` with ``err`` (the HTTP answer's fields)."""
    ref = data.get("ref") if isinstance(data, dict) else None
    return {"type": "refused", "ref": ref if _good_ref(ref) else None, "status": err.status,
            "error": err.code, "detail": err.detail, **err.extra}


def _good_ref(ref: Any) -> bool:
    return ref is None or (isinstance(ref, str) and len(ref) <= MAX_REF) or (
        isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < 2**53)


async def _act(client: Client, request: web.Request, table_id: str, data: dict[str, Any]) -> None:
    """An ``act`` frame: the move of ``POST /api/tables/{id}/actions`` (:mod:`webapp.moves`:
    the same checks, limits and answers) on this socket's table, answered on this socket by
    an ``acted`` or a ``refused`` frame with the frame's ``ref``. It holds an admission slot
    while it runs, as a POST does (503 ``overloaded`` when none is free). The new version's
    ``state`` frame is queued before the answer (this process committed it: its sockets
    are fed before ``store.apply`` returns)."""
    app = request.app
    admission = app[ADMISSION]
    started = time.perf_counter()
    known = None
    if not await admission.acquire():
        err = ApiError(503, "overloaded", "the server is busy, try again shortly",
                       retry_after=admission.retry_after)
        metrics.move_done("unknown", "socket", err.code)
        client.offer(_refused(data, err))
        return
    try:
        ref = data.get("ref")
        try:
            if not _good_ref(ref):
                raise ApiError(400, "bad_request", f"ref: a string of at most {MAX_REF} characters or a whole number")
            body = ActionRequest.model_validate({k: v for k, v in data.items() if k not in ("type", "ref")})
            known = await app[STORE].current(table_id)
            if known is None:
                raise ApiError(404, "not_found", "no such table (or it expired)")
        except (ApiError, ValidationError):
            await pay_refusal(app, client.user_id)
            raise
        result, _seat = await apply_move(app, client.user_id, known, body)
        metrics.move_done(metrics.game_of(known), "socket", "duplicate" if result.duplicate else "committed",
                          started)
        client.offer({"type": "acted", "ref": ref, "version": result.version, "duplicate": result.duplicate,
                      "deadline": result.deadline})
    except (ApiError, Rejected, StoreError, ValidationError, *UNAVAILABLE) as e:
        metrics.move_done(metrics.game_of(known), "socket", metrics.outcome_of(e))
        client.offer(_refused(data, as_api_error(e)))
    except Exception:
        metrics.move_done(metrics.game_of(known), "socket", "internal")
        log.exception("ws %s: a move of user %s failed", table_id, client.user_id)
        client.offer(_refused(data, ApiError(500, "internal", "internal error")))
    finally:
        admission.release()


def add_routes(app: web.Application) -> None:
    """Register ``/ws/tables/{id}``."""
    app.router.add_get("/ws/tables/{id}", table_socket, name="table_socket")
