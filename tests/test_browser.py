"""The Mini App in real headless Chromium against the real webapp server.

The server runs as ``python -m webapp --local`` in a subprocess; its Redis is an
embedded fakeredis server owned by the test (so the server process can be killed
and started again without losing the table). Tables are created through the store
with a seed, so deals are the same every run; people sign in through the page.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from browser_support import (
    CHROMIUM,
    HINTS_SEEN,
    computer,
    new_phone_page,
    open_table,
    person,
    screenshot,
    sign_in,
    view_of,
    wait_version_above,
)
from conftest import until

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



async def wait_my_turn_or_done(page, seat: str, stop_js: str, timeout: float = 20.0) -> dict:
    await page.wait_for_function(
        f"""([seat]) => {{
            const s = window.__karty && window.__karty.state; const v = s && s.view;
            if (!v) return false;
            if ({stop_js}) return true;
            return v.to_move === seat && !s.busy && !document.querySelector('#dialog[open]');
        }}""",
        arg=[seat],
        timeout=timeout * 1000,
    )
    return await view_of(page)


# --------------------------------------------------------------------------- Prší


async def test_prsi_round_played_by_clicks(server, kstore, browser):
    alice = person("Alice")
    table = await kstore.create_table(
        game="prsi", seats=[alice, computer(1, "Karel"), computer(2, "Jana")], seed=20261138
    )  # a deal where Alice starts with a playable Queen: the suit chooser shows
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".prsi .hand .card")
    await screenshot(page, "prsi-390x844")
    assert await page.locator(".opp").count() == 2
    # Cards carry accessible names such as "eso červené" / "ace of hearts".
    label = await page.locator(".hand .card").first.get_attribute("aria-label")
    assert label and " " in label

    seen_round_dialog = False
    seen_suit_chooser = False
    shot_my_turn = False
    for _ in range(200):
        view = await wait_my_turn_or_done(
            page, alice.seat, "v.round > 1 || v.over || document.querySelector('#dialog[open][data-kind=round]')"
        )
        if await page.locator("#dialog[open][data-kind=round]").count():
            seen_round_dialog = True
            await asyncio.sleep(0.4)
            await screenshot(page, "prsi-round-result")
            break
        if view["round"] > 1 or view["over"]:
            break
        before = view["version"]
        playable = page.locator(".hand .card.playable")
        if await playable.count():
            if not shot_my_turn:
                await screenshot(page, "prsi-my-turn")
                shot_my_turn = True
            queens = page.locator(".hand .card.playable[data-card^='Q']")
            await (queens.first if await queens.count() else playable.first).click()
            if await page.locator("#dialog[open][data-kind=suit]").count():
                seen_suit_chooser = True
                await asyncio.sleep(0.4)  # the dialog's pop-in
                await screenshot(page, "prsi-suit-chooser")
                await page.locator("#dialog .suit-choice.suit-s").click()
        elif await page.locator(".btn.action").count():
            await page.locator(".btn.action").first.click()
        else:
            pytest.fail(f"nothing to click with legal {view['legal']}")
        await wait_version_above(page, before)
    else:
        pytest.fail("the round did not end")
    assert seen_round_dialog, "the round result dialog was not shown"
    assert seen_suit_chooser, "the Queen's suit chooser was not shown"
    view = await view_of(page)
    assert view["round"] == 2 and view["history"], view
    # The match table lists round 1's points.
    await page.locator("#dialog .btn.primary").click()
    await page.get_by_role("button", name="Scores").click()
    await page.wait_for_selector("#dialog[open] table.scores")
    assert await page.locator("#dialog table.scores tbody tr").count() >= 6
    # Every move went on the open socket (act frames), none by POST.
    assert len(page.karty_socket_moves) >= 3 and set(page.karty_socket_moves) == {200}, (page.karty_socket_moves, page.karty_posted_moves)
    assert page.karty_posted_moves == []
    assert page.karty_errors == []


async def test_a_move_goes_by_post_when_the_socket_does_not_serve(server, kstore, browser):
    """The socket never gets past its handshake (a proxy that swallows it, say): the page
    shows the table from the HTTP API, and Alice's move goes by POST and is shown."""
    alice = person("Alice")
    for seed in range(1, 100):  # a deal where Alice leads
        table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=seed)
        if engine.awaiting(table.state) == [alice.seat]:
            break
    assert engine.awaiting(table.state) == [alice.seat]
    page = await new_phone_page(browser, server.url, hints=False)
    await sign_in(page, "Alice")
    frames: list[str] = []

    def swallow(ws) -> None:  # accepted, never answered, never passed on
        ws.on_message(lambda message: frames.append(message))

    await page.route_web_socket("**/ws/tables/**", swallow)
    posted: list[int] = []
    page.on("response", lambda r: posted.append(r.status)
            if r.request.method == "POST" and r.url.endswith("/actions") else None)
    await page.goto(f"{server.url}?table={table.id}")
    await page.wait_for_selector(".prsi .hand .card")
    view = await view_of(page)
    assert view["legal"], view
    playable = page.locator(".hand .card.playable:not([data-card^='Q'])")  # no suit to choose
    await (playable.first if await playable.count() else page.locator(".btn.action").first).click()
    await wait_version_above(page, view["version"], timeout=60)
    assert posted == [200]
    assert frames and not any('"act"' in f for f in frames)  # the auth frame only, no move
    assert (await kstore.get_table(table.id)).version > table.version


