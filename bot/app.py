"""Wiring: the Bot, the Dispatcher with its routers and middlewares, the sender,
the lobby messages, the notifier — and :func:`setup_bot` (docs/CONTRACTS.md §5).

Nothing is read at import time. :class:`BotRuntime` owns every piece; tests build
one around a ``Bot`` pointed at a fake Bot API server and feed updates with
:meth:`BotRuntime.feed` (``Dispatcher.feed_raw_update``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.default import DefaultBotProperties
from aiogram.client.telegram import TelegramAPIServer
from aiogram.types import Update
from aiohttp import web

from bot import boot, texts
from bot.handlers import routers
from bot.handlers.lobby import Prober
from bot.i18n import DEFAULT, LANGUAGES, LanguagePrefs, UserLocaleMiddleware, locale_scope, make_i18n
from bot.lobbies import LobbyMessages
from bot.middlewares import ChatMembersMiddleware, DedupeMiddleware, SenderlessMiddleware
from bot.notifier import Notifier
from bot.sender import Sender
from bot.session import Session
from bot.settings import BotSettings
from bot.webhook import WebhookHandler

log = logging.getLogger(__name__)

def create_bot(settings: BotSettings) -> Bot:
    """An aiogram ``Bot`` (HTML parse mode) on ``TELEGRAM_API_URL`` when set, else Telegram's,
    through :class:`bot.session.Session`."""
    session = Session(api=TelegramAPIServer.from_base(settings.telegram_api_url)) if settings.telegram_api_url \
        else Session()
    return Bot(settings.bot_token, session=session, default=DefaultBotProperties(parse_mode="HTML"))


class BotRuntime:
    """Everything the bot runs, built around ``store`` (a ``store.Store``) and ``settings``.

    Attributes: ``bot``, ``dp`` (Dispatcher; ``dp["store"]``, ``dp["sender"]``,
    ``dp["lobbies"]``, ``dp["settings"]``, ``dp["prober"]``, ``dp["lang_prefs"]``),
    ``sender``, ``lobbies``, ``notifier``, ``i18n``.
    """

    def __init__(self, store: Any, settings: BotSettings, *, bot: Bot | None = None) -> None:
        self.store = store
        self.settings = settings
        self.bot = bot or create_bot(settings)
        self.i18n = make_i18n()
        self.sender = Sender(
            self.bot,
            store,
            rate_global=settings.rate_global,
            rate_chat=settings.rate_chat,
            group_per_minute=settings.rate_group_per_minute,
            group_period=settings.rate_group_period,
            retries=settings.send_retries,
        )
        self.lobbies = LobbyMessages(self.bot, store, self.sender, self.i18n, settings, delay=settings.lobby_edit_delay,
                                     max_delay=max(5.0, settings.lobby_edit_delay))
        self.prober = Prober(self.sender, store)
        self.lang_prefs = LanguagePrefs(store)
        self.notifier = Notifier(self.bot, store, self.sender, self.i18n, settings,
                                 consumer=settings.notifier_consumer)
        self.notifier.lobbies = self.lobbies  # "Play again" lobbies are posted and edited by it
        self.sender.on_migrate = self.chat_migrated
        self.dp = self._dispatcher()
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._polling = False
        self._handling: set[asyncio.Task[Any]] = set()
        self._inflight: set[int] = set()

    def _dispatcher(self) -> Dispatcher:
        dp = Dispatcher(name="karty")
        dp["store"] = self.store
        dp["settings"] = self.settings
        dp["sender"] = self.sender
        dp["lobbies"] = self.lobbies
        dp["prober"] = self.prober
        dp["lang_prefs"] = self.lang_prefs
        dp["migrations"] = self.chat_migrated
        dp.update.outer_middleware(DedupeMiddleware(self.store))
        dp.message.outer_middleware(SenderlessMiddleware())
        members = ChatMembersMiddleware(self.store)
        dp["members"] = members
        dp.message.outer_middleware(members)
        dp.callback_query.outer_middleware(members)
        locale_mw = UserLocaleMiddleware(self.i18n, self.store, self.lang_prefs)
        for observer in (dp.message, dp.callback_query, dp.errors):
            observer.middleware(locale_mw)
        dp.include_routers(*routers())
        return dp

    async def feed(self, update: dict[str, Any]) -> Any:
        """Handle one raw update (a dict shaped like Telegram's ``Update``)."""
        return await self.dp.feed_raw_update(self.bot, update)

    async def chat_migrated(self, old: int, new: int) -> None:
        """The group ``old`` is the supergroup ``new`` now (a service message, or the 400 that
        says so): the store moves the chat once; its open lobbies are posted anew there."""
        self.sender.moved[old] = new
        try:
            if not await self.store.migrate_chat(old, new):
                return
        except Exception:
            log.exception("moving chat %s to %s failed (the next service message or 400 retries)", old, new)
            return
        log.info("chat %s moved to the supergroup %s", old, new)
        for lobby in await self.store.chat_lobbies(new):
            if lobby.table_id is None and lobby.message_id is not None:
                await self.lobbies.repost_moved(lobby.id, new)  # once: not if already posted there

    async def accept_update(self, update: Update, raw: dict[str, Any]) -> None:
        """A webhook update, valid by schema: kept in the store's inbox (raises when it cannot
        be: the webhook then answers 503), then handled in the background and marked done.
        A repeat of an update kept or handled before is dropped here."""
        if not await self.store.inbox_add(update.update_id, raw, claim_ttl=self.settings.inbox_claim_seconds):
            log.info("duplicate update %s dropped", update.update_id)
            return
        self._spawn(update)

    def _spawn(self, update: Update) -> None:
        task = asyncio.create_task(self._handle_kept(update), name=f"update-{update.update_id}")
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _handle_kept(self, update: Update) -> None:
        self._inflight.add(update.update_id)
        try:
            await self.handle_update(update, inbox=True)
            await self.store.inbox_done(update.update_id)
        except Exception as exc:  # stays in the inbox: handled again once its claim lapses
            log.error("update %s not marked done: %s: %s", update.update_id, type(exc).__name__, exc)
        finally:
            self._inflight.discard(update.update_id)

    async def handle_update(self, update: Update, *, inbox: bool = False) -> None:
        """Feed one parsed update to the dispatcher; a failure is one log line (handlers' own
        errors are answered and logged by :mod:`bot.handlers.errors`)."""
        try:
            await self.dp.feed_update(self.bot, update, inbox=inbox)
        except Exception as exc:
            log.error("update %s failed: %s: %s", update.update_id, type(exc).__name__, exc)

    async def resume(self) -> int:
        """Handle the inbox's updates whose handler died (claim lapsed); returns how many were
        taken up. Also renews the claims of this process's updates in flight."""
        ttl = self.settings.inbox_claim_seconds
        await self.store.inbox_renew(sorted(self._inflight), claim_ttl=ttl)
        taken = 0
        for update_id, raw in await self.store.inbox_pending():
            if update_id in self._inflight or not await self.store.inbox_claim(update_id, claim_ttl=ttl):
                continue
            from bot.webhook import parse_update

            update, why = parse_update(raw, self.bot)
            if update is None:
                log.warning("inbox: update %s is not one (%s); dropped", update_id, why)
                await self.store.inbox_done(update_id)
                continue
            log.info("update %s was kept but not handled before a restart: handling it now", update_id)
            taken += 1
            self._spawn(update)
        return taken

    async def _resume_loop(self) -> None:
        """At start and every few seconds: :meth:`resume`, and lobby edits left unshown."""
        try:
            await self.lobbies.resume()
        except Exception:
            log.exception("resuming lobby edits failed")
        while not self._stop.is_set():
            try:
                await self.resume()
            except Exception as exc:
                log.warning("inbox check failed: %s: %s", type(exc).__name__, exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.settings.inbox_claim_seconds / 3)

    def start_inbox(self) -> None:
        self._tasks.append(asyncio.create_task(self._resume_loop(), name="karty-inbox"))

    async def drain_updates(self) -> None:
        """Wait for the updates being handled (tests, shutdown)."""
        while self._handling:
            await asyncio.gather(*list(self._handling), return_exceptions=True)

    # -- background tasks ------------------------------------------------------------------------
    def start_notifier(self) -> None:
        self._tasks.append(asyncio.create_task(self.notifier.run(self._stop), name="karty-notifier"))

    def start_polling(self) -> None:
        self._polling = True
        self._tasks.append(asyncio.create_task(self._poll(), name="karty-polling"))

    async def _poll(self) -> None:
        try:
            await self.bot.delete_webhook(drop_pending_updates=False)
        except Exception:
            log.exception("deleteWebhook failed; polling anyway")
        await self.dp.start_polling(
            self.bot, handle_signals=False, close_bot_session=False,
            allowed_updates=self.dp.resolve_used_update_types(),
        )

    async def set_commands(self) -> None:
        """The command menu in Czech, Russian and English (``setMyCommands`` per ``language_code``;
        English also as the default for other languages). A failure is logged, nothing more."""
        from aiogram.types import BotCommand

        for lang in (None, *LANGUAGES):
            with locale_scope(self.i18n, lang or DEFAULT):
                commands = [BotCommand(command=c, description=d) for c, d in texts.command_menu()]
            try:
                await self.bot.set_my_commands(commands, language_code=lang)
            except Exception:
                log.exception("setMyCommands (%s) failed", lang or "default")

    async def set_webhook(self) -> None:
        assert self.settings.webhook_url
        await self.bot.set_webhook(
            self.settings.webhook_url,
            secret_token=self.settings.secret_token(),
            allowed_updates=self.dp.resolve_used_update_types(),
            drop_pending_updates=False,
        )

    async def stop(self) -> None:
        """Stop the tasks, pending lobby edits and the Bot's HTTP session."""
        self._stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.drain_updates(), timeout=5)
        if self._polling:
            # aiogram's start_polling runs getUpdates in tasks of its own: cancelling the task that
            # awaits it leaves them polling (against a Bot API that may be gone), so it is told to stop.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.dp.stop_polling(), timeout=5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.notifier.close()
        await self.lobbies.close()
        if not self._polling:  # a cancelled start_polling has emitted it already
            with contextlib.suppress(Exception):
                await self.dp.emit_shutdown(bot=self.bot)
        await self.bot.session.close()


