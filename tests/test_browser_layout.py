"""Every phone size, both games (issue 17 point 2): tables laid out in headless Chromium
at sizes from 320×568 to a tablet, checked with :data:`layout_support.CHECK_LAYOUT`
(nothing that matters off screen, cut off or under another element, by bounding boxes
and by what a tap would hit), and screenshots in light and dark at 390 and 360 wide.

The tables are seated with people only and driven through the store, so nothing moves
while the page is measured. ``KARTY_DOCS_SCREENSHOTS=1`` also writes the screenshots
to ``docs/screenshots/``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from browser_support import (
    CHROMIUM,
    DOCS_SCREENSHOTS,
    HINTS_SEEN,
    SCREENSHOTS,
    module_fixtures,
    person,
    screenshot,
)
from layout_support import CHECK_DIALOG, CHECK_LAYOUT

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

# Phones upright and on their side, Telegram Desktop's Mini App window, a tablet, a desktop browser.
SIZES = [(320, 568), (360, 640), (390, 844), (412, 915), (640, 360), (844, 390), (384, 640), (768, 1024), (1280, 800)]
DOCS = DOCS_SCREENSHOTS


embedded_redis, server = module_fixtures("layout", with_browser=False)  # one of each for the module


NAMES = ["Alice", "Bohuslav", "Cyril", "Dana", "Evženie", "Filip"]


def _policy(st, seat, rng):
    legal = engine.legal_actions(st, seat)
    if st.game == "penki":
        if st.phase == 1:
            return legal[0]
        plays = [a for a in legal if a["a"] != "take"]
        return rng.choice(plays) if plays and rng.random() < 0.8 else rng.choice(legal)
    plays = [a for a in legal if a["a"] == "play"]
    action = plays[0] if plays else legal[0]
    if action["a"] == "play" and action["card"].startswith("Q") and "suit" not in action:
        action = {**action, "suit": action["card"][-1]}
    return action


async def _table_at(kstore, game: str, n: int, until, seed: int = 1):
    """A table of ``n`` people driven through the store until ``until(state)``."""
    from store import LobbySettings

    seats = [person(x) for x in NAMES[:n]]
    for s in range(seed, seed + 40):
        # no turn timer: nothing moves while the page is measured, however slow the machine
        table = await kstore.create_table(game=game, seats=seats, seed=s, settings=LobbySettings(players=n, turn_seconds=None))
        rng = random.Random(s)
        st = table.state
        actions = []
        for _ in range(3000):
            if until(st, seats[0].seat):
                break
            if st.over:
                st = None
                break
            waiting = engine.awaiting(st)
            seat = st.to_move or (waiting[0] if waiting else None)
            action = _policy(st, seat, rng)
            st = engine.apply(st, seat, action).state
            actions.append((seat, action))
        else:
            st = None
        if st is None:
            continue
        for seat, action in actions:
            await kstore.apply(table.id, seat, action)
        return table
    raise AssertionError("no deal reached the wanted position")


def _alice_to_move(st, me):
    return st.to_move == me and not st.over


STATES = {
    # Five at Prší after a round (opponents' points show), Alice to move.
    "prsi-5": ("prsi", 5, lambda st, me: st.round == 2 and len(st.last) >= 3 and _alice_to_move(st, me)),
    # Three at Prší, early in round 1.
    "prsi-3": ("prsi", 3, lambda st, me: len(st.last) >= 3 and _alice_to_move(st, me)),
    # Six at Penki, phase 1, Alice holding a drawn card.
    "penki-6-phase1": ("penki", 6, lambda st, me: st.phase == 1 and st.drawn is not None and _alice_to_move(st, me) and st.version > 8),
    # Two at Penki, phase 2: a hand of sixteen or more.
    "penki-2-phase2": ("penki", 2, lambda st, me: st.phase == 2 and len(st.hands[me]) >= 16 and _alice_to_move(st, me)),
    # Six at Penki, phase 2, a card on the table.
    "penki-6-phase2": ("penki", 6, lambda st, me: st.phase == 2 and st.table and _alice_to_move(st, me) and st.penalty_to is None),
}


async def _page(browser, server, size, scheme="light", locale="en-US"):
    ctx = await browser.new_context(
        viewport={"width": size[0], "height": size[1]}, device_scale_factor=2, locale=locale,
        has_touch=True, is_mobile=True, color_scheme=scheme, reduced_motion="reduce",
    )
    # The first-time hints seen already: the screenshots show the table itself.
    await ctx.add_init_script(script=HINTS_SEEN)
    page = await ctx.new_page()
    page.set_default_timeout(20000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.karty_errors = errors  # type: ignore[attr-defined]
    await page.goto(server.url)
    await page.fill("#name", "Alice")
    await page.click("button[type=submit]")
    await page.wait_for_selector("#new-prsi")
    return ctx, page


# A representative subset runs in ``make test``; the rest of the matrix is marked slow.
QUICK_SIZES = [(360, 640), (640, 360), (384, 640)]
SLOW_SIZES = [size for size in SIZES if size not in QUICK_SIZES]


async def _fits(server, kstore, browser, sizes):
    """Every state of :data:`STATES` at every size of ``sizes`` (one page per size), and the
    scores dialog over it: the problems found, by size."""
    tables = {state: await _table_at(kstore, *STATES[state][:3]) for state in STATES}
    problems: dict[str, list[str]] = {}
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for size in sizes:
        ctx, page = await _page(browser, server, size)
        for state, table in tables.items():
            label = f"{state}-{size[0]}x{size[1]}"
            await page.goto(f"{server.url}?table={table.id}")
            await page.wait_for_selector(".table-screen .me")
            await page.wait_for_function("() => document.fonts.status === 'loaded'")
            found = await page.evaluate(CHECK_LAYOUT)
            await screenshot(page, f"layout-{label}")
            # the scores dialog (the match table, the players) at the same size
            await page.locator(".topbar .icon-btn[aria-label=Scores]").click()
            await page.wait_for_selector("#dialog[open]")
            found += await page.evaluate(CHECK_DIALOG)
            # its "Leave table" confirm step (issue 25), a seated player's at a game still going
            leave = page.locator("#dialog").get_by_role("button", name="Leave table")
            if await leave.count():
                await leave.click()
                await page.wait_for_selector("#dialog[open][data-kind=leave]")
                found += [f"leave: {p}" for p in await page.evaluate(CHECK_DIALOG)]
                await page.locator("#dialog").get_by_role("button", name="Cancel").click()
            (SCREENSHOTS / f"layout-{label}.txt").write_text("\n".join(found))
            if found:
                problems[label] = found
        assert page.karty_errors == []
        await ctx.close()
    return problems


@pytest.mark.timeout(900)  # a hang guard: fifteen pages on a saturated machine
async def test_table_fits_every_size(server, kstore, browser):
    """Both games, every phase, at a phone upright, a phone on its side and Telegram
    Desktop's window: nothing that matters off screen, cut off or under another element."""
    problems = await _fits(server, kstore, browser, QUICK_SIZES)
    assert not problems, problems


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_table_fits_every_size_all(server, kstore, browser):
    """The rest of the size matrix (:data:`SIZES`)."""
    problems = await _fits(server, kstore, browser, SLOW_SIZES)
    assert not problems, problems


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 360])
async def test_screenshots_both_games(server, kstore, browser, scheme, width):
    """The screenshots of docs/screenshots: Prší and Penki (both phases), light and dark."""
    height = {390: 844, 360: 640}[width]
    for state, label in (("prsi-3", "prsi"), ("penki-6-phase1", "penki-phase1"), ("penki-6-phase2", "penki-phase2")):
        game, n, until = STATES[state]
        table = await _table_at(kstore, game, n, until)
        ctx, page = await _page(browser, server, (width, height), scheme)
        await page.goto(f"{server.url}?table={table.id}")
        await page.wait_for_selector(".table-screen .me")
        assert await page.evaluate(CHECK_LAYOUT) == []
        await screenshot(page, f"{label}-{width}-{scheme}", docs=True)
        await ctx.close()