async def test_prsi_faces_toggle_is_remembered(server, kstore, browser):
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=7)
    page = await open_table(browser, server, "Alice", table.id, locale="cs-CZ")
    await page.wait_for_selector(".hand .card")
    first = page.locator(".hand .card").first
    czech = await first.get_attribute("aria-label")
    await page.locator(".faces-btn").click()
    french = await page.locator(".hand .card").first.get_attribute("aria-label")
    assert czech != french
    assert await page.evaluate("localStorage.getItem('karty.faces')") == "french"
    await page.reload()
    await page.wait_for_selector(".hand .card")
    assert await page.locator(".hand .card").first.get_attribute("aria-label") == french


# --------------------------------------------------------------------------- Penki


async def test_penki_phase1_turn_by_clicks(server, kstore, browser):
    alice = person("Alice")
    seats = [alice, computer(1, "Ваня"), computer(2, "Маша")]
    table = None
    for seed in range(1, 200):  # a deal where Alice moves first
        t = await kstore.create_table(game="penki", seats=seats, seed=seed)
        if t.state.to_move == alice.seat:
            table = t
            break
    assert table is not None
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".penki.phase1")
    await screenshot(page, "penki-390x844")
    # The callouts: three big buttons in a fixed bar at the bottom, always enabled.
    bar = page.locator("nav.callouts")
    box = await bar.bounding_box()
    assert box and box["y"] + box["height"] >= 844 - 2 and box["height"] >= 60
    for text in ("ЗЕВОК!", "ОДНА КАРТА!", "СКОЛЬКО КАРТ?"):
        assert await bar.get_by_role("button", name=text).is_enabled()

    actions = 0
    for _ in range(60):
        view = await view_of(page)
        if view["to_move"] != alice.seat:
            break
        before = view["version"]
        legal = view["legal"]
        if view["drawn"]:
            await screenshot(page, "penki-drawn")
            # The drawn card is selected; tap a pile: the opponent it fits, else our own.
            opp = next((a["to"] for a in legal if a["a"] == "place" and a["to"] != alice.seat), None)
            target = opp or alice.seat
            await page.locator(f".pile-btn[data-seat='{target}']").click()
        elif any(a["a"] == "move" for a in legal):
            to = next(a["to"] for a in legal if a["a"] == "move")
            await page.locator(f".pile-btn[data-seat='{alice.seat}']").click()
            await page.locator(f".pile-btn[data-seat='{to}']").click()
        else:
            await page.locator(".pile.stock").click()
        await wait_version_above(page, before)
        actions += 1
    view = await view_of(page)
    assert actions >= 2 and view["to_move"] != alice.seat
    mine = next(p for p in view["players"] if p["id"] == alice.seat)
    assert mine["pile"] >= 1
    assert page.karty_errors == []


def _find_blunder(state, blunderer: str, max_actions: int = 400):
    """Actions (seat, action) from ``state`` up to ``blunderer`` putting a card on its
    own pile while it fits an opponent (a blunder: the ЗЕВОК window opens), or None."""
    actions = []
    for _ in range(max_actions):
        if state.over or state.phase != 1:
            return None
        seat = state.to_move
        legal = engine.legal_actions(state, seat)
        if seat == blunderer and getattr(state, "drawn", None):
            places = [a for a in legal if a["a"] == "place"]
            if any(a["to"] != seat for a in places) and any(a["to"] == seat for a in places):
                actions.append((seat, {"a": "place", "to": seat}))
                return actions
        action = engine.computer_action(state, seat)
        if action is None:
            return None
        actions.append((seat, action))
        state = engine.apply(state, seat, action).state
    return None


