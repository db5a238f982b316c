"""The Mini App and a draining server (issue 26, :mod:`webapp.drain`): a socket closed with 1012
(service restart) is opened again at once, without the backoff and without the "Reconnecting…"
banner; any other close still goes through the backoff (the banner shows).

Real headless Chromium on the real server; the page's table socket passes through Playwright's
WebSocket route (everything forwarded both ways), which lets the test close the page's side
with the code a draining server sends.
"""

from __future__ import annotations

import os

import pytest
from browser_support import (
    CHROMIUM,
    browser,  # noqa: F401  (fixtures)
    computer,
    embedded_redis,  # noqa: F401
    kstore,  # noqa: F401
    new_phone_page,
    person,
    server,  # noqa: F401
    sign_in,
)
from conftest import until

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

# Every text the connection banner (#conn) shows, from the page's start.
WATCH_BANNER = """() => {
  window.__conn = [];
  const el = document.getElementById('conn');
  new MutationObserver(() => { if (el.textContent) window.__conn.push(el.textContent); })
    .observe(el, {childList: true, characterData: true, subtree: true});
}"""


@pytest.mark.parametrize("code", [1012, 4000])
async def test_a_socket_closed_for_a_restart_reconnects_at_once(server, kstore, browser, code):  # noqa: F811
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=5)
    page = await new_phone_page(browser, server.url, hints=False)
    await sign_in(page, "Alice")
    routes = []
    states: list[int] = []

    async def route(ws) -> None:
        routes.append(ws)
        upstream = ws.connect_to_server()

        def down(message) -> None:
            if '"type":"state"' in str(message).replace(" ", ""):
                states.append(len(routes))
            ws.send(message)

        upstream.on_message(down)
        ws.on_message(lambda message: upstream.send(message))

    await page.route_web_socket("**/ws/tables/**", route)
    await page.goto(f"{server.url}?table={table.id}")
    await page.wait_for_selector(".prsi .hand .card")
    await until(lambda: states, timeout=30)
    await page.evaluate(WATCH_BANNER)
    await routes[0].close(code=code, reason="draining" if code == 1012 else "test")
    await until(lambda: len(routes) >= 2 and len(routes) in states, timeout=30)  # a new socket, serving
    banner = await page.evaluate("window.__conn")
    if code == 1012:
        assert banner == [], banner  # straight back: no "Reconnecting…", no backoff
    else:
        assert banner, "another close goes through the backoff and says so"
    assert await page.locator("#conn").is_hidden()
