"""Accessibility of the main screens (issue 25): axe-core, run on the real pages in headless
Chromium, finds no serious or critical violation in Czech, Russian and English, light and
dark: every control has a name a screen reader reads, a card's name is its only text, the
contrast holds.

axe-core comes from the npm registry: ``AXE_CORE_JS`` (a path to ``axe.min.js``), else
``node_modules/axe-core`` here, else it is installed once into ``test-output/axe`` (git
ignores it) with ``npm``; without npm or the registry the test is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from browser_support import CHROMIUM, HINTS_SEEN, ROOT, Server, chromium, person, sign_in

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

AXE_VERSION = "4.14.1"


def _axe_js() -> str | None:
    for path in (os.environ.get("AXE_CORE_JS"), ROOT / "node_modules" / "axe-core" / "axe.min.js",
                 ROOT / "test-output" / "axe" / "node_modules" / "axe-core" / "axe.min.js"):
        if path and os.path.exists(path):
            return open(path, encoding="utf-8").read()
    npm = shutil.which("npm")
    if not npm:
        return None
    target = ROOT / "test-output" / "axe"
    target.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(target), f"axe-core@{AXE_VERSION}"],
                       check=True, timeout=240, capture_output=True)
    except (subprocess.SubprocessError, OSError):
        return None
    path = target / "node_modules" / "axe-core" / "axe.min.js"
    return path.read_text(encoding="utf-8") if path.exists() else None


@pytest.fixture(scope="module")
def axe():
    js = _axe_js()
    if js is None:
        pytest.skip("axe-core is not installed and npm could not fetch it")
    return js


@pytest.fixture(scope="module")
def embedded_redis():
    from store.embedded import EmbeddedRedis

    r = EmbeddedRedis().start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def server(embedded_redis, tmp_path_factory):
    srv = Server(embedded_redis.url, log_path=tmp_path_factory.mktemp("a11y") / "webapp.log").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
async def browser():
    async with chromium() as b:
        yield b


SERIOUS = """
async () => {
  const r = await axe.run(document, { resultTypes: ['violations'] });
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => [v.id, v.nodes.slice(0, 3).map((n) => n.target.join(' '))]);
}
"""


async def _check(page, axe, label, found):
    await page.add_script_tag(content=axe)
    got = await page.evaluate(SERIOUS)
    if got:
        found[label] = got


@pytest.mark.timeout(900)  # a hang guard: eighteen screens on a saturated machine
@pytest.mark.parametrize("locale", ["cs-CZ", "ru-RU", "en-US"])
async def test_no_serious_axe_violation_on_the_main_screens(server, kstore, browser, axe, locale):
    from store import LobbySettings

    found: dict[str, list] = {}
    for scheme in ("light", "dark"):
        ctx = await browser.new_context(viewport={"width": 390, "height": 844}, locale=locale, color_scheme=scheme,
                                        has_touch=True, is_mobile=True, reduced_motion="reduce")
        await ctx.add_init_script(script=HINTS_SEEN)
        page = await ctx.new_page()
        page.set_default_timeout(60000)
        await page.goto(server.url)
        await page.wait_for_selector("#name")
        await _check(page, axe, f"{scheme}/signin", found)
        await sign_in(page, "Alice")
        prsi = await kstore.create_table(game="prsi", seats=[person("Alice"), person("Bob")], seed=3,
                                         settings=LobbySettings(players=2, turn_seconds=60, variants=["PV5", "PV6"]))
        penki = await kstore.create_table(game="penki", seats=[person("Alice"), person("Bob"), person("Cyril")], seed=3,
                                          settings=LobbySettings(players=3, turn_seconds=None))
        await page.goto(server.url)
        await page.wait_for_selector(".my-tables .table-link")
        await _check(page, axe, f"{scheme}/lobby", found)
        await page.goto(f"{server.url}?table={prsi.id}")
        await page.wait_for_selector(".table-screen .hand .card")
        await _check(page, axe, f"{scheme}/prsi", found)
        await page.locator(".topbar .icon-btn").nth(3).click()  # the scores
        await page.wait_for_selector("#dialog[open]")
        await page.wait_for_timeout(500)  # its entrance over: contrast is measured on the dialog at rest
        await _check(page, axe, f"{scheme}/prsi-scores", found)
        await page.goto(f"{server.url}?table={penki.id}")
        await page.wait_for_selector(".table-screen nav.callouts")
        await _check(page, axe, f"{scheme}/penki", found)
        if scheme == "light":
            await page.goto(f"{server.url}?page=rules&game=prsi")
            await page.wait_for_selector(".rules-section")
            await _check(page, axe, f"{scheme}/rules", found)
            await page.goto(f"{server.url}?page=leaders")
            await page.wait_for_selector(".lb-body p, .lb-body table")
            await _check(page, axe, f"{scheme}/leaderboard", found)
        await ctx.close()
    assert not found, json.dumps(found, ensure_ascii=False, indent=1)