async def test_penki_callout_race_between_two_pages(server, kstore, browser):
    alice, bob, carol = person("Alice"), person("Bob"), person("Carol")
    found = None
    for seed in range(1, 300):
        t = await kstore.create_table(game="penki", seats=[alice, bob, carol], seed=seed)
        script = _find_blunder(t.state, carol.seat)
        if script:
            found = (t, script)
            break
    assert found, "no seed with a blunder by Carol"
    table, script = found
    page_a = await open_table(browser, server, "Alice", table.id)
    page_b = await open_table(browser, server, "Bob", table.id)
    for seat, action in script:
        await kstore.apply(table.id, seat, action)
    target = len(script)
    for p in (page_a, page_b):
        await p.wait_for_function("v => window.__karty.state.version >= v", arg=target)
    # Nothing on the table flags the blunder (the callout bar's "ЗЕВОК! Blunder!" names the call only).
    shown = await page_a.evaluate(
        "() => [...document.querySelector('.table-screen').children].filter((e) => !e.matches('nav.callouts'))"
        ".map((e) => e.innerText).join(' ')"
    )
    assert "blunder" not in shown.lower(), shown
    # Both press «ЗЕВОК!» at once.
    await asyncio.gather(
        page_a.get_by_role("button", name="ЗЕВОК!").click(),
        page_b.get_by_role("button", name="ЗЕВОК!").click(),
    )
    for p in (page_a, page_b):
        await p.wait_for_function("() => document.querySelector('#banner.show')?.textContent.includes('ЗЕВОК')")
    log = await kstore.log(table.id, since=target)
    zevoks = [e for entry in log for e in entry["events"] if e["a"] == "zevok"]
    assert len(zevoks) == 1, zevoks
    winner = zevoks[0]["seat"]
    assert winner in (alice.seat, bob.seat) and zevoks[0]["against"] == carol.seat
    loser_page = page_b if winner == alice.seat else page_a
    winner_name = "Alice" if winner == alice.seat else "Bob"
    await loser_page.wait_for_selector(".toast.error")
    assert "Too late" in await loser_page.locator(".toast.error").first.inner_text()
    for p in (page_a, page_b):
        assert winner_name in await p.locator("#banner").inner_text()
    await screenshot(page_a, "penki-callout-banner")
    # The pressed callout gave haptic feedback (the local stand-in records it).
    assert "impact:heavy" in await page_a.evaluate("window.__karty_haptics")


# --------------------------------------------------------------------------- restart


async def test_page_survives_server_restart(server, kstore, browser):
    """No race with the computer: no turn timer (a slow machine never has Alice played for), the
    page's waits name the exact version, and the store's own move is checked to have committed."""
    from store import LobbySettings

    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=11,
                                      settings=LobbySettings(players=2, turn_seconds=None))
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".hand .card")
    # Let the computer move first if it is its turn (the worker runs in the server).
    await wait_my_turn_or_done(page, alice.seat, "false", timeout=60)
    v0 = (await view_of(page))["version"]
    assert (await kstore.get_table(table.id)).version == v0  # nobody can move but Alice now

    server.kill()
    await page.wait_for_selector("#conn:not([hidden])", timeout=60000)
    server.start()

    # A move made while the page reconnects reaches it over the new socket.
    drew = await kstore.apply(table.id, alice.seat, {"a": "draw"})
    assert drew.version == v0 + 1
    view = await wait_version_above(page, v0, timeout=60)
    assert view["version"] >= v0 + 1
    await page.wait_for_selector("#conn[hidden]", state="attached", timeout=60000)
    # And the page can act again (it signed in afresh under the same name), once Karel has moved.
    view = await wait_my_turn_or_done(page, alice.seat, "false", timeout=60)
    v1 = view["version"]
    assert v1 > v0 + 1 and (await kstore.get_table(table.id)).version == v1
    playable = page.locator(".hand .card.playable")
    if await playable.count():
        await playable.first.click()
        if await page.locator("#dialog[open][data-kind=suit]").count():
            await page.locator(".suit-choice").first.click()
    else:
        await page.locator(".btn.action").first.click()
    view = await wait_version_above(page, v1, timeout=60)
    assert view["version"] > v1
    entry = (await kstore.log(table.id))[v1]  # version v1 + 1
    assert entry["seat"] == alice.seat and entry["by"] == "player"  # the click made it
    assert page.karty_errors == []


