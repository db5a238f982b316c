"""The Mini App as a phone meets it (issue 25), in real headless Chromium against the real
webapp server: a tap that closes a tip plays nothing, the turn timer shows inside dialogs,
the round-end dialog tells the truth, the table's variants are in its rules, card names
follow the face set, finished matches stay in "My tables".

One server and one browser for the module; the tables are seated with people only (or
computers where a test says so) and driven through the store.
"""

from __future__ import annotations

import asyncio
import os
import re

import pytest
from browser_support import (
    CHROMIUM,
    computer,
    module_fixtures,
    new_phone_page,
    person,
    sign_in,
    view_of,
    watch_moves,
)

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]


embedded_redis, server, browser = module_fixtures("phone")  # one of each for the module


async def _table_where(kstore, game, seats, until, *, settings=None, policy=None, tries=60, steps=3000):
    """A table of ``seats`` driven through the store (each seat's first legal action, a
    Queen naming its own suit, or ``policy``) until ``until(state)``; None if no seed gets there."""
    for seed in range(1, tries + 1):
        kw = {"settings": settings} if settings is not None else {}
        table = await kstore.create_table(game=game, seats=seats, seed=seed, **kw)
        st = table.state
        actions = []
        for _ in range(steps):
            if until(st):
                break
            if st.over:
                st = None
                break
            waiting = engine.awaiting(st)
            seat = st.to_move or (waiting[0] if waiting else None)
            legal = engine.legal_actions(st, seat)
            action = policy(st, seat, legal) if policy else legal[0]
            if action["a"] == "play" and action.get("card", "").startswith("Q") and "suit" not in action and game == "prsi":
                action = {**action, "suit": action["card"][-1]}
            st = engine.apply(st, seat, action).state
            actions.append((seat, action))
        else:
            st = None
        if st is None:
            continue
        for seat, action in actions:
            await kstore.apply(table.id, seat, action)
        return table
    return None


async def _open(browser, server, name, table_id, *, hints=False, **kw):
    page = await new_phone_page(browser, server.url, hints=hints, **kw)
    await sign_in(page, name)
    watch_moves(page)
    await page.goto(f"{server.url}?table={table_id}")
    await page.wait_for_selector(".table-screen .me")
    return page


def _plays(st, seat):
    return [a for a in engine.legal_actions(st, seat) if a["a"] == "play"]


# --------------------------------------------------------------------------- 1. tips


@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_the_tap_that_closes_a_tip_plays_no_card(server, kstore, browser, game):
    """With the first-time tip showing, a tap on a playable card closes the tip and plays
    nothing; the next tap plays it (Prší, and Penki's second phase)."""
    alice, bob = person("Alice"), person("Bob")
    if game == "prsi":
        until = lambda st: st.to_move == alice.seat and any("card" in a for a in _plays(st, alice.seat))  # noqa: E731
    else:
        until = lambda st: st.phase == 2 and st.to_move == alice.seat and st.penalty_to is None and _plays(st, alice.seat)  # noqa: E731
    table = await _table_where(kstore, game, [alice, bob], until)
    assert table is not None
    page = await _open(browser, server, "Alice", table.id, hints=True)
    await page.wait_for_selector("#first-hint")
    await asyncio.sleep(0.5)  # the tip lets taps close it after a moment to read it
    card = page.locator(".hand .card.playable").first
    version = (await view_of(page))["version"]
    await card.tap()
    await page.wait_for_selector("#first-hint", state="detached")
    await asyncio.sleep(1.0)
    assert page.karty_action_statuses == [], "the tap that closed the tip also played"
    assert (await view_of(page))["version"] == version
    await page.locator(".hand .card.playable").first.tap()
    await page.wait_for_function("v => window.__karty.state.version > v", arg=version)
    assert page.karty_errors == []
    await page.context.close()


# --------------------------------------------------------------------------- 3. timers in dialogs


async def test_the_queens_suit_chooser_shows_the_turn_timer(server, kstore, browser):
    """At a timed table, the Queen's suit chooser counts Alice's turn down inside itself."""
    from store import LobbySettings

    alice, bob = person("Alice"), person("Bob")

    def until(st):
        hand = st.hands[st.players.index(alice.seat)]
        return st.to_move == alice.seat and len(hand) > 1 and any(a.get("card", "").startswith("Q") for a in _plays(st, alice.seat))

    table = await _table_where(kstore, "prsi", [alice, bob], until, settings=LobbySettings(players=2, turn_seconds=120))
    assert table is not None
    page = await _open(browser, server, "Alice", table.id)
    queen = page.locator(".hand .card.playable[data-card^='Q']").first
    await queen.tap()
    await page.wait_for_selector("#dialog[open][data-kind=suit]")
    timer = page.locator("#dialog .dialog-timer")
    await timer.wait_for(state="visible")
    first = await timer.inner_text()
    assert re.fullmatch(r"Your turn: \d+ s left", first), first
    n = int(re.search(r"\d+", first).group())
    assert 60 < n <= 120
    await page.wait_for_function(
        "n => { const e = document.querySelector('#dialog .dialog-timer'); return e && parseInt(e.textContent.match(/\\d+/)) < n; }", arg=n
    )
    assert page.karty_errors == []
    await page.context.close()


