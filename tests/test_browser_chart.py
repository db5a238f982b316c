"""The rating page's chart (issue 15) in real headless Chromium: balances per match as
bars, weekly and monthly scores (P15) as lines, in light and dark colour schemes, with a
summary and the numbers for a screen reader."""

from __future__ import annotations

import os
import time

import pytest
from browser_support import CHROMIUM, new_phone_page, screenshot, sign_in

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



BALANCES = [40, -25, 110, -60, 15, 30, -5, 80]


async def test_rating_chart_bars_lines_and_numbers(server, kstore, browser):
    from webapp.auth import local_user_id

    alice = local_user_id("Alice")
    now = time.time()
    for i, b in enumerate(BALANCES):  # one match every four days, the newest an hour ago
        await kstore.record_match(table_id=f"m{i}", game="prsi", chat_id=None, ended=now - 3600 - (len(BALANCES) - 1 - i) * 4 * 86400,
                                  balances={alice: b, 7: -b}, places={alice: 1 if b > 0 else 2, 7: 2 if b > 0 else 1},
                                  names={alice: "Alice", 7: "Bob"})
    for scheme in ("light", "dark"):
        page = await new_phone_page(browser, server.url)
        await page.emulate_media(color_scheme=scheme)
        await sign_in(page, "Alice")
        await page.get_by_role("button", name="Leaderboard").click()
        await page.wait_for_selector(".rating-chart svg")
        bars = page.locator(".rating-chart .bar")
        assert await bars.count() == len(BALANCES)
        assert await page.locator(".rating-chart .bar.neg").count() == sum(1 for b in BALANCES if b < 0)
        # the newest bar is the last one and the tallest positive bar is the +110 match
        heights = [float(await bars.nth(i).get_attribute("height")) for i in range(len(BALANCES))]
        assert heights.index(max(heights)) == BALANCES.index(110)
        weeks = await page.locator(".rating-chart .dot.week").count()
        months = await page.locator(".rating-chart .dot.month").count()
        assert weeks >= 4 and 1 <= months <= 3
        title = await page.locator("#chart-matches-title").text_content()
        assert title == f"{len(BALANCES)} matches, best +110, worst -60"
        await page.locator(".chart-data summary").click()
        cells = await page.locator(".chart-data tbody td").all_text_contents()
        assert "+110" in cells and "-60" in cells
        colours = await page.evaluate("""() => {
            const bar = document.querySelector('.rating-chart .bar.pos');
            const tick = document.querySelector('.rating-chart .tick');
            return [getComputedStyle(bar).fill, getComputedStyle(tick).fill, getComputedStyle(document.body).backgroundColor];
        }""")
        assert colours[0] != colours[2] and colours[1] != colours[2]
        await page.locator(".rating-chart").scroll_into_view_if_needed()
        await screenshot(page, f"rating-chart-{scheme}")
        assert page.karty_errors == []
        await page.context.close()
