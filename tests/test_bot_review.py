"""Review checks of the bot against issue 7 and DESIGN S1/S2/S5/S6/S8: hostile names,
forum topics for every kind of message, stale and redelivered notifications, /rating's
content, a Leave by someone not seated, and long polling's startup — real update JSON
through ``Dispatcher.feed_raw_update``, the real aiogram Bot against the fake Bot API."""

from __future__ import annotations

import time

import pytest
from aiohttp import web
from fake_bot_api import BOT_ID, BOT_USERNAME, FakeBotAPI, callback_update, message_update, tg_chat, tg_user

import engine
from bot import BotSettings, setup_bot
from bot.app import RUNTIME_KEY

GROUP = -1007000000001
OTHER = -1007000000002
ANN, BOB, CID, DAN, EVE = 7001, 7002, 7003, 7004, 7005
EVIL = '<b>&"x</b>'
EVIL_HTML = '&lt;b&gt;&amp;"x&lt;/b&gt;'


def group_calls(api: FakeBotAPI, chat_id: int = GROUP):
    return [c for c in api.calls if c.chat_id == chat_id and c.method in ("sendMessage", "editMessageText")]


def assert_no_web_app_in_groups(api: FakeBotAPI) -> None:
    for call in api.calls:
        if isinstance(call.chat_id, int) and call.chat_id < 0:
            assert all("web_app" not in b for b in call.buttons()), (call.method, call.buttons())


def topic_message(chat: dict, thread_id: int, message_id: int = 1000) -> dict:
    """A bot message in a forum topic, as Telegram includes it in a callback query."""
    return {"message_id": message_id, "chat": chat, "date": int(time.time()), "text": "…",
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Karty", "username": BOT_USERNAME},
            "message_thread_id": thread_id, "is_topic_message": True}


async def test_a_hostile_name_is_escaped_in_every_text(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    ann, bob, cid = tg_user(ANN, EVIL), tg_user(BOB, "Bob"), tg_user(CID, "Cid")
    chat = tg_chat(GROUP)
    api.block(ANN)  # the lobby then shows the note with her name
    await rt.feed(message_update("/new prsi", user=ann, chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await rt.lobbies.drain()
    for user in (bob, cid):
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=user, chat=chat))
    await rt.lobbies.drain()
    assert "⚠️ " + EVIL_HTML in group_calls(api)[-1].text
    api.unblock(ANN)
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=ann, chat=chat))
    await rt.notifier.poll()
    table_id = (await fake_store.get_lobby(lobby.id)).table_id
    names = {f"u{ANN}": EVIL, f"u{BOB}": "Bob", f"u{CID}": "Cid"}
    where = {"table": table_id, "chat_id": GROUP, "thread_id": None, "game": "prsi", "names": names}
    await rt.notifier.handle({"kind": "round", **where, "version": 90, "round": 1, "winner": f"u{ANN}",
                              "round_points": {f"u{ANN}": 0, f"u{BOB}": 9, f"u{CID}": 20},
                              "points": {f"u{ANN}": 0, f"u{BOB}": 9, f"u{CID}": 20}})
    await rt.notifier.handle({"kind": "end", **where, "version": 91, "places": {f"u{ANN}": 1, f"u{BOB}": 2},
                              "balances": {f"u{ANN}": 9, f"u{BOB}": -9}, "rated": True})
    await fake_store.record_match(table_id="m-evil", game="prsi", chat_id=GROUP, ended=time.time(),
                                  balances={ANN: 9, BOB: -9}, places={ANN: 1, BOB: 2}, names={ANN: EVIL, BOB: "Bob"})
    await rt.feed(message_update("/rating", user=ann, chat=chat))
    await rt.feed(message_update("/top", user=ann, chat=chat))
    await rt.feed(message_update("/start", user=ann))
    texts = [c.text for c in api.calls if c.text and c.method in ("sendMessage", "editMessageText")]
    kinds = {
        "lobby": "new table", "started": "the game is on", "start": "the game begins", "round": "won the round",
        "end": "final table", "rating": "Rating of", "top": "Best players", "welcome": "Hello",
    }
    for kind, marker in kinds.items():
        hits = [t for t in texts if marker in t]
        assert hits, kind
        assert all(EVIL_HTML in t for t in hits), (kind, hits)
    assert not [t for t in texts if EVIL in t]


