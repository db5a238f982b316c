"""Everything the bot sends to a chat goes through :class:`Sender` (S5).

It keeps Telegram's limits — about 30 messages/s overall, 1/s per chat, 20/min per
group — with one sliding-window limiter per key (global, chat, group), acquired in
that order chat → group → global right before the request, so the global window
counts requests when they actually leave. A request is then made with the real
aiogram ``Bot``; failures are handled by type:

* ``TelegramRetryAfter`` — the chat's limiter is paused for ``retry_after`` seconds,
  then the same request is retried (at most ``retries`` times);
* ``TelegramForbiddenError`` on a private chat (the user blocked the bot or never
  started it) — ``store.set_reachable(user_id, False)``; the call returns ``None``;
* ``TelegramBadRequest`` "message is not modified" — ignored; other bad requests are
  logged and return ``None``;
* network / server errors — retried a few times with a short backoff, then ``None``.

No exception escapes :meth:`Sender.call` unless ``raise_errors=True`` (then the
Forbidden/BadRequest is re-raised after handling, for callers with a fallback).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiogram import Bot
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import EditMessageText, SendMessage, TelegramMethod
from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions, Message

log = logging.getLogger(__name__)
T = TypeVar("T")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]


class RateLimiter:
    """At most ``limit`` acquisitions in any ``period`` seconds (a sliding-window log).

    :meth:`acquire` waits (FIFO, one waiter at a time) until one more fits, then
    records it. :meth:`pause` holds everything back until ``now + seconds``.
    """

    def __init__(self, limit: int, period: float, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep):
        if limit < 1 or period <= 0:
            raise ValueError("limit must be >= 1 and period > 0")
        self.limit = limit
        self.period = period
        self._clock = clock
        self._sleep = sleep
        self._log: deque[float] = deque()
        self._lock = asyncio.Lock()
        self._paused_until = 0.0

    @property
    def last(self) -> float:
        """When the newest acquisition happened (0 if none)."""
        return self._log[-1] if self._log else 0.0

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    def delay(self) -> float:
        """Seconds until one more acquisition would fit (0 if now)."""
        now = self._clock()
        while self._log and self._log[0] <= now - self.period:
            self._log.popleft()
        wait = max(0.0, self._paused_until - now)
        if len(self._log) >= self.limit:
            wait = max(wait, self._log[0] + self.period - now)
        return wait

    async def acquire(self) -> None:
        async with self._lock:
            while (wait := self.delay()) > 0:
                await self._sleep(wait)
            self._log.append(self._clock())


def is_group(chat_id: int | str) -> bool:
    """Groups, supergroups and channels have negative ids (or ``@username``)."""
    return isinstance(chat_id, str) or chat_id < 0


class Sender:
    """Rate-limited, failure-tolerant calls to the Bot API.

    ``store`` needs ``set_reachable(user_id, bool)`` (async). Limits: ``rate_global``
    messages/s, ``rate_chat`` messages/s per chat, ``group_per_minute`` per group in
    any ``group_period`` seconds (60; tests shrink it).
    """

    def __init__(
        self,
        bot: Bot,
        store: Any,
        *,
        rate_global: float = 30.0,
        rate_chat: float = 1.0,
        group_per_minute: float = 20.0,
        group_period: float = 60.0,
        retries: int = 5,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.bot = bot
        self.store = store
        self.retries = retries
        self._clock = clock
        self._sleep = sleep
        self._global = self._window(rate_global)
        self._chat_rate = rate_chat
        self._group_limit = max(1, int(group_per_minute))
        self._group_period = group_period
        self._chats: dict[Any, RateLimiter] = {}
        self._groups: dict[Any, RateLimiter] = {}
        self.sent = 0
        self.failed = 0

    def _window(self, per_second: float) -> RateLimiter:
        # limit n in period n/rate: e.g. 30/s → 30 per 1 s; 1/s → 1 per 1 s; 0.5/s → 1 per 2 s.
        limit = max(1, int(per_second)) if per_second >= 1 else 1
        return RateLimiter(limit, limit / per_second, clock=self._clock, sleep=self._sleep)

    def _limiter(self, table: dict[Any, RateLimiter], key: Any, make: Callable[[], RateLimiter]) -> RateLimiter:
        limiter = table.get(key)
        if limiter is None:
            if len(table) > 5000:  # forget idle chats
                now = self._clock()
                for k in [k for k, v in table.items() if now - v.last > v.period and not v._lock.locked()]:
                    del table[k]
            limiter = table[key] = make()
        return limiter

    def chat_limiter(self, chat_id: Any) -> RateLimiter:
        return self._limiter(self._chats, chat_id, lambda: self._window(self._chat_rate))

    def group_limiter(self, chat_id: Any) -> RateLimiter:
        return self._limiter(
            self._groups, chat_id,
            lambda: RateLimiter(self._group_limit, self._group_period, clock=self._clock, sleep=self._sleep),
        )

    async def _acquire(self, chat_id: Any) -> None:
        if chat_id is not None:
            await self.chat_limiter(chat_id).acquire()
            if is_group(chat_id):
                await self.group_limiter(chat_id).acquire()
        await self._global.acquire()

    async def call(self, method: TelegramMethod[T], *, chat_id: Any = None, raise_errors: bool = False) -> T | None:
        """Make ``method`` within the limits; the result, or ``None`` when it failed.

        ``chat_id`` defaults to ``method.chat_id``. Raises only with ``raise_errors``
        (``TelegramForbiddenError``/``TelegramBadRequest``, after they were handled).
        """
        if chat_id is None:
            chat_id = getattr(method, "chat_id", None)
        attempt = 0
        while True:
            await self._acquire(chat_id)
            try:
                result = await self.bot(method)
            except TelegramRetryAfter as e:
                attempt += 1
                log.warning("429 for chat %s: retry after %ss (attempt %s)", chat_id, e.retry_after, attempt)
                if attempt > self.retries:
                    self.failed += 1
                    return None
                if chat_id is not None:
                    self.chat_limiter(chat_id).pause(e.retry_after)
                else:
                    self._global.pause(e.retry_after)
                continue
            except TelegramForbiddenError:
                self.failed += 1
                if isinstance(chat_id, int) and chat_id > 0:
                    log.info("user %s blocked the bot: marking unreachable", chat_id)
                    try:
                        await self.store.set_reachable(chat_id, False)
                    except Exception:
                        log.exception("set_reachable failed for %s", chat_id)
                else:
                    log.warning("forbidden in chat %s (bot removed?)", chat_id)
                if raise_errors:
                    raise
                return None
            except TelegramBadRequest as e:
                if "not modified" in e.message:
                    return None
                self.failed += 1
                log.warning("bad request %s in chat %s: %s", method.__api_method__, chat_id, e.message)
                if raise_errors:
                    raise
                return None
            except (TelegramNetworkError, TelegramServerError) as e:
                attempt += 1
                if attempt > min(self.retries, 3):
                    self.failed += 1
                    log.error("giving up %s to chat %s: %s", method.__api_method__, chat_id, e)
                    return None
                await self._sleep(0.5 * attempt)
                continue
            except Exception:
                self.failed += 1
                log.exception("unexpected error from %s in chat %s", method.__api_method__, chat_id)
                if raise_errors:
                    raise
                return None
            self.sent += 1
            return result

    async def send_message(
        self,
        chat_id: int | str,
        text: str,
        *,
        thread_id: int | None = None,
        reply_markup: InlineKeyboardMarkup | None = None,
        raise_errors: bool = False,
    ) -> Message | None:
        """``sendMessage`` (HTML, no link previews) into ``chat_id`` and its forum topic ``thread_id``."""
        method = SendMessage(
            chat_id=chat_id,
            text=text,
            message_thread_id=thread_id,
            reply_markup=reply_markup,
            parse_mode="HTML",
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        return await self.call(method, chat_id=chat_id, raise_errors=raise_errors)

    async def edit_message(
        self,
        chat_id: int | str,
        message_id: int,
        text: str,
        *,
        reply_markup: InlineKeyboardMarkup | None = None,
    ) -> Message | bool | None:
        """``editMessageText`` (HTML) of a bot message; ``None`` if it failed or was unchanged."""
        method = EditMessageText(
            chat_id=chat_id,
            message_id=message_id,
            text=text,
            reply_markup=reply_markup,
            parse_mode="HTML",
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        return await self.call(method, chat_id=chat_id)
