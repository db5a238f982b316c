"""Accessibility of the main screens (issue 25): axe-core, run on the real pages in headless
Chromium, finds no serious or critical violation in Czech, Russian and English, light and
dark: every control has a name a screen reader reads, a card's name is its only text, the
contrast holds.

axe-core is the pinned one ``make test`` installs from the npm registry for
tests/test_browser_axe.py (tests/axe_support.py: its runner and its "serious or critical");
without it the test is skipped.
"""

from __future__ import annotations

import json
import os

import pytest
from axe_support import AXE_JS, blocking, describe, run_axe
from browser_support import CHROMIUM, HINTS_SEEN, module_fixtures, person, sign_in

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
    pytest.mark.skipif(not AXE_JS.exists(), reason="needs axe-core: npm ci --omit=dev --prefix scripts/audit"),
]

embedded_redis, server, browser = module_fixtures("a11y")  # one of each for the module


async def _check(page, label, found):
    bad = blocking(await run_axe(page))
    if bad:
        found[label] = describe(bad)


@pytest.mark.timeout(900)  # a hang guard: eighteen screens on a saturated machine
@pytest.mark.parametrize("locale", ["cs-CZ", "ru-RU", "en-US"])
async def test_no_serious_axe_violation_on_the_main_screens(server, kstore, browser, locale):
    from store import LobbySettings

    found: dict[str, str] = {}
    for scheme in ("light", "dark"):
        ctx = await browser.new_context(viewport={"width": 390, "height": 844}, locale=locale, color_scheme=scheme,
                                        has_touch=True, is_mobile=True, reduced_motion="reduce")
        await ctx.add_init_script(script=HINTS_SEEN)
        page = await ctx.new_page()
        page.set_default_timeout(60000)
        await page.goto(server.url)
        await page.wait_for_selector("#name")
        await _check(page, f"{scheme}/signin", found)
        await sign_in(page, "Alice")
        prsi = await kstore.create_table(game="prsi", seats=[person("Alice"), person("Bob")], seed=3,
                                         settings=LobbySettings(players=2, turn_seconds=60, variants=["PV5", "PV6"]))
        penki = await kstore.create_table(game="penki", seats=[person("Alice"), person("Bob"), person("Cyril")], seed=3,
                                          settings=LobbySettings(players=3, turn_seconds=None))
        await page.goto(server.url)
        await page.wait_for_selector(".my-tables .table-link")
        await _check(page, f"{scheme}/lobby", found)
        await page.goto(f"{server.url}?table={prsi.id}")
        await page.wait_for_selector(".table-screen .hand .card")
        await _check(page, f"{scheme}/prsi", found)
        await page.locator(".topbar .icon-btn").nth(3).click()  # the scores
        await page.wait_for_selector("#dialog[open]")
        await page.wait_for_timeout(500)  # its entrance over: contrast is measured on the dialog at rest
        await _check(page, f"{scheme}/prsi-scores", found)
        await page.goto(f"{server.url}?table={penki.id}")
        await page.wait_for_selector(".table-screen nav.callouts")
        await _check(page, f"{scheme}/penki", found)
        if scheme == "light":
            await page.goto(f"{server.url}?page=rules&game=prsi")
            await page.wait_for_selector(".rules-section")
            await _check(page, f"{scheme}/rules", found)
            await page.goto(f"{server.url}?page=leaders")
            await page.wait_for_selector(".lb-body p, .lb-body table")
            await _check(page, f"{scheme}/leaderboard", found)
        await ctx.close()
    assert not found, json.dumps(found, ensure_ascii=False, indent=1)