async def test_every_message_in_a_forum_topic_carries_its_thread(fake_store, bot_runtime, fake_bot_api):
    """Commands, callback-driven posts, refusals, results: all into topic 9; no web_app button."""
    from store import StoreError

    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP, forum=True)
    ann, bob, cid = tg_user(ANN, "Ann"), tg_user(BOB, "Bob"), tg_user(CID, "Cid")
    on_topic = topic_message(chat, 9)
    await rt.feed(message_update("/new", user=ann, chat=chat, thread_id=9))  # which game? buttons
    await rt.feed(callback_update("new:prsi", user=ann, message=on_topic))   # the lobby, from a callback
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    assert lobby.thread_id == 9
    for user in (bob, cid):
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=user, message=on_topic))
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=ann, message=on_topic))
    await rt.notifier.poll()
    table_id = (await fake_store.get_lobby(lobby.id)).table_id
    where = {"table": table_id, "chat_id": GROUP, "thread_id": 9, "game": "prsi",
             "names": {f"u{ANN}": "Ann", f"u{BOB}": "Bob"}}
    await rt.notifier.handle({"kind": "round", **where, "version": 50, "round": 1, "winner": f"u{ANN}",
                              "round_points": {f"u{ANN}": 0, f"u{BOB}": 4}, "points": {f"u{ANN}": 0, f"u{BOB}": 4}})
    await rt.notifier.handle({"kind": "end", **where, "version": 51, "places": {f"u{ANN}": 1, f"u{BOB}": 2},
                              "balances": {f"u{ANN}": 4, f"u{BOB}": -4}, "rated": True})
    for text in ("/new nonsense", "/help", "/rules", "/top", "/lang", "/start", "/rating"):
        await rt.feed(message_update(text, user=bob, chat=chat, thread_id=9))
    api.block(CID)  # /rating falls back to the topic
    await rt.feed(message_update("/rating", user=cid, chat=chat, thread_id=9))

    async def busy(**_kw):
        raise StoreError("busy")

    rt.store.create_lobby = busy  # a refusal answered to a message
    try:
        await rt.feed(message_update("/new penki", user=bob, chat=chat, thread_id=9))
    finally:
        del rt.store.create_lobby
    await rt.lobbies.drain()
    sent = api.sent_messages(GROUP)
    texts = [c.text for c in sent]
    for marker in ("Which game?", "new table", "the game begins", "won the round", "final table", "Commands",
                   "Prší", "Best players", "Choose the language of this chat", "privately", "private chat",
                   "Too busy"):
        assert any(marker in t for t in texts), marker
    assert [c.params.get("message_thread_id") for c in sent] == [9] * len(sent)
    assert_no_web_app_in_groups(api)


async def test_a_turn_handled_after_the_move_was_made_is_not_sent(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    users = {uid: tg_user(uid, name) for uid, name in ((ANN, "Ann"), (BOB, "Bob"), (CID, "Cid"))}
    await rt.feed(message_update("/new prsi", user=users[ANN], chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    for uid in (BOB, CID):
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=users[uid], chat=chat))
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=users[ANN], chat=chat))
    table = await fake_store.get_table((await fake_store.get_lobby(lobby.id)).table_id)
    first = table.state.to_move
    legal = engine.legal_actions(table.state, first)
    action = next((a for a in legal if a["a"] in ("draw", "stand")), legal[0])
    result = await fake_store.apply(table.id, first, action)  # played before the notifier got to it
    second = result.table.state.to_move
    assert second != first
    api.clear()
    await rt.notifier.poll()
    assert not [c for c in api.sent_messages(int(first[1:])) if "Your turn" in c.text]
    assert len([c for c in api.sent_messages(int(second[1:])) if "Your turn" in c.text]) == 1


async def test_a_redelivered_result_is_posted_once(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store)
    entry = {"kind": "round", "table": "T9", "chat_id": GROUP, "thread_id": None, "game": "prsi", "version": 12,
             "round": 1, "winner": "u1", "names": {"u1": "Ann", "u2": "Bob"},
             "round_points": {"u1": 0, "u2": 7}, "points": {"u1": 0, "u2": 7}}
    await rt.notifier.handle(entry)
    await rt.notifier.handle(dict(entry))  # the process died before the acknowledgement
    await rt.notifier.handle({**entry, "kind": "end", "places": {"u1": 1, "u2": 2}, "balances": {"u1": 7, "u2": -7}})
    await rt.notifier.handle({**entry, "version": 20, "round": 2})
    texts = [c.text for c in fake_bot_api.sent_messages(GROUP)]
    assert len(texts) == 3 and "round 1/5" in texts[0] and "final table" in texts[1] and "round 2/5" in texts[2]