RUNTIME_KEY = boot.RUNTIME_KEY  # defined without aiogram, so the web app finds the bot without importing it


def webhook_handler(runtime: BotRuntime) -> WebhookHandler:
    """The webhook endpoint of ``runtime`` (its secret, its ``accept_update``)."""
    return WebhookHandler(runtime.bot, runtime.settings.secret_token(), runtime.accept_update)


async def start_runtime(runtime: BotRuntime) -> None:
    """Start what ``runtime`` runs: the command menu, then ``setWebhook`` (with ``WEBHOOK_URL``)
    or long polling, then the inbox (updates kept but not handled, lobby edits not shown)
    and the notifier. :meth:`BotRuntime.stop` undoes it."""
    await runtime.set_commands()
    if runtime.settings.webhook_url:  # (start_polling emits startup and shutdown itself)
        await runtime.dp.emit_startup(bot=runtime.bot)
        try:
            await runtime.set_webhook()
        except Exception:
            log.exception("setWebhook failed (updates will not arrive until it succeeds)")
    else:
        runtime.start_polling()
    runtime.start_inbox()
    runtime.start_notifier()


async def setup_bot(app: web.Application, store: Any, settings: BotSettings) -> None:
    """Attach the bot to ``app`` (CONTRACTS §5).

    With ``WEBHOOK_URL``: :class:`bot.webhook.WebhookHandler` (checking the
    ``X-Telegram-Bot-Api-Secret-Token`` header against :meth:`BotSettings.secret_token`;
    junk answered 400 or 200-and-ignored) at ``WEBHOOK_PATH``, and ``setWebhook`` on startup. Without: long polling in a
    background task. Either way the notifier task reading ``store.outbox_read``.
    All of it in ``app.cleanup_ctx``; the runtime is ``app[RUNTIME_KEY]``.
    Raises ``ValueError`` when ``BOT_TOKEN`` is empty.
    """
    if not settings.bot_token:
        raise ValueError("BOT_TOKEN is not set")
    runtime = BotRuntime(store, settings)
    app[RUNTIME_KEY] = runtime
    if settings.webhook_url:
        webhook_handler(runtime).register(app, settings.webhook_path)

    async def bot_ctx(_app: web.Application) -> AsyncIterator[None]:
        await start_runtime(runtime)
        yield
        await runtime.stop()

    app.cleanup_ctx.append(bot_ctx)
