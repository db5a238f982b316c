"""Telegram as it really behaves (issue 12), through the fake Bot API's documented answers:
message lengths, junk on the webhook, lost forum topics, stale "your turn" notices,
migrated chats, … Each test fails without the behaviour it names."""

from __future__ import annotations

import time

import pytest
from fake_bot_api import (
    MAX_TEXT,
    FakeBotAPI,
    callback_update,
    message_update,
    tg_chat,
    tg_user,
    visible_length,
)

GROUP = -1005550001111
ANN = 5001

# The longest names Telegram allows (64 + 64), of the characters that cost most: "&" is
# five characters once escaped for HTML, an emoji two UTF-16 units.
FIRST = ("Ж&😀" * 30)[:64]
LAST = ("&Ω😀" * 30)[:64]


def long_user(uid: int, lang: str = "en") -> dict:
    return tg_user(uid, FIRST, last_name=LAST, language_code=lang)


def refused(api: FakeBotAPI) -> list:
    return [c for c in api.calls if c.status != 200 and c.method != "sendChatAction"]


def assert_all_fit(api: FakeBotAPI) -> None:
    texts = [c for c in api.calls_of("sendMessage", "editMessageText", ok=None)]
    assert texts
    assert refused(api) == [], [(c.method, c.params.get("text", "")[:80], c.status) for c in refused(api)]
    for call in texts:
        assert visible_length(call.text) <= MAX_TEXT


# -- 3. message lengths --------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "cs", "ru"])
async def test_every_message_kind_fits_at_the_longest_names(fake_store, bot_runtime, fake_bot_api, lang):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    people = [ANN + i for i in range(14)]
    chat = tg_chat(GROUP)
    # leaderboards full of the longest names: 14 players, both games, this chat and everyone
    for game in ("prsi", "penki"):
        for n in range(3):
            await fake_store.record_match(
                table_id=f"{game}-{n}", game=game, chat_id=GROUP, ended=time.time(),
                balances={u: (i * 7 + n) % 11 - 5 for i, u in enumerate(people)},
                places={u: i + 1 for i, u in enumerate(people)},
                names={u: f"{FIRST} {LAST}" for u in people},
            )
    # a full Penki lobby (6 seats) whose players the bot cannot write to: a note per seat
    for uid in people[:6]:
        api.fail(uid, status=403, times=None, methods={"sendChatAction"})
    await rt.feed(message_update("/new penki", user=long_user(ANN, lang), chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await rt.feed(callback_update(f"lb:{lobby.id}:n", user=long_user(ANN, lang), chat=chat))
    await rt.feed(callback_update(f"lb:{lobby.id}:n", user=long_user(ANN, lang), chat=chat))
    await rt.feed(callback_update(f"lb:{lobby.id}:n", user=long_user(ANN, lang), chat=chat))
    for uid in people[1:6]:
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=long_user(uid, lang), chat=chat))
    await rt.lobbies.drain()
    assert len((await fake_store.get_lobby(lobby.id)).seats) == 6
    assert "⚠️" in api.calls_of("editMessageText")[-1].text
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=long_user(ANN, lang), chat=chat))
    await rt.notifier.poll()
    table_id = (await fake_store.get_lobby(lobby.id)).table_id
    names = {f"u{u}": f"{FIRST} {LAST}" for u in people[:6]}
    seats = list(names)
    await rt.notifier.handle({"kind": "round", "table": table_id, "chat_id": GROUP, "thread_id": None,
                              "game": "prsi", "version": 3, "round": 2, "winner": seats[0], "names": names,
                              "round_points": {s: 20 for s in seats}, "points": {s: 90 for s in seats}})
    await rt.notifier.handle({"kind": "end", "table": table_id, "chat_id": GROUP, "thread_id": None,
                              "game": "penki", "version": 9, "names": names, "rated": False,
                              "places": {s: i + 1 for i, s in enumerate(seats)},
                              "balances": {s: 5 - 2 * i for i, s in enumerate(seats)}})
    for text in ("/top", "/rating", "/help", "/rules"):
        await rt.feed(message_update(text, user=long_user(ANN, lang), chat=chat))
    private = long_user(people[7], lang)
    for text in ("/start", "/top", "/rating", "/lang"):
        await rt.feed(message_update(text, user=private))
    await rt.lobbies.drain()
    assert_all_fit(api)
    top = [c.text for c in api.sent_messages(GROUP) if "🏆" in c.text]
    assert len(top) == 1 and "…" in top[0]  # the names were shortened, not the message lost