# --------------------------------------------------------------------------- leaderboard


async def test_leaderboard_page(server, browser):
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    await page.get_by_role("button", name="Leaderboard").click()
    await page.wait_for_selector(".leaderboard .lb-body")
    await page.get_by_role("tab", name="Month").click()
    await page.get_by_role("tab", name="Penki").click()
    await page.wait_for_selector(".lb-body p, .lb-body table")
    await screenshot(page, "leaderboard-390x844")
    assert page.karty_errors == []


# --------------------------------------------------------------------------- Penki phase 2


def _plain_action(state, seat):
    """A turn action from the legal list (never a callout): the first play, else the first."""
    legal = engine.legal_actions(state, seat)
    plays = [a for a in legal if a["a"] in ("play", "give", "move", "place")]
    return plays[0] if plays else (legal[0] if legal else None)


async def test_penki_phase2_play_and_penalty_hand_over(server, kstore, browser):
    """Phase 2 on the page: a click plays or takes; «СКОЛЬКО КАРТ?» against a player
    who owes a declaration opens the hand-over dialog, and a tap gives the card."""
    alice, bob, carol = person("Alice"), person("Bob"), person("Carol")
    table = await kstore.create_table(game="penki", seats=[alice, bob, carol], seed=5)
    page = await open_table(browser, server, "Alice", table.id)
    clicked_phase2 = False
    caught = False
    for _ in range(600):
        st = (await kstore.get_table(table.id)).state
        if st.over:
            break
        waiting = engine.awaiting(st)
        if not waiting:
            break
        seat = st.to_move or waiting[0]
        if st.phase == 2 and seat == alice.seat and not st.penalty and not clicked_phase2:
            await page.wait_for_function("v => window.__karty.state.version >= v", arg=st.version)
            await page.wait_for_selector(".penki.phase2 .hand .card")
            await screenshot(page, "penki-phase2-390x844")
            before = st.version
            playable = page.locator(".hand .card.playable")
            if await playable.count():
                await playable.first.click()
            else:
                await page.get_by_role("button", name="Take").click()
            await wait_version_above(page, before)
            clicked_phase2 = True
            continue
        action = _plain_action(st, seat)
        assert action is not None, (seat, st)
        result = await kstore.apply(table.id, seat, action)
        nst = result.table.state
        if (
            clicked_phase2
            and seat == bob.seat
            and action["a"] == "play"
            and nst.phase == 2
            and not nst.over
            and not nst.penalty
            and len(nst.hands[bob.seat]) == 1
            and len(nst.hands[alice.seat]) >= 1
        ):
            await page.wait_for_function("v => window.__karty.state.version >= v", arg=nst.version)
            await page.get_by_role("button", name="СКОЛЬКО КАРТ?").click()
            await page.wait_for_selector("#dialog[open][data-kind=give]", timeout=15000)
            await asyncio.sleep(0.4)
            await screenshot(page, "penki-give-dialog")
            v = (await view_of(page))["version"]
            await page.locator("#dialog[open] .give-grid .card").first.click()
            await wait_version_above(page, v)
            await page.wait_for_selector("#dialog[data-kind=give]:not([open])", state="attached")
            caught = True
            break
    assert clicked_phase2, "never reached Alice's turn in phase 2"
    assert caught, "Bob never held one card after a play"
    log = await kstore.log(table.id)
    kinds = [e["a"] for entry in log for e in entry["events"]]
    assert "how_many" in kinds and "give" in kinds
    assert page.karty_errors == []


# --------------------------------------------------------------------------- Telegram


