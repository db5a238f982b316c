"""Prší table variants in the Mini App (RULES.md PV1–PV7, PV3q), in real headless Chromium
against the real webapp server: the lobby's switches (combinable, PV3/PV3q exclusive),
the table showing which are on, a PV4 group picked card by card, a PV5 Jack's rank
chooser and a PV7 drawn card played or kept. Deals come from seeds searched with the
engine, so each test meets the situation it checks on its first turn."""

from __future__ import annotations

import asyncio
import os
import random

import pytest
from browser_support import (
    CHROMIUM,
    computer,
    new_phone_page,
    open_table,
    person,
    screenshot,
    sign_in,
    view_of,
    wait_version_above,
)

import engine
from store import LobbySettings

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



def deal_for(seats, variants, wanted, tries=3000):
    """The first seed whose deal (as the store deals it: a seeded dealer, then the engine)
    makes ``wanted(state, seat)`` true for the first seat; returns ``(seed, state)``."""
    players = [s.seat for s in seats]
    for seed in range(1, tries):
        dealer = random.Random(seed).choice(players)
        s = engine.new_game("prsi", players, dealer=dealer, seed=seed, options={"variants": variants})
        if s.to_move == players[0] and wanted(s, players[0]):
            return seed, s
    raise AssertionError("no such deal")


async def friendly_table(kstore, seats, variants, wanted):
    seed, state = deal_for(seats, variants, wanted)
    table = await kstore.create_table(game="prsi", seats=seats, seed=seed, settings=LobbySettings(variants=variants))
    assert table.state == state and not table.rated
    return table


async def test_lobby_switches_make_a_friendly_variant_table(server, kstore, browser):
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    await page.locator(".variants-box summary").click()
    for name in ("PV4", "PV5", "PV3", "PV3q"):  # PV3q unticks PV3
        await page.locator(f"#variant-{name}").check()
    assert not await page.locator("#variant-PV3").is_checked()
    assert await page.locator("#variant-PV3q").is_checked()
    assert await page.get_by_text("Quick Prší: groups of one rank").is_visible()
    await asyncio.sleep(0.3)
    await screenshot(page, "lobby-variants-390x844")
    await page.click("#new-prsi")
    await page.wait_for_selector(".prsi .hand .card")
    view = await view_of(page)
    assert view["variants"] == ["PV3q", "PV4", "PV5"]
    assert len(view["hand"]) == 6  # PV4 deals six
    chips = page.locator(".variant-chips")
    # each chip a button that explains it on a tap (issue 25); German faces: an Ober
    assert "Finish only on an Ober" in await chips.locator("button.variant-chip").all_inner_texts()
    assert "friendly, not rated" in (await chips.get_attribute("aria-label"))
    table = await page.evaluate("() => window.__karty.state.table")
    stored = await kstore.get_table(table["id"])
    assert stored.settings.variants == ["PV3q", "PV4", "PV5"] and not stored.rated
    assert page.karty_errors == []


def _has_group(s, seat):
    return any("cards" in a and len(a["cards"]) == 2 for a in engine.legal_actions(s, seat))


async def test_pv4_group_is_picked_card_by_card_and_played_at_once(server, kstore, browser):
    alice = person("Alice")
    seats = [alice, computer(1, "Karel"), computer(2, "Jana")]
    table = await friendly_table(kstore, seats, ["PV4"], _has_group)
    group = next(a["cards"] for a in engine.legal_actions(table.state, alice.seat) if "cards" in a and len(a["cards"]) == 2
                 and not a["cards"][-1].startswith("Q"))
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".hand .card.playable")
    before = (await view_of(page))["version"]
    await page.locator(f".hand .card[data-card='{group[0]}']").click()
    first = page.locator(f".hand .card[data-card='{group[0]}']")
    assert await first.get_attribute("data-pick") == "1"
    assert await page.locator(".btn.play-group").is_enabled()  # one card alone is a play too
    await page.locator(f".hand .card[data-card='{group[1]}']").click()
    assert await page.locator(f".hand .card[data-card='{group[1]}']").get_attribute("data-pick") == "2"
    assert (await page.locator(".btn.play-group").inner_text()).strip() == "Play 2"
    await asyncio.sleep(0.3)
    await screenshot(page, "prsi-variants-group-390x844")
    assert (await view_of(page))["version"] == before  # nothing sent while picking
    await page.locator(".btn.play-group").click()
    view = await wait_version_above(page, before)
    play = next(e for e in view["last"] if e["a"] == "play" and e["seat"] == alice.seat)
    assert play["cards"] == group and play["card"] == group[1]
    assert await page.locator(".btn.play-group").count() == 0
    ticker = await page.locator(".ticker").inner_text()
    assert "Alice" in ticker
    assert page.karty_errors == []


