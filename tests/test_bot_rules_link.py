"""``/rules`` points to the Mini App's rules screen (issue 17 point 7): in the private chat a
``web_app`` button per game, in a group the Mini App's direct link (``startapp=rules-…``)
when it is configured, and no button otherwise (S2)."""

from __future__ import annotations

from fake_bot_api import message_update, tg_chat, tg_user

ANN = 501
GROUP = -100777


async def test_rules_in_private_open_the_rules_screen(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store)
    await rt.feed(message_update("/rules", user=tg_user(ANN, "Ann", language_code="cs")))
    markup = fake_bot_api.sent_messages(ANN)[-1].reply_markup
    buttons = [b for row in markup["inline_keyboard"] for b in row]
    assert [b["web_app"]["url"] for b in buttons] == [
        "https://karty.example/?page=rules&game=prsi",
        "https://karty.example/?page=rules&game=penki",
    ]
    assert "Prší" in buttons[0]["text"] and "Pěnky" in buttons[1]["text"]


async def test_s2_rules_in_a_group_use_the_direct_link_or_no_button(fake_store, bot_runtime, fake_bot_api):
    rt = await bot_runtime(fake_store, webapp_short_name="play")
    await rt.feed(message_update("/rules", user=tg_user(ANN, "Ann"), chat=tg_chat(GROUP)))
    markup = fake_bot_api.sent_messages(GROUP)[-1].reply_markup
    urls = [b["url"] for row in markup["inline_keyboard"] for b in row]
    assert len(urls) == 2 and urls[0].endswith("/play?startapp=rules-prsi") and urls[1].endswith("startapp=rules-penki")
    assert all("web_app" not in b for row in markup["inline_keyboard"] for b in row)

    plain = await bot_runtime(fake_store)
    await plain.feed(message_update("/rules", user=tg_user(ANN, "Ann"), chat=tg_chat(GROUP)))
    assert fake_bot_api.sent_messages(GROUP)[-1].reply_markup is None