async def test_leave_by_someone_not_seated_changes_nothing(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new penki", user=tg_user(ANN, "Ann"), chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await rt.feed(callback_update(f"lb:{lobby.id}:leave", user=tg_user(DAN, "Dan"), chat=chat))
    await rt.lobbies.drain()
    answers = [c.params.get("text") for c in api.calls_of("answerCallbackQuery")]
    assert answers == ["You are not at this table."]
    assert api.calls_of("editMessageText") == []
    await rt.feed(callback_update(f"lb:{lobby.id}:leave", user=tg_user(ANN, "Ann"), chat=chat))
    await rt.lobbies.drain()
    assert api.calls_of("answerCallbackQuery")[-1].params.get("text") == "You left the table."
    assert "1. —" in api.calls_of("editMessageText")[-1].text


async def test_rating_shows_both_games_all_players_and_this_chat(fake_store, bot_runtime, fake_bot_api):
    """S6: week and month score, rank among everyone and in this chat, matches, last results."""
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    now = time.time()
    await fake_store.record_match(table_id="p1", game="prsi", chat_id=GROUP, ended=now - 60,
                                  balances={ANN: 100, BOB: 10, CID: -110}, places={ANN: 1, BOB: 2, CID: 3},
                                  names={ANN: "Ann", BOB: "Bob", CID: "Cid"})
    await fake_store.record_match(table_id="p2", game="prsi", chat_id=OTHER, ended=now - 30,
                                  balances={ANN: -100, EVE: 100}, places={ANN: 2, EVE: 1},
                                  names={ANN: "Ann", EVE: "Eve"})
    await fake_store.record_match(table_id="k1", game="penki", chat_id=GROUP, ended=now - 10,
                                  balances={ANN: -1, BOB: 1}, places={ANN: 2, BOB: 1}, names={ANN: "Ann", BOB: "Bob"})
    await rt.feed(message_update("/rating", user=tg_user(ANN, "Ann"), chat=tg_chat(GROUP)))
    text = api.sent_messages(ANN)[-1].text
    prsi, penki = text.split("<b>Penki</b>")
    # Prší: +100 here; overall +100 − 100 = 0 over 2 matches, behind Eve (+100) and Bob (+10)
    assert prsi.count("all players: score +0 · rank 3 · 2 matches") == 2  # week and month
    assert prsi.count("in this chat: score +100 · rank 1 · 1 match") == 2
    assert "Last results: -100 (place 2), +100 (place 1)" in prsi
    assert penki.count("all players: score -1 · rank 2 · 1 match") == 2
    assert penki.count("in this chat: score -1 · rank 2 · 1 match") == 2
    assert "Last results: -1 (place 2)" in penki
    assert "This week (" in text and "This month (" in text
    # privately, no chat rows
    await rt.feed(message_update("/rating", user=tg_user(ANN, "Ann")))
    private = api.sent_messages(ANN)[-1].text
    assert "in this chat" not in private and "rank 3" in private
    await rt.feed(message_update("/top", user=tg_user(BOB, "Bob"), chat=tg_chat(GROUP)))
    top = api.sent_messages(GROUP)[-1].text
    assert "Prší · this chat" in top and "Prší · everyone" in top and "Penki · everyone" in top
    assert "1. Eve +100 (1)" in top and "1. Bob +1 (1)" in top


async def test_long_polling_emits_startup_and_shutdown_once(fake_store, fake_bot_api, aiohttp_client):
    api = fake_bot_api
    app = web.Application()
    settings = BotSettings(bot_token=api.token, telegram_api_url=api.url, public_url="https://karty.example")
    await setup_bot(app, fake_store, settings)
    events: list[str] = []

    async def on_startup() -> None:
        events.append("startup")

    async def on_shutdown() -> None:
        events.append("shutdown")

    app[RUNTIME_KEY].dp.startup.register(on_startup)
    app[RUNTIME_KEY].dp.shutdown.register(on_shutdown)
    client = await aiohttp_client(app)
    api.queue_update(message_update("/help", user=tg_user(ANN, "Ann")))
    await api.wait_for(lambda: api.sent_messages(ANN), timeout=10)
    await client.close()
    assert events == ["startup", "shutdown"]
    # the command menu, in each language
    menus = {c.params.get("language_code"): c.params["commands"] for c in api.calls_of("setMyCommands")}
    assert set(menus) == {None, "en", "cs", "ru"}
    assert [c["command"] for c in menus[None]] == ["new", "rating", "top", "rules", "lang", "help"]
    assert menus["cs"][0]["description"].startswith("Nový stůl") and menus["ru"][-1]["description"] == "Все команды"


async def test_presses_whose_answer_fails_still_update_the_lobby(fake_store, bot_runtime, fake_bot_api):
    """answerCallbackQuery refused (the query is too old after a slow update or a restart): the
    join and the start still show in the lobby message."""
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new", user=tg_user(ANN, "Ann"), chat=chat))
    api.fail("*", status=400, times=None, methods={"answerCallbackQuery"},
             description="Bad Request: query is too old and response timeout expired or query ID is invalid")
    await rt.feed(callback_update("new:prsi", user=tg_user(ANN, "Ann"), chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await rt.feed(callback_update(f"lb:{lobby.id}:join", user=tg_user(BOB, "Bob"), chat=chat))
    await rt.lobbies.drain()
    assert "Bob" in api.calls_of("editMessageText")[-1].text
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=tg_user(ANN, "Ann"), chat=chat))
    assert "the game is on" in api.calls_of("editMessageText")[-1].text
    assert api.calls_of("answerCallbackQuery", ok=False)


async def test_two_processes_double_start_and_a_repeated_update(fake_store, bot_runtime, fake_bot_api):
    """Two bot processes on one store: Start pressed in both at once makes one table; the
    same update delivered to both (a webhook retry reaching another replica) is handled once."""
    import asyncio

    api = fake_bot_api
    one, two = await bot_runtime(fake_store), await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    new = message_update("/new prsi", user=tg_user(ANN, "Ann"), chat=chat)
    await one.feed(new)
    await two.feed(new)
    assert len(await fake_store.chat_lobbies(GROUP)) == 1 and len(api.sent_messages(GROUP)) == 1
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await one.feed(callback_update(f"lb:{lobby.id}:join", user=tg_user(BOB, "Bob"), chat=chat))
    await asyncio.gather(*(rt.feed(callback_update(f"lb:{lobby.id}:start", user=tg_user(ANN, "Ann"), chat=chat))
                           for rt in (one, two)))
    assert len(await fake_store.chat_tables(GROUP)) == 1
    alerts = [c.params.get("text") for c in api.calls_of("answerCallbackQuery") if c.params.get("show_alert")]
    assert alerts == ["The game has already started."]


async def test_a_result_that_failed_to_send_before_a_crash_is_sent_on_redelivery(fake_store, bot_runtime,
                                                                                 fake_bot_api):
    """The post is marked only after it was sent: a send cut short (the process died, here: the
    send was never made) leaves the entry to be delivered and posted again."""
    rt = await bot_runtime(fake_store)
    entry = {"kind": "end", "table": "T8", "chat_id": GROUP, "thread_id": None, "game": "penki", "version": 30,
             "places": {"u1": 1, "u2": 2}, "balances": {"u1": 1, "u2": -1}, "names": {"u1": "Ann", "u2": "Bob"}}

    async def died(*_a, **_kw):
        raise RuntimeError("process killed mid-send")

    real = rt.sender.send_message
    rt.sender.send_message = died
    with pytest.raises(RuntimeError):
        await rt.notifier.handle(entry)
    rt.sender.send_message = real
    await rt.notifier.handle(dict(entry))
    await rt.notifier.handle(dict(entry))
    assert len(fake_bot_api.sent_messages(GROUP)) == 1


async def test_an_anonymous_admin_is_asked_to_write_as_themselves(fake_store, bot_runtime, fake_bot_api):
    """/new and /rating sent on behalf of the group (GroupAnonymousBot) seat nobody."""
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP, forum=True)
    anon = {"id": 1087968824, "is_bot": True, "first_name": "Group", "username": "GroupAnonymousBot"}
    for text in ("/new prsi", "/rating"):
        update = message_update(text, user=anon, chat=chat, thread_id=4)
        update["message"]["sender_chat"] = chat
        await rt.feed(update)
    assert await fake_store.chat_lobbies(GROUP) == []
    replies = api.sent_messages(GROUP)
    assert len(replies) == 2 and all("as yourself" in c.text for c in replies)
    assert [c.params.get("message_thread_id") for c in replies] == [4, 4]
    assert api.calls_of("sendChatAction") == [] and api.sent_messages(1087968824) == []