def test_docs_screenshots_present():
    """The README's screenshots exist (refreshed by KARTY_DOCS_SCREENSHOTS=1)."""
    names = {p.name for p in Path(DOCS).glob("*.png")}
    for label in ("prsi", "penki-phase1", "penki-phase2"):
        for width in (390, 360):
            for scheme in ("light", "dark"):
                assert f"{label}-{width}-{scheme}.png" in names


def _bob_goes_out(st, me):
    """Prší, two people: Bob (the second seat) to move with one card he may play."""
    bob = st.players[1]
    if st.over or st.to_move != bob or len(st.hands[1]) != 1:
        return False
    return any(a["a"] == "play" for a in engine.legal_actions(st, bob))


@pytest.mark.parametrize("sizes", [QUICK_SIZES, pytest.param(SLOW_SIZES, marks=pytest.mark.slow)], ids=["quick", "all"])
@pytest.mark.timeout(900)
async def test_dialogs_fit_every_size(server, kstore, browser, sizes):
    """The end-of-match sheets (five at Prší, six at Penki) and a Prší round's end at every
    size: their actions on screen and tappable, a middle that does not fit marked as scrolling."""
    finished = [
        await _table_at(kstore, "prsi", 5, lambda st, me: st.over),
        await _table_at(kstore, "penki", 6, lambda st, me: st.over),
    ]
    problems: dict[str, list[str]] = {}
    for size in sizes:
        label = f"{size[0]}x{size[1]}"
        ctx, page = await _page(browser, server, size)
        found = []
        for table in finished:
            await page.goto(f"{server.url}?table={table.id}")
            await page.wait_for_selector("#dialog[open][data-kind=final]")
            found += await page.evaluate(CHECK_DIALOG)
            await screenshot(page, f"dialog-final-{table.game}-{label}")
        # a round's end, live: Bob goes out while Alice watches
        table = await _table_at(kstore, "prsi", 2, _bob_goes_out)
        st = (await kstore.get_table(table.id)).state
        bob = st.players[1]
        await page.goto(f"{server.url}?table={table.id}")
        await page.wait_for_selector(".table-screen .me")
        play = next(a for a in engine.legal_actions(st, bob) if a["a"] == "play")
        if play.get("card", "").startswith("Q") and "suit" not in play:
            play = {**play, "suit": play["card"][-1]}
        await kstore.apply(table.id, bob, play)
        await page.wait_for_selector("#dialog[open][data-kind=round]")
        found += await page.evaluate(CHECK_DIALOG)
        await screenshot(page, f"dialog-round-{label}")
        if found:
            problems[label] = found
        assert page.karty_errors == []
        await ctx.close()
    assert not problems, problems
