"""Everything the bot sends to a chat goes through :class:`Sender` (S5).

It keeps Telegram's limits — about 30 messages/s overall, 1/s per chat, 20/min per
group — with one :class:`RateLimiter` per key (global, chat, group), acquired in
that order chat → group → global right before the request. One request per chat is
in flight at a time (order kept), and a request counts from its start until
``period`` after it *completed*, so network latency can never squeeze requests
closer than the limits at Telegram's end. Beyond the budget, requests wait for the
overall limit ranked by urgency (:data:`URGENCY`: "your turn" first, then edits of live
turn messages, chat posts, lobby edits, deletions; each kind passed by the more urgent
for a few seconds at most, so nothing starves), and one withdrawn at the moment of sending
(its guard) counts against no limit. The request is made with the real aiogram
``Bot``; failures are handled by type:

* ``TelegramRetryAfter`` — the chat's limiter is paused for ``retry_after`` seconds,
  then the same request is retried (at most ``retries`` times);
* ``TelegramForbiddenError`` on a private chat (the user blocked the bot or never
  started it) — ``store.set_reachable(user_id, False)``; the call returns ``None``;
* ``TelegramBadRequest`` "message is not modified" — ignored; a refused button
  (``BUTTON_URL_INVALID``, ``BUTTON_TYPE_INVALID`` …: ``PUBLIC_URL`` not https, a bad
  link) — the same message once more without its keyboard, so the text still arrives;
  other bad requests are logged and return ``None``;
* ``TelegramMigrateToChat`` — the request is repeated to the supergroup's new id;
* a forum topic that is closed or gone ("message thread not found", ``TOPIC_CLOSED``,
  ``TOPIC_DELETED``) — :meth:`Sender.post` sends into the chat's general thread instead,
  with a note saying so, and tells the caller (who remembers it for the table);
* network / server errors — retried a few times with a short backoff, then ``None``.

No exception escapes :meth:`Sender.call` unless ``raise_errors=True`` (then the
Forbidden/BadRequest is re-raised after handling, for callers with a fallback).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiogram import Bot
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import DeleteMessage, EditMessageText, SendMessage, TelegramMethod
from aiogram.types import InlineKeyboardMarkup, LinkPreviewOptions, Message

from bot import metrics

log = logging.getLogger(__name__)
T = TypeVar("T")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[Any]]
Guard = Callable[[], Awaitable[bool]]
EPSILON = 1e-9  # seconds: rounding, not time (a clock that only moves by the waits asked of it)
_LEFT = object()  # a waiter that left the heap from behind its head (dropped when it comes up)


#: Seconds a request of each kind may be passed at the overall limit by a more urgent one that
#: asked later (added to its rank there): beyond Telegram's budget "your turn" goes first, then
#: edits of live turn messages, chat posts, lobby edits and last deletions of old messages;
#: nothing waits forever behind the urgent (a post asked for 5 s ago goes before a turn asked now).
URGENCY = {"reply": 0.0, "turn": 0.0, "refresh": 1.0, "post": 5.0, "lobby": 8.0, "cleanup": 10.0}


class Withdrawn(Exception):
    """A guarded message whose reason passed while it waited its turn: not sent."""


class RateLimiter:
    """At most ``limit`` requests in any ``period`` seconds, counted at Telegram's end.

    A request holds a lease from :meth:`acquire` until :meth:`release`; it counts
    while in flight and for ``period`` seconds after it completed. Since a request
    reaches Telegram between those two moments, no ``period``-long window there can
    see more than ``limit`` of them, whatever the network latency. Waiters are served
    lowest ``rank`` first (by default the moment they asked: first come, first served;
    :class:`Sender` ranks by urgency, :data:`URGENCY`). :meth:`pause` holds everything
    back until ``now + seconds`` (``retry_after``).
    """

    def __init__(self, limit: int, period: float, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep):
        if limit < 1 or period <= 0:
            raise ValueError("limit must be >= 1 and period > 0")
        self.limit = limit
        self.period = period
        self._clock = clock
        self._sleep = sleep
        self._done: deque[float] = deque()
        self._inflight = 0
        self._queue: list[list[Any]] = []  # heap of waiters: [rank, order, future or None or _LEFT]
        self._left = 0  # waiters in the heap marked _LEFT
        self._order = itertools.count()
        self._paused_until = 0.0

    @property
    def last(self) -> float:
        """When the newest request completed (0 if none)."""
        return self._done[-1] if self._done else 0.0

    @property
    def idle(self) -> bool:
        return not self._inflight and not self.waiting

    @property
    def waiting(self) -> int:
        """Requests waiting for a lease."""
        return len(self._queue) - self._left

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, self._clock() + seconds)

    def delay(self) -> float:
        """Seconds to wait before one more request may start (0: now)."""
        now = self._clock()
        while self._done and self._done[0] <= now - self.period + EPSILON:
            self._done.popleft()
        wait = max(0.0, self._paused_until - now)
        if self._inflight + len(self._done) >= self.limit:
            if self._done and self._inflight < self.limit:
                wait = max(wait, self._done[0] + self.period - now)
            else:  # everything is in flight: wait for a completion
                wait = max(wait, min(0.02, self.period))
        return wait if wait > EPSILON else 0.0  # (a wait the clock cannot tell from none is none)

    async def acquire(self, rank: float | None = None) -> None:
        """Wait for a lease: the waiter of lowest ``rank`` (default: now) goes first."""
        me: list[Any] = [self._clock() if rank is None else rank, next(self._order), None]
        heapq.heappush(self._queue, me)
        try:
            while True:
                if self._queue[0] is me:
                    wait = self.delay()
                    if wait <= 0:
                        break
                    await self._sleep(wait)
                else:  # someone ahead: woken when the head leaves
                    me[2] = asyncio.get_running_loop().create_future()
                    await me[2]
        except BaseException:
            self._leave(me)
            raise
        self._leave(me)
        self._inflight += 1

    def _leave(self, me: list[Any]) -> None:
        """``me`` is no longer waiting: off the heap, and the new head woken.

        A waiter leaving from behind the head (cancelled: a stopping notifier cancels every
        waiting lane at once) is only marked and dropped when it reaches the head, so each
        leave costs O(log n), not a removal and re-heapify of O(n) (O(n²) for a stop: with
        ~9,000 waiting beyond Telegram's budget, minutes of a busy machine's time)."""
        queue = self._queue
        if queue and queue[0] is me:
            heapq.heappop(queue)
        else:
            me[2] = _LEFT
            self._left += 1
        while queue and queue[0][2] is _LEFT:  # the head is always a waiter still waiting
            heapq.heappop(queue)
            self._left -= 1
        if self._queue:
            head = self._queue[0][2]
            if head is not None and not head.done():
                head.set_result(None)

    def release(self, *, sent: bool = True) -> None:
        """The request of a lease completed (or failed); ``sent=False``: it was never made
        (withdrawn before it went out) and counts nothing."""
        self._inflight = max(0, self._inflight - 1)
        if sent:
            now = self._clock()
            self._done.append(max(now, self._done[-1]) if self._done else now)
        if self._queue:
            head = self._queue[0][2]
            if head is not None and not head.done():
                head.set_result(None)


TOPIC_GONE = ("message thread not found", "TOPIC_CLOSED", "TOPIC_DELETED", "TOPIC_ID_INVALID")


def topic_gone(exc: BaseException) -> bool:
    """Whether a ``TelegramBadRequest`` says the forum topic is closed or no longer exists."""
    message = getattr(exc, "message", "") or str(exc)
    return any(marker.lower() in message.lower() for marker in TOPIC_GONE)


class Posted:
    """What :meth:`Sender.post` did: ``message`` (or None), ``moved`` (the topic was closed or
    gone and the text went to the general thread instead)."""

    __slots__ = ("message", "moved")

    def __init__(self, message: Message | None, moved: bool) -> None:
        self.message = message
        self.moved = moved


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
        self._chat_locks: dict[Any, asyncio.Lock] = {}
        self.sent = 0
        self.failed = 0
        self.withdrawn = 0
        self.moved: dict[Any, int] = {}  # old group id → supergroup id (TelegramMigrateToChat)
        self.on_migrate: Callable[[int, int], Awaitable[Any]] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def chat_moved(self, old: Any, new: int) -> None:
        """``old`` is the supergroup ``new`` now: later calls go there directly, and
        :attr:`on_migrate` (the store's move of the chat) runs once per process."""
        if self.moved.get(old) == new:
            return
        self.moved[old] = new
        if self.on_migrate is not None:
            task = asyncio.create_task(self.on_migrate(old, new), name=f"migrate-{old}")
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    def _window(self, per_second: float) -> RateLimiter:
        # overall: n per second (bursts up to n allowed, as Telegram does)
        limit = max(1, int(per_second))
        return RateLimiter(limit, limit / per_second, clock=self._clock, sleep=self._sleep)

    def _limiter(self, table: dict[Any, RateLimiter], key: Any, make: Callable[[], RateLimiter]) -> RateLimiter:
        limiter = table.get(key)
        if limiter is None:
            if len(table) > 5000:  # forget idle chats
                now = self._clock()
                for k in [k for k, v in table.items() if now - v.last > v.period and v.idle]:
                    del table[k]
                    self._chat_locks.pop(k, None)
            limiter = table[key] = make()
        return limiter

    def chat_limiter(self, chat_id: Any) -> RateLimiter:
        """Strict spacing in a chat: one request per ``1/rate_chat`` seconds."""
        return self._limiter(
            self._chats, chat_id, lambda: RateLimiter(1, 1.0 / self._chat_rate, clock=self._clock, sleep=self._sleep)
        )

    def group_limiter(self, chat_id: Any) -> RateLimiter:
        return self._limiter(
            self._groups, chat_id,
            lambda: RateLimiter(self._group_limit, self._group_period, clock=self._clock, sleep=self._sleep),
        )

    def _chat_lock(self, chat_id: Any) -> asyncio.Lock:
        lock = self._chat_locks.get(chat_id)
        if lock is None:
            lock = self._chat_locks[chat_id] = asyncio.Lock()
        return lock

    def _limiters(self, chat_id: Any) -> list[RateLimiter]:
        out = []
        if chat_id is not None:
            out.append(self.chat_limiter(chat_id))
            if is_group(chat_id):
                out.append(self.group_limiter(chat_id))
        out.append(self._global)
        return out

    def congested(self) -> bool:
        """Whether at least a second's worth of requests waits at the overall limit (beyond
        Telegram's budget: callers then spend fewer requests, :class:`bot.turns.TurnNotices`)."""
        return self._global.waiting >= self._global.limit

    async def _request(self, method: TelegramMethod[T], chat_id: Any, guard: Guard | None = None,
                       urgency: str = "reply") -> T:
        """One attempt, within the limits (chat → group → global leases, released after; at the
        global one ranked by ``urgency``, :data:`URGENCY`).

        ``guard``: asked once every lease is held, right before the request; False →
        :class:`Withdrawn` (what the message was for no longer holds after the wait; it
        counts against no limit)."""
        held: list[RateLimiter] = []
        sent = True
        try:
            for limiter in self._limiters(chat_id):
                if limiter is self._global:
                    await limiter.acquire(self._clock() + URGENCY.get(urgency, 0.0))
                else:
                    await limiter.acquire()
                held.append(limiter)
            if guard is not None and not await guard():
                sent = False
                raise Withdrawn
            return await self.bot(method)
        finally:
            for limiter in held:
                limiter.release(sent=sent)

    async def call(self, method: TelegramMethod[T], *, chat_id: Any = None, raise_errors: bool = False,
                   guard: Guard | None = None, urgency: str = "reply") -> T | None:
        """Make ``method`` within the limits; the result, or ``None`` when it failed.

        ``chat_id`` defaults to ``method.chat_id``. Raises only with ``raise_errors``
        (``TelegramForbiddenError``/``TelegramBadRequest``, after they were handled).
        ``guard``: re-checked at the moment of sending, after every wait (the chat's
        turn, the limits, a ``retry_after``); when it says False nothing is sent and the
        result is ``None`` (:attr:`withdrawn` counts those). ``urgency``: a key of
        :data:`URGENCY` (what goes first beyond Telegram's budget).
        """
        if chat_id is None:
            chat_id = getattr(method, "chat_id", None)
        if chat_id is None:
            return await self._call(method, None, raise_errors, guard, urgency)
        if chat_id in self.moved:  # a group known to be a supergroup now: straight to the new id
            new = self.moved[chat_id]
            if getattr(method, "chat_id", None) == chat_id:
                method = method.model_copy(update={"chat_id": new})
            chat_id = new
        async with self._chat_lock(chat_id):  # one request in flight per chat: order and spacing kept
            return await self._call(method, chat_id, raise_errors, guard, urgency)

    async def _call(self, method: TelegramMethod[T], chat_id: Any, raise_errors: bool,
                    guard: Guard | None = None, urgency: str = "reply") -> T | None:
        attempt = 0
        while True:
            try:
                result = await self._request(method, chat_id, guard, urgency)
            except Withdrawn:
                self.withdrawn += 1
                metrics.call(method, "withdrawn")
                return None
            except TelegramRetryAfter as e:
                attempt += 1
                metrics.call(method, "retry_after")
                metrics.retry_after(e.retry_after)
                log.warning("429 for chat %s: retry after %ss (attempt %s)", chat_id, e.retry_after, attempt)
                if attempt > self.retries:
                    self.failed += 1
                    return None
                if chat_id is not None:
                    self.chat_limiter(chat_id).pause(e.retry_after)
                else:
                    self._global.pause(e.retry_after)
                continue
            except TelegramMigrateToChat as e:
                # a group became a supergroup: the same request to its new id, once
                metrics.call(method, "migrated")
                log.warning("chat %s migrated to %s", chat_id, e.migrate_to_chat_id)
                if getattr(method, "chat_id", None) != chat_id or attempt > self.retries:
                    self.failed += 1
                    return None
                self.chat_moved(chat_id, e.migrate_to_chat_id)
                attempt += 1
                method = method.model_copy(update={"chat_id": e.migrate_to_chat_id})
                chat_id = e.migrate_to_chat_id
                continue
            except TelegramForbiddenError:
                self.failed += 1
                metrics.call(method, "forbidden")
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
                    metrics.call(method, "not_modified")
                    return None
                metrics.call(method, "bad_request")
                if "BUTTON" in e.message.upper() and getattr(method, "reply_markup", None) is not None:
                    # a button Telegram refuses (PUBLIC_URL not https, a bad link): the text still goes
                    log.warning("%s in chat %s refused its buttons (%s); sending without them",
                                method.__api_method__, chat_id, e.message)
                    method = method.model_copy(update={"reply_markup": None})
                    continue
                self.failed += 1
                log.warning("bad request %s in chat %s: %s", method.__api_method__, chat_id, e.message)
                if raise_errors:
                    raise
                return None
            except (TelegramNetworkError, TelegramServerError) as e:
                attempt += 1
                metrics.call(method, "network")
                if attempt > min(self.retries, 3):
                    self.failed += 1
                    log.error("giving up %s to chat %s: %s", method.__api_method__, chat_id, e)
                    return None
                await self._sleep(0.5 * attempt)
                continue
            except Exception:
                self.failed += 1
                metrics.call(method, "error")
                log.exception("unexpected error from %s in chat %s", method.__api_method__, chat_id)
                if raise_errors:
                    raise
                return None
            self.sent += 1
            metrics.call(method, "ok")
            return result

    async def send_message(
        self,
        chat_id: int | str,
        text: str,
        *,
        thread_id: int | None = None,
        reply_markup: InlineKeyboardMarkup | None = None,
        raise_errors: bool = False,
        guard: Guard | None = None,
        urgency: str = "reply",
    ) -> Message | None:
        """``sendMessage`` (HTML, no link previews) into ``chat_id`` and its forum topic ``thread_id``
        (``guard``, ``urgency``: see :meth:`call`)."""
        method = SendMessage(
            chat_id=chat_id,
            text=text,
            message_thread_id=thread_id,
            reply_markup=reply_markup,
            parse_mode="HTML",
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        return await self.call(method, chat_id=chat_id, raise_errors=raise_errors, guard=guard, urgency=urgency)

    async def post(
        self,
        chat_id: int | str,
        text: str,
        *,
        thread_id: int | None = None,
        reply_markup: InlineKeyboardMarkup | None = None,
        moved_note: str = "",
        urgency: str = "reply",
    ) -> Posted:
        """A chat post into forum topic ``thread_id``; when Telegram says the topic is closed
        or gone, the same post into the general thread with ``moved_note`` appended
        (``Posted.moved``). Other failures as :meth:`call` (``Posted.message`` None)."""
        if thread_id is None:
            return Posted(await self.send_message(chat_id, text, reply_markup=reply_markup, urgency=urgency), False)
        try:
            message = await self.send_message(chat_id, text, thread_id=thread_id, reply_markup=reply_markup,
                                              raise_errors=True, urgency=urgency)
            return Posted(message, False)
        except TelegramBadRequest as exc:
            if not topic_gone(exc):
                return Posted(None, False)
            log.warning("forum topic %s of chat %s is closed or gone (%s): posting to the general thread",
                        thread_id, chat_id, exc.message)
        except TelegramForbiddenError:
            return Posted(None, False)
        body = text + ("\n\n" + moved_note if moved_note else "")
        return Posted(await self.send_message(chat_id, body, reply_markup=reply_markup, urgency=urgency), True)

    async def delete_message(self, chat_id: int | str, message_id: int, *, urgency: str = "reply") -> bool:
        """``deleteMessage`` of a bot message; False when Telegram refused (too old, gone)."""
        return bool(await self.call(DeleteMessage(chat_id=chat_id, message_id=message_id), chat_id=chat_id,
                                    urgency=urgency))

    async def edit_message(
        self,
        chat_id: int | str,
        message_id: int,
        text: str,
        *,
        reply_markup: InlineKeyboardMarkup | None = None,
        guard: Guard | None = None,
        urgency: str = "reply",
    ) -> Message | bool | None:
        """``editMessageText`` (HTML) of a bot message; ``None`` if it failed, was unchanged or was
        withdrawn (``guard``, ``urgency``: see :meth:`call`)."""
        method = EditMessageText(
            chat_id=chat_id,
            message_id=message_id,
            text=text,
            reply_markup=reply_markup,
            parse_mode="HTML",
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )
        return await self.call(method, chat_id=chat_id, guard=guard, urgency=urgency)
