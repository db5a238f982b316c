"""The limiting fake Bot API (benchmarks.telegram) against what the Bot API documents.

core.telegram.org/bots/faq ("My bot is hitting limits, how do I avoid this?"): in one chat
no more than one message a second; in bulk no more than about 30 messages a second; no
more than 20 messages a minute to the same group; beyond, 429 errors. The API's
``ResponseParameters.retry_after``: "In case of exceeding flood control, the number of
seconds left to wait before the request can be repeated" (an Integer). ``sendMessage``'s
``allow_paid_broadcast``: up to 1000 messages a second for 0.1 Stars each.
"""

from __future__ import annotations

import pytest
from aiogram.exceptions import TelegramRetryAfter
from clocks import StepClock

from benchmarks.telegram import FakeTelegram, TelegramLimits, VirtualLoop


def test_one_message_a_second_in_a_chat():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    assert limits.check("sendMessage", 7) is None
    clock.advance(0.4)
    assert limits.check("sendMessage", 7) == 1  # 0.6 s left: whole seconds, at least 1
    clock.advance(0.6)
    assert limits.check("sendMessage", 7) is None  # a second after the first
    assert limits.refused == 1


def test_about_thirty_messages_a_second_in_all():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    assert all(limits.check("sendMessage", chat) is None for chat in range(1, 31))
    assert limits.check("sendMessage", 31) == 1
    clock.advance(0.999)
    assert limits.check("sendMessage", 31) == 1
    clock.advance(0.001)
    assert limits.check("sendMessage", 31) is None


def test_twenty_messages_a_minute_to_a_group():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    for _ in range(20):
        assert limits.check("sendMessage", -100) is None
        clock.advance(1.0)
    assert clock.now == 20.0
    assert limits.check("sendMessage", -100) == 40  # until the first of the 20 leaves the minute
    assert limits.check("sendMessage", -200) is None  # another group is not held up
    clock.advance(39.5)
    assert limits.check("sendMessage", -100) == 1
    clock.advance(0.5)
    assert limits.check("sendMessage", -100) is None


def test_an_edit_counts_like_a_send_and_deletions_and_answers_do_not():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    assert limits.check("sendMessage", 7) is None
    assert limits.check("editMessageText", 7) == 1
    assert limits.check("deleteMessage", 7) is None
    assert limits.check("answerCallbackQuery", None) is None
    clock.advance(1.0)
    assert limits.check("editMessageText", 7) is None


def test_a_refused_request_counts_nothing():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    assert limits.check("sendMessage", 7) is None
    for _ in range(5):
        assert limits.check("sendMessage", 7) == 1
    clock.advance(1.0)
    assert limits.check("sendMessage", 7) is None


def test_paid_broadcasts_go_beyond_thirty_a_second_for_stars():
    clock = StepClock(0.0)
    limits = TelegramLimits(clock)
    assert all(limits.check("sendMessage", chat) is None for chat in range(1, 31))
    assert limits.check("sendMessage", 31) == 1
    assert all(limits.check("sendMessage", chat, paid=True) is None for chat in range(31, 1031))
    assert limits.check("sendMessage", 1031, paid=True) == 1  # 1,000 a second beyond the free 30
    assert limits.stars == pytest.approx(100.0)  # 0.1 Star each of the 1,000 paid


async def test_the_http_fake_answers_429_with_retry_after_as_aiogram_reads_it(fake_bot_api):
    clock = StepClock(0.0)
    fake_bot_api.limits = TelegramLimits(clock)
    bot = fake_bot_api.make_bot()
    try:
        await bot.send_message(5, "one")
        with pytest.raises(TelegramRetryAfter) as err:
            await bot.send_message(5, "two")
        assert err.value.retry_after == 1 and isinstance(err.value.retry_after, int)
        assert "Too Many Requests: retry after 1" in err.value.message
        assert [c.status for c in fake_bot_api.calls_of("sendMessage", ok=None)] == [200, 429]
        clock.advance(1.0)
        await bot.send_message(5, "two")
    finally:
        await bot.session.close()


def test_the_in_process_fake_records_every_call_with_its_time():
    loop = VirtualLoop()
    api = FakeTelegram(loop.time, latency=0.2)
    bot = api.make_bot()

    async def scene():
        await bot.send_message(5, "one")
        with pytest.raises(TelegramRetryAfter):
            await bot.edit_message_text("uno", chat_id=5, message_id=1000)
        await bot.delete_message(5, 1000)

    try:
        loop.run_until_complete(scene())
    finally:
        loop.close()
    assert [(c.method, c.status) for c in api.calls] == [("sendMessage", 200), ("editMessageText", 429),
                                                         ("deleteMessage", 200)]
    assert [round(c.ts, 6) for c in api.calls] == [0.1, 0.3, 0.5]  # arrival: half the latency in