# --------------------------------------------------------------------------- 8. the round's end


def _going_out(st, seat):
    """``seat``'s play that ends the round (a Queen naming its own suit), or None."""
    if st.over or st.to_move != seat or len(st.hands[st.players.index(seat)]) != 1:
        return None
    play = next((a for a in engine.legal_actions(st, seat) if a["a"] == "play"), None)
    if play and play.get("card", "").startswith("Q") and "suit" not in play:
        play = {**play, "suit": play["card"][-1]}
    return play


@pytest.mark.parametrize("leader", ["alice", "bob"])
async def test_the_round_end_tells_the_truth_about_the_next_round(server, kstore, browser, leader):
    """Bob goes out; the next round is dealt at once (only computers and timers wait). The
    round's end says whose turn it is in the next round instead of "Next round in 6 s", and
    closes the moment anything moves in it."""
    alice, bob = person("Alice"), person("Bob")
    want = alice.seat if leader == "alice" else bob.seat

    def until(st):
        play = _going_out(st, bob.seat)
        if play is None:
            return False
        after = engine.apply(st, bob.seat, play).state
        return not after.over and after.to_move == want

    table = await _table_where(kstore, "prsi", [alice, bob], until)
    assert table is not None
    before = (await kstore.get_table(table.id)).state
    play = _going_out(before, bob.seat)
    nxt = before.round + 1
    page = await _open(browser, server, "Alice", table.id)
    await kstore.apply(table.id, bob.seat, play)
    await page.wait_for_selector("#dialog[open][data-kind=round]")
    said = await page.locator("#dialog .round-countdown").inner_text()
    assert "Next round in" not in said
    if leader == "alice":
        assert said == f"Round {nxt} is dealt: your turn", said
        assert await page.locator("#dialog .dialog-timer").count() == 1
    else:
        assert said == f"Round {nxt} is dealt: Bob to move", said
        version = (await view_of(page))["version"]
        st = (await kstore.get_table(table.id)).state
        move = engine.legal_actions(st, bob.seat)[0]
        if move.get("card", "").startswith("Q") and "suit" not in move:
            move = {**move, "suit": move["card"][-1]}
        await kstore.apply(table.id, bob.seat, move)
        await page.wait_for_function("v => window.__karty.state.version > v", arg=version)
        # the table moved on in the new round: the dialog is gone at once, not after its countdown
        assert not await page.locator("#dialog[open]").count()
    assert page.karty_errors == []
    await page.context.close()


# --------------------------------------------------------------------------- 4, 5. variants and card names


async def test_the_tables_variants_are_in_its_rules_and_chips_explain_on_a_tap(server, kstore, browser):
    """A table with Seven of hearts brings back, Unter names a rank, King of leaves and Draw
    and play: a tap on a chip explains it (touch opens no tooltip); "?" shows the rules as the
    variants change them, never "Drawing ends your turn" beside Draw and play; the names follow
    the faces: Unter and king of leaves on German cards, Jack and king of spades on French."""
    from store import LobbySettings

    alice, bob = person("Alice"), person("Bob")
    settings = LobbySettings(players=2, turn_seconds=None, variants=["PV2", "PV5", "PV6", "PV7", "PV3q"])
    table = await kstore.create_table(game="prsi", seats=[alice, bob], seed=4, settings=settings)
    page = await _open(browser, server, "Alice", table.id)
    chips = page.locator(".variant-chips button.variant-chip")
    assert await chips.count() == 5
    names = await chips.all_inner_texts()
    assert any("Unter names a rank" in x for x in names) and any("King of leaves" in x for x in names), names
    assert any("Finish only on an Ober" in x for x in names), names
    await page.locator(".variant-chip[data-variant=PV5]").tap()
    await page.wait_for_selector("#dialog[open][data-kind=variant]")
    assert "An Unter goes on anything" in await page.locator("#dialog").inner_text()
    await page.locator("#dialog").get_by_role("button", name="Close").tap()
    # the rules of this table
    await page.locator(".topbar .rules-btn").tap()
    await page.wait_for_selector(".rules-section[data-rule=variants]")
    listed = await page.locator(".rules-section[data-rule=variants] li").all_inner_texts()
    assert len(listed) == 5 and any(x.startswith("Draw and play") for x in listed), listed
    turn = await page.locator(".rules-section[data-rule=rp2]").inner_text()
    assert "Drawing ends your turn." not in turn and "you may play it at once" in turn, turn
    assert "Draw and play" in turn
    back = await page.locator(".rules-section[data-rule=rp7]").inner_text()
    assert "7 of hearts" in back and "Ober 20" in back, back
    await page.locator(".rules-screen .back-btn").tap()
    await page.wait_for_selector(".table-screen .me")
    # French faces: the same chips and texts name the French cards
    await page.locator(".topbar .faces-btn").tap()
    await page.wait_for_function("() => document.querySelector('.variant-chip[data-variant=PV5]').textContent.includes('Jack')")
    names = await chips.all_inner_texts()
    assert any("Jack names a rank" in x for x in names) and any("King of spades" in x for x in names), names
    assert not any("leaves" in x or "Unter" in x or "Ober" in x for x in names), names
    await page.locator(".topbar .rules-btn").tap()
    await page.wait_for_selector(".rules-section[data-rule=variants]")
    text = await page.locator(".rules-body").inner_text()
    assert "Ober" not in text and "Unter" not in text and "leaves" not in text, text
    await page.locator(".rules-screen .back-btn").tap()
    await page.locator(".topbar .faces-btn").tap()  # back to German faces for the next tests
    assert page.karty_errors == []
    await page.context.close()


