"""The aiohttp application factory: ``create_app(settings, store)`` (CONTRACTS §6).

One application serves the Mini App's static files (``webapp/static``), its JSON API
(:mod:`webapp.api`, :mod:`webapp.local`), the table WebSocket (:mod:`webapp.ws`),
the OpenAPI document (:mod:`webapp.openapi`) and, when the entry point mounts it,
the bot's webhook (``bot.setup_bot``).

Static files (:mod:`webapp.assets`, read, versioned and compressed once when the app is
built): ``/`` is ``index.html``; every other file of ``webapp/static`` is served at
``/static/<path>`` and at ``/<path>`` (the page uses relative URLs). A file asked for at
its version (``?v=``, as the page and its imports name them) is cached for a year,
immutable; ``index.html`` and unversioned names are ``no-cache``, revalidated by ETag, so
a deploy is seen at once. gzip and brotli bodies go to clients that take them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web

from webapp import api, drain, local, logs, metrics, openapi, rematch, replays, ws
from webapp.admission import Admission, admission_middleware
from webapp.assets import Assets
from webapp.auth import Authenticator, new_local_key
from webapp.errors import error_middleware, quiet_malformed_requests
from webapp.keys import ADMISSION, ASSETS, AUTH, DRAIN, LEASES, LIMITER, LIMITS, SETTINGS, SOCKETS, STORE
from webapp.ratelimit import RequestLimits, SharedBuckets, SocketLeases, limit_middleware
from webapp.settings import WebSettings

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
APP_MAX_SIZE = 1024**2


def create_app(settings: WebSettings, store: Any) -> web.Application:
    """Build the application around ``store`` (a ``store.Store``; closed by its owner, not here).

    With a bot token, initData is checked against it; otherwise against a random local
    key made now (local play signs with it; without local play nothing can sign in).
    ``settings.run_worker`` runs ``store.run_worker`` (turn timers, computers) in the app.
    """
    quiet_malformed_requests()  # a malformed request is one INFO line, not an ERROR with raw bytes
    # API bodies are limited to settings.client_max_size in webapp.api.read_body; the app's
    # own limit stays at least aiohttp's 1 MiB for the bot's webhook (updates can exceed 16 KiB).
    admission = Admission(settings.admit_limit, settings.admit_queue, settings.admit_wait,
                          max_lag=settings.admit_max_lag)
    limits = RequestLimits(settings, store=store)  # before admission: a flood's refused requests take no slot
    app = web.Application(
        middlewares=[metrics.refusal_middleware, logs.context_middleware, error_middleware, limit_middleware(limits),
                     admission_middleware(admission)],
        client_max_size=max(APP_MAX_SIZE, settings.client_max_size),
    )
    app[ADMISSION] = admission
    app[LIMITS] = limits
    app[SETTINGS] = settings
    app[STORE] = store
    app[AUTH] = Authenticator(settings.token or new_local_key(), store, max_age=settings.init_data_max_age)
    app[AUTH].session_ttl = settings.session_ttl
    app[LIMITER] = SharedBuckets(store, settings.action_rate, settings.action_burst)
    app[LEASES] = SocketLeases(store, settings.ws_per_user)
    app[SOCKETS] = weakref.WeakSet()
    app[DRAIN] = drain.Drain()
    # Local play always imports tg-local.js (the Telegram stand-in): preloaded with the rest.
    app[ASSETS] = Assets(STATIC_DIR, extra_preloads=("tg-local.js",) if settings.local else ())

    app.cleanup_ctx.append(ws.hub_ctx)
    app.cleanup_ctx.append(lag_ctx)
    app.cleanup_ctx.append(metrics.metrics_ctx)
    if settings.run_worker:
        app.cleanup_ctx.append(worker_ctx)
    app.on_shutdown.append(ws.close_sockets)
    app.on_response_prepare.append(security_headers)
    app.on_response_prepare.append(drain.close_connections)

    api.add_routes(app)
    local.add_routes(app)
    rematch.add_routes(app)
    replays.add_routes(app)
    ws.add_routes(app)
    openapi.add_routes(app)
    metrics.add_routes(app)
    app.router.add_get("/", index, name="index")
    app.router.add_get("/static/{path:.+}", static_file, name="static")
    app.router.add_get("/{path:[^/]+(/[^/]+)*}", static_file, name="static_root")
    return app


async def lag_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: the admission's event-loop lateness probe (one task per process)."""
    if app[ADMISSION].max_lag is None:  # shedding by lateness is off: nothing to probe
        yield
        return
    task = asyncio.create_task(app[ADMISSION].watch_lag(), name="admission-lag")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def worker_ctx(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: ``store.run_worker(stop)`` in the background, restarted if it fails."""
    stop = asyncio.Event()
    store = app[STORE]

    async def supervise() -> None:
        while not stop.is_set():
            try:
                await store.run_worker(stop)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("store worker failed; restarting in 1 s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)

    task = asyncio.create_task(supervise(), name="store-worker")
    yield
    stop.set()
    try:
        await asyncio.wait_for(task, 5.0)
    except (TimeoutError, asyncio.CancelledError):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Headers for every answer: no MIME sniffing, no referrer. (No frame ban: Telegram
    Web shows Mini Apps in an iframe.)"""
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    if request.path.startswith("/api/"):
        response.headers.setdefault("Cache-Control", "no-store")


async def index(request: web.Request) -> web.StreamResponse:
    """``GET /`` (also ``/?table=<id>``): the Mini App's ``index.html`` (``no-cache``, ETag).

    In local play the files are read again first when one changed on disk (someone is editing
    them): a reload shows the edit, at its new versions."""
    if request.app[SETTINGS].local and request.app[ASSETS].changed():
        request.app[ASSETS].reload()
    asset = request.app[ASSETS].get("index.html")
    if asset is None:
        raise web.HTTPNotFound(text="the front end is not built in webapp/static")
    return request.app[ASSETS].response(request, asset)


async def static_file(request: web.Request) -> web.StreamResponse:
    """A file of ``webapp/static`` (no hidden files, nothing outside the folder); 404 otherwise."""
    asset = request.app[ASSETS].get(request.match_info["path"])
    if asset is None:  # only the folder's own files are in it: no "..", no hidden file, no NUL
        raise web.HTTPNotFound()
    return request.app[ASSETS].response(request, asset)
