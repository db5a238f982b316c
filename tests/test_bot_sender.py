"""The sender keeps Telegram's limits, waits out retry_after, marks blocked users (S5).

Timestamps are the fake Bot API server's arrival times of the real aiogram requests.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from clocks import HeldClock
from fake_bot_api import FakeBotAPI

from bot.sender import RateLimiter, Sender

GROUP_A, GROUP_B = -1001, -1002
TOL = 0.03  # request jitter between the limiter and the server's clock


class _Store:
    def __init__(self) -> None:
        self.unreachable: set[int] = set()

    async def set_reachable(self, user_id: int, reachable: bool) -> None:
        (self.unreachable.discard if reachable else self.unreachable.add)(user_id)


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    best = 0
    j = 0
    for i, t in enumerate(times):
        while times[j] <= t - window + TOL:
            j += 1
        best = max(best, i - j + 1)
    return best


@pytest.fixture
async def api():
    async with FakeBotAPI() as server:
        yield server


async def test_default_limits_one_per_second_per_chat(api):
    bot = api.make_bot()
    sender = Sender(bot, _Store())  # the production defaults: 30/s, 1/s per chat, 20/min per group
    try:
        started = time.monotonic()
        await asyncio.gather(*(sender.send_message(chat, f"m{i}") for i in range(3) for chat in (GROUP_A, 42)))
        assert time.monotonic() - started >= 2 - TOL
        for chat in (GROUP_A, 42):
            ts = [c.ts for c in api.sent_messages(chat)]
            assert len(ts) == 3
            assert all(b - a >= 1 - TOL for a, b in itertools.pairwise(ts)), ts
            assert [c.text for c in api.sent_messages(chat)] == ["m0", "m1", "m2"]  # order kept
    finally:
        await bot.session.close()


async def test_s5_burst_is_spaced_per_chat_group_and_overall(api):
    bot = api.make_bot()
    # small limits for speed: 10/s per chat, 4 per 1 s per group, 12/s overall
    sender = Sender(bot, _Store(), rate_global=12, rate_chat=10, group_per_minute=4, group_period=1.0)
    try:
        chats = [GROUP_A, GROUP_B, *range(1, 9)]
        await asyncio.gather(*(sender.send_message(chat, "x") for chat in chats for _ in range(6)))
        assert len(api.sent_messages()) == 60
        for chat in chats:
            ts = [c.ts for c in api.sent_messages(chat)]
            assert max_in_window(ts, 0.1) <= 1, chat
            if chat < 0:
                assert max_in_window(ts, 1.0) <= 4, chat
        assert max_in_window([c.ts for c in api.sent_messages()], 1.0) <= 12
    finally:
        await bot.session.close()


async def test_s5_retry_after_is_waited_out_and_retried(api):
    bot = api.make_bot()
    sender = Sender(bot, _Store(), rate_chat=50)
    try:
        api.fail(GROUP_A, status=429, retry_after=1, times=2)
        msg = await sender.send_message(GROUP_A, "late but there")
        assert msg is not None and msg.text == "late but there"
        calls = api.calls_of("sendMessage", chat_id=GROUP_A, ok=None)
        assert [c.status for c in calls] == [429, 429, 200]
        assert calls[1].ts - calls[0].ts >= 1 - TOL and calls[2].ts - calls[1].ts >= 1 - TOL
    finally:
        await bot.session.close()


async def test_s5_forbidden_marks_unreachable_and_never_raises(api):
    bot = api.make_bot()
    store = _Store()
    sender = Sender(bot, store)
    try:
        api.block(77)
        assert await sender.send_message(77, "hello") is None
        assert 77 in store.unreachable
        api.fail(GROUP_A, status=400, description="Bad Request: message to edit not found")
        assert await sender.edit_message(GROUP_A, 5, "x") is None
        api.fail(GROUP_A, status=500, times=1)
        assert await sender.send_message(GROUP_A, "after a 500") is not None
        api.fail(GROUP_B, status=400, description="Bad Request: group chat was upgraded to a supergroup chat",
                 parameters={"migrate_to_chat_id": -100777})
        moved = await sender.send_message(GROUP_B, "moved")
        assert moved is not None and moved.chat.id == -100777
    finally:
        await bot.session.close()


async def test_rate_limiter_window():
    now = [0.0]
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(2, 1.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        await limiter.acquire()
        limiter.release()
    assert slept == [1.0, 1.0]
    limiter.pause(3)
    await limiter.acquire()
    assert now[0] == pytest.approx(5.0)
    # a long request keeps counting until a period after it completed
    await limiter.acquire()
    now[0] += 10
    limiter.release()
    limiter.release()
    await limiter.acquire()
    assert now[0] == pytest.approx(16.0)


async def test_waiters_leaving_from_the_middle_keep_the_order_and_the_count():
    """Cancelled waiters behind the head are dropped lazily (a stop cancels thousands at once:
    each leave O(log n), not O(n)); the rest are served lowest rank first, the count exact."""
    now = [0.0]

    async def sleep(s: float) -> None:
        now[0] += s
        await asyncio.sleep(0)

    limiter = RateLimiter(1, 1.0, clock=lambda: now[0], sleep=sleep)
    await limiter.acquire()  # held: everyone below waits
    served: list[int] = []

    async def waiter(rank: int) -> None:
        await limiter.acquire(rank)
        served.append(rank)
        limiter.release()

    tasks = {rank: asyncio.create_task(waiter(rank)) for rank in (5, 1, 4, 2, 3, 6)}
    for _ in range(3):
        await asyncio.sleep(0)
    assert limiter.waiting == 6
    for rank in (4, 2, 6):  # behind the head (1): only marked
        tasks[rank].cancel()
    await asyncio.gather(*(tasks[r] for r in (4, 2, 6)), return_exceptions=True)
    assert limiter.waiting == 3 and not limiter.idle
    tasks[1].cancel()  # the head itself: popped, the marked behind it dropped as they come up
    await asyncio.gather(tasks[1], return_exceptions=True)
    assert limiter.waiting == 2
    limiter.release()
    await asyncio.gather(tasks[3], tasks[5])
    assert served == [3, 5]
    assert limiter.waiting == 0 and limiter._left == 0 and not limiter._queue
    assert limiter.idle


async def test_default_overall_limit_thirty_per_second(api):
    """45 private chats at once with the production defaults: never more than 30 in any second."""
    bot = api.make_bot()
    sender = Sender(bot, _Store())
    try:
        started = time.monotonic()
        await asyncio.gather(*(sender.send_message(100 + i, "x") for i in range(45)))
        ts = [c.ts for c in api.sent_messages()]
        assert len(ts) == 45
        assert max_in_window(ts, 1.0) <= 30
        assert time.monotonic() - started >= 1 - TOL
    finally:
        await bot.session.close()


async def test_retry_after_in_a_group_holds_that_group_only(api):
    """A 429 in one group is waited out there; another chat is served meanwhile, in order."""
    bot = api.make_bot()
    held = HeldClock()  # the 429's wait is parked until released: no wall-clock bound
    sender = Sender(bot, _Store(), rate_chat=50, clock=held.clock, sleep=held.sleep)
    try:
        api.fail(GROUP_A, status=429, retry_after=2, times=1)
        late = asyncio.create_task(sender.send_message(GROUP_A, "a1"))
        await held.wait_parked()
        assert held.held and held.held[0] >= 2 - TOL  # the group waits what Telegram asked
        later = asyncio.create_task(sender.send_message(GROUP_A, "a2"))
        other = await sender.send_message(GROUP_B, "b1")  # served while GROUP_A waits
        assert other is not None and not late.done() and not later.done()
        assert api.sent_messages(GROUP_A) == []
        held.release()
        await asyncio.gather(late, later)
        assert [c.text for c in api.sent_messages(GROUP_A)] == ["a1", "a2"]
        assert api.sent_messages(GROUP_B)[0].ts < api.sent_messages(GROUP_A)[0].ts
    finally:
        await bot.session.close()


async def test_a_refused_button_still_lets_the_text_through(api):
    """PUBLIC_URL not https (or a bad link): Telegram refuses the button; the text goes without it."""
    from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

    bot = api.make_bot()
    sender = Sender(bot, _Store(), rate_chat=50)
    try:
        api.fail(42, status=400, description="Bad Request: BUTTON_URL_INVALID")
        markup = InlineKeyboardMarkup(inline_keyboard=[[InlineKeyboardButton(text="Open", url="http://127.0.0.1/")]])
        msg = await sender.send_message(42, "Your turn", reply_markup=markup)
        assert msg is not None
        calls = api.calls_of("sendMessage", chat_id=42, ok=None)
        assert [c.status for c in calls] == [400, 200]
        assert calls[0].reply_markup and not calls[1].reply_markup and calls[1].text == "Your turn"
        api.fail(42, status=400, description="Bad Request: chat not found")
        assert await sender.send_message(42, "x", reply_markup=markup) is None  # other refusals: given up
    finally:
        await bot.session.close()
