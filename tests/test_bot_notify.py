"""Notifications from the store's outbox, /rating and /top, and the bot mounted on an
aiohttp app (webhook with a secret token; long polling) — all against the fake Bot API."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web
from clocks import HeldClock
from fake_bot_api import callback_update, message_update, tg_chat, tg_user

from bot import BotSettings, setup_bot
from bot.app import RUNTIME_KEY
from bot.sender import Sender

GROUP = -1009876543210
ANN, BOB, CID = 2001, 2002, 2003


async def started_table(store, rt, *, thread_id: int | None = None, group: int = GROUP):
    """A Prší table for Ann, Bob and Cid made through the bot's lobby buttons."""
    chat = tg_chat(group, forum=thread_id is not None)
    ann, bob, cid = (tg_user(i, n) for i, n in ((ANN, "Ann"), (BOB, "Bob"), (CID, "Cid")))
    await rt.feed(message_update("/new prsi", user=ann, chat=chat, thread_id=thread_id))
    lobby = (await store.chat_lobbies(group))[0]
    for user in (bob, cid):
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=user, chat=chat, thread_id=thread_id))
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=ann, chat=chat, thread_id=thread_id))
    lobby = await store.get_lobby(lobby.id)
    return await store.get_table(lobby.table_id)


async def test_start_and_turn_from_the_outbox(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    table = await started_table(fake_store, rt, thread_id=5)
    assert await rt.notifier.poll() >= 2  # start + the first turn
    start = [c for c in api.sent_messages(GROUP) if "begins" in c.text]
    assert len(start) == 1 and start[0].params["message_thread_id"] == 5
    assert all(n in start[0].text for n in ("Ann", "Bob", "Cid"))
    assert start[0].buttons()[0]["url"] == f"https://t.me/{api.username}?start={table.id}"
    mover = table.state.to_move
    uid = int(mover[1:])
    dms = api.sent_messages(uid)
    assert len([c for c in dms if "Your turn" in c.text]) == 1
    # acknowledged: nothing is delivered again
    assert await rt.notifier.poll() == 0


async def test_turn_only_when_absent_reachable_and_once(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    turn = {"kind": "turn", "table": "T1", "chat_id": GROUP, "thread_id": None, "game": "penki",
            "seat": f"u{BOB}", "user_id": BOB, "name": "Bob", "version": 7, "deadline": None}
    await fake_store.heartbeat("T1", BOB)
    await rt.notifier.handle(turn)
    assert api.sent_messages(BOB) == []  # the Mini App is open
    await fake_store.redis.delete(fake_store.keys.presence("T1", BOB))
    await rt.notifier.handle(turn)
    await rt.notifier.handle(dict(turn))  # redelivered after a crash: still once
    assert len(api.sent_messages(BOB)) == 1
    dm = api.sent_messages(BOB)[0]
    assert "Penki" in dm.text and dm.buttons()[0]["web_app"]["url"] == "https://karty.example/?table=T1"
    await rt.notifier.handle({**turn, "version": 9, "user_id": CID, "seat": f"u{CID}", "deadline": time.time() + 42.5})
    assert "s left" in api.sent_messages(CID)[-1].text
    api.block(CID)
    await rt.notifier.handle({**turn, "version": 11, "user_id": CID, "seat": f"u{CID}"})
    assert not await fake_store.is_reachable(CID)
    await rt.notifier.handle({**turn, "version": 13, "user_id": CID, "seat": f"u{CID}"})
    assert len(api.calls_of("sendMessage", chat_id=CID, ok=None)) == 2  # unreachable: not tried again


async def test_round_and_final_table_in_the_chat(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    names = {f"u{ANN}": "Ann <i>", f"u{BOB}": "Bob", "c1": "Computer 1"}
    where = {"table": "gone", "chat_id": GROUP, "thread_id": 9, "game": "prsi", "version": 40, "names": names}
    await rt.notifier.handle({"kind": "round", **where, "round": 2, "winner": f"u{BOB}",
                              "round_points": {f"u{ANN}": 20, f"u{BOB}": 0, "c1": 11},
                              "points": {f"u{ANN}": 35, f"u{BOB}": 4, "c1": 11}})
    await rt.notifier.handle({"kind": "end", **where, "places": {f"u{ANN}": 3, f"u{BOB}": 1, "c1": 2},
                              "balances": {f"u{ANN}": -55, f"u{BOB}": 38, "c1": 17},
                              "user_ids": {f"u{ANN}": ANN, f"u{BOB}": BOB, "c1": None}, "rated": False})
    round_msg, end_msg = api.sent_messages(GROUP)
    assert round_msg.params["message_thread_id"] == 9 and end_msg.params["message_thread_id"] == 9
    assert "round 2/5" in round_msg.text and "Bob won the round" in round_msg.text
    assert "Ann &lt;i&gt;: +20 → 35" in round_msg.text
    lines = end_msg.text.splitlines()
    assert lines[1].startswith("🥇 Bob") and "+38" in lines[1]
    assert lines[2].startswith("🥈 🤖 Computer 1") and lines[3].startswith("🥉 Ann")
    assert "-55" in lines[3] and "not rated" in end_msg.text


async def test_failed_notification_is_acknowledged_and_skipped(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    await started_table(fake_store, rt)
    api.fail(GROUP, status=400, times=None, description="Bad Request: chat not found")
    assert await rt.notifier.poll() >= 2
    assert await rt.notifier.poll() == 0


async def test_a_slow_chat_holds_up_no_other(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    other = GROUP - 1
    await started_table(fake_store, rt)
    await started_table(fake_store, rt, group=other)
    held = HeldClock()  # GROUP's 429 wait is parked until released: no wall-clock bound
    rt.notifier.sender = Sender(rt.bot, fake_store, rate_chat=50, rate_global=100, group_per_minute=100,
                                clock=held.clock, sleep=held.sleep)
    api.fail(GROUP, status=429, retry_after=3, methods={"sendMessage"})
    poll = asyncio.create_task(rt.notifier.poll(wait=False))
    await held.wait_parked()
    assert held.held[0] >= 3 - 0.05  # Telegram's retry_after is waited out in that chat
    await api.wait_for(lambda: [c for c in api.sent_messages(other) if "begins" in c.text], timeout=60)
    assert not [c for c in api.sent_messages(GROUP) if "begins" in c.text]  # still held
    held.release()
    await api.wait_for(lambda: [c for c in api.sent_messages(GROUP) if "begins" in c.text], timeout=60)
    await poll
    await rt.notifier.close()


async def test_rating_privately_and_top(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    await fake_store.record_match(table_id="m1", game="prsi", chat_id=GROUP, ended=time.time(),
                                  balances={ANN: 100, BOB: 10, CID: -110},
                                  places={ANN: 1, BOB: 2, CID: 3}, names={ANN: "Ann", BOB: "Bob", CID: "Cid"})
    ann = tg_user(ANN, "Ann")
    await rt.feed(message_update("/rating", user=ann, chat=tg_chat(GROUP)))
    private = api.sent_messages(ANN)[-1].text
    assert "+100" in private and "rank 1" in private and "in this chat" in private and "(place 1)" in private
    assert "privately" in api.sent_messages(GROUP)[-1].text or "private chat" in api.sent_messages(GROUP)[-1].text
    # Bob never started the bot: the rating comes in the group with a note
    api.block(BOB)
    await rt.feed(message_update("/rating", user=tg_user(BOB, "Bob"), chat=tg_chat(GROUP)))
    in_group = api.sent_messages(GROUP)[-1].text
    assert "+10" in in_group and "press Start" in in_group
    await rt.feed(message_update("/top", user=ann, chat=tg_chat(GROUP)))
    top = api.sent_messages(GROUP)[-1].text
    assert "this chat" in top and "1. Ann +100 (1)" in top and "3. Cid -110 (1)" in top
    await rt.feed(message_update("/rules", user=ann))
    assert "«ЗЕВОК!»" in api.sent_messages(ANN)[-1].text


async def test_rules_keep_russian_callouts_in_czech(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    await rt.feed(message_update("/rules", user=tg_user(ANN, "Ann", language_code="cs")))
    text = api.sent_messages(ANN)[-1].text
    assert "«ЗЕВОК!»" in text and "«СКОЛЬКО КАРТ?»" in text and "karet" in text


def _settings(api, **kw) -> BotSettings:
    return BotSettings(bot_token=api.token, telegram_api_url=api.url, public_url="https://karty.example", **kw)


async def test_webhook_on_the_shared_app_with_secret(fake_store, fake_bot_api, aiohttp_client):
    api = fake_bot_api
    app = web.Application()
    settings = _settings(api, webhook_url="https://karty.example/telegram/webhook", webhook_secret="s3cret")
    await setup_bot(app, fake_store, settings)
    client = await aiohttp_client(app)
    hook = (await api.wait_for(lambda: api.calls_of("setWebhook")))[-1].params
    assert hook["url"] == "https://karty.example/telegram/webhook" and hook["secret_token"] == "s3cret"
    update = message_update("/help", user=tg_user(ANN, "Ann"))
    forged = await client.post("/telegram/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "x"})
    assert forged.status == 401
    ok = await client.post("/telegram/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"})
    assert ok.status == 200
    again = await client.post("/telegram/webhook", json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"})
    assert again.status == 200
    await api.wait_for(lambda: api.sent_messages(ANN))
    await api.settle(quiet=0.3)
    assert len(api.sent_messages(ANN)) == 1  # the repeated update was dropped
    assert isinstance(app[RUNTIME_KEY].dp["store"], type(fake_store))


async def test_long_polling_when_no_webhook(fake_store, fake_bot_api, aiohttp_client):
    api = fake_bot_api
    app = web.Application()
    await setup_bot(app, fake_store, _settings(api))
    client = await aiohttp_client(app)
    api.queue_update(message_update("/start", user=tg_user(ANN, "Ann", language_code="ru")))
    msg = (await api.wait_for(lambda: api.sent_messages(ANN), timeout=10))[0]
    assert "Привет, Ann" in msg.text
    assert api.calls_of("deleteWebhook") and not api.calls_of("setWebhook")
    await client.close()
    # no getUpdates loop outlives the app (aiogram polls in tasks of its own; one left running
    # against a closed Bot API logged "Failed to fetch updates" into later tests)
    leftover = [t for t in asyncio.all_tasks() if getattr(t.get_coro(), "__qualname__", "") == "Dispatcher._polling"]
    assert not leftover, leftover


class _Trips:
    """The store's Redis commands, one name per round trip (a pipeline: ``PIPELINE:…``)."""

    def __init__(self, store) -> None:
        self.store, self.sent = store, []
        real_command, real_pipeline = store.redis.execute_command, store.redis.pipeline

        async def command(*args, **kwargs):
            self.sent.append(str(args[0]).upper())
            return await real_command(*args, **kwargs)

        def pipeline(*args, **kwargs):
            pipe = real_pipeline(*args, **kwargs)
            real_execute = pipe.execute

            async def execute(*a, **k):
                self.sent.append("PIPELINE:" + ",".join(str(c[0][0]).upper() for c in pipe.command_stack))
                return await real_execute(*a, **k)

            pipe.execute = execute
            return pipe

        store.redis.execute_command, store.redis.pipeline = command, pipeline

    def close(self) -> None:
        del self.store.redis.execute_command, self.store.redis.pipeline


async def test_turns_of_players_looking_at_the_table_cost_one_read_per_batch(fake_store, bot_runtime,
                                                                            fake_bot_api):
    """S5: a player whose Mini App is open gets no message; the notifier learns that, and that
    nobody has a live turn message to edit, for a whole batch in one round trip (no user,
    presence or notice lookups one by one), and acknowledges the batch in one call."""
    import engine

    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    table = await started_table(fake_store, rt)
    for uid in (ANN, BOB, CID):
        await fake_store.heartbeat(table.id, uid)
    await rt.notifier.poll()  # the start and the first turn
    api.clear()
    moves = 0
    while moves < 2:  # two turns, of two players (a player's second turn in a batch reads for itself)
        table = await fake_store.get_table(table.id)
        seat = engine.awaiting(table.state)[0]
        legal = engine.legal_actions(table.state, seat)
        await fake_store.apply(table.id, seat, next((a for a in legal if a["a"] in ("draw", "stand")), legal[0]))
        moves += 1
    lanes, handled = set(rt.notifier._workers), rt.notifier.handled
    trips = _Trips(fake_store)
    try:
        assert await rt.notifier.poll() >= moves  # a turn entry per move
    finally:
        trips.close()
    assert api.sent_messages(ANN) == api.sent_messages(BOB) == api.sent_messages(CID) == []
    # handled in the read itself: no player's lane (a queue and a task) was woken for them
    assert rt.notifier.handled - handled >= moves
    assert [key for key in set(rt.notifier._workers) - lanes if key[0] == "u"] == []
    reads = [t for t in trips.sent if t != "XREADGROUP"]
    assert reads[0].startswith("PIPELINE:") and set(reads[0].removeprefix("PIPELINE:").split(",")) == {"EXISTS", "GET"}
    assert reads[1:] == ["XACK"], trips.sent
