"""Telegram's sending limits, modelled: for the notification benchmark and the tests.

What the Bot API documents (core.telegram.org/bots/faq, "My bot is hitting limits, how do
I avoid this?"; the API's ``ResponseParameters``; ``sendMessage``'s ``allow_paid_broadcast``):

* in one chat, no more than one message a second ("we may allow short bursts", not
  modelled: a burst here is refused, the strict reading);
* in bulk to many users, no more than about 30 messages a second in all;
* no more than 20 messages a minute to the same group;
* beyond a limit the request is refused with 429 "Too Many Requests: retry after N" and
  ``parameters.retry_after`` = N, "the number of seconds left to wait before the request
  can be repeated" (an integer);
* ``allow_paid_broadcast``: up to 1,000 messages a second, beyond the free broadcasting
  limit, for 0.1 Telegram Stars a message.

:class:`TelegramLimits` decides, for a request arriving at time ``now``, whether it goes
through (and counts it) or the ``retry_after`` it gets. Editing a message
(``editMessageText`` …) counts like a send; a refused request counts nothing; reads,
deletions and callback answers are not limited (Telegram documents no limit for them).
Each window is a sliding one: at most ``limit`` accepted requests in any ``period``
seconds, so ``retry_after`` is the whole seconds until the oldest of them leaves it.

:class:`FakeTelegram` is an in-process Bot API that applies these limits and records every
call with its time; :class:`FakeSession` is an aiogram session that hands each request to it
(aiogram still parses the answers and maps 429 to ``TelegramRetryAfter``).
:class:`VirtualLoop` is an asyncio loop whose clock jumps to the next timer whenever nothing
is ready, so a minute of Telegram's windows takes only the CPU the code under test spends.
The HTTP fake of the tests (``tests/fake_bot_api.py``) applies the same limits.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import json
import math
import selectors
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Methods that send or change a message: counted against the limits.
LIMITED = frozenset({
    "sendMessage", "sendPhoto", "sendDocument", "sendAnimation", "sendSticker", "sendMediaGroup",
    "copyMessage", "forwardMessage", "editMessageText", "editMessageReplyMarkup", "editMessageCaption",
})
GLOBAL_PER_SECOND = 30
CHAT_PER_SECOND = 1
GROUP_PER_MINUTE = 20
PAID_PER_SECOND = 1000
STARS_PER_PAID_MESSAGE = 0.1
EPSILON = 1e-6  # two requests exactly ``period`` apart are in different windows


class _Window:
    """At most ``limit`` accepted requests in any ``period`` seconds."""

    __slots__ = ("limit", "period", "times")

    def __init__(self, limit: int, period: float) -> None:
        self.limit = limit
        self.period = period
        self.times: deque[float] = deque()

    def wait(self, now: float) -> float:
        """Seconds until one more request fits (0: it fits now)."""
        times = self.times
        while times and times[0] <= now - self.period + EPSILON:
            times.popleft()
        if len(times) < self.limit:
            return 0.0
        return times[0] + self.period - now

    def add(self, now: float) -> None:
        self.times.append(now)


def is_group(chat_id: Any) -> bool:
    return isinstance(chat_id, str) or (isinstance(chat_id, int) and chat_id < 0)


@dataclass
class TelegramLimits:
    """The Bot API's limits for one bot (see the module docstring); ``clock`` in seconds.

    :meth:`check` answers ``None`` (accepted, counted) or the ``retry_after`` of a 429.
    ``stars``: what paid broadcasts cost so far; ``refused``: how many 429s were answered.
    """

    clock: Callable[[], float] = time.monotonic
    per_second: int = GLOBAL_PER_SECOND
    chat_per_second: int = CHAT_PER_SECOND
    group_per_minute: int = GROUP_PER_MINUTE
    paid_per_second: int = PAID_PER_SECOND
    stars: float = 0.0
    refused: int = 0
    _global: _Window = field(init=False)
    _paid: _Window = field(init=False)
    _chats: dict[Any, _Window] = field(default_factory=dict, init=False)
    _groups: dict[Any, _Window] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._global = _Window(self.per_second, 1.0)
        self._paid = _Window(self.paid_per_second, 1.0)

    def check(self, method: str, chat_id: Any, *, paid: bool = False) -> int | None:
        """A request of ``method`` to ``chat_id`` arriving now: ``None`` when it goes through
        (counted), else the whole seconds to wait (``retry_after`` ≥ 1; nothing counted)."""
        if method not in LIMITED:
            return None
        now = self.clock()
        windows = []
        if chat_id is not None:
            windows.append(self._chats.setdefault(chat_id, _Window(self.chat_per_second, 1.0)))
            if is_group(chat_id):
                windows.append(self._groups.setdefault(chat_id, _Window(self.group_per_minute, 60.0)))
        overall = self._global
        if paid and overall.wait(now) > 0:  # beyond the free broadcasting limit: paid, up to 1,000/s
            overall = self._paid
        windows.append(overall)
        wait = max(w.wait(now) for w in windows)
        if wait > 0:
            self.refused += 1
            return max(1, math.ceil(wait - EPSILON))
        for w in windows:
            w.add(now)
        if overall is self._paid:
            self.stars += STARS_PER_PAID_MESSAGE
        return None


@dataclass
class Call:
    """One request that reached the fake: ``ts`` its arrival, ``status`` 200 or 429."""

    method: str
    params: dict[str, Any]
    ts: float
    status: int = 200
    retry_after: int | None = None
    result: Any = None
    tag: Any = None  # what the benchmark said this request was for (:data:`TAG`)

    @property
    def chat_id(self) -> Any:
        return self.params.get("chat_id")


#: Set by the code under test's caller; each call records the value current when it arrives.
TAG: contextvars.ContextVar[Any] = contextvars.ContextVar("telegram_tag", default=None)


class FakeTelegram:
    """An in-process Bot API for one bot: limits (:class:`TelegramLimits`), messages, a record.

    Answers ``getMe``, ``sendMessage`` (a ``Message``, ids counting per chat),
    ``editMessageText`` (the edited ``Message``), ``deleteMessage`` and anything else
    (``true``). ``on_call(call)`` runs for each accepted call as it arrives.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, limits: TelegramLimits | None = None,
                 latency: float = 0.0, username: str = "karty_bench_bot") -> None:
        self.clock = clock
        self.limits = limits if limits is not None else TelegramLimits(clock)
        self.latency = latency
        self.username = username
        self.calls: list[Call] = []
        self.on_call: Callable[[Call], Any] | None = None
        self._ids: dict[Any, itertools.count] = {}

    def answer(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON body) for a request arriving now; recorded."""
        chat_id = params.get("chat_id")
        call = Call(method, params, self.clock(), tag=TAG.get())
        self.calls.append(call)
        wait = self.limits.check(method, chat_id, paid=bool(params.get("allow_paid_broadcast")))
        if wait is not None:
            call.status, call.retry_after = 429, wait
            return 429, {"ok": False, "error_code": 429, "description": f"Too Many Requests: retry after {wait}",
                         "parameters": {"retry_after": wait}}
        result: Any = True
        if method == "getMe":
            result = {"id": 1, "is_bot": True, "first_name": "Karty", "username": self.username}
        elif method == "sendMessage":
            result = self._message(params, next(self._ids.setdefault(chat_id, itertools.count(1000))))
        elif method == "editMessageText":
            result = self._message(params, params.get("message_id"))
        call.result = result
        if self.on_call is not None:
            self.on_call(call)
        return 200, {"ok": True, "result": result}

    def _message(self, params: dict[str, Any], message_id: Any) -> dict[str, Any]:
        chat_id = params.get("chat_id")
        chat = ({"id": chat_id, "type": "private", "first_name": "P"} if not is_group(chat_id)
                else {"id": chat_id, "type": "supergroup", "title": "G"})
        return {"message_id": message_id, "date": int(time.time()), "chat": chat, "text": params.get("text", "")}

    def make_bot(self) -> Any:
        """An aiogram ``Bot`` whose requests come here (:class:`FakeSession`)."""
        from aiogram import Bot

        return Bot("123456:BENCH-token", session=FakeSession(self))

    def of(self, *methods: str, status: int | None = 200) -> list[Call]:
        return [c for c in self.calls if (not methods or c.method in methods)
                and (status is None or c.status == status)]


def _session_class() -> type:
    from aiogram.client.session.base import BaseSession

    class _FakeSession(BaseSession):
        """Hands each request to a :class:`FakeTelegram`; aiogram parses the answer (and raises
        ``TelegramRetryAfter`` on a 429) as it does for the real server's. ``latency``: half
        before the request arrives, half after."""

        def __init__(self, api: FakeTelegram) -> None:
            super().__init__()
            self.api = api

        async def make_request(self, bot: Any, method: Any, timeout: int | None = None) -> Any:
            half = self.api.latency / 2
            if half:
                await asyncio.sleep(half)
            params = {k: v for k, v in method.model_dump(warnings=False, exclude_none=True).items()}
            status, body = self.api.answer(method.__api_method__, params)
            if half:
                await asyncio.sleep(half)
            response = self.check_response(bot, method, status, json.dumps(body))
            return response.result

        async def stream_content(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
            raise NotImplementedError
            yield b""

        async def close(self) -> None:
            return None

    return _FakeSession


def FakeSession(api: FakeTelegram) -> Any:  # a class made on first use (aiogram imported late)
    global _SESSION
    if _SESSION is None:
        _SESSION = _session_class()
    return _SESSION(api)


_SESSION: Any = None


class _VirtualSelector(selectors.DefaultSelector):
    """Never blocks: where the loop would wait ``timeout`` seconds, its clock moves on instead."""

    def __init__(self, loop_ref: list[Any]) -> None:
        super().__init__()
        self._loop_ref = loop_ref

    def select(self, timeout: float | None = None) -> list[Any]:
        events = super().select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise RuntimeError("the virtual loop has nothing scheduled: everything waits on nothing")
        self._loop_ref[0]._now += timeout
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (``time()``, from 0): whenever nothing is ready it jumps
    to the next timer, so the code run on it takes no wall time but its CPU. Only for code that
    does no real I/O (an in-process store, :class:`FakeTelegram`)."""

    def __init__(self) -> None:
        ref: list[Any] = [None]
        super().__init__(_VirtualSelector(ref))
        ref[0] = self
        self._now = 0.0

    def time(self) -> float:
        return self._now
