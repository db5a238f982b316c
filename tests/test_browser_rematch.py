"""Play again (issue 15) in the Mini App, in real headless Chromium: the final sheet's
button takes one's seat in the next match; two people each tap once and both land on the
new table (same seats, the next dealer); with a computer the new table runs at once."""

from __future__ import annotations

import asyncio
import os

import pytest
from browser_support import CHROMIUM, computer, open_table, person, screenshot

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



async def play_to_the_end(kstore, table_id: str):
    for _ in range(5000):
        st = (await kstore.get_table(table_id)).state
        if st.over:
            return st
        await kstore.apply(table_id, st.to_move, engine.computer_action(st, st.to_move))
    raise AssertionError("the match did not end")


async def test_two_people_tap_play_again_and_meet_at_the_next_table(server, kstore, browser):
    alice, bob = person("Alice"), person("Bob")
    table = await kstore.create_table(game="prsi", seats=[alice, bob], seed=21)
    last = await play_to_the_end(kstore, table.id)
    pa = await open_table(browser, server, "Alice", table.id)
    pb = await open_table(browser, server, "Bob", table.id, locale="cs-CZ")
    for page in (pa, pb):
        await page.wait_for_selector("#dialog[open][data-kind=final] .play-again")
    await pa.locator("#dialog .play-again").click()
    await pa.wait_for_function("() => document.querySelector('#dialog .rematch-status')?.textContent.includes('1 of 2')")
    assert (await pa.locator("#dialog .play-again").inner_text()).strip() == "You are in"
    await pb.wait_for_function("() => document.querySelector('#dialog .rematch-status')?.textContent.includes('Alice')")
    assert "Znovu chtějí hrát: Alice" in await pb.locator("#dialog .rematch-status").inner_text()
    await asyncio.sleep(0.3)
    await screenshot(pb, "rematch-final-sheet-cs")
    await pb.locator("#dialog .play-again").click()
    lobby = None
    for _ in range(100):
        lobby = await kstore.rematch_of(table.id)
        if lobby and lobby.table_id:
            break
        await asyncio.sleep(0.1)
    assert lobby and lobby.table_id
    for page in (pa, pb):
        await page.wait_for_function("id => window.__karty.state.tableId === id", arg=lobby.table_id, timeout=15000)
        await page.wait_for_selector(".prsi .hand .card")
    new = await kstore.get_table(lobby.table_id)
    assert [s.seat for s in new.seats] == [alice.seat, bob.seat]
    assert new.state.dealer != last.dealer  # two seats: the deal passes to the other one
    assert pa.karty_errors == [] and pb.karty_errors == []


async def test_with_a_computer_play_again_opens_the_next_table_at_once(server, kstore, browser):
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[computer(1, "Karel"), alice], seed=9)
    await play_to_the_end(kstore, table.id)
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector("#dialog[open][data-kind=final] .play-again")
    await asyncio.sleep(0.3)
    await screenshot(page, "rematch-final-sheet-390x844")
    await page.locator("#dialog .play-again").click()
    await page.wait_for_function("id => window.__karty.state.tableId !== id", arg=table.id, timeout=15000)
    await page.wait_for_selector(".prsi .hand .card")
    new_id = await page.evaluate("() => window.__karty.state.tableId")
    new = await kstore.get_table(new_id)
    assert [(s.seat, s.computer) for s in new.seats] == [("c1", True), (alice.seat, False)]
    assert page.karty_errors == []


async def test_replay_steps_jumps_and_plays_and_shows_every_hand_once_over(server, kstore, browser):
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel"), computer(2, "Jana")], seed=33)
    final = await play_to_the_end(kstore, table.id)
    log = await kstore.log(table.id)
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector("#dialog[open][data-kind=final] .watch-replay")
    await page.locator("#dialog .watch-replay").click()
    await page.wait_for_selector(".replay-screen")
    move = page.locator(".replay-move")
    assert (await move.inner_text()).strip() == f"Move 0 of {len(log)}"
    # Over: every hand face up from the deal on (4 cards each in round 1).
    for seat in (alice.seat, "c1", "c2"):
        assert await page.locator(f".replay-seat[data-seat='{seat}'] .replay-cards .card").count() == 4
    await page.locator(".replay-next").click()
    assert (await move.inner_text()).strip() == f"Move 1 of {len(log)}"
    assert (await page.locator(".replay-what").inner_text()).strip()
    await page.locator(".replay-rounds .chip", has_text="Round 3/5").click()
    view3 = await page.evaluate("() => document.querySelector('.replay-move').textContent")
    assert "Move" in view3 and await page.locator(".replay-rounds .chip.on").inner_text() == "Round 3/5"
    await page.locator(".replay-play").click()  # play: the moves go on by themselves
    before = await move.inner_text()
    await page.wait_for_function("b => document.querySelector('.replay-move').textContent !== b", arg=before)
    await page.locator(".replay-play").click()  # pause
    assert await page.locator(".replay-play").get_attribute("aria-label") == "Play"
    await page.locator(".replay-slider").fill(str(len(log)))
    assert (await move.inner_text()).strip() == f"Move {len(log)} of {len(log)}"
    await screenshot(page, "replay-390x844")
    text = await page.locator(".replay-screen").inner_text()
    assert all(f"{v} pts" in text for v in final.points.values()), text
    await page.locator(".replay-screen .back-btn").click()
    await page.wait_for_selector(".table-screen")
    assert page.karty_errors == []
