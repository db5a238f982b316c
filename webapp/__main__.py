"""``python -m webapp [--local]``: the process entry point (CONTRACTS §6).

Composes the settings (:class:`~webapp.settings.WebSettings` from the environment;
``--local`` turns local play on, ``--host``/``--port`` override ``HOST``/``PORT``),
connects the store to ``REDIS_URL`` under ``KARTY_PREFIX`` (in local play, when no Redis answers there, an
embedded fakeredis server is started instead), builds the app with
:func:`webapp.app.create_app`, mounts the bot (``bot.setup_bot``) when ``BOT_TOKEN`` is
set (started once the app serves: ``bot.boot.setup_bot_soon``), prints the URL and
serves until interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import faulthandler
import gc
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web

from store.embedded import EmbeddedRedis, redis_answers
from webapp import drain, logs
from webapp.accesslog import AccessLog
from webapp.app import create_app
from webapp.settings import WebSettings

log = logging.getLogger("webapp")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m webapp", description="Karty: the Mini App server")
    parser.add_argument("--local", action="store_true", help="local play: local sign-in, computer opponents")
    parser.add_argument("--host", help="listen address (HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (PORT, default 8080)")
    parser.add_argument("--log-level", default=os.environ.get("LOG_LEVEL") or "INFO",
                        help="LOG_LEVEL, default INFO")
    return parser.parse_args(argv)


async def build(settings: WebSettings, bot_settings: object | None = None, *,
                drain_on_sigterm: bool = False) -> web.Application:
    """The application with its store (and embedded Redis, bot) attached; all closed at cleanup.

    ``bot_settings``: a ``bot.BotSettings`` (default: read from the environment), used
    only when ``settings`` has a bot token. ``drain_on_sigterm``: SIGTERM drains the
    process (:mod:`webapp.drain`; the entry point's, not a test's). Raises ``SystemExit`` when
    no Redis answers and local play is off.
    """
    from store import Store, StoreSettings

    embedded: EmbeddedRedis | None = None
    url = settings.redis_url
    if not await redis_answers(url):
        if not settings.local:
            raise SystemExit(f"no Redis answers at {url} (set REDIS_URL, or use --local without BOT_TOKEN)")
        embedded = EmbeddedRedis(host="127.0.0.1").start()
        url = embedded.url
        log.warning("no Redis at %s: using an embedded fakeredis at %s (data is lost on exit)",
                    settings.redis_url, url)
    store_settings = StoreSettings()  # KARTY_PREFIX, REDIS_POOL_SIZE, REDIS_TIMEOUT, REDIS_POOL_TIMEOUT
    prefix = store_settings.prefix
    if embedded is None:
        log.info("games are kept in the Redis at %s under the key prefix %r", _safe(url), prefix)
    store = Store.from_url(url, prefix=prefix, **store_settings.bounds())
    app = create_app(settings, store)

    async def resources(app: web.Application) -> AsyncIterator[None]:
        await store.warm()  # the whole pool connected before the first request
        freeze_heap()
        yield
        await store.close()
        if embedded is not None:
            embedded.stop()

    app.cleanup_ctx.insert(0, resources)  # first in, last out: closed after the worker and hub
    if drain_on_sigterm:
        async def on_sigterm(app: web.Application) -> None:
            drain.install(app, settings.drain_seconds)

        app.on_startup.append(on_sigterm)

    if settings.token:  # aiogram is imported in the background once the app serves (bot.boot)
        from bot.boot import setup_bot_soon
        from bot.settings import BotSettings

        setup_bot_soon(app, store, bot_settings or BotSettings(), on_ready=freeze_heap)
    return app


#: ``gc.set_threshold``: a young collection after 10,000 new objects, not 700 (below).
GC_THRESHOLDS = (10_000, 20, 100)


def tune_gc() -> None:
    """The garbage collector set for a long-running service (called at start).

    A move makes thousands of short-lived dicts and lists (views, messages, the new
    document), and with Python's default of a young collection every 700 new objects,
    those still in use were scanned and promoted again and again: 16 % of a
    process's CPU under play (measured with ``gc.callbacks``; 8–9 % with these
    thresholds). Cycles are still collected, a little later.
    """
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's sight (``gc.freeze``).

    What a process has loaded at start (aiohttp, pydantic's schemas, with the bot
    aiogram's ~600 models: about 200,000 objects) lives as long as the process, yet
    every full collection walked all of it again (~250 ms of CPU each on this
    machine). Frozen, a full collection walks only what was made since. Called once
    the app serves and again once the bot has started.
    """
    gc.collect()
    gc.freeze()


def finish(status: int = 0) -> None:
    """End the process once it has shut down (``run_app`` returned): at once with ``os._exit``
    when a daemon thread still runs, else by returning to the interpreter's usual exit.

    The interpreter's finalization kills the daemon threads still running. One that is inside
    native code then may take the process down: the bot's aiogram import
    (``bot.boot._import_in_background``, seconds of CPU, pydantic-core's native code among it)
    cut short this way ended about one process in ten with ``SIGSEGV`` or ``SIGABRT`` ("FATAL:
    exception not rethrown"), so a drain that had lost nothing exited -11. Everything the process
    owes was done before this (the app's cleanup: sockets closed, moves answered, the notifier's
    entries acknowledged, the store closed); only the log and the standard streams are flushed.
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive() and t.daemon]
    if not others:
        return
    log.info("exiting without waiting for %s", ", ".join(sorted(t.name for t in others)))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: nothing more to say
            stream.flush()
    os._exit(status)


def _safe(url: str) -> str:
    """``url`` without its password, for the log."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def main(argv: list[str] | None = None) -> None:
    """Run the server (see the module docstring)."""
    args = parse_args(argv)
    faulthandler.enable()  # a crash in native code leaves the Python stacks in the log
    tune_gc()
    overrides: dict[str, object] = {}
    if args.local:
        overrides["local_play"] = True
    if args.host:
        overrides["host"] = args.host
    if args.port is not None:
        overrides["port"] = args.port
    settings = WebSettings(**overrides)
    logs.setup(args.log_level, settings.log_format, repeat_interval=settings.log_repeat_interval)
    access = settings.access_log if settings.access_log is not None else not settings.local
    if args.local and settings.token:
        log.warning("BOT_TOKEN is set: local sign-in stays off (--local ignored)")
    url = f"http://{settings.host}:{settings.port}/"

    def announce(text: str) -> None:
        if text.startswith("======== Running"):
            mode = "local play" if settings.local else "Telegram"
            print(f"Karty ({mode}) at {url}", flush=True)
        else:
            print(text, flush=True)

    try:
        web.run_app(build(settings, drain_on_sigterm=True), host=settings.host, port=settings.port,
                    print=announce, access_log=logs.access_logger(access),
                    access_log_class=AccessLog,  # header values escaped (webapp.accesslog)
                    shutdown_timeout=settings.drain_seconds * drain.DRAIN_SHARE)
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        raise SystemExit(f"error: {settings.host}:{settings.port} is already in use (another Karty?); "
                         f"choose another port, e.g. PORT={settings.port + 1} make run") from None
    finish(0)


if __name__ == "__main__":
    sys.exit(main())