# -- 10. junk on the webhook -----------------------------------------------------------------------
JUNK_BODIES = [
    b"not json at all", b"{\"update_id\": 1,", b"\xff\xfe\x00garbage", b"",
]
JUNK_UPDATES = [
    [1, 2, 3], "a string", 42, None, {}, {"update_id": "7"}, {"update_id": 8},
    {"update_id": 9, "message": {"text": 5}},
    {"update_id": 10, "message": {"message_id": 1, "date": 0, "chat": {"id": 5, "type": "private"},
                                  "text": "/start"}},  # no sender
    {"update_id": 11, "callback_query": {"id": "1", "from": {"id": 5, "is_bot": False, "first_name": "X"},
                                         "chat_instance": "1", "data": "lb:nope:zz"}},  # no message
    {"update_id": 12, "callback_query": {"id": "2", "from": {"id": 5, "is_bot": False, "first_name": "X"},
                                         "chat_instance": "1", "data": "\u0000" * 70}},
    {"update_id": 13, "message": {"message_id": 1, "date": 0, "chat": {"id": -5, "type": "group", "title": "g"},
                                  "text": "/new prsi", "entities": [{"type": "bot_command", "offset": 0,
                                                                     "length": 99}]}},
    {"update_id": 14, "edited_message": {"message_id": 1, "date": 0, "chat": {"id": 5, "type": "private"},
                                         "text": "hi"}},
    {"update_id": 15, "my_chat_member": {"chat": {"id": 5, "type": "private"},
                                         "from": {"id": 5, "is_bot": False, "first_name": "X"}, "date": 0,
                                         "old_chat_member": {"status": "member", "user": {"id": 1, "is_bot": True,
                                                                                          "first_name": "B"}},
                                         "new_chat_member": {"status": "weird"}}},
    {"update_id": -5, "message": {"message_id": 1, "date": 0, "chat": {"id": 2 ** 70, "type": "private"},
                                  "from": {"id": 5, "is_bot": False, "first_name": "X"},
                                  "text": "/help"}},  # an id no store can keep (found by test_fuzz_api)
]


async def test_junk_on_the_webhook_is_refused_or_ignored_in_one_line(fake_store, fake_bot_api, aiohttp_client,
                                                                      caplog):
    import json
    import logging

    from aiohttp import web

    from bot import BotSettings, setup_bot
    from bot.app import RUNTIME_KEY

    api = fake_bot_api
    app = web.Application()
    settings = BotSettings(bot_token=api.token, telegram_api_url=api.url, public_url="https://karty.example",
                           webhook_url="https://karty.example/telegram/webhook", webhook_secret="s3cret")
    await setup_bot(app, fake_store, settings)
    client = await aiohttp_client(app)
    await api.wait_for(lambda: api.calls_of("setWebhook"))
    runtime = app[RUNTIME_KEY]
    headers = {"X-Telegram-Bot-Api-Secret-Token": "s3cret"}
    bodies = [(b, "application/json") for b in JUNK_BODIES]
    bodies += [(json.dumps(u).encode(), "application/json") for u in JUNK_UPDATES]
    for body, ctype in bodies:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            answer = await client.post("/telegram/webhook", data=body, headers={**headers, "Content-Type": ctype})
            await runtime.drain_updates()
        assert answer.status in (200, 400), (body, answer.status)
        if body in JUNK_BODIES:
            assert answer.status == 400, body
        handling = ("bot.webhook", "bot.app", "bot.middlewares", "bot.handlers", "aiohttp.server", "aiohttp.web",
                    "aiogram.event")  # not the background loops (notifier, inbox) a loaded machine may warn in
        mine = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(handling)]
        assert len(mine) <= 1, (body, [r.getMessage() for r in mine])
        assert not any(r.exc_info for r in caplog.records), (body, [r.getMessage() for r in caplog.records])
    # and a real update still works afterwards
    good = await client.post("/telegram/webhook", json=message_update("/help", user=tg_user(ANN, "Ann")),
                             headers=headers)
    assert good.status == 200
    await api.wait_for(lambda: api.sent_messages(ANN))


