"""Prometheus metrics of the web service and ``GET /metrics`` (issue 26).

``GET /metrics`` answers the text exposition format of ``prometheus_client``'s default
registry: what this module defines (moves, sockets, refusals, the event loop's lag), the
store's (:mod:`store.metrics`: Redis calls, the worker's timers, computers, the outbox),
the bot's (:mod:`bot.metrics`: Telegram calls, "your turn" delay) and the client's own
process, platform and GC collectors. It is answered only to

* a request with ``Authorization: Bearer <METRICS_TOKEN>`` (when ``METRICS_TOKEN`` is set), or
* a request straight from loopback or from one of ``TRUSTED_PROXIES`` (Prometheus on the
  host or on the proxy's machine) that was not forwarded for someone else (no
  ``X-Forwarded-For``/``Forwarded`` header: what a proxy forwards from the internet is refused);

anything else gets 403 ``forbidden``. ``deploy/nginx.conf`` also denies ``/metrics``.

Labels are bounded: a game (``prsi``/``penki``), a path (``socket``, ``post``), an outcome
(``committed``, ``duplicate`` or one of the API's error codes), a status, a reason; never a
table, user or chat id. A move pays for two counter increments and one histogram
observation, each on a child looked up once (:func:`move_done`); the outbox backlog and due
timers are read every ``METRICS_SAMPLE`` seconds in the background (:func:`metrics_ctx`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

import bot.metrics
import store.metrics
from webapp.keys import SETTINGS, SOCKETS, STORE

log = logging.getLogger(__name__)
disable_created_metrics()  # no *_created series: half the exposition, and nothing reads them
_ = (bot.metrics, store.metrics)  # their series are exported even where no bot runs (local play)

#: Seconds: a move's time in the server is ~1-3 ms on an idle machine.
MOVE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
GAMES = frozenset({"prsi", "penki"})

MOVES = Counter("karty_moves_total", "Moves asked for by players, by game, path (socket: an act frame; post: "
                "POST /api/tables/{id}/actions) and outcome (committed, duplicate, or the refusal's error code)",
                ["game", "path", "outcome"])
MOVE_SECONDS = Histogram("karty_move_seconds", "A player's move in the server: from its request or frame "
                         "being handled to its commit answered (committed moves only)", ["path"],
                         buckets=MOVE_BUCKETS)
FANOUT_SECONDS = Histogram("karty_fanout_seconds", "From a commit of this process to the last of its local "
                           "sockets of that table having been sent the new version",
                           buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0))
LOOP_LAG = Histogram("karty_event_loop_lag_seconds", "How late the event loop woke a 0.25 s sleep",
                     buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
SOCKETS_OPEN = Gauge("karty_sockets_open", "Table WebSockets open on this process")
WS_REFUSED = Counter("karty_ws_refused_total", "Table WebSockets the server refused after the upgrade or "
                     "closed for a reason, by reason (too_many: the per-user cap; too_fast: a request or frame "
                     "limit; unauthorized; bad_message; unavailable: Redis; draining). Handshakes refused "
                     "before the upgrade (admission's overloaded) are in karty_http_refused_total", ["reason"])
HTTP_REFUSED = Counter("karty_http_refused_total", "Requests answered 429 or 503, by status and the answer's "
                       "error code (too_fast: a request or action limit; overloaded: admission; unavailable: "
                       "Redis; draining)", ["status", "error"])
HTTP_ERRORS = Counter("karty_http_errors_total", "Requests answered with a 5xx status, by status", ["status"])

_moves: dict[tuple[str, str, str], Any] = {}
_move_seconds = {path: MOVE_SECONDS.labels(path).observe for path in ("socket", "post")}


def game_of(known: Any) -> str:
    """The game label of ``known`` (a :class:`store.live.Known` or None): ``prsi``, ``penki`` or ``unknown``."""
    try:
        game = known.doc.get("game") if known is not None else None
    except Exception:
        game = None
    return game if game in GAMES else "unknown"


def move_done(game: str, path: str, outcome: str, started: float | None = None) -> None:
    """Count one move (``outcome``: committed, duplicate or an error code); ``started``
    (``time.perf_counter()`` when its handling began) observes a committed move's time."""
    key = (game, path, outcome)
    child = _moves.get(key)
    if child is None:
        child = _moves[key] = MOVES.labels(game, path, outcome)
    child.inc()
    if started is not None and outcome == "committed":
        _move_seconds[path](time.perf_counter() - started)


