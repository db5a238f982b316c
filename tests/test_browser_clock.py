"""The turn countdown on a phone whose clock is minutes off (issue 12, point 5): the
server's time comes with every answer and socket message, the Mini App keeps the offset,
and the countdown is right to the second. Real headless Chromium, real server."""

from __future__ import annotations

import math
import os
import time

import pytest
from browser_support import CHROMIUM, new_phone_page, sign_in

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

SKEW = """(() => {
  const off = %d * 1000; const Real = Date; const realNow = Real.now.bind(Real);
  class Skewed extends Real {
    constructor(...a) { if (a.length === 0) super(realNow() + off); else super(...a); }
    static now() { return realNow() + off; }
  }
  globalThis.Date = Skewed;
})();"""



@pytest.mark.parametrize("skew", [300, -300, 90])
async def test_the_countdown_is_right_on_a_phone_minutes_off(server, kstore, browser, skew):
    from store import LobbySettings, Seat
    from webapp.auth import local_user_id

    uid = local_user_id("Alice")
    alice = Seat(seat=f"u{uid}", user_id=uid, name="Alice")
    bot = Seat(seat="c1", name="Ваня", computer=True)
    table = None
    for seed in range(1, 100):
        t = await kstore.create_table(game="penki", seats=[alice, bot], seed=seed,
                                      settings=LobbySettings(players=2, turn_seconds=120))
        if t.state.to_move == alice.seat:
            table = t
            break
    assert table is not None
    page = await new_phone_page(browser, server.url)
    await page.add_init_script(SKEW % skew)
    await sign_in(page, "Alice")
    await page.goto(f"{server.url}?table={table.id}")
    assert abs(await page.evaluate("Date.now() / 1000") - time.time() - skew) < 5  # the phone is off
    secs = page.locator(f".avatar.timing[data-seat='{alice.seat}'] .secs")
    await secs.wait_for()
    await page.wait_for_function("s => document.querySelector(s)?.textContent !== ''",
                                 arg=f".avatar.timing[data-seat='{alice.seat}'] .secs")
    for _ in range(3):
        shown = int(await secs.inner_text())
        left = table.deadline - time.time()
        # shown = ceil(seconds left on the server's clock) when the page last ticked
        assert math.ceil(left) - 1 <= shown <= math.ceil(left) + 1, (skew, shown, left)
        assert not await page.locator(f".avatar.hurry[data-seat='{alice.seat}']").count()
        await page.wait_for_timeout(700)
