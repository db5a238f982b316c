"""axe-core on the Mini App's main screens, in real headless Chromium (issue 25: accessible).

Used by tests/test_browser_axe.py (``make test``) and scripts/audit.py (``make audit``).
axe-core comes from the npm registry (scripts/audit/package.json, pinned in its
package-lock.json; ``npm ci`` puts it in scripts/audit/node_modules, which git ignores): its
``axe.min.js`` is injected into each page and ``axe.run`` checks the whole document.

Screens: the local sign-in, the lobby, a live Prší table and a live Penki table against
computers (made from the lobby's buttons, as a player does), each at phone size in the
language the phone asks for (``cs-CZ``, ``ru-RU``, ``en-US``).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AXE_DIR = ROOT / "scripts" / "audit" / "node_modules" / "axe-core"
AXE_JS = AXE_DIR / "axe.min.js"
LOCALES = {"cs": "cs-CZ", "ru": "ru-RU", "en": "en-US"}
BLOCKING = ("serious", "critical")  # impacts that fail the check (minor and moderate are reported)


def axe_version() -> str | None:
    """axe-core's installed version, or None when it is not installed."""
    try:
        return json.loads((AXE_DIR / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return None


async def run_axe(page) -> list[dict]:
    """axe-core's violations on ``page`` now: ``[{id, impact, help, nodes: [{target, summary}]}]``."""
    if not await page.evaluate("() => typeof window.axe !== 'undefined'"):
        await page.add_script_tag(content=AXE_JS.read_text(encoding="utf-8"))
    result = await page.evaluate(
        """async () => {
          const r = await axe.run(document, { resultTypes: ['violations'] });
          return r.violations.map((v) => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: n.failureSummary })),
          }));
        }"""
    )
    return result


def blocking(violations: list[dict]) -> list[dict]:
    """The serious and critical ones."""
    return [v for v in violations if v["impact"] in BLOCKING]


def describe(violations: list[dict]) -> str:
    """One line per violation and node, for a failure message or a report."""
    lines = []
    for v in violations:
        for n in v["nodes"][:6]:
            lines.append(f"{v['impact']}: {v['id']} ({v['help']}) at {n['target']}")
    return "\n".join(lines)


async def main_screens(browser, base_url: str, lang: str, *, name: str = "Alice"):
    """Yield ``(screen, page)`` for each main screen in ``lang`` (``cs``/``ru``/``en``), the page
    showing it (settled: the loading screen gone, the table drawn). The context is closed after."""
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2,
                                    locale=LOCALES[lang], has_touch=True, is_mobile=True)
    try:
        page = await ctx.new_page()
        page.set_default_timeout(60000)  # a hang guard on a busy machine, not a speed bound
        await page.goto(base_url)
        await page.wait_for_selector("#name")
        await page.wait_for_function("l => document.documentElement.lang === l", arg=lang)
        yield "sign-in", page
        await page.fill("#name", name)
        await page.click("button[type=submit]")
        await page.wait_for_selector("#new-prsi")
        yield "lobby", page
        for game in ("prsi", "penki"):
            await page.click(f"#new-{game}")
            await page.wait_for_selector(f".table-screen.{game}")
            await page.wait_for_timeout(300)  # the deal's motion settled (what axe sees is the resting page)
            yield f"{game} table", page
            await page.goto(base_url)
            await page.wait_for_selector("#new-prsi")
    finally:
        await ctx.close()