def outcome_of(e: BaseException) -> str:
    """A refused move's outcome label: the API's error code it is answered with (bounded:
    the API's codes and the engine's reasons), ``unavailable`` or ``internal``."""
    from pydantic import ValidationError

    from engine import Rejected
    from store import UNAVAILABLE, StoreError
    from webapp.errors import ApiError

    if isinstance(e, ApiError | Rejected | StoreError):
        return str(getattr(e, "code", "error"))[:32]
    if isinstance(e, ValidationError):
        return "bad_request"
    if isinstance(e, UNAVAILABLE):
        return "unavailable"
    return "internal"


class FanoutTimer:
    """Times one locally committed version to its last local socket: :meth:`sent` once per socket."""

    __slots__ = ("left", "start", "version")

    def __init__(self, version: int, sockets: int) -> None:
        self.version = version
        self.left = sockets
        self.start = time.perf_counter()

    def sent(self) -> None:
        self.left -= 1
        if self.left == 0:
            FANOUT_SECONDS.observe(time.perf_counter() - self.start)


def _loopback(addr: str | None) -> bool:
    try:
        return addr is not None and ipaddress.ip_address(addr.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def allowed(request: web.Request) -> bool:
    """Whether ``request`` may read ``/metrics`` (the rules in the module docstring)."""
    settings = request.app[SETTINGS]
    token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
    if "X-Forwarded-For" in request.headers or "Forwarded" in request.headers:
        return False  # a proxy forwarded it: someone else's request
    trusted = {p.strip() for p in (settings.trusted_proxies or "").split(",") if p.strip()}
    peer = request.remote
    return _loopback(peer) or peer in trusted


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: the exposition text (``text/plain; version=0.0.4``) or 403 ``forbidden``."""
    if not allowed(request):
        return web.json_response({"error": "forbidden", "detail": "metrics are for the operator's scraper"},
                                 status=403)
    SOCKETS_OPEN.set(len(request.app[SOCKETS]))
    body = generate_latest(REGISTRY)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


@web.middleware
async def refusal_middleware(request: web.Request,
                             handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Outermost: counts answers 429/503 (by error code) and 5xx. A refusal's body is a
    small JSON error (:func:`webapp.errors.json_error`); only those are read."""
    response = await handler(request)
    status = response.status
    if status == 429 or status >= 500:
        error = "other"
        body = getattr(response, "body", None)
        if isinstance(body, bytes | bytearray) and len(body) < 4096:
            with contextlib.suppress(Exception):
                error = str(orjson.loads(body).get("error") or "other")[:32]
        if status in (429, 503):
            HTTP_REFUSED.labels(str(status), error).inc()
        if status >= 500:
            HTTP_ERRORS.labels(str(status)).inc()
    return response


async def watch_lag(interval: float = 0.25) -> None:
    """Observe the event loop's lateness every ``interval`` s (``karty_event_loop_lag_seconds``)."""
    loop = asyncio.get_running_loop()
    observe = LOOP_LAG.observe
    while True:
        start = loop.time()
        await asyncio.sleep(interval)
        observe(max(0.0, loop.time() - start - interval))


async def sample_store(app: web.Application, every: float) -> None:
    """:func:`store.metrics.sample` every ``every`` s (a failure logged once per outage, as WARNING)."""
    from store.metrics import sample

    failing = False
    while True:
        try:
            await sample(app[STORE])
            if failing:
                log.info("metrics: the store answers again")
            failing = False
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not failing:
                log.warning("metrics: reading the outbox backlog failed: %s: %s", type(e).__name__, e)
            failing = True
        await asyncio.sleep(every)


async def metrics_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: the loop-lag probe and the store sampler, for the app's lifetime."""
    every = app[SETTINGS].metrics_sample
    tasks = [asyncio.create_task(watch_lag(), name="metrics-lag")]
    if every > 0:
        tasks.append(asyncio.create_task(sample_store(app, every), name="metrics-sample"))
    yield
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def add_routes(app: web.Application) -> None:
    """Register ``GET /metrics``."""
    app.router.add_get("/metrics", metrics, name="metrics")
