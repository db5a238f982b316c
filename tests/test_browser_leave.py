"""Leaving a table from the Mini App (issue 25, item 6), in real headless Chromium against the
real webapp server: an untimed local table against a computer, left from the scores dialog
after a confirm step, plays out by itself, and "My tables" never says "Your turn" for it again.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from browser_support import (
    CHROMIUM,
    computer,
    module_fixtures,
    new_phone_page,
    person,
    sign_in,
)

import engine
from store import LobbySettings

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]


embedded_redis, server, browser = module_fixtures("leave")  # one of each for the module


async def _near_the_end(kstore, me, other):
    """An untimed Prší table of ``me`` and a computer in its last round, few cards left, ``me``
    to move: driven through the store with each seat's first legal action (Queens name their suit)."""
    settings = LobbySettings(players=2, turn_seconds=None)
    for seed in range(1, 80):
        table = await kstore.create_table(game="prsi", seats=[me, other], seed=seed, settings=settings)
        st, actions = table.state, []
        for _ in range(4000):
            if st.over:
                break
            if st.round == 5 and st.to_move == me.seat and sum(map(len, st.hands)) <= 6:
                for seat, action in actions:
                    await kstore.apply(table.id, seat, action)
                return table
            seat = st.to_move
            action = engine.legal_actions(st, seat)[0]
            if action["a"] == "play" and action["card"].startswith("Q") and "suit" not in action:
                action = {**action, "suit": action["card"][-1]}
            st = engine.apply(st, seat, action).state
            actions.append((seat, action))
    raise AssertionError("no seed gets there")


async def test_leaving_an_untimed_table_lets_it_play_out_without_you(server, kstore, browser):
    alice = person("Alice")
    table = await _near_the_end(kstore, alice, computer(1, "Karel"))
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    listing = page.locator(".my-tables .table-link", has_text="Prší")
    await listing.first.wait_for()
    assert "Your turn" in await listing.first.inner_text()  # walked away from: it waits for Alice
    await page.goto(f"{server.url}?table={table.id}")
    await page.wait_for_selector(".table-screen .me")
    await page.get_by_role("button", name="Scores").tap()
    await page.locator("#dialog").get_by_role("button", name="Leave table").tap()
    confirm = page.locator("#dialog[data-kind='leave']")
    await confirm.wait_for()
    assert "Leave this table?" in await confirm.inner_text()
    assert "The computer plays your seat to the end of the game" in await confirm.inner_text()
    await confirm.get_by_role("button", name="Leave", exact=True).tap()
    await page.wait_for_selector("#new-prsi")  # home again
    listing = page.locator(".my-tables a.table-link", has_text="You left")
    await listing.first.wait_for()
    assert "Your turn" not in await page.locator(".my-tables").inner_text()

    seat = (await kstore.get_table(table.id)).seat(alice.seat)
    assert seat.left and seat.auto
    for _ in range(1200):  # the worker plays both seats to the end; nobody touches the table
        done = await kstore.get_table(table.id)
        if done.state.over:
            break
        await asyncio.sleep(0.1)
    assert done.state.over
    assert {e["by"] for e in await kstore.log(table.id) if e["seat"] == alice.seat} >= {"computer"}
    await page.reload()
    finished = page.locator(".my-tables .table-link.finished")
    await finished.first.wait_for()
    assert "Match over" in await finished.first.inner_text()
    assert "Your turn" not in await page.locator(".my-tables").inner_text()
    assert page.karty_errors == []
    await page.context.close()
