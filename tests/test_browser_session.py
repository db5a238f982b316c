"""Long sessions in the Mini App (issue 12, point 6), in real headless Chromium against the
real server: an app open past its initData's life keeps working on a server-issued session
renewed while in use; when it truly cannot (the server no longer accepts either), one clear
screen reopens Karty through Telegram and nothing keeps reconnecting."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from browser_support import CHROMIUM, HINTS_SEEN, Server

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

TELEGRAM = """
(([initData, startParam]) => {
  const calls = [];
  window.__tgCalls = calls;
  window.Telegram = { WebApp: {
    initData,
    initDataUnsafe: { user: { id: 1, first_name: "Alice", language_code: "en" }, start_param: startParam },
    version: "8.0", platform: "android", colorScheme: "light", themeParams: {},
    isVersionAtLeast: () => true, ready: () => {}, expand: () => {},
    setHeaderColor: () => {}, setBackgroundColor: () => {}, setBottomBarColor: () => {},
    disableVerticalSwipes: () => {}, onEvent: () => {}, offEvent: () => {},
    HapticFeedback: { impactOccurred: () => {}, notificationOccurred: () => {}, selectionChanged: () => {} },
    BackButton: { show: () => {}, hide: () => {}, onClick: () => {}, offClick: () => {} },
    openTelegramLink: (url) => calls.push("link:" + url), close: () => calls.push("close"),
  } };
})
"""


@pytest.fixture
def server(embedded_redis, tmp_path: Path, monkeypatch):
    # initData lives 20 s here (24 h in Telegram): long enough for a page to open on a
    # saturated machine, short enough to wait out; the session outlives it.
    monkeypatch.setenv("INIT_DATA_MAX_AGE", "20")
    monkeypatch.setenv("SESSION_TTL", "120")
    srv = Server(embedded_redis.url, log_path=tmp_path / "webapp.log").start()
    yield srv
    srv.stop()


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def _status(url: str, init_data: str) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"tma {init_data}"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


async def _move(page) -> int:
    """Alice plays whatever her turn offers by clicking; returns the version before."""
    version = await page.evaluate("window.__karty.state.version")
    await page.wait_for_function("() => { const s = window.__karty.state; return s.view && s.view.to_move === s.seat"
                                 " && !s.busy; }", timeout=20000)
    button = page.locator(".btn.action.draw, .btn.action.stand").first
    if await button.count():
        await button.click()
    else:
        await page.locator(".hand button.card.playable, .hand button.card:not([disabled])").first.click()
    await page.wait_for_function("v => window.__karty.state.version > v", arg=version, timeout=20000)
    return version


async def test_an_app_open_past_its_initdata_keeps_playing_then_says_reopen(server, kstore, browser):
    from store import LobbySettings, Seat
    from webapp.auth import local_user_id

    uid = local_user_id("Alice")
    table = None
    for seed in range(1, 200):
        t = await kstore.create_table(game="prsi", seed=seed,
                                      seats=[Seat(seat=f"u{uid}", user_id=uid, name="Alice"),
                                             Seat(seat="c1", name="Karel", computer=True)],
                                      settings=LobbySettings(players=2, turn_seconds=None))
        if t.state.to_move == f"u{uid}":
            table = t
            break
    assert table is not None
    # signed now, just before the app opens: its 20 s start when the page does
    init_data = _post(server.url + "api/local/login", {"name": "Alice", "language": "en"})["init_data"]
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    await ctx.add_init_script(script=HINTS_SEEN)
    await ctx.add_init_script(script=f"{TELEGRAM}({json.dumps([init_data, table.id])})")
    page = await ctx.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    await page.goto(server.url)
    await page.wait_for_selector(".prsi .hand .card")
    # the initData runs out (the server refuses it now) while the app stays open ...
    for _ in range(1200):  # a hang guard: it runs out 20 s after signing
        if _status(server.url + "api/me", init_data) == 401:
            break
        await asyncio.sleep(0.1)
    assert _status(server.url + "api/me", init_data) == 401
    # ... and the player plays on: moves go through, the computer's answers arrive live
    for _ in range(3):
        await _move(page)
    assert await page.evaluate("window.__karty.state.version") >= table.version + 3
    assert not await page.get_by_text("Reopen Karty").count()
    # the server restarts with another key: neither the session nor the initData is valid
    server.kill()
    server.start()
    await page.get_by_role("button", name="Reopen Karty").wait_for(timeout=30000)
    assert await page.get_by_text("signed you out").count()
    before = len(sockets)
    await asyncio.sleep(3)  # a reconnect loop would open sockets meanwhile
    assert len(sockets) == before, sockets[before:]
    await page.get_by_role("button", name="Reopen Karty").click()
    assert "close" in await page.evaluate("window.__tgCalls")
    await ctx.close()


async def test_a_page_opened_with_expired_initdata_says_reopen_not_retry(server, kstore, browser):
    """Issue 25, point 10: a client that cached initData past its life opens the app with it.
    The page shows the one "Reopen Karty" screen, not "Connection problem. Retrying…" and a
    Continue that tries again."""
    from store import LobbySettings, Seat
    from webapp.auth import local_user_id

    uid = local_user_id("Alice")
    table = await kstore.create_table(game="prsi", seed=1,
                                      seats=[Seat(seat=f"u{uid}", user_id=uid, name="Alice"),
                                             Seat(seat="c1", name="Karel", computer=True)],
                                      settings=LobbySettings(players=2, turn_seconds=None))
    init_data = _post(server.url + "api/local/login", {"name": "Alice", "language": "en"})["init_data"]
    for _ in range(1200):  # a hang guard: it runs out 20 s after signing
        if _status(server.url + "api/me", init_data) == 401:
            break
        await asyncio.sleep(0.1)
    assert _status(server.url + "api/me", init_data) == 401
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    await ctx.add_init_script(script=HINTS_SEEN)
    await ctx.add_init_script(script=f"{TELEGRAM}({json.dumps([init_data, table.id])})")
    page = await ctx.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    await page.goto(server.url)
    await page.get_by_role("button", name="Reopen Karty").wait_for(timeout=30000)
    await asyncio.sleep(2)  # whatever else the page was doing has finished
    assert await page.get_by_role("button", name="Reopen Karty").count() == 1
    assert not await page.get_by_text("Connection problem").count()
    assert not await page.get_by_role("button", name="Continue").count()
    assert sockets == []
    await ctx.close()
