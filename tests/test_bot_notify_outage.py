"""The notifier through a storage outage (issue 16, found by tests/test_faults.py).

An outbox entry whose handling meets an unavailable Redis (down, restarting from its AOF,
slow past its bound) used to be logged and acknowledged: the group never heard that its
game began. Now the entry, and its acknowledgement, are tried again until Redis answers.
"""

from __future__ import annotations

import redis.exceptions

from store import Seat

GROUP = -1009876543211


def failing(fn, times: int, exc: type[Exception] = redis.exceptions.ConnectionError):
    """``fn`` that raises ``exc`` on its first ``times`` calls, then works; ``calls`` counts them."""

    async def wrapper(*args, **kwargs):
        wrapper.calls += 1
        if wrapper.calls <= times:
            raise exc("Connection closed by server.")
        return await fn(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


async def _table(store):
    seats = [Seat(seat="u3001", user_id=3001, name="Ann"), Seat(seat="u3002", user_id=3002, name="Bob")]
    return await store.create_table(game="prsi", seats=seats, chat_id=GROUP, seed=7)


async def _pending(store) -> int:
    info = await store.redis.xpending(store.keys.outbox, "bot")
    return int(info["pending"])


async def test_an_entry_met_by_an_unavailable_redis_is_posted_once_redis_answers(fake_store, bot_runtime,
                                                                                fake_bot_api):
    rt = await bot_runtime(fake_store)
    rt.notifier.RETRY_FIRST = rt.notifier.RETRY_MAX = 0.0  # no pause: the test waits on nothing
    await _table(fake_store)
    fake_store.chat_id_now = failing(fake_store.chat_id_now, times=3)
    assert await rt.notifier.poll() >= 1
    begins = [c for c in fake_bot_api.sent_messages(GROUP) if "begins" in (c.text or "")]
    assert len(begins) == 1  # not lost, not doubled
    assert fake_store.chat_id_now.calls > 3  # tried again past the failures
    assert await _pending(fake_store) == 0


async def test_an_acknowledgement_met_by_a_timeout_is_made_once_redis_answers(fake_store, bot_runtime,
                                                                            fake_bot_api):
    rt = await bot_runtime(fake_store)
    rt.notifier.RETRY_FIRST = rt.notifier.RETRY_MAX = 0.0
    await _table(fake_store)
    fake_store.outbox_ack = failing(fake_store.outbox_ack, times=2, exc=redis.exceptions.TimeoutError)
    assert await rt.notifier.poll() >= 1
    assert await _pending(fake_store) == 0  # acknowledged, not left for the next restart
    assert len([c for c in fake_bot_api.sent_messages(GROUP) if "begins" in (c.text or "")]) == 1


async def test_an_error_that_is_not_the_storage_still_gives_the_entry_up(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store)
    rt.notifier.RETRY_FIRST = rt.notifier.RETRY_MAX = 0.0
    await _table(fake_store)
    fake_store.chat_id_now = failing(fake_store.chat_id_now, times=1, exc=ValueError)
    assert await rt.notifier.poll() >= 1
    assert fake_store.chat_id_now.calls == 1  # a poison entry is not tried again
    assert not [c for c in fake_bot_api.sent_messages(GROUP) if "begins" in (c.text or "")]
    assert await _pending(fake_store) == 0