async def test_czech_and_russian_ranks_are_objects_when_a_jack_asks_for_one(server, browser):
    """"Spodek chce osmu" (not "osma"), "заказал девятку": the rank in its object form."""
    page = await new_phone_page(browser, server.url, locale="cs-CZ")
    got = await page.evaluate(
        """async () => {
          const i = await import(document.querySelector('link[rel=modulepreload][href*="i18n.js?"]').href)  /* the page's own module: its URL is versioned */;
          i.setLanguage('cs');
          const cs = i.reasonText('illegal', 'a Jack named 8: play an 8, a Queen or a Jack, or draw', { faces: 'german' });
          i.setLanguage('ru');
          const ru = i.reasonText('illegal', 'a Jack named 9: play a 9, a Queen or a Jack, or draw', { faces: 'german' });
          i.setLanguage('en');
          const en = i.reasonText('illegal', 'a Jack named 9: play a 9, a Queen or a Jack, or draw', { faces: 'german' });
          const fr = i.reasonText('illegal', 'a Jack named 9: play a 9, a Queen or a Jack, or draw', { faces: 'french' });
          return [cs, ru, en, fr];
        }"""
    )
    cs, ru, en, fr = got
    assert "chce osmu" in cs, cs
    assert "заказал девятку" in ru and "унтера" in ru, ru
    assert en.startswith("The Unter asked for nine"), en
    assert fr.startswith("The Jack asked for nine"), fr
    await page.context.close()


# --------------------------------------------------------------------------- 6. local play keeps things


async def test_a_finished_match_stays_in_my_tables_with_its_replay(server, kstore, browser):
    """Finished matches stay in "My tables" with a replay; the local leaderboard says why it
    is empty (every local table has computers: nothing is rated)."""
    alice = person("Alice")
    table = await _table_where(kstore, "prsi", [alice, computer(1, "Karel")], lambda st: st.over, steps=4000)
    assert table is not None
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    done = page.locator(".my-tables .table-link.finished")
    await done.first.wait_for()
    assert "Match over" in await done.first.inner_text()
    await page.locator(".my-tables .replay-link").first.tap()
    await page.wait_for_selector(".replay-screen")
    assert "replay=" in page.url
    await page.go_back()
    await page.wait_for_selector("#new-prsi")
    await page.get_by_role("button", name="Leaderboard").first.tap()
    await page.wait_for_selector(".lb-body p.muted")
    assert "Local play" in await page.locator(".lb-body").inner_text()
    assert page.karty_errors == []
    await page.context.close()


# --------------------------------------------------------------------------- 9. words


