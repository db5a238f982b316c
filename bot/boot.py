"""Mounting the bot without making the Mini App wait for aiogram (fast start, issue 11).

Importing aiogram costs seconds of CPU (its ~600 pydantic models are built at import
time), and ``python -m webapp`` used to pay that before it served anything.
:func:`setup_bot_soon` registers the webhook route and the bot's lifecycle at once,
then, once the application serves, imports :mod:`bot.app` in a worker thread and
starts the bot exactly as :func:`bot.app.setup_bot` does (``setMyCommands``,
``setWebhook`` or long polling, the notifier). A webhook call that comes before the
bot is ready waits for it, up to :data:`BOOT_WAIT` seconds, then gets 503 with
``Retry-After`` (Telegram delivers it again). The notifier's outbox keeps what the
store queued meanwhile, so nothing is lost.

This module imports nothing from aiogram; :data:`RUNTIME_KEY` lives here so the web
app can find the bot without importing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

BOOT_WAIT = 30.0  # s a webhook call waits for the bot to finish starting

RUNTIME_KEY: web.AppKey[Any] = web.AppKey("karty_bot", object)  # the bot.app.BotRuntime (setup_bot)


async def _import_in_background(name: str) -> Any:
    """``importlib.import_module(name)`` on a daemon thread of its own: the loop goes on, and a
    process stopped while aiogram is still importing (seconds on a loaded machine) exits at
    once instead of joining that import (``asyncio.to_thread``'s pool is joined at exit,
    which held a drained process past ``DRAIN_SECONDS``). Such a process ends through
    :func:`webapp.__main__.finish` (``os._exit``): the interpreter's finalization would kill the
    thread inside native code, which crashed about one exit in ten."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if not done.done():
            (done.set_exception(error) if error is not None else done.set_result(result))

    def work() -> None:
        try:
            result, error = importlib.import_module(name), None
        except BaseException as e:
            result, error = None, e
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"import-{name}", daemon=True).start()
    return await done


class BotBoot:
    """The bot being started in the background: ``runtime`` (None until ready), ``ready``."""

    def __init__(self, store: Any, settings: Any, on_ready: Any = None) -> None:
        self.store = store
        self.settings = settings
        self.on_ready = on_ready  # called once the bot has started (webapp: freeze the heap)
        self.runtime: Any = None
        self.ready = asyncio.Event()
        self.failed = False
        self._webhook: Any = None

    async def start(self) -> None:
        """Import aiogram off the event loop, build the runtime, start it; logs a failure."""
        try:
            app_mod = await _import_in_background("bot.app")
            runtime = app_mod.BotRuntime(self.store, self.settings)
            self._webhook = app_mod.webhook_handler(runtime) if self.settings.webhook_url else None
            await app_mod.start_runtime(runtime)
            self.runtime = runtime
            if self.on_ready is not None:
                self.on_ready()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.failed = True
            log.exception("the bot failed to start; the Mini App keeps serving")
        finally:
            self.ready.set()

    async def webhook(self, request: web.Request) -> web.StreamResponse:
        """``WEBHOOK_PATH``: the bot's webhook handler once ready; 503 while it starts or if it failed."""
        if not self.ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.ready.wait(), BOOT_WAIT)
        if self._webhook is None or self.runtime is None:
            return web.json_response({"ok": False, "error": "the bot is starting"}, status=503,
                                     headers={"Retry-After": "5"})
        return await self._webhook.handle(request)


BOOT_KEY: web.AppKey[BotBoot] = web.AppKey("karty_bot_boot", BotBoot)


def setup_bot_soon(app: web.Application, store: Any, settings: Any, on_ready: Any = None) -> BotBoot:
    """Attach the bot to ``app`` like :func:`bot.app.setup_bot`, started once the app serves.

    ``settings``: a :class:`bot.settings.BotSettings` with a token (``ValueError`` otherwise).
    The webhook route (with ``WEBHOOK_URL``) is registered now; the runtime is
    :func:`runtime_of` ``(app)`` once started, and ``on_ready()`` is called then. Stopped
    at the app's cleanup.
    """
    if not settings.bot_token:
        raise ValueError("BOT_TOKEN is not set")
    boot = BotBoot(store, settings, on_ready)
    app[BOOT_KEY] = boot
    if settings.webhook_url:
        app.router.add_post(settings.webhook_path, boot.webhook)

    async def bot_ctx(_app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(boot.start(), name="karty-bot-boot")
        yield
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if boot.runtime is not None:
            await boot.runtime.stop()

    app.cleanup_ctx.append(bot_ctx)
    return boot


async def runtime_ready(app: web.Application, timeout: float) -> Any:
    """:func:`runtime_of` ``(app)``, waiting up to ``timeout`` s for a bot still starting."""
    boot = app.get(BOOT_KEY)
    if boot is not None and not boot.ready.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(boot.ready.wait(), timeout)
    return runtime_of(app)


def runtime_of(app: web.Application) -> Any:
    """The app's ``BotRuntime`` (mounted by ``setup_bot`` or started by :func:`setup_bot_soon`), or None."""
    runtime = app.get(RUNTIME_KEY)
    if runtime is None:
        boot = app.get(BOOT_KEY)
        runtime = boot.runtime if boot is not None else None
    return runtime