def _jack_to_play(s, seat):
    return any(a["a"] == "play" and a.get("card", "").startswith("J") and "rank" in a for a in engine.legal_actions(s, seat))


async def test_pv5_jack_asks_for_a_rank_in_czech(server, kstore, browser):
    alice = person("Alice")
    seats = [alice, computer(1, "Karel")]
    table = await friendly_table(kstore, seats, ["PV5", "PV7"], _jack_to_play)
    jack = next(a["card"] for a in engine.legal_actions(table.state, alice.seat) if a.get("card", "").startswith("J"))
    page = await open_table(browser, server, "Alice", table.id, locale="cs-CZ")
    await page.wait_for_selector(".hand .card.playable")
    assert "Spodek určuje hodnotu" in await page.locator(".variant-chips button.variant-chip").all_inner_texts()
    before = (await view_of(page))["version"]
    await page.locator(f".hand .card[data-card='{jack}']").click()
    await page.wait_for_selector("#dialog[open][data-kind=rank]")
    assert await page.locator("#dialog .rank-choice").count() == 8
    await asyncio.sleep(0.4)
    await screenshot(page, "prsi-variants-jack-rank-cs")
    await page.locator("#dialog .rank-choice[data-rank='A']").click()
    view = await wait_version_above(page, before)
    play = next(e for e in view["last"] if e["a"] == "play" and e["seat"] == alice.seat)
    assert play == {"a": "play", "seat": alice.seat, "card": jack, "rank": "A"}
    # The computer must now play an Ace, a Queen or a Jack, or draw; while the rank holds, it shows.
    if view["named_rank"]:
        assert "eso" in await page.locator(".pending.named-rank").inner_text()
    refusals = await page.evaluate(
        """async () => {
          const i18n = await import(document.querySelector('link[rel=modulepreload][href*="i18n.js?"]').href)  /* the page's own module: its URL is versioned */;
          return [
            i18n.reasonText('illegal', 'a Jack named A: play a A, a Queen or a Jack, or draw (PV5)', { faces: 'german' }),
            i18n.reasonText('illegal', 'only a Queen may be the last card (PV3q): draw'),
            i18n.reasonText('illegal', 'only the card just drawn (9h) may be played now, or pass (PV7)'),
          ];
        }"""
    )
    assert refusals == ["Spodek chce eso: zahrajte tu hodnotu, svrška nebo spodka, nebo lízněte",
                        "Tohle nesmí být vaše poslední karta: lízněte", "Jen právě líznutá karta, nebo si ji nechte"]
    assert page.karty_errors == []


def _draw_fits(s, seat):
    vx = s.vx
    from engine import prsi_variants

    return (not s.pending_draw and not s.pending_skip and bool(s.stock)
            and prsi_variants._fits(s, vx, s.stock[0]))


async def test_pv7_a_drawn_card_that_fits_is_played_or_kept(server, kstore, browser):
    alice = person("Alice")
    seats = [alice, computer(1, "Karel"), computer(2, "Jana")]
    table = await friendly_table(kstore, seats, ["PV7"], _draw_fits)
    drawn = table.state.stock[0]
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".pile.stock.can")
    before = (await view_of(page))["version"]
    await page.locator(".pile.stock").click()
    view = await wait_version_above(page, before)
    assert view["drawn"] == drawn and view["to_move"] == alice.seat
    await page.wait_for_selector(f".hand .card.drawn-card[data-card='{drawn}']")
    keep = page.locator(".btn.action.pass")
    assert (await keep.inner_text()).strip() == "Keep it"
    assert "play the card you drew" in (await page.locator(".pending.drawn-note").inner_text())
    assert await page.locator(".hand .card.playable").count() == 1  # only the drawn card
    await screenshot(page, "prsi-variants-drawn-390x844")
    await keep.click()
    view = await wait_version_above(page, view["version"])
    assert drawn in view["hand"] and view["drawn"] is None
    assert any(e == {"a": "pass", "seat": alice.seat} for e in view["last"])
    assert page.karty_errors == []