async def test_words_fit_and_say_what_they_mean(server, kstore, browser):
    """Czech lobby at 390 px: the timer's "vypnuto" and the computers' level fit their
    selects; in cs and en the Russian callouts carry their meaning, in ru only the call."""
    page = await new_phone_page(browser, server.url, locale="cs-CZ")
    await sign_in(page, "Věra")
    fits = await page.evaluate(
        """() => ['turn-timer', 'computer-level'].map((id) => {
          const s = document.getElementById(id);
          const c = document.createElement('canvas').getContext('2d');
          const cs = getComputedStyle(s);
          c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
          const widest = Math.max(...[...s.options].map((o) => c.measureText(o.text).width));
          const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 16;  // the arrow
          return [id, [...s.options].map((o) => o.text), Math.round(widest), Math.round(room)];
        })"""
    )
    for sel_id, texts, widest, room in fits:
        assert widest <= room, (sel_id, texts, widest, room)
    level = await page.locator("#computer-level option:checked").inner_text()
    assert level != "hráč", level
    alice, bob = person("Věra"), person("Bob")
    table = await kstore.create_table(game="penki", seats=[alice, bob], seed=2)
    await page.goto(f"{server.url}?table={table.id}")
    await page.wait_for_selector("nav.callouts")
    said = await page.locator("nav.callouts button").all_inner_texts()
    assert [x.split("\n") for x in said] == [["ЗЕВОК!", "Chyba!"], ["ОДНА КАРТА!", "Jedna karta!"], ["СКОЛЬКО КАРТ?", "Kolik karet?"]], said
    await page.context.close()
    ru = await new_phone_page(browser, server.url, locale="ru-RU")
    await sign_in(ru, "Борис")
    table = await kstore.create_table(game="penki", seats=[person("Борис"), bob], seed=2)
    await ru.goto(f"{server.url}?table={table.id}")
    await ru.wait_for_selector("nav.callouts")
    assert await ru.locator("nav.callouts .callout-mean").count() == 0
    await ru.context.close()


# --------------------------------------------------------------------------- 7. announcements


TAP_TARGETS_UNDER = """
() => {
  const b = document.querySelector('#banner .banner-inner').getBoundingClientRect();
  const meet = (r) => r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom;
  return [...document.querySelectorAll('.table-screen button, .table-screen .pile-btn, nav.callouts button, #first-hint')]
    .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && meet(r); })
    .map((e) => e.className || e.id);
}
"""


@pytest.mark.parametrize("size", [(390, 844), (640, 360)], ids=["upright", "landscape"])
async def test_announcements_queue_and_cover_nothing_to_tap(server, kstore, browser, size):
    """Two announcements in a row: the second waits for the first instead of replacing it;
    neither covers a pile, card, button or the tip (Penki, first phase, six players)."""
    seats = [person(x) for x in ("Alice", "Bob", "Cyril", "Dana", "Eva", "Filip")]
    table = await kstore.create_table(game="penki", seats=seats, seed=3)
    page = await _open(browser, server, "Alice", table.id)
    await page.set_viewport_size({"width": size[0], "height": size[1]})
    await page.evaluate("() => { window.__karty.banner('Bob: «ЗЕВОК!» against Cyril'); window.__karty.banner('Phase 2 — Alice leads', 'bita'); }")
    banner = page.locator("#banner .banner-inner")
    assert await banner.inner_text() == "Bob: «ЗЕВОК!» against Cyril"
    assert await page.evaluate(TAP_TARGETS_UNDER) == []
    await page.wait_for_function("() => document.querySelector('#banner .banner-inner')?.textContent === 'Phase 2 — Alice leads'")
    assert await page.evaluate(TAP_TARGETS_UNDER) == []
    assert page.karty_errors == []
    await page.context.close()


# --------------------------------------------------------------------------- sound


async def test_sound_effects_are_off_by_default_and_sound_on_your_turn_when_on(server, kstore, browser):
    """The lobby's switch is off at first; switched on (and kept), the turn coming back to
    Alice plays the "your turn" tones (WebAudio, nothing downloaded)."""
    alice, bob = person("Alice"), person("Bob")

    def bobs(st):
        move = engine.legal_actions(st, bob.seat)[0]
        return {**move, "suit": move["card"][-1]} if move.get("card", "").startswith("Q") and "suit" not in move else move

    def until(st):  # Bob to move, and his move hands the turn to Alice
        return st.to_move == bob.seat and not st.over and engine.apply(st, bob.seat, bobs(st)).state.to_move == alice.seat

    table = await _table_where(kstore, "prsi", [alice, bob], until)
    assert table is not None
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    switch = page.locator("#sound-on")
    assert not await switch.is_checked()
    await switch.check()
    await page.reload()
    await page.wait_for_selector("#sound-on")
    assert await page.locator("#sound-on").is_checked()
    await page.goto(f"{server.url}?table={table.id}")
    await page.wait_for_selector(".table-screen .me")
    assert await page.evaluate("window.__karty.sound.played") == []
    await kstore.apply(table.id, bob.seat, bobs((await kstore.get_table(table.id)).state))
    await page.wait_for_function("() => window.__karty.sound.played.includes('turn')")
    assert page.karty_errors == []
    await page.context.close()
