"""Prší table variants as lobby settings in the bot (RULES.md PV1–PV7, PV3q): the creator's
switches in the lobby message, the lobby and start texts naming them, a friendly (unrated)
table dealt with them, and a Penki lobby without them. Real updates through the
dispatcher, the real aiogram Bot against the fake Bot API, the store on fakeredis/Redis."""

from __future__ import annotations

from fake_bot_api import callback_update, message_update, tg_chat
from test_bot import (
    ANN,
    BOB,
    GROUP,
    alerts,
    last_edit,
    lobby_id_of,
    lobby_message,
    press,
    three_seated,
    users,
)

from store import LobbySettings, Seat, StoreError


def texts_of(call) -> list[str]:
    return [b["text"] for b in call.buttons()]


async def switch(rt, user: dict, lobby: str, variant: str, chat: dict) -> None:
    await rt.feed(callback_update(f"lv:{lobby}:{variant}", user=user, chat=chat, message_id=1000))


async def test_creator_switches_variants_and_the_table_is_friendly(store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(store)
    lid, chat, u = await three_seated(rt, api, store)
    assert "🎲 Variants: none" in texts_of(lobby_message(api))

    await press(rt, u[BOB], lid, "pv", chat=chat)  # not the creator: an alert, nothing shown
    assert alerts(api)[-1] == "Only the player who opened the lobby can do that."
    await press(rt, u[ANN], lid, "pv", chat=chat)
    await rt.lobbies.drain()
    menu = texts_of(last_edit(api))
    assert menu[0] == "▫️ No stacking of sevens" and menu[-1] == "⬅️ Back" and len(menu) == 9

    await switch(rt, u[BOB], lid, "PV1", chat)
    assert alerts(api)[-1] == "Only the player who opened the lobby can do that."
    assert (await store.get_lobby(lid)).settings.variants == []
    for v in ("PV1", "PV3", "PV3q", "PV7"):  # PV3q replaces PV3 (the tougher version)
        await switch(rt, u[ANN], lid, v, chat)
    await rt.lobbies.drain()
    assert (await store.get_lobby(lid)).settings.variants == ["PV1", "PV3q", "PV7"]
    edit = last_edit(api)
    assert "✅ No stacking of sevens" in texts_of(edit) and "▫️ No finishing on a 7 or an Ace" in texts_of(edit)
    assert ("🎲 Variants: No stacking of sevens, Finish only on a Queen, Draw and play (a friendly match, not rated)"
            in edit.text)
    await switch(rt, u[ANN], lid, "PV7", chat)  # off again
    await switch(rt, u[ANN], lid, "PV9", chat)  # a forged switch is refused
    assert alerts(api)[-1] == "That setting is not possible."

    await press(rt, u[ANN], lid, "back", chat=chat)
    await rt.lobbies.drain()
    assert "🎲 Variants: 2 on" in texts_of(last_edit(api))

    await press(rt, u[ANN], lid, "start", chat=chat)
    table = await store.get_table((await store.get_lobby(lid)).table_id)
    assert table.rated is False and table.settings.variants == ["PV1", "PV3q"]
    assert table.state.vx.names() == ["PV1", "PV3q"]
    await rt.lobbies.drain()
    assert "Finish only on a Queen" in last_edit(api).text
    await rt.notifier.poll()
    begins = [c for c in api.sent_messages(GROUP) if "begins" in c.text]
    assert len(begins) == 1 and "🎲 Variants: No stacking of sevens, Finish only on a Queen" in begins[0].text


async def test_czech_lobby_names_the_variants_in_czech(store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(store)
    u = users("cs")
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new prsi", user=u[ANN], chat=chat))
    lid = lobby_id_of(lobby_message(api))
    await press(rt, u[ANN], lid, "pv", chat=chat)
    await switch(rt, u[ANN], lid, "PV6", chat)
    await rt.lobbies.drain()
    edit = last_edit(api)
    assert "✅ Zelený král: líznout 4" in texts_of(edit)
    assert "🎲 Varianty: Zelený král: líznout 4 (přátelská hra, nehodnotí se)" in edit.text


async def test_penki_lobbies_have_no_variants(store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(store)
    u = users()
    chat = tg_chat(GROUP)
    await rt.feed(message_update("/new penki", user=u[ANN], chat=chat))
    call = lobby_message(api)
    lid = lobby_id_of(call)
    assert not any("Variants" in t for t in texts_of(call))
    await switch(rt, u[ANN], lid, "PV1", chat)
    assert alerts(api)[-1] == "That setting is not possible."
    assert (await store.get_lobby(lid)).settings.variants == []


async def test_store_keeps_variants_in_order_and_rates_only_house_tables(store):
    assert LobbySettings(variants=["PV7", "PV1", "PV1"]).variants == ["PV1", "PV7"]
    seats = [Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in (1, 2, 3)]
    house = await store.create_table(game="prsi", seats=seats, seed=5)
    friendly = await store.create_table(game="prsi", seats=seats, seed=5,
                                        settings=LobbySettings(variants=["PV4"]))
    assert house.rated and not friendly.rated
    assert [len(h) for h in friendly.state.hands] == [6, 6, 6] and friendly.state.vx.names() == ["PV4"]
    again = await store.get_table(friendly.id)
    assert again.state == friendly.state and again.settings.variants == ["PV4"]
    try:
        await store.create_table(game="penki", seats=seats, seed=5, settings=LobbySettings(variants=["PV1"]))
    except StoreError as exc:
        assert exc.code == "invalid"
    else:
        raise AssertionError("a Penki table with variants")
