"""The Mini App's language switch (issue 12, point 1): it sets the one preference the bot
uses too, which beats the phone's language from then on. Real headless Chromium, real server."""

from __future__ import annotations

import os

import pytest
from browser_support import CHROMIUM, new_phone_page, sign_in

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]




async def test_the_language_switch_sets_the_one_preference(server, kstore, browser):
    from webapp.auth import local_user_id

    page = await new_phone_page(browser, server.url, locale="en-US")
    await sign_in(page, "Olga")
    assert await page.evaluate("document.documentElement.lang") == "en"
    await page.click(".language-switch button[data-lang='ru']")
    await page.wait_for_function("document.documentElement.lang === 'ru'")
    await page.wait_for_selector(".language-switch button[data-lang='ru'][aria-pressed='true']")
    for _ in range(100):  # the server keeps the choice for the bot and for the next visit
        user = await kstore.get_user(local_user_id("Olga"))
        if user is not None and user.language == "ru":
            break
        await page.wait_for_timeout(100)
    assert (await kstore.get_user(local_user_id("Olga"))).language == "ru"
    assert await kstore.explicit_language(local_user_id("Olga")) == "ru"
    await page.reload()
    await page.wait_for_selector(".language-switch")
    assert await page.evaluate("document.documentElement.lang") == "ru"  # beats the phone's en-US