# -- 4. a closed or deleted forum topic ----------------------------------------------------------
async def forum_table(store, rt, thread_id: int, game: str = "prsi"):
    chat = tg_chat(GROUP, forum=True)
    people = [tg_user(ANN + i, f"P{i}") for i in range(3)]
    await rt.feed(message_update(f"/new {game}", user=people[0], chat=chat, thread_id=thread_id))
    lobby = (await store.chat_lobbies(GROUP))[0]
    for user in people[1:]:
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=user, chat=chat, thread_id=thread_id))
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=people[0], chat=chat, thread_id=thread_id))
    return await store.get_table((await store.get_lobby(lobby.id)).table_id)


def round_entry(table, n: int) -> dict:
    seats = [s.seat for s in table.seats]
    return {"kind": "round", "table": table.id, "chat_id": GROUP, "thread_id": 77, "game": "prsi",
            "version": 10 * n, "round": n, "winner": seats[0], "names": {s: s for s in seats},
            "round_points": {s: 0 for s in seats}, "points": {s: n for s in seats}}


@pytest.mark.parametrize("how", ["closed", "deleted"])
async def test_a_lost_topic_sends_the_table_to_the_general_thread_and_says_so(fake_store, bot_runtime,
                                                                              fake_bot_api, how):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    table = await forum_table(fake_store, rt, 77)
    await rt.notifier.poll()
    assert [c.params.get("message_thread_id") for c in api.sent_messages(GROUP)] == [77, 77]  # lobby, start
    (api.close_topic if how == "closed" else api.delete_topic)(GROUP, 77)
    api.clear()
    for n in (3, 4, 5):
        await rt.notifier.handle(round_entry(table, n))
    await rt.notifier.handle({**round_entry(table, 5), "kind": "end", "version": 99,
                              "places": {s.seat: i + 1 for i, s in enumerate(table.seats)},
                              "balances": {s.seat: 0 for s in table.seats}})
    failed = api.calls_of("sendMessage", ok=False)
    assert len(failed) == 1 and failed[0].params["message_thread_id"] == 77  # tried once, then remembered
    sent = api.sent_messages(GROUP)
    assert ["round 3/5" in sent[0].text, "round 4/5" in sent[1].text, "round 5/5" in sent[2].text,
            "final table" in sent[3].text] == [True] * 4
    assert all("message_thread_id" not in c.params for c in sent)
    notes = [c for c in sent if "forum topic is closed or was deleted" in c.text]
    assert notes == [sent[0]]  # where the table went: said once, with the first post that moved
    # another process (a restart) remembers it too
    rt2 = await bot_runtime(fake_store)
    api.clear()
    await rt2.notifier.handle(round_entry(table, 6))
    assert api.calls_of("sendMessage", ok=False) == [] and "message_thread_id" not in api.sent_messages(GROUP)[0].params


