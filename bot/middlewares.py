"""Update-level middlewares.

:class:`DedupeMiddleware` — the same update delivered twice (a webhook retry, two
processes polling) is handled once, through the store's "done once" markers
(``store.once("upd", "<bot id>:<update_id>", ttl=86400)``); when the store fails an
in-process LRU of the last 10 000 update ids is used instead.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import BaseMiddleware
from aiogram.types import TelegramObject, Update

log = logging.getLogger(__name__)


class SeenIds:
    """Remembers ids: :meth:`first` is True the first time an id is offered."""

    def __init__(self, store: Any, namespace: str, *, ttl: int = 86400, capacity: int = 10_000) -> None:
        self.store = store
        self.name = f"bot:{namespace}"
        self.ttl = ttl
        self.capacity = capacity
        self._local: OrderedDict[str, None] = OrderedDict()

    def _first_local(self, key: str) -> bool:
        if key in self._local:
            self._local.move_to_end(key)
            return False
        self._local[key] = None
        while len(self._local) > self.capacity:
            self._local.popitem(last=False)
        return True

    async def seen(self, ident: Any) -> bool:
        """Whether ``ident`` was offered or marked before (without marking it)."""
        key = str(ident)
        try:
            return await self.store.done_once(self.name, key)
        except Exception:
            log.exception("dedupe through the store failed; using memory")
        return key in self._local

    async def mark(self, ident: Any) -> None:
        """Remember ``ident`` (after the work it guards was done)."""
        key = str(ident)
        try:
            await self.store.mark_once(self.name, key, self.ttl)
            return
        except Exception:
            log.exception("dedupe through the store failed; using memory")
        self._first_local(key)

    async def first(self, ident: Any) -> bool:
        """True the first time ``ident`` is offered (across processes, for ``ttl`` seconds)."""
        key = str(ident)
        try:
            return await self.store.once(self.name, key, self.ttl)
        except Exception:
            log.exception("dedupe through the store failed; using memory")
        return self._first_local(key)


class SenderlessMiddleware(BaseMiddleware):
    """Outer middleware on ``dp.message``: a message with neither ``from`` nor ``sender_chat``
    (no real Telegram chat sends one; junk on the webhook) is dropped with one log line."""

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        if getattr(event, "from_user", None) is None and getattr(event, "sender_chat", None) is None:
            log.warning("message %s in chat %s has no sender; ignored",
                        getattr(event, "message_id", "?"), getattr(getattr(event, "chat", None), "id", "?"))
            return None
        return await handler(event, data)


class ChatMembersMiddleware(BaseMiddleware):
    """Outer middleware on messages and callback queries: a person writing or pressing a
    button in a group is remembered as in that chat (``store.seen_in_chat``), so the Mini
    App shows them its tables and boards (:mod:`webapp.privacy`). Written at most once an
    hour per person and chat; a failure is logged, the update handled anyway. The group's
    title is remembered too when it is new or changed (``store.set_chat_title``)."""

    def __init__(self, store: Any, *, every: float = 3600.0, capacity: int = 50_000) -> None:
        self.store = store
        self.every = every
        self.capacity = capacity
        self._seen: OrderedDict[tuple[int, int], float] = OrderedDict()
        self._titles: OrderedDict[int, str] = OrderedDict()

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        user = data.get("event_from_user")
        chat = data.get("event_chat")
        if chat is not None and chat.type in ("group", "supergroup") and chat.title:
            await self._titled(chat.id, chat.title)
        if user is not None and chat is not None and not user.is_bot and chat.type in ("group", "supergroup"):
            await self._seen_in(chat.id, user.id)
        return await handler(event, data)

    async def _titled(self, chat_id: int, title: str) -> None:
        """Remember the group's title when it is new or changed ("My tables" names the chat)."""
        if self._titles.get(chat_id) == title:
            return
        try:
            await self.store.set_chat_title(chat_id, title)
        except Exception as exc:
            log.warning("could not remember the title of chat %s: %s", chat_id, exc)
            return
        self._titles[chat_id] = title
        self._titles.move_to_end(chat_id)
        while len(self._titles) > self.capacity:
            self._titles.popitem(last=False)

    async def _seen_in(self, chat_id: int, user_id: int) -> None:
        import time

        key = (chat_id, user_id)
        now = time.monotonic()
        if now - self._seen.get(key, -1e18) < self.every:
            return
        try:
            await self.store.seen_in_chat(chat_id, user_id)
        except Exception as exc:
            log.warning("could not remember %s in chat %s: %s", user_id, chat_id, exc)
            return
        self._seen[key] = now
        self._seen.move_to_end(key)
        while len(self._seen) > self.capacity:
            self._seen.popitem(last=False)

    def forget(self, chat_id: int, user_id: int) -> None:
        self._seen.pop((chat_id, user_id), None)


class DedupeMiddleware(BaseMiddleware):
    """Outer middleware on ``dp.update``: drops an update whose ``update_id`` was seen."""

    def __init__(self, store: Any) -> None:
        self.seen = SeenIds(store, "upd")

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        if isinstance(event, Update) and not data.get("inbox"):  # the inbox dedupes its own
            bot = data.get("bot")
            bot_id = getattr(bot, "id", 0) if bot is not None else 0
            if not await self.seen.first(f"{bot_id}:{event.update_id}"):
                log.info("duplicate update %s dropped", event.update_id)
                return None
        return await handler(event, data)
