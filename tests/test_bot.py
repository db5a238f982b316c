"""The bot end to end: real update JSON through ``Dispatcher.feed_raw_update``, the real
aiogram Bot talking HTTP to the fake Bot API server, the store on fakeredis / Redis."""

from __future__ import annotations

import asyncio

import pytest
from clocks import StepClock
from fake_bot_api import FakeBotAPI, callback_update, message_update, tg_chat, tg_user

GROUP = -1001234567890
ANN, BOB, CID, DAN = 1001, 1002, 1003, 1004


def users(lang: str = "en") -> dict[int, dict]:
    return {
        ANN: tg_user(ANN, "Ann <b>", language_code=lang),
        BOB: tg_user(BOB, "Bob", language_code=lang),
        CID: tg_user(CID, "Cid", language_code=lang),
        DAN: tg_user(DAN, "Dan", language_code=lang),
    }


def no_web_app_in_groups(api: FakeBotAPI) -> None:
    for call in api.calls:
        chat = call.chat_id
        if isinstance(chat, int) and chat < 0:
            for button in call.buttons():
                assert "web_app" not in button, (call.method, button)


def lobby_message(api: FakeBotAPI, chat_id: int = GROUP):
    """The first sendMessage with lobby buttons in ``chat_id``."""
    for call in api.sent_messages(chat_id):
        if any(b.get("callback_data", "").startswith("lb:") for b in call.buttons()):
            return call
    raise AssertionError("no lobby message")


def lobby_id_of(call) -> str:
    data = next(b["callback_data"] for b in call.buttons() if b.get("callback_data", "").startswith("lb:"))
    return data.split(":")[1]


async def press(rt, user: dict, lobby: str, action: str, *, chat: dict, thread_id: int | None = None,
                message_id: int = 1000):
    await rt.feed(callback_update(f"lb:{lobby}:{action}", user=user, chat=chat, message_id=message_id,
                                  thread_id=thread_id))


def last_edit(api: FakeBotAPI, chat_id: int = GROUP):
    edits = api.calls_of("editMessageText", chat_id=chat_id)
    assert edits, "no edit"
    return edits[-1]


def alerts(api: FakeBotAPI) -> list[str]:
    return [c.params.get("text", "") for c in api.calls_of("answerCallbackQuery") if c.params.get("show_alert")]


async def three_seated(rt, api, store, *, forum_thread: int | None = None):
    u = users()
    chat = tg_chat(GROUP, forum=forum_thread is not None)
    await rt.feed(message_update("/new prsi", user=u[ANN], chat=chat, thread_id=forum_thread))
    call = lobby_message(api)
    lid = lobby_id_of(call)
    for uid in (BOB, CID):
        await press(rt, u[uid], lid, "join", chat=chat, thread_id=forum_thread,
                    message_id=call.params.get("message_id", 1000))
    await rt.lobbies.drain()
    return lid, chat, u


