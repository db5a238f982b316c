"""axe-core on the Mini App's main screens in cs, ru and en (issue 25: accessible): the local
sign-in, the lobby, a live Prší and a live Penki table against computers, on the real server
in real headless Chromium. No serious or critical violation may be found.

axe-core comes from the npm registry: ``make test`` installs it (``npm ci --omit=dev`` in
scripts/audit, pinned by its package-lock.json); without it (no npm) the test is skipped.
``make audit`` runs the same screens and reports every impact (tests/axe_support.py).
"""

from __future__ import annotations

import os

import pytest
from axe_support import AXE_JS, LOCALES, blocking, describe, main_screens, run_axe
from browser_support import CHROMIUM

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
    pytest.mark.skipif(not AXE_JS.exists(), reason="needs axe-core: npm ci --omit=dev --prefix scripts/audit"),
]


@pytest.mark.parametrize("lang", list(LOCALES))
async def test_axe_finds_no_serious_or_critical_violation_on_the_main_screens(server, browser, lang):
    found: dict[str, str] = {}
    seen = []
    async for screen, page in main_screens(browser, server.url, lang):
        seen.append(screen)
        assert await page.evaluate("document.documentElement.lang") == lang, screen
        bad = blocking(await run_axe(page))
        if bad:
            found[screen] = describe(bad)
    assert seen == ["sign-in", "lobby", "prsi table", "penki table"]
    assert not found, "\n".join(f"{screen}:\n{text}" for screen, text in found.items())
