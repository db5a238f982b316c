"""Lobby messages (S1): posted once, then edited in place — debounced.

Every change to a lobby calls :meth:`LobbyMessages.changed` (kept in the store as not yet
shown, so a restart inside the debounce re-renders it: :meth:`LobbyMessages.resume`), then
:meth:`LobbyMessages.touch`; the edit happens
``delay`` seconds after the *last* touch (a trailing debounce, so ten joins in two
seconds make one edit), but never later than ``max_delay`` after the first one.
An edit always renders the lobby as the store has it *then*, under a per-lobby
lock, so edits never overtake each other. :meth:`refresh` edits at once (Start).

A lobby is rendered in the chat's language when its admins set one, else in its creator's
(``store.User.language``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from aiogram import Bot
from aiogram.types import InlineKeyboardMarkup, Message
from aiogram.utils.i18n import I18n

from bot import keyboards, texts
from bot.i18n import DEFAULT, locale_scope
from bot.sender import Sender
from bot.settings import BotSettings

log = logging.getLogger(__name__)

POSTED_IN = "bot:lobby_posted_in"  # store.mark_once: "<lobby id>:<chat id>", the lobby's message is in that chat
POSTED_TTL = 2 * 3600  # seconds: beyond a lobby's life (1 h since its last change)


class LobbyMessages:
    """Posts and (debounced) edits lobby messages. Dependencies are injected."""

    def __init__(
        self,
        bot: Bot,
        store: Any,
        sender: Sender,
        i18n: I18n,
        settings: BotSettings,
        *,
        delay: float = 1.0,
        max_delay: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bot = bot
        self.store = store
        self.sender = sender
        self.i18n = i18n
        self.settings = settings
        self.delay = delay
        self.clock = clock  # the debounce's clock (seconds); tests set one they move themselves
        self.max_delay = max(max_delay, delay)
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._last_touch: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._notes: dict[int, set[str]] = {}
        self.menus: dict[str, str] = {}  # lobby id → the button menu it shows ("variants"); main if absent
        self.edits = 0

    async def locale_of(self, lobby: Any) -> str:
        """The chat's language when its admins set one (``/lang`` in the group), else the creator's."""
        try:
            chat_language = await self.store.chat_language(lobby.chat_id) if lobby.chat_id < 0 else None
            if chat_language:
                return chat_language
            user = await self.store.get_user(lobby.creator_id)
        except Exception:
            log.exception("get_user failed")
            user = None
        return (user.language if user is not None else None) or DEFAULT

    async def render(self, lobby: Any) -> tuple[str, InlineKeyboardMarkup]:
        """The lobby's text and keyboard: seats and buttons, or the running table and Open."""
        locale = await self.locale_of(lobby)
        if lobby.table_id:
            table = await self.store.get_table(lobby.table_id)
            with locale_scope(self.i18n, locale):
                text = texts.started_text(lobby, table)
                markup = await keyboards.open_keyboard(self.bot, self.settings, lobby.table_id, chat_id=lobby.chat_id)
            return text, markup
        unreachable = []
        for seat in lobby.seats:
            if seat.user_id is not None and not seat.computer and not await self.store.is_reachable(seat.user_id):
                unreachable.append(seat)
                self._notes.setdefault(seat.user_id, set()).add(lobby.id)
        username = await keyboards.bot_username(self.bot)
        with locale_scope(self.i18n, locale):
            text = texts.lobby_text(lobby, unreachable=unreachable, bot_username=username)
            markup = await keyboards.lobby_keyboard(self.bot, self.settings, lobby, menu=self.menus.get(lobby.id))
        return text, markup

    def _lock(self, lobby_id: str) -> asyncio.Lock:
        return self._locks.setdefault(lobby_id, asyncio.Lock())

    async def post(self, lobby: Any) -> Message | None:
        """Send the lobby message into its chat/topic and remember its id in the store (and, for
        :meth:`repost_moved`, the chat it landed in: another one when the group had just become
        a supergroup and the sender followed it there)."""
        async with self._lock(lobby.id):
            return await self._post(lobby)

    async def repost_moved(self, lobby_id: str, chat_id: int) -> Message | None:
        """After the lobby's group became the supergroup ``chat_id`` (``store.migrate_chat`` moved
        the lobby): post the open lobby anew there, where its buttons work — unless its message
        is there already (posted into the group just as it was upgraded: the sender followed the
        400 to the supergroup). Under the lobby's lock, so that post and this one never both go;
        once posted, later changes edit that message. None when nothing was posted."""
        async with self._lock(lobby_id):
            if await self.store.done_once(POSTED_IN, f"{lobby_id}:{chat_id}"):
                return None
            lobby = await self.store.get_lobby(lobby_id)
            if lobby is None or lobby.table_id is not None or lobby.message_id is None:
                return None
            return await self._post(lobby)

    async def _post(self, lobby: Any) -> Message | None:
        text, markup = await self.render(lobby)
        with locale_scope(self.i18n, await self.locale_of(lobby)):
            note = texts.topic_moved_text()
        posted = await self.sender.post(lobby.chat_id, text, thread_id=lobby.thread_id, reply_markup=markup,
                                        moved_note=note)
        if posted.moved:  # its table will post to the general thread too (bot.notifier)
            await self.store.mark_once("bot:topic_lost", lobby.id, 7 * 86400)
        message = posted.message
        if message is not None:
            await self.store.set_lobby_message(lobby.id, message.message_id)
            await self.store.mark_once(POSTED_IN, f"{lobby.id}:{message.chat.id}", POSTED_TTL)
        return message

    def user_reachable(self, user_id: int) -> None:
        """``user_id`` pressed Start: re-render the lobbies that showed a note about them."""
        for lobby_id in self._notes.pop(user_id, set()):
            self.touch(lobby_id)

    def show_menu(self, lobby_id: str, menu: str | None) -> None:
        """Show ``menu`` (``"variants"``) or the main buttons (``None``) in the lobby's message, edited now-ish."""
        if menu is None:
            self.menus.pop(lobby_id, None)
        else:
            self.menus[lobby_id] = menu
        self.touch(lobby_id)

    async def changed(self, lobby_id: str) -> None:
        """``lobby_id`` changed: remembered in the store as not yet shown (so a restart inside
        the debounce still shows it, ``store.lobby_edit_pending``), then :meth:`touch`."""
        try:
            await self.store.lobby_edit_pending(lobby_id)
        except Exception:
            log.exception("marking lobby %s for an edit failed", lobby_id)
        self.touch(lobby_id)

    async def resume(self) -> int:
        """After a restart: edit every lobby whose last change was not shown; how many."""
        pending = await self.store.lobby_edits_pending()
        for lobby_id in pending:
            self.touch(lobby_id)
        return len(pending)

    def touch(self, lobby_id: str) -> None:
        """Schedule a (debounced) edit of ``lobby_id``'s message."""
        self._last_touch[lobby_id] = self.clock()
        task = self._pending.get(lobby_id)
        if task is None or task.done():
            self._pending[lobby_id] = asyncio.create_task(self._debounced(lobby_id), name=f"lobby-edit-{lobby_id}")

    async def _debounced(self, lobby_id: str) -> None:
        first = self.clock()
        try:
            while True:
                now = self.clock()
                due = min(self._last_touch.get(lobby_id, first) + self.delay, first + self.max_delay)
                if due <= now:
                    break
                await asyncio.sleep(due - now)
        finally:
            if self._pending.get(lobby_id) is asyncio.current_task():
                del self._pending[lobby_id]
        await self.edit(lobby_id)

    async def refresh(self, lobby_id: str) -> None:
        """Edit now, dropping a pending debounced edit."""
        task = self._pending.pop(lobby_id, None)
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        await self.edit(lobby_id)

    async def edit(self, lobby_id: str) -> None:
        """Render the lobby as stored now and edit its message (no-op if gone or never posted)."""
        lock = self._locks.setdefault(lobby_id, asyncio.Lock())
        async with lock:
            try:
                since = self.store.clock()
                lobby = await self.store.get_lobby(lobby_id)
                if lobby is not None and lobby.message_id is not None:
                    text, markup = await self.render(lobby)
                    await self.sender.edit_message(lobby.chat_id, lobby.message_id, text, reply_markup=markup,
                                                   urgency="lobby")
                    self.edits += 1
                await self.store.lobby_edit_shown(lobby_id, since)
            except Exception:
                log.exception("editing lobby %s failed", lobby_id)
        if not lock.locked() and lobby_id not in self._pending:
            self._locks.pop(lobby_id, None)
            self._last_touch.pop(lobby_id, None)

    async def close(self) -> None:
        """Cancel pending edits (shutdown)."""
        tasks = list(self._pending.values())
        self._pending.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def drain(self) -> None:
        """Wait for every pending edit (tests)."""
        while self._pending:
            await asyncio.gather(*list(self._pending.values()), return_exceptions=True)