async def test_inside_telegram_uses_webapp_and_start_param(server, kstore, browser):
    """With window.Telegram.WebApp present (as telegram-web-app.js makes it), the page
    skips the local sign-in, opens the table named by start_param, calls ready() and
    expand(), applies themeParams and shows the BackButton; requests carry its initData."""
    import json
    import urllib.request

    req = urllib.request.Request(
        server.url + "api/local/login",
        data=json.dumps({"name": "Alice", "language": "cs"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req) as r:
        init_data = json.loads(r.read())["init_data"]
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=3)
    script = """
    (([initData, startParam]) => {
      const calls = [];
      const handlers = {};
      window.__tgCalls = calls;
      window.Telegram = { WebApp: {
        initData,
        initDataUnsafe: { user: { id: 1, first_name: "Alice", language_code: "cs" }, start_param: startParam },
        version: "8.0", platform: "android", colorScheme: "dark",
        themeParams: { bg_color: "#101418", text_color: "#fafafa", button_color: "#ff8800", button_text_color: "#000000" },
        safeAreaInset: { top: 24, bottom: 16, left: 0, right: 0 },
        contentSafeAreaInset: { top: 40, bottom: 0, left: 0, right: 0 },
        isVersionAtLeast: () => true,
        ready: () => calls.push("ready"), expand: () => calls.push("expand"),
        setHeaderColor: (c) => calls.push("header:" + c), setBackgroundColor: (c) => calls.push("bg:" + c),
        disableVerticalSwipes: () => calls.push("disableVerticalSwipes"),
        onEvent: (n, f) => { (handlers[n] = handlers[n] || []).push(f); calls.push("on:" + n); },
        offEvent: () => {},
        HapticFeedback: { impactOccurred: (s) => calls.push("impact:" + s),
                          notificationOccurred: (s) => calls.push("notify:" + s),
                          selectionChanged: () => calls.push("selection") },
        BackButton: { show: () => calls.push("back:show"), hide: () => calls.push("back:hide"),
                      onClick: (f) => { calls.push("back:onClick"); window.__backFn = f; }, offClick: () => {} },
        __back: () => window.__backFn && window.__backFn(),
        __emit: (n) => (handlers[n] || []).forEach((f) => f()),
      } };
    })
    """
    ctx = await browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    await ctx.add_init_script(script=HINTS_SEEN)
    await ctx.add_init_script(script=f"{script}({json.dumps([init_data, table.id])})")
    page = await ctx.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    await page.goto(server.url)
    await page.wait_for_selector(".prsi .hand .card")
    calls = await page.evaluate("window.__tgCalls")
    for expected in ("ready", "expand", "disableVerticalSwipes", "on:themeChanged", "on:activated", "header:#17683f"):
        assert expected in calls, (expected, calls)
    # The table is the root inside Telegram (Telegram's Close leaves); the
    # leaderboard shows the BackButton, which leads back to the table.
    assert "back:show" not in calls
    assert await page.locator(".back-btn").first.is_hidden()
    await page.get_by_role("button", name="Žebříček").click()
    await page.wait_for_selector(".leaderboard")
    assert "back:show" in await page.evaluate("window.__tgCalls")
    await page.evaluate("window.Telegram.WebApp.__back()")
    await page.wait_for_selector(".prsi .hand .card")
    assert await page.evaluate("document.documentElement.lang") == "cs"
    bg = await page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--tg-theme-bg-color')")
    assert bg.strip() == "#101418"
    assert await page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--tg-safe-top')") == "24px"
    # No telegram.org request (the WebApp object is already there), and the local stand-in
    # (tg-local.js, which local play preloads with the rest of the modules) is not used.
    assert not [u for u in requested if "telegram.org" in u]
    assert await page.evaluate("window.__karty_haptics === undefined")
    # The activated event refetches the table.
    n = len(requested)
    await page.evaluate("window.Telegram.WebApp.__emit('activated')")
    await until(lambda: any(f"/api/tables/{table.id}" in u for u in requested[n:]))
    await ctx.close()


# --------------------------------------------------------------------------- more screens


async def _play_out(kstore, table_id: str, until=lambda st: st.over, limit: int = 3000):
    """Drive every seat through the store with the computer player's choices."""
    for _ in range(limit):
        st = (await kstore.get_table(table_id)).state
        if until(st):
            return st
        waiting = engine.awaiting(st)
        seat = st.to_move or (waiting[0] if waiting else None)
        if seat is None:
            return st
        action = engine.computer_action(st, seat) or _plain_action(st, seat)
        await kstore.apply(table_id, seat, action)
    raise AssertionError("the game did not finish")


async def test_prsi_match_table_and_czech_texts(server, kstore, browser):
    """A finished five-round match: the final table lists every round, the totals,
    places and balances (P13, P14); texts in Czech from the browser's language."""
    seats = [person("Alice"), person("Bob"), person("Carol")]
    table = await kstore.create_table(game="prsi", seats=seats, seed=99)
    final = await _play_out(kstore, table.id)
    page = await open_table(browser, server, "Alice", table.id, locale="cs-CZ")
    await page.wait_for_selector("#dialog[open][data-kind=final] table.scores")
    await asyncio.sleep(0.4)
    text = await page.locator("#dialog").inner_text()
    assert "Konec zápasu" in text and "Bilance" in text
    rows = page.locator("#dialog table.scores tbody tr")
    assert await rows.count() == 5 + 3  # rounds, total, place, balance
    balances = final.balances
    assert sum(balances.values()) == 0
    shown = await page.locator("#dialog tr.balance td").all_inner_texts()
    expected = [f"+{b}" if b > 0 else str(b) for b in (balances[s.seat] for s in seats)]
    assert shown == expected
    await screenshot(page, "prsi-match-table-cs")
    # The match was rated (no computers): the leaderboard lists all three, best first.
    await page.locator("#dialog").get_by_role("button", name="Žebříček").click()
    await page.wait_for_selector(".lb-body table.lb tbody tr")
    names = await page.locator(".lb-body table.lb tbody th").all_inner_texts()
    best = max(seats, key=lambda s: balances[s.seat]).name
    assert len(names) == 3 and names[0] == best
    await screenshot(page, "leaderboard-rows-cs")


async def test_the_match_table_shows_long_names_in_full_on_a_small_phone(server, kstore, browser):
    """Four players with long names on a 360 px phone: every name in the final table's
    head is shown whole (wrapped onto a second line, not cut), and the table fits."""
    names = ["Maximilián", "Bohuslava", "Ярославна", "Přemyslava"]
    seats = [person(names[0])] + [computer(i, n) for i, n in enumerate(names[1:], 1)]
    table = await kstore.create_table(game="prsi", seats=seats, seed=7)
    await _play_out(kstore, table.id)
    page = await open_table(browser, server, names[0], table.id, locale="cs-CZ")
    await page.set_viewport_size({"width": 360, "height": 740})
    await page.wait_for_selector("#dialog[open][data-kind=final] table.scores")
    await asyncio.sleep(0.4)
    heads = await page.evaluate(
        """[...document.querySelectorAll('#dialog table.scores thead th:not(.rowhead)')]
           .map(th => th.querySelector('.name') || th).map(e => ({
             text: e.textContent, cut: e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1,
             lines: Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight)) }))"""
    )
    assert [h["text"] for h in heads] == names
    assert not [h for h in heads if h["cut"]], heads
    assert all(h["lines"] <= 2 for h in heads), heads
    wrap = await page.evaluate(
        "(() => { const e = document.querySelector('#dialog .scores-wrap'); return [e.scrollWidth, e.clientWidth]; })()"
    )
    assert wrap[0] <= wrap[1], wrap  # no sideways scrolling
    await screenshot(page, "prsi-match-table-long-names-360")


async def test_prsi_five_players_russian(server, kstore, browser):
    seats = [person("Alice")] + [computer(i, n) for i, n in enumerate(["Ваня", "Маша", "Петя", "Оля"], 1)]
    table = await kstore.create_table(game="prsi", seats=seats, seed=4)
    page = await open_table(browser, server, "Alice", table.id, locale="ru-RU")
    await page.wait_for_selector(".prsi .hand .card")
    assert await page.locator(".opp").count() == 4
    assert await page.evaluate("document.documentElement.lang") == "ru"
    # Every opponent tile fits on the phone's width.
    boxes = await page.evaluate(
        "[...document.querySelectorAll('.opp')].map(e => e.getBoundingClientRect()).map(r => [r.left, r.right])"
    )
    assert len(boxes) == 4 and all(left >= 0 and right <= 390 for left, right in boxes), boxes
    await screenshot(page, "prsi-5-players-ru")


@pytest.mark.slow
async def test_turn_timer_ring_and_played_for_you(server, kstore, browser):
    """S4 on the page: the countdown ring runs on the seat to move, and when the time
    is up the move is marked as played for the player (by="timer")."""
    from store import LobbySettings

    alice = person("Alice")
    table = None
    for seed in range(1, 100):
        t = await kstore.create_table(
            game="penki",
            seats=[alice, computer(1, "Ваня")],
            settings=LobbySettings(players=2, turn_seconds=30),
            seed=seed,
        )
        if t.state.to_move == alice.seat:
            table = t
            break
    assert table is not None
    page = await open_table(browser, server, "Alice", table.id)
    ring = page.locator(f".avatar.timing[data-seat='{alice.seat}'] .secs")
    await ring.wait_for()
    first = int(await ring.inner_text())
    assert 0 < first <= 30
    await page.wait_for_selector(".ticker .by-timer", timeout=60000)
    await page.wait_for_selector(".toast", timeout=5000)
    assert "timer" in (await page.locator(".toast").first.inner_text()).lower()