async def test_three_players_to_a_started_table(store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(store)
    lid, chat, u = await three_seated(rt, api, store)
    lobby = await store.get_lobby(lid)
    assert [s.user_id for s in lobby.seats] == [ANN, BOB, CID]
    assert lobby.message_id is not None
    first = lobby_message(api)
    assert "Ann &lt;b&gt;" in first.text and "<b>Prší</b>" in first.text
    # two joins → one debounced edit showing all three
    edits = api.calls_of("editMessageText", chat_id=GROUP)
    assert len(edits) == 1
    assert "Bob" in edits[0].text and "Cid" in edits[0].text
    assert edits[0].params["message_id"] == lobby.message_id
    # Open button before the start: a ?start= deep link into the private chat
    urls = [b["url"] for b in first.buttons() if "url" in b]
    assert urls == [f"https://t.me/{api.username}?start={lid}"]

    await press(rt, u[ANN], lid, "start", chat=chat)
    lobby = await store.get_lobby(lid)
    assert lobby.table_id
    table = await store.get_table(lobby.table_id)
    assert [s.user_id for s in table.seats] == [ANN, BOB, CID]
    started = last_edit(api)
    assert "Open" in started.buttons()[0]["text"]
    assert started.buttons()[0]["url"] == f"https://t.me/{api.username}?start={table.id}"

    # the notifier: the start in the chat, a private "your turn" to whoever moves first
    handled = await rt.notifier.poll()
    assert handled >= 1
    start_msgs = [c for c in api.sent_messages(GROUP) if "begins" in c.text]
    assert len(start_msgs) == 1
    mover = table.state.to_move
    if mover and mover.startswith("u"):
        dm = api.sent_messages(int(mover[1:]))
        assert dm and "Your turn" in dm[-1].text
        assert dm[-1].buttons()[0]["web_app"]["url"] == f"https://karty.example/?table={table.id}"
    no_web_app_in_groups(api)
    every_answered = {c.params["callback_query_id"] for c in api.calls_of("answerCallbackQuery")}
    assert len(every_answered) == 3  # two joins and the start


async def test_forum_topic_every_message_carries_thread(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    lid, chat, u = await three_seated(rt, api, fake_store, forum_thread=77)
    await press(rt, u[ANN], lid, "start", chat=chat, thread_id=77)
    await rt.feed(message_update("/help", user=u[BOB], chat=chat, thread_id=77))
    await rt.feed(message_update("/top", user=u[BOB], chat=chat, thread_id=77))
    await rt.notifier.poll()
    sent = api.sent_messages(GROUP)
    assert len(sent) >= 4
    for call in sent:
        assert call.params.get("message_thread_id") == 77, call
    lobby = await fake_store.get_lobby(lid)
    assert lobby.thread_id == 77
    no_web_app_in_groups(api)


async def test_double_start_makes_one_table(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    lid, chat, u = await three_seated(rt, api, fake_store)
    await asyncio.gather(press(rt, u[ANN], lid, "start", chat=chat), press(rt, u[ANN], lid, "start", chat=chat))
    assert len(await fake_store.chat_tables(GROUP)) == 1
    assert alerts(api) == ["The game has already started."]
    assert len(api.calls_of("answerCallbackQuery")) == 4  # two joins, two starts


async def test_late_join_and_full_table_refused(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    lid, chat, u = await three_seated(rt, api, fake_store)
    await press(rt, u[DAN], lid, "join", chat=chat)  # fourth at a 3-seat table
    assert alerts(api) == ["The table is full."]
    assert len((await fake_store.get_lobby(lid)).seats) == 3
    await press(rt, u[BOB], lid, "start", chat=chat)  # not the creator
    assert alerts(api)[-1] == "Only the player who opened the lobby can do that."
    await press(rt, u[ANN], lid, "start", chat=chat)
    await press(rt, u[ANN], lid, "leave", chat=chat)
    await press(rt, u[DAN], lid, "join", chat=chat)  # late
    assert alerts(api)[-2:] == ["The game has already started."] * 2
    table = await fake_store.get_table((await fake_store.get_lobby(lid)).table_id)
    assert DAN not in [s.user_id for s in table.seats]


async def test_blocked_user_is_marked_unreachable(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    api.block(BOB)
    lid, _chat, u = await three_seated(rt, api, fake_store)
    assert not await fake_store.is_reachable(BOB)
    assert await fake_store.is_reachable(CID)
    note = last_edit(api).text
    assert "⚠️ Bob" in note and f"@{api.username}" in note
    # Bob unblocks and presses Start in the private chat: reachable again, note gone
    api.unblock(BOB)
    await rt.feed(message_update(f"/start {lid}", user=u[BOB]))
    assert await fake_store.is_reachable(BOB)
    await rt.lobbies.drain()
    assert "⚠️" not in last_edit(api).text
    # a turn notification to a blocked user marks them and crashes nothing
    api.block(CID)
    await rt.sender.send_message(CID, "hi")
    assert not await fake_store.is_reachable(CID)


async def test_group_chatter_sends_nothing(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    u = users()
    chat = tg_chat(GROUP)
    for i in range(100):
        await rt.feed(message_update(f"hello {i} /new is not at the start", user=u[ANN + i % 3], chat=chat))
    assert [c.method for c in api.calls if c.method != "getMe"] == []


async def test_same_update_twice_is_handled_once(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    update = message_update("/new penki", user=users()[ANN], chat=tg_chat(GROUP))
    await rt.feed(update)
    await rt.feed(update)
    assert len(await fake_store.chat_lobbies(GROUP)) == 1
    assert len(api.sent_messages(GROUP)) == 1


async def test_several_lobbies_per_chat_and_settings(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    u = users()
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new prsi", user=u[ANN], chat=chat))
    await rt.feed(message_update("/new@karty_test_bot penki", user=u[BOB], chat=chat))
    lobbies = await fake_store.chat_lobbies(GROUP)
    assert sorted(lb.game for lb in lobbies) == ["penki", "prsi"]
    penki = next(lb for lb in lobbies if lb.game == "penki")
    await press(rt, u[BOB], penki.id, "time", chat=chat)   # 60 → 120
    await press(rt, u[BOB], penki.id, "n", chat=chat)      # 3 → 4
    await press(rt, u[ANN], penki.id, "time", chat=chat)   # not the creator
    await press(rt, u[BOB], penki.id, "cpu", chat=chat)
    await rt.lobbies.drain()
    lobby = await fake_store.get_lobby(penki.id)
    assert lobby.settings.turn_seconds == 120 and lobby.settings.players == 4
    assert [s.computer for s in lobby.seats] == [False, True]
    assert alerts(api) == ["Only the player who opened the lobby can do that."]
    text = last_edit(api).text
    assert "120 s" in text and "🤖 Computer 1" in text and "not rated" in text


async def test_new_without_game_offers_buttons(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new", user=users()[ANN], chat=chat))
    msg = api.sent_messages(GROUP)[-1]
    assert [b["callback_data"] for b in msg.buttons()] == ["new:prsi", "new:penki"]
    await rt.feed(callback_update("new:penki", user=users()[ANN], chat=chat))
    assert [lb.game for lb in await fake_store.chat_lobbies(GROUP)] == ["penki"]


async def test_private_chat_lobby_uses_web_app_after_start(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    ann = users()[ANN]
    await rt.feed(message_update("/new prsi", user=ann))
    call = lobby_message(api, ANN)
    lid = lobby_id_of(call)
    private = tg_chat(ANN)
    await press(rt, ann, lid, "cpu", chat=private)
    await press(rt, ann, lid, "start", chat=private)
    edit = last_edit(api, ANN)
    table_id = (await fake_store.get_lobby(lid)).table_id
    assert edit.buttons()[0]["web_app"]["url"] == f"https://karty.example/?table={table_id}"


async def test_startapp_direct_link_when_short_name_set(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store, webapp_short_name="play")
    lid, chat, u = await three_seated(rt, api, fake_store)
    await press(rt, u[ANN], lid, "start", chat=chat)
    table_id = (await fake_store.get_lobby(lid)).table_id
    assert last_edit(api).buttons()[0]["url"] == f"https://t.me/{api.username}/play?startapp={table_id}"
    # the ?start= deep link of the lobby still answers in private with a web_app button
    await rt.feed(message_update(f"/start {table_id}", user=u[BOB]))
    reply = api.sent_messages(BOB)[-1]
    assert reply.buttons()[0]["web_app"]["url"] == f"https://karty.example/?table={table_id}"
    no_web_app_in_groups(api)


@pytest.mark.parametrize("lang,expected,full", [("cs", "Hráči", "Stůl je plný."), ("ru", "Игроки", "Стол заполнен.")])
async def test_lobby_in_the_creators_language(fake_store, bot_runtime, fake_bot_api, lang, expected, full):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    u = users(lang)
    await rt.feed(message_update("/new prsi", user=u[ANN], chat=tg_chat(GROUP)))
    assert expected in lobby_message(api).text
    await rt.feed(message_update("/help", user=u[BOB]))
    assert "/new prsi" in api.sent_messages(BOB)[-1].text
    await rt.feed(message_update("/new prsi", user=u[BOB], chat=tg_chat(GROUP)))
    lid = (await fake_store.chat_lobbies(GROUP))[0].id
    await press(rt, u[DAN], lid, "join", chat=tg_chat(GROUP))
    await press(rt, u[CID], lid, "join", chat=tg_chat(GROUP))
    await press(rt, u[ANN], lid, "join", chat=tg_chat(GROUP))  # full: the alert in Ann's language
    assert alerts(api)[-1] == full
    await rt.lobbies.drain()
    assert expected in last_edit(api).text


async def test_lang_command_overrides_telegram_language(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    ann = tg_user(ANN, "Ann", language_code="en")
    await rt.feed(message_update("/lang", user=ann))
    assert [b["callback_data"] for b in api.sent_messages(ANN)[-1].buttons()] == ["lang:en", "lang:cs", "lang:ru"]
    await rt.feed(callback_update("lang:ru", user=ann))
    assert (await fake_store.get_user(ANN)).language == "ru"
    await rt.feed(message_update("/help", user=ann))
    assert "Команды" in api.sent_messages(ANN)[-1].text


async def test_ten_presses_within_the_debounce_make_one_edit(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store, lobby_edit_delay=1.0)
    rt.lobbies.clock = clock = StepClock()  # the debounce's clock stands still while the presses come in
    creator = tg_user(3000, "Eve")
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new penki", user=creator, chat=chat))
    lid = (await fake_store.chat_lobbies(GROUP))[0].id
    for _ in range(3):
        await press(rt, creator, lid, "n", chat=chat)  # 3 → 6 players
    for i in range(10):
        await press(rt, tg_user(3001 + i, f"P{i}"), lid, "join", chat=chat)
        clock.advance(0.2)
    assert api.calls_of("editMessageText", chat_id=GROUP) == []  # each press put the edit off again
    clock.advance(1.0)  # a second without presses
    await rt.lobbies.drain()
    edits = api.calls_of("editMessageText", chat_id=GROUP)
    assert len(edits) == 1
    assert all(f"P{i}" in edits[0].text for i in range(5)) and "6/6" in edits[0].text
    assert alerts(api) == ["The table is full."] * 5


def _member_update(user: dict, old: str, new: str) -> dict:
    bot = {"id": 123456, "is_bot": True, "first_name": "Karty", "username": "karty_test_bot"}
    return {"update_id": 900_000 + hash((user["id"], new)) % 1000, "my_chat_member": {
        "chat": tg_chat(user["id"]), "from": user, "date": 1_700_000_000,
        "old_chat_member": {"user": bot, "status": old, **({"until_date": 0} if old == "kicked" else {})},
        "new_chat_member": {"user": bot, "status": new, **({"until_date": 0} if new == "kicked" else {})}}}


async def test_block_and_unblock_updates_set_reachability(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store)
    bob = users()[BOB]
    await rt.feed(_member_update(bob, "member", "kicked"))
    assert not await fake_store.is_reachable(BOB)
    await rt.feed(_member_update(bob, "kicked", "member"))
    assert await fake_store.is_reachable(BOB)
    assert fake_bot_api.sent_messages() == []


async def test_lobby_computer_level_button_cycles_the_seats_level(fake_store, bot_runtime, fake_bot_api):
    """Issue 14: each computer seat has a level button (default regular); a tap by the creator
    cycles it, the lobby text shows it, anyone else gets an alert and nothing changes."""
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    u = users()
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new penki", user=u[BOB], chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await press(rt, u[BOB], lobby.id, "cpu", chat=chat)
    await rt.lobbies.drain()
    buttons = {b.get("callback_data"): b["text"] for b in last_edit(api).buttons()}
    assert buttons[f"lvl:{lobby.id}:c1"] == "🤖 Computer 1: regular"
    assert "🤖 Computer 1 · regular" in last_edit(api).text
    await rt.feed(callback_update(f"lvl:{lobby.id}:c1", user=u[BOB], chat=chat, message_id=1000))
    await rt.feed(callback_update(f"lvl:{lobby.id}:c1", user=u[ANN], chat=chat, message_id=1000))
    await rt.lobbies.drain()
    assert [s.level for s in (await fake_store.get_lobby(lobby.id)).seats] == [None, "expert"]
    assert alerts(api) == ["Only the player who opened the lobby can do that."]
    assert "🤖 Computer 1 · expert" in last_edit(api).text