async def test_a_lobby_in_a_lost_topic_goes_to_the_general_thread_with_its_table(fake_store, bot_runtime,
                                                                                 fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    api.delete_topic(GROUP, 78)
    table = await forum_table(fake_store, rt, 78)
    await rt.notifier.poll()
    sent = api.sent_messages(GROUP)
    assert len(sent) == 2 and all("message_thread_id" not in c.params for c in sent)
    assert "forum topic" in sent[0].text and "forum topic" not in sent[1].text
    assert table.thread_id == 78
    assert len(api.calls_of("sendMessage", ok=False)) == 1


# -- 7. stale "your turn" messages -------------------------------------------------------------------
BOB = 5101


async def ann_to_move(store, n: int, seed0: int = 1):
    """``n`` Prší tables of Ann and Bob (no turn timer) where it is Ann's turn."""
    import engine
    from store import LobbySettings, Seat

    seats = [Seat(seat=f"u{ANN}", user_id=ANN, name="Ann"), Seat(seat=f"u{BOB}", user_id=BOB, name="Bob")]
    tables = []
    seed = seed0
    while len(tables) < n:
        table = await store.create_table(game="prsi", seats=seats, chat_id=GROUP, seed=seed,
                                         settings=LobbySettings(players=2, turn_seconds=None))
        seed += 1
        for _ in range(5):
            if f"u{ANN}" in engine.awaiting(table.state):
                break
            bob = engine.awaiting(table.state)[0]
            table = (await store.apply(table.id, bob, engine.computer_action(table.state, bob))).table
        if f"u{ANN}" in engine.awaiting(table.state):
            tables.append(table)
    return tables


async def ann_moves(store, table):
    import engine

    table = await store.get_table(table.id)
    legal = engine.legal_actions(table.state, f"u{ANN}")
    action = next((a for a in legal if a["a"] in ("draw", "stand")), legal[0])
    return (await store.apply(table.id, f"u{ANN}", action)).table


def buttons(message: dict) -> list[dict]:
    return [b for row in (message.get("reply_markup") or {}).get("inline_keyboard", []) for b in row]


async def test_one_live_turn_message_lists_every_waiting_table_and_follows_them(fake_store, bot_runtime,
                                                                                fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    tables = await ann_to_move(fake_store, 3)
    await rt.notifier.poll()
    live = api.live_messages(ANN)
    assert len(live) == 1, live  # one message, not one per turn
    assert "3 tables" in live[0]["text"]
    urls = [b["web_app"]["url"] for b in buttons(live[0])]
    assert sorted(urls) == sorted(f"https://karty.example/?table={t.id}" for t in tables)
    # Ann moves at the first table: it leaves the list, silently (an edit, no new message)
    sent_before = len(api.sent_messages(ANN))
    after = await ann_moves(fake_store, tables[0])
    assert f"u{ANN}" not in __import__("engine").awaiting(after.state)
    await rt.notifier.poll()
    live = api.live_messages(ANN)
    assert len(live) == 1 and len(api.sent_messages(ANN)) == sent_before
    assert "2 tables" in live[0]["text"] and len(buttons(live[0])) == 2
    assert tables[0].id not in str(live[0]["reply_markup"])
    # the other two: once nothing waits, the message says so and offers nothing
    for table in tables[1:]:
        await ann_moves(fake_store, table)
    await rt.notifier.poll()
    live = api.live_messages(ANN)
    assert len(live) == 1 and "Done" in live[0]["text"] and buttons(live[0]) == []


async def test_a_turn_that_passes_while_the_message_waits_its_turn_is_not_sent(fake_store, bot_runtime,
                                                                               fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    (table,) = await ann_to_move(fake_store, 1)
    # Telegram holds Ann's chat back (429, retry after 1 s); meanwhile Ann moves in the Mini App
    api.fail(ANN, status=429, retry_after=1, times=1, methods={"sendMessage"})
    import asyncio

    polling = asyncio.create_task(rt.notifier.poll())
    await api.wait_for(lambda: api.calls_of("sendMessage", chat_id=ANN, ok=False))
    await ann_moves(fake_store, table)
    await polling
    await rt.notifier.poll()
    assert [m for m in api.live_messages(ANN) if "Your turn" in m["text"]] == []
    assert rt.sender.withdrawn == 1


# -- 2. a group upgraded to a supergroup ------------------------------------------------------------
OLD_GROUP, SUPERGROUP = -4001234, -1004001234


def service_update(chat: dict, user: dict, **fields) -> dict:
    msg = {"message_id": 900 + len(fields), "from": user, "chat": chat, "date": int(time.time()), **fields}
    return {"update_id": int(time.time() * 1000) % 10**9 + abs(hash(str(fields))) % 1000, "message": msg}


async def group_with_history(store, rt, api):
    """A basic group: a rated match on its board, a live table, an open lobby."""
    old_chat = {"id": OLD_GROUP, "type": "group", "title": "Cards"}
    people = [tg_user(ANN + i, f"P{i}") for i in range(3)]
    await store.record_match(table_id="old-match", game="prsi", chat_id=OLD_GROUP, ended=time.time(),
                             balances={ANN: 20, ANN + 1: -10, ANN + 2: -10}, places={ANN: 1, ANN + 1: 2, ANN + 2: 2},
                             names={ANN: "P0", ANN + 1: "P1", ANN + 2: "P2"})
    await rt.feed(message_update("/new prsi", user=people[0], chat=old_chat))
    lobby = (await store.chat_lobbies(OLD_GROUP))[0]
    for user in people[1:]:
        await rt.feed(callback_update(f"lb:{lobby.id}:join", user=user, chat=old_chat))
    await rt.feed(callback_update(f"lb:{lobby.id}:start", user=people[0], chat=old_chat))
    table = await store.get_table((await store.get_lobby(lobby.id)).table_id)
    await rt.feed(message_update("/new penki", user=people[1], chat=old_chat))
    open_lobby = next(lb for lb in await store.chat_lobbies(OLD_GROUP) if lb.table_id is None)
    await rt.notifier.poll()
    await rt.lobbies.drain()
    return old_chat, people, table, open_lobby


def posts_to(api: FakeBotAPI, chat_id: int, marker: str) -> list:
    return [c for c in api.calls_of("sendMessage", ok=None) if c.chat_id == chat_id and marker in (c.text or "")]


@pytest.mark.parametrize("how", ["service messages", "400 on sending"])
async def test_a_group_upgraded_to_a_supergroup_follows_with_everything(fake_store, bot_runtime, fake_bot_api, how):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    old_chat, people, table, open_lobby = await group_with_history(fake_store, rt, api)
    api.migrate(OLD_GROUP, SUPERGROUP)
    new_chat = {"id": SUPERGROUP, "type": "supergroup", "title": "Cards"}
    api.clear()
    if how == "service messages":
        await rt.feed(service_update(old_chat, people[0], migrate_to_chat_id=SUPERGROUP))
        await rt.feed(service_update(new_chat, people[0], migrate_from_chat_id=OLD_GROUP))
        await rt.feed(service_update(old_chat, people[0], migrate_to_chat_id=SUPERGROUP))  # again: no change
    # the live table's next posts reach the supergroup, each once
    for n in (2, 3):
        await rt.notifier.handle({**round_entry(table, n), "chat_id": OLD_GROUP, "thread_id": None})
    await api.settle(quiet=0.2)
    for _ in range(50):  # the store's move runs beside the post that learnt of it
        if await fake_store.leaderboard("prsi", "week", chat_id=SUPERGROUP) and [
                c for c in api.sent_messages(SUPERGROUP) if "new table" in c.text]:
            break
        await __import__("asyncio").sleep(0.05)
    for n in (2, 3):
        assert len(posts_to(api, SUPERGROUP, f"round {n}/5")) == 1
    refused = api.calls_of("sendMessage", ok=False)
    assert len(refused) <= 1  # at most the one 400 that told us
    # the board, the ledger and the last results moved with the chat
    await rt.feed(message_update("/top", user=people[0], chat=new_chat))
    top = [c.text for c in api.sent_messages(SUPERGROUP) if "🏆" in c.text][-1]
    prsi_chat = top.split("this chat")[1].split("everyone")[0]
    assert "P0" in prsi_chat and "no matches yet" not in prsi_chat
    assert [m["chat_id"] for m in await fake_store.ledger()] == [SUPERGROUP]
    assert (await fake_store.user_rating("prsi", ANN, chat_id=SUPERGROUP))["last"]
    assert await fake_store.leaderboard("prsi", "week", chat_id=OLD_GROUP) == []
    # the lobbies moved; the open one was posted again in the supergroup, where its buttons work
    assert {lb.id for lb in await fake_store.chat_lobbies(SUPERGROUP)} >= {open_lobby.id}
    assert await fake_store.chat_lobbies(OLD_GROUP) == []
    assert len([c for c in api.sent_messages(SUPERGROUP) if "new table" in c.text]) == 1
    # a match that ends later lands on the supergroup's board; a repeated move changes nothing
    assert await fake_store.migrate_chat(OLD_GROUP, SUPERGROUP) is False
    assert len(await fake_store.leaderboard("prsi", "week", chat_id=SUPERGROUP)) == 3
    rows = await fake_store.leaderboard("prsi", "week", chat_id=SUPERGROUP)
    assert {r["user_id"]: r["score"] for r in rows}[ANN] == rows[0]["score"]


# -- 9. acknowledged and lost --------------------------------------------------------------------------
async def test_an_update_answered_200_is_handled_once_even_across_a_crash(fake_store, bot_runtime, fake_bot_api):
    import asyncio

    from bot.webhook import parse_update

    api = fake_bot_api
    crashed = await bot_runtime(fake_store, inbox_claim_seconds=1)
    raw = message_update("/help", user=tg_user(ANN, "Ann"))
    update, _ = parse_update(raw, crashed.bot)
    await crashed.accept_update(update, raw)  # what the webhook does before it answers 200
    for task in list(crashed._handling):  # the process dies before the handler ran
        task.cancel()
    await asyncio.sleep(0)
    assert api.sent_messages(ANN) == []
    # the next process takes it up once the dead one's claim lapsed, exactly once
    fresh = await bot_runtime(fake_store, inbox_claim_seconds=1)
    assert await fresh.resume() == 0  # still claimed by the dead process
    for _ in range(400):  # the claim lapses after a second (a condition, not a timing)
        if await fresh.resume():
            break
        await asyncio.sleep(0.05)
    await fresh.drain_updates()
    assert await fresh.resume() == 0
    await fresh.accept_update(update, raw)  # Telegram delivers it once more: dropped
    await fresh.drain_updates()
    await api.settle(quiet=0.2)
    assert len([c for c in api.sent_messages(ANN) if "Commands" in c.text]) == 1
    assert await fake_store.inbox_pending() == []


async def test_a_webhook_update_that_cannot_be_kept_is_not_answered_200(fake_store, fake_bot_api, aiohttp_client):
    from aiohttp import web

    from bot import BotSettings, setup_bot

    api = fake_bot_api
    app = web.Application()
    settings = BotSettings(bot_token=api.token, telegram_api_url=api.url, public_url="https://karty.example",
                           webhook_url="https://karty.example/telegram/webhook", webhook_secret="s3cret")
    await setup_bot(app, fake_store, settings)
    client = await aiohttp_client(app)

    async def down(*args, **kwargs):
        raise ConnectionError("Redis is down")

    fake_store.inbox_add = down
    answer = await client.post("/telegram/webhook", json=message_update("/help", user=tg_user(ANN, "Ann")),
                               headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"})
    assert answer.status == 503  # so Telegram delivers it again
    await api.settle(quiet=0.2)
    assert api.sent_messages(ANN) == []


async def test_a_lobby_change_inside_the_debounce_is_shown_after_a_restart(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    first = await bot_runtime(fake_store, lobby_edit_delay=60)
    chat = tg_chat(GROUP)
    await first.feed(message_update("/new prsi", user=tg_user(ANN, "Ann"), chat=chat))
    lobby = (await fake_store.chat_lobbies(GROUP))[0]
    await first.feed(callback_update(f"lb:{lobby.id}:join", user=tg_user(BOB, "Bobby"), chat=chat))
    await first.stop()  # the crash: the debounced edit never ran
    assert not api.calls_of("editMessageText")
    second = await bot_runtime(fake_store, lobby_edit_delay=0.05)
    assert await second.lobbies.resume() == 1
    await second.lobbies.drain()
    edits = api.calls_of("editMessageText", chat_id=GROUP)
    assert len(edits) == 1 and "Bobby" in edits[0].text
    assert await fake_store.lobby_edits_pending() == []


# -- 11. privacy --------------------------------------------------------------------------------------
EVE = 5999


async def test_a_chats_tables_and_boards_only_for_people_known_in_it(store, bot_runtime, fake_bot_api,
                                                                     web_client, web_init_data):
    from store import LobbySettings, Seat

    rt = await bot_runtime(store)
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/top", user=tg_user(ANN, "Ann"), chat=chat))  # Ann is seen in the chat
    seats = [Seat(seat=f"u{BOB}", user_id=BOB, name="Bob"), Seat(seat="c1", name="C1", computer=True)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=GROUP, seed=3,
                                          settings=LobbySettings(players=2, turn_seconds=None))
    await store.record_match(table_id="m1", game="prsi", chat_id=GROUP, ended=time.time(),
                                  balances={ANN: 5, BOB: -5}, names={ANN: "Ann", BOB: "Bob"})
    client = await web_client()

    def auth(uid):
        return {"Authorization": f"tma {web_init_data(uid, f'P{uid}')}"}

    urls = [f"/api/chats/{GROUP}/tables", f"/api/leaderboard?game=prsi&chat_id={GROUP}",
            f"/api/rating?game=prsi&chat_id={GROUP}", f"/api/tables/{table.id}"]
    for url in urls:
        eve = await client.get(url, headers=auth(EVE))
        assert eve.status == 403, url
        assert (await eve.json())["error"] == "not_in_chat"
        assert (await client.get(url, headers=auth(ANN))).status == 200, url  # seen there by the bot
        assert (await client.get(url, headers=auth(BOB))).status == 200, url  # seated at its table
    everyone = await client.get("/api/leaderboard?game=prsi", headers=auth(EVE))
    assert everyone.status == 200
    body = await (await client.get(f"/api/chats/{GROUP}/tables", headers=auth(ANN))).json()
    assert [t["id"] for t in body["tables"]] == [table.id]
    # Ann leaves the group: Telegram's chat_member update, and she no longer sees it
    await rt.feed({"update_id": 777001, "chat_member": {
        "chat": chat, "from": tg_user(ANN, "Ann"), "date": int(time.time()),
        "old_chat_member": {"status": "member", "user": tg_user(ANN, "Ann")},
        "new_chat_member": {"status": "left", "user": tg_user(ANN, "Ann")}}})
    assert (await client.get(urls[0], headers=auth(ANN))).status == 403


# -- 1. one language preference, one precedence -------------------------------------------------------
async def test_an_explicit_language_beats_telegrams_code_in_the_bot_and_the_app(store, bot_runtime, fake_bot_api,
                                                                                web_client, web_init_data):
    from webapp.auth import sign_init_data

    api = fake_bot_api
    rt = await bot_runtime(store)
    client = await web_client()
    ann = tg_user(ANN, "Ann", language_code="en")
    await rt.feed(message_update("/lang", user=ann))
    await rt.feed(callback_update("lang:ru", user=ann))
    assert (await store.get_user(ANN)).language == "ru"

    def init(uid, code):
        import json as _json

        from conftest import WEB_BOT_TOKEN

        user = {"id": uid, "first_name": "Ann", "language_code": code}
        return sign_init_data({"auth_date": int(time.time()), "user": _json.dumps(user)}, WEB_BOT_TOKEN)

    # the Mini App opens with Telegram's "en": the choice stands, and the app speaks it
    me = await (await client.get("/api/me", headers={"Authorization": f"tma {init(ANN, 'en')}"})).json()
    assert me["user"]["language"] == "ru" and (await store.get_user(ANN)).language == "ru"
    # after a restart the bot still speaks it
    fresh = await bot_runtime(store)
    api.clear()
    await fresh.feed(message_update("/help", user=ann))
    assert "Команды" in api.sent_messages(ANN)[-1].text
    # the switch in the Mini App sets the same preference
    switched = await client.post("/api/me/language", json={"language": "cs"},
                                 headers={"Authorization": f"tma {init(ANN, 'en')}"})
    assert switched.status == 200 and (await switched.json())["user"]["language"] == "cs"
    third = await bot_runtime(store)
    await third.feed(message_update("/help", user=ann))
    assert "Příkazy" in api.sent_messages(ANN)[-1].text
    bad = await client.post("/api/me/language", json={"language": "de"},
                            headers={"Authorization": f"tma {init(ANN, 'en')}"})
    assert bad.status == 400
    # codes map the same everywhere: uk → ru, sk → cs, in the bot and in the app
    for uid, code, expected, word in ((5301, "uk", "ru", "Команды"), (5302, "sk", "cs", "Příkazy"),
                                      (5303, "de", "en", "Commands")):
        await third.feed(message_update("/help", user=tg_user(uid, "X", language_code=code)))
        assert word in api.sent_messages(uid)[-1].text, code
        body = await (await client.get("/api/me", headers={"Authorization": f"tma {init(uid, code)}"})).json()
        assert body["user"]["language"] == expected, code
        assert (await store.get_user(uid)).language == expected


async def test_a_chat_admin_sets_the_language_of_the_groups_posts(fake_store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    chat = tg_chat(GROUP)
    admin, member = tg_user(ANN, "Ann", language_code="en"), tg_user(BOB, "Bob", language_code="en")
    api.admins[GROUP] = {ANN}
    await rt.feed(message_update("/lang", user=member, chat=chat))
    assert "chat" in api.sent_messages(GROUP)[-1].text
    await rt.feed(callback_update("lang:cs", user=member, chat=chat))
    alert = api.calls_of("answerCallbackQuery")[-1].params
    assert alert.get("show_alert") and "admins" in alert["text"]
    assert await fake_store.chat_language(GROUP) is None
    await rt.feed(callback_update("lang:cs", user=admin, chat=chat))
    assert await fake_store.chat_language(GROUP) == "cs"
    assert (await fake_store.get_user(ANN)).language == "en"  # the chat's, not Ann's own
    # Bob (English) opens a table: the group's posts are Czech
    await rt.feed(message_update("/new prsi", user=member, chat=chat))
    lobby_post = api.sent_messages(GROUP)[-1].text
    assert "nový stůl" in lobby_post, lobby_post


# -- issue 17 point 9: "My tables" names the chat ----------------------------------------------------
async def test_the_bot_remembers_a_groups_title_and_its_renames(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store)
    await rt.feed(message_update("/help", user=tg_user(ANN, "Ann"), chat=tg_chat(GROUP, title="Friday cards")))
    assert await fake_store.chat_titles([GROUP, -1]) == {GROUP: "Friday cards"}
    await rt.feed(message_update("/help", user=tg_user(ANN, "Ann"), chat=tg_chat(GROUP, title="Sunday cards")))
    assert await fake_store.chat_titles([GROUP]) == {GROUP: "Sunday cards"}
    # a private chat has no title to keep
    await rt.feed(message_update("/help", user=tg_user(ANN, "Ann"), chat=tg_chat(ANN)))
    assert await fake_store.chat_titles([ANN]) == {}
    # a group upgraded to a supergroup keeps its title until the bot sees it anew
    await fake_store.migrate_chat(GROUP, GROUP - 1)
    assert (await fake_store.chat_titles([GROUP - 1])) == {GROUP - 1: "Sunday cards"}


@pytest.mark.parametrize("first", ["the 400 first", "the service message first", "a new lobby's post meets the 400"])
async def test_a_lobby_open_while_its_group_becomes_a_supergroup_is_posted_there_once_then_edited(
        fake_store, bot_runtime, fake_bot_api, first):
    """Issue 27.5: the lobby's edit meets the 400 "upgraded" and the service messages arrive
    too (in either order, the move under way meanwhile): the lobby is posted once in the
    supergroup, and later changes edit that message."""
    import asyncio

    api = fake_bot_api
    rt = await bot_runtime(fake_store)
    old_chat, people, _table, open_lobby = await group_with_history(fake_store, rt, api)
    api.migrate(OLD_GROUP, SUPERGROUP)
    new_chat = {"id": SUPERGROUP, "type": "supergroup", "title": "Cards"}
    api.clear()
    service = [service_update(old_chat, people[0], migrate_to_chat_id=SUPERGROUP),
               service_update(new_chat, people[0], migrate_from_chat_id=OLD_GROUP)]
    if first == "the service message first":
        await asyncio.gather(rt.feed(service[0]), rt.lobbies.refresh(open_lobby.id), rt.feed(service[1]))
    elif first == "a new lobby's post meets the 400":
        await rt.feed(message_update("/new prsi", user=people[2], chat=old_chat))
        await asyncio.gather(*(rt.feed(u) for u in service))
        open_lobby = next(lb for lb in await fake_store.chat_lobbies(SUPERGROUP)
                          if lb.table_id is None and lb.creator_id == people[2]["id"])
    else:
        await asyncio.gather(rt.lobbies.refresh(open_lobby.id), rt.feed(service[0]), rt.feed(service[1]))
    await api.settle(quiet=0.2)
    for _ in range(50):
        if [c for c in api.sent_messages(SUPERGROUP) if "new table" in c.text]:
            break
        await asyncio.sleep(0.05)
    await api.settle(quiet=0.3)
    posts = [c for c in api.calls_of("sendMessage", ok=True)
             if c.chat_id == SUPERGROUP and open_lobby.id in str(c.params.get("reply_markup"))]
    assert len(posts) == 1, [c.text[:40] for c in posts]
    lobby = await fake_store.get_lobby(open_lobby.id)
    assert lobby.chat_id == SUPERGROUP and lobby.message_id == posts[0].result["message_id"]
    # a later change edits that one message in the supergroup
    api.clear()
    await rt.feed(callback_update(f"lb:{lobby.id}:join", user=tg_user(ANN + 9, "Late"), chat=new_chat))
    await rt.lobbies.drain()
    await api.settle(quiet=0.2)
    assert [c for c in api.calls_of("sendMessage", ok=None) if lobby.id in str(c.params.get("reply_markup"))] == []
    edits = [c for c in api.calls_of("editMessageText", ok=True) if c.chat_id == SUPERGROUP]
    assert edits and all(c.params.get("message_id") == lobby.message_id for c in edits)
