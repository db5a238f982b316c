"""Beyond Telegram's budget (issue 28): "your turn" goes first, nothing withdrawn spends the
budget, a live turn message is edited instead of a new one, a busy chat's round results go
in one post, and nothing stale is sent.

Everything runs on :class:`benchmarks.telegram.VirtualLoop` (a clock that jumps to the next
timer when nothing is ready) against :class:`benchmarks.telegram.FakeTelegram`, which limits
like Telegram: times are the loop's, never the wall clock's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import fakeredis

from benchmarks.telegram import FakeTelegram, VirtualLoop
from bot.sender import Sender

EPOCH = 1_800_000_000.0


class _Store:
    async def set_reachable(self, user_id: int, reachable: bool) -> None:
        pass


def on_virtual_loop(scene: Any) -> Any:
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(scene(loop))
    finally:
        loop.close()


def test_your_turn_goes_before_chat_posts_and_nothing_waits_forever():
    async def scene(loop):
        api = FakeTelegram(loop.time)
        sender = Sender(api.make_bot(), _Store(), clock=loop.time)
        posts = [asyncio.create_task(sender.send_message(-1000 - i, f"post {i}", urgency="post")) for i in range(60)]
        await asyncio.sleep(0.01)
        turns = [asyncio.create_task(sender.send_message(1 + i, f"turn {i}", urgency="turn")) for i in range(5)]
        await asyncio.sleep(5.5)
        late = asyncio.create_task(sender.send_message(99, "late turn", urgency="turn"))
        await asyncio.gather(*posts, *turns, late)
        return api

    api = on_virtual_loop(scene)
    sent = {c.params["text"]: c.ts for c in api.of("sendMessage")}
    assert len(sent) == 66 and not api.of(status=429)
    assert max(sent[f"turn {i}"] for i in range(5)) < 1.01  # the first slots after the first second's 30 posts
    assert sorted(sent.values()).index(sent["turn 0"]) == 30
    assert max(sent[f"post {i}"] for i in range(60)) < 3.0  # the rest of the posts right after them
    assert sent["late turn"] > 0  # (and a turn asked late does not pass posts asked 5 s before it)


def test_a_withdrawn_message_spends_nothing_of_the_budget():
    async def scene(loop):
        api = FakeTelegram(loop.time)
        sender = Sender(api.make_bot(), _Store(), clock=loop.time)

        async def gone() -> bool:
            return False

        withdrawn = [sender.send_message(1 + i, "stale", guard=gone) for i in range(30)]
        fresh = [sender.send_message(100 + i, "fresh") for i in range(30)]
        await asyncio.gather(*withdrawn, *fresh)
        return api, sender

    api, sender = on_virtual_loop(scene)
    assert sender.withdrawn == 30
    fresh = [c.ts for c in api.of("sendMessage")]
    assert len(fresh) == 30 and max(fresh) < 1.0  # all within the first second: the withdrawn cost nothing
    assert not [c for c in api.calls if c.params.get("text") == "stale"]


async def _table_for(store, people: list[int], chat: int, seed: int = 7):
    from store.models import Seat

    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in people]
    return await store.create_table(game="prsi", seats=seats, chat_id=chat, seed=seed)


def _runtime(loop, api):
    from bot.i18n import make_i18n
    from bot.notifier import Notifier
    from bot.settings import BotSettings
    from store import Store

    store = Store(fakeredis.aioredis.FakeRedis(decode_responses=True), prefix="budget",
                  clock=lambda: EPOCH + loop.time())
    bot = api.make_bot()
    sender = Sender(bot, store, clock=loop.time)
    settings = BotSettings(bot_token="123456:BENCH-token", public_url="https://karty.example")
    notifier = Notifier(bot, store, sender, make_i18n(), settings, consumer="test")
    notifier.clock = notifier.notices.clock = loop.time
    notifier.notices.wall = lambda: EPOCH + loop.time()
    return store, sender, notifier


def test_beyond_the_budget_the_live_turn_message_is_edited_not_a_new_one_sent():
    async def scene(loop):
        import engine

        api = FakeTelegram(loop.time)
        store, sender, notifier = _runtime(loop, api)
        table = await _table_for(store, [501, 502], -77)
        uid = int(engine.awaiting(table.state)[0][1:])
        await store.set_turn_notice(uid, {"message_id": 1000, "tables": [], "at": EPOCH})  # "done", from before
        posts = [asyncio.create_task(sender.send_message(-2000 - i, "post", urgency="post")) for i in range(90)]
        await asyncio.sleep(0)
        assert sender.congested()
        await notifier.notices.turn(uid, table.id, "en", None, "prsi")
        to_player = [c for c in api.calls if c.chat_id == uid]
        notice = await store.turn_notice(uid)
        await asyncio.gather(*posts)
        return uid, table, to_player, notice, notifier

    _, table, to_player, notice, notifier = on_virtual_loop(scene)
    assert [c.method for c in to_player] == ["editMessageText"]  # no new message, no deletion
    assert to_player[0].params["message_id"] == 1000 and to_player[0].ts < 1.01  # ahead of the last 60 posts
    assert f"table={table.id}" in str(to_player[0].params["reply_markup"])
    assert notice["message_id"] == 1000 and notice["tables"] == [table.id]
    assert notifier.notices.edited_not_sent == 1


def test_within_the_budget_a_turn_is_a_new_message_and_the_old_one_goes():
    async def scene(loop):
        import engine

        api = FakeTelegram(loop.time)
        store, sender, notifier = _runtime(loop, api)
        table = await _table_for(store, [601, 602], -78)
        uid = int(engine.awaiting(table.state)[0][1:])
        await store.set_turn_notice(uid, {"message_id": 7, "tables": [], "at": EPOCH})
        assert not sender.congested()
        await notifier.notices.turn(uid, table.id, "en", None, "prsi")
        return uid, [c.method for c in api.calls if c.chat_id == uid]

    _, methods = on_virtual_loop(scene)
    assert methods == ["sendMessage", "deleteMessage"]  # (the "done" message 7 deleted)


def test_a_turn_that_passed_while_its_notice_waited_is_not_sent_even_as_an_edit():
    async def scene(loop):
        import engine

        api = FakeTelegram(loop.time)
        store, sender, notifier = _runtime(loop, api)
        table = await _table_for(store, [701, 702], -79)
        seat = engine.awaiting(table.state)[0]
        uid = int(seat[1:])
        await store.set_turn_notice(uid, {"message_id": 1000, "tables": [], "at": EPOCH})
        posts = [asyncio.create_task(sender.send_message(-3000 - i, "post", urgency="post")) for i in range(60)]
        await asyncio.sleep(0)
        notice = asyncio.create_task(notifier.notices.turn(uid, table.id, "en", None, "prsi"))
        await asyncio.sleep(0.5)  # waiting behind the first second's posts
        await store.apply(table.id, seat, engine.computer_action(table.state, seat))  # the player moved meanwhile
        await notice
        await asyncio.gather(*posts)
        return uid, table, [c for c in api.calls if c.chat_id == uid], sender

    _, table, to_player, sender = on_virtual_loop(scene)
    assert not [c for c in to_player if f"table={table.id}" in str(c.params.get("reply_markup"))]
    assert sender.withdrawn >= 1


def test_a_busy_chats_round_results_go_in_one_post_once():
    async def scene(loop):
        api = FakeTelegram(loop.time)
        store, _, notifier = _runtime(loop, api)
        group = -4242
        tables = [await _table_for(store, [800 + 2 * i, 801 + 2 * i], group, seed=i) for i in range(4)]
        await notifier.poll()  # the starts and first turns
        before = len(api.of("sendMessage"))
        rounds = [{"kind": "round", "table": t.id, "chat_id": group, "thread_id": None, "game": "prsi",
                   "version": 9, "round": 1, "winner": f"u{800 + 2 * i}",
                   "round_points": {f"u{800 + 2 * i}": 0, f"u{801 + 2 * i}": 12 + i},
                   "points": {f"u{800 + 2 * i}": 0, f"u{801 + 2 * i}": 12 + i}}
                  for i, t in enumerate(tables)]
        await store._outbox(rounds)
        await notifier.poll()
        posted = api.of("sendMessage")[before:]
        await store._outbox([dict(r) for r in rounds])  # delivered again (after a crash)
        await notifier.poll()
        again = api.of("sendMessage")[before + len(posted):]
        await notifier.close()
        return posted, again, notifier

    posted, again, notifier = on_virtual_loop(scene)
    assert len(posted) == 1 and notifier.merged == 3
    text = posted[0].params["text"]
    assert text.count("round 1/5 is over") == 4
    assert all(f"+{12 + i} → {12 + i}" in text for i in range(4))
    assert again == []


def test_beyond_the_budget_a_passed_turns_edit_waits_and_comes_once_the_budget_allows():
    async def scene(loop):
        import engine

        api = FakeTelegram(loop.time)
        store, sender, notifier = _runtime(loop, api)
        table = await _table_for(store, [901, 902], -80)
        seat = engine.awaiting(table.state)[0]
        uid = int(seat[1:])
        await store.set_turn_notice(uid, {"message_id": 5, "tables": [table.id], "at": EPOCH})
        await store.apply(table.id, seat, engine.computer_action(table.state, seat))  # the turn passed
        posts = [asyncio.create_task(sender.send_message(-5000 - i, "post", urgency="post")) for i in range(90)]
        await asyncio.sleep(0)
        await notifier.notices.refresh(uid, "en")  # while congested: put off
        put_off = [c for c in api.calls if c.chat_id == uid]
        kept = await store.turn_notice(uid)
        await asyncio.gather(*posts)
        await notifier.notices.refresh(uid, "en")  # the budget free again (the sweep's refresh)
        return put_off, kept, [c for c in api.calls if c.chat_id == uid], await store.turn_notice(uid), notifier

    put_off, kept, later, notice, notifier = on_virtual_loop(scene)
    assert put_off == [] and kept["tables"] and notifier.notices.deferred == 1
    assert [c.method for c in later] == ["editMessageText"] and later[0].params["message_id"] == 5
    assert notice["tables"] == []  # "done"
