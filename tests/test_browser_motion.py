"""The table moves (issue 15), in real headless Chromium against the real server: played
cards fly to the pile, drawn ones from the stock, a Бита sweeps the table (motion.js,
Web Animations over the newest DOM). With fast play (every seat moved through the store
at computer speed, the next move often landing while the last one is still in the air)
the page draws every version it gets in order and ends at the newest, the moves it shows
are exactly the table's log, an interrupted flight leaves no ghost behind and no card
hidden, and with ``prefers-reduced-motion: reduce`` nothing flies at all.

A sampler in the page looks at every animation frame: how many flights are running
(``document.getAnimations()``), how many ghosts are in the layer, and whether any ghost
belongs to a version older than the one on screen.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest
from browser_support import CHROMIUM, open_table, person, screenshot

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]

SAMPLER = """
() => {
  const s = { frames: 0, maxFlights: 0, maxGhosts: 0, stale: [], leaks: [] };
  window.__sampler = s;
  // Every card the viewer may know of: in their hand, face up on the table or a pile, or
  // named by a public event. A face-up ghost of any other card would show hidden information.
  const known = new Set();
  const learn = () => {
    const v = window.__karty.state.view;
    if (!v) return;
    for (const c of v.hand || []) known.add(c);
    for (const c of [v.top, v.drawn, ...(v.table || []), ...(v.players || []).map((p) => p.pile_top)]) if (c) known.add(c);
    for (const ev of v.last || []) for (const c of [ev.card, ...(ev.cards || [])]) if (c) known.add(c);
  };
  const tick = () => {
    s.frames += 1;
    learn();
    const flights = document.getAnimations().filter((a) => String(a.id).startsWith('karty-flight')).length;
    const ghosts = [...document.querySelectorAll('.flights .flight')];
    s.maxFlights = Math.max(s.maxFlights, flights);
    s.maxGhosts = Math.max(s.maxGhosts, ghosts.length);
    const shown = window.__karty.state.shownVersion;
    for (const g of ghosts) {
      if (Number(g.dataset.version) !== shown) s.stale.push([Number(g.dataset.version), shown]);
      if (g.dataset.card && !known.has(g.dataset.card)) s.leaks.push(g.dataset.card);
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""

SETTLED = """() => document.querySelectorAll('.flights .flight').length === 0
  && document.getAnimations().every((a) => !String(a.id).startsWith('karty-flight') || a.playState !== 'running')"""


def _policy(st, seat, rng: random.Random):
    """The computer's move, except in Penki phase 1 a drawn card sometimes goes on the
    own pile although it fits elsewhere (a blunder, so «ЗЕВОК!» and its penalty moves come)."""
    if st.game == "penki" and st.phase == 1 and st.drawn is not None and rng.random() < 0.25:
        legal = engine.legal_actions(st, seat)
        own = {"a": "place", "to": seat}
        if own in legal and len(legal) > 1:
            return own
    return engine.computer_action(st, seat)


async def _drive(kstore, table_id: str, rng: random.Random, moves: int, pause=(0.0, 0.35), stop=lambda st: st.over):
    """``moves`` actions through the store, each seat's as fast as a computer's, with a
    random pause (seconds) between them: some flights end, many are cut short. An open
    «ЗЕВОК!» window is called by the next seat. Returns the last state."""
    st = (await kstore.get_table(table_id)).state
    for _ in range(moves):
        if stop(st):
            break
        if st.game == "penki" and st.phase == 1 and st.zevok is not None:
            caller = next(p for p in st.players if p != st.zevok)
            await kstore.apply(table_id, caller, {"a": "zevok"})
        else:
            waiting = engine.awaiting(st)
            seat = st.to_move or (waiting[0] if waiting else None)
            action = _policy(st, seat, rng) if seat else None
            if action is None:
                break
            await kstore.apply(table_id, seat, action)
        st = (await kstore.get_table(table_id)).state
        await asyncio.sleep(rng.uniform(*pause))
    return st


async def _one_move(kstore, table_id: str, rng: random.Random):
    """One move (the next seat's, as in :func:`_drive`); returns the new state."""
    return await _drive(kstore, table_id, rng, moves=1, pause=(0, 0), stop=lambda st: False)


async def _move_that_flies(page, kstore, table_id: str, rng: random.Random):
    """Moves until one starts a flight on the page; returns the state after it."""
    for _ in range(20):
        n = await page.evaluate("window.__karty.motion.flights")
        st = await _one_move(kstore, table_id, rng)
        await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
        if await page.evaluate("window.__karty.motion.flights") > n:
            return st
    raise AssertionError("no move started a flight")


async def _settle(page, version: int) -> dict:
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=version)
    await page.wait_for_function(SETTLED)
    return await page.evaluate("() => ({ motion: window.__karty.motion, sampler: window.__sampler })")


def _key(ev: dict) -> tuple:
    return (ev.get("a"), ev.get("seat"), ev.get("card"), ev.get("to"), ev.get("from"), ev.get("n"))


async def _check_order(kstore, table_id: str, motion: dict, final: int) -> None:
    """Every version drawn in order, the newest last, and the moves played between them
    exactly the log's moves after the first version drawn (none lost, none twice)."""
    log = motion["log"]
    versions = [x["version"] for x in log]
    assert versions == sorted(set(versions)), versions
    assert versions[-1] == final, (versions[-1], final)
    first = versions[0]
    shown = [_key(ev) for x in log[1:] for ev in (x["events"] or [])]
    entries = [e for e in await kstore.log(table_id) if e["version"] > first]
    expected = [_key(ev) for e in entries for ev in e["events"]]
    assert shown == expected, (len(shown), len(expected))
    assert versions == [first] + [e["version"] for e in entries], "a version was not drawn"


async def _check_clean(page, sampler: dict) -> None:
    """No ghost of an older version ever stayed on screen, none showed a card the viewer
    may not know (opponents' drawn cards fly face down); none is left; no card stays hidden."""
    assert sampler["stale"] == [], sampler["stale"][:5]
    assert sampler["leaks"] == [], sampler["leaks"][:5]
    assert await page.locator(".flights .flight").count() == 0
    hidden = await page.evaluate("() => [...document.querySelectorAll('#app [style*=\"visibility\"]')].filter((e) => e.style.visibility === 'hidden').length")
    assert hidden == 0


async def _freeze_midflight(page, kind: str) -> bool:
    """Pause every flight once one of ``kind`` is in the air (for a screenshot); False if none came."""
    try:
        await page.wait_for_function(
            """k => { const a = document.getAnimations().filter((x) => x.id === 'karty-flight-' + k && x.playState === 'running'
                        && (x.effect.getComputedTiming().progress ?? 0) > 0.3);
                      if (!a.length) return false;
                      document.getAnimations().filter((x) => String(x.id).startsWith('karty-flight')).forEach((x) => x.pause());
                      return true; }""",
            arg=kind, timeout=20000, polling="raf",
        )
        return True
    except Exception:
        return False


async def test_prsi_cards_fly_and_every_version_is_shown_in_order(server, kstore, browser):
    """Prší with three: plays fly to the pile, draws (penalty draws too) from the stock,
    face down to an opponent; fast play interrupts flights and loses nothing."""
    seats = [person("Alice"), person("Bob"), person("Cyril")]
    table = await kstore.create_table(game="prsi", seats=seats, seed=5)
    page = await open_table(browser, server, "Alice", table.id)
    await page.evaluate(SAMPLER)
    rng = random.Random(5)
    round1 = lambda st: st.over or st.round > 1  # noqa: E731 - the next round's dialog would hold the table
    st = await _drive(kstore, table.id, rng, moves=45, stop=round1)
    out = await _settle(page, st.version)
    motion, sampler = out["motion"], out["sampler"]
    print("prsi motion:", motion["kinds"], "interrupted", motion["interrupted"], "finished", motion["finished"],
          "frames", sampler["frames"], "max flights", sampler["maxFlights"])
    assert motion["kinds"].get("play", 0) > 0 and motion["kinds"].get("draw", 0) > 0, motion["kinds"]
    assert sampler["maxFlights"] > 0 and sampler["maxGhosts"] > 0
    await _check_order(kstore, table.id, motion, st.version)
    await _check_clean(page, sampler)

    # Interrupted for sure: flights stretched long (the tests' clock), the next version
    # comes while they are in the air; their ghosts go at once and their cards show.
    await page.evaluate("window.__karty.motion.scale = 500")
    st = await _move_that_flies(page, kstore, table.id, rng)
    first = st.version
    assert await page.locator(f".flights .flight[data-version='{first}']").count() > 0
    cut = await page.evaluate("window.__karty.motion.interrupted")
    st = await _one_move(kstore, table.id, rng)
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
    assert await page.evaluate("window.__karty.motion.interrupted") > cut
    assert await page.locator(f".flights .flight[data-version='{first}']").count() == 0
    # Back to the real speed: the next flights end by themselves.
    await page.evaluate("window.__karty.motion.scale = 1")
    done = await page.evaluate("window.__karty.motion.finished")
    st = await _move_that_flies(page, kstore, table.id, rng)
    out = await _settle(page, st.version)
    assert out["motion"]["finished"] > done
    await _check_order(kstore, table.id, out["motion"], st.version)
    await _check_clean(page, out["sampler"])
    assert page.karty_errors == []


async def test_prsi_screenshots_of_a_play_and_a_penalty_draw(server, kstore, browser):
    """Frozen mid-flight at phone size: an opponent's card on its way to the pile
    (docs/screenshots/prsi-motion-play.png) and a card face down from the stock to an
    opponent drawing (prsi-motion-draw.png)."""
    seats = [person("Alice"), person("Bob"), person("Cyril")]
    alice = seats[0].seat
    table = await kstore.create_table(game="prsi", seats=seats, seed=5)
    rng = random.Random(5)

    def next_is(kind, n=None):
        def check(st):
            if st.over or st.round > 1 or st.to_move in (None, alice):
                return False
            action = engine.computer_action(st, st.to_move)
            return action["a"] == kind and (n is None or st.pending_draw == n)
        return check

    st = await _drive(kstore, table.id, rng, moves=200, pause=(0, 0), stop=next_is("play"))
    assert next_is("play")(st)
    page = await open_table(browser, server, "Alice", table.id, hints=False)
    await page.evaluate("window.__karty.motion.scale = 10")  # slow enough to catch mid-flight on a busy machine
    await _one_move(kstore, table.id, rng)
    assert await _freeze_midflight(page, "play")
    await screenshot(page, "prsi-motion-play", docs=True)
    await page.evaluate("() => document.getAnimations().forEach((a) => a.play())")
    st = await _drive(kstore, table.id, rng, moves=200, pause=(0, 0),
                      stop=lambda st: next_is("draw")(st) or st.over or st.round > 1)
    assert next_is("draw")(st)
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
    await page.wait_for_function(SETTLED)
    await _one_move(kstore, table.id, rng)
    assert await _freeze_midflight(page, "draw")
    await screenshot(page, "prsi-motion-draw", docs=True)
    assert page.karty_errors == []


async def test_penki_moves_fly_and_a_bita_sweeps(server, kstore, browser):
    """Penki with three, from late in phase 1 into phase 2: draws, places, moves and a
    «ЗЕВОК!»'s penalty moves fly pile to pile; plays fly to the table, takes to the taker,
    a Бита sweeps the table; nothing lost, nothing left behind."""
    seats = [person("Alice"), person("Bob"), person("Cyril")]
    table = await kstore.create_table(game="penki", seats=seats, seed=11)
    rng = random.Random(11)
    # Most of phase 1 before the page opens: the page watches its end and phase 2.
    await _drive(kstore, table.id, rng, moves=400, pause=(0, 0), stop=lambda st: st.phase != 1 or len(st.stock) <= 16)
    page = await open_table(browser, server, "Alice", table.id)
    await page.evaluate(SAMPLER)
    st = await _drive(kstore, table.id, rng, moves=120, pause=(0.0, 0.3))
    out = await _settle(page, st.version)
    motion, sampler = out["motion"], out["sampler"]
    print("penki motion:", motion["kinds"], "interrupted", motion["interrupted"], "finished", motion["finished"],
          "frames", sampler["frames"], "max flights", sampler["maxFlights"])
    kinds = motion["kinds"]
    assert st.phase == 2
    for kind in ("draw", "play", "bita"):
        assert kinds.get(kind, 0) > 0, kinds
    assert kinds.get("place", 0) + kinds.get("move", 0) > 0 and kinds.get("penalty_move", 0) > 0, kinds
    await _check_order(kstore, table.id, motion, st.version)
    await _check_clean(page, sampler)
    assert page.karty_errors == []


async def test_penki_screenshots_of_a_zevok_and_a_bita(server, kstore, browser):
    """Frozen mid-flight at phone size: a «ЗЕВОК!»'s penalty moves going pile to pile
    (docs/screenshots/penki-motion-zevok.png) and a Бита mid-sweep (penki-motion-bita.png);
    the sweep, held in the air, is cut short by the next version and leaves nothing behind."""
    seats = [person("Alice"), person("Bob"), person("Cyril")]
    table = await kstore.create_table(game="penki", seats=seats, seed=11)
    rng = random.Random(11)
    page = await open_table(browser, server, "Alice", table.id, hints=False)

    def blunder_to_call(st):  # an open «ЗЕВОК!» window with at least two cards to move
        return st.phase == 1 and st.zevok is not None and sum(1 for p in st.players if p != st.zevok and st.piles[p]) >= 2

    st = await _drive(kstore, table.id, rng, moves=400, pause=(0, 0), stop=blunder_to_call)
    assert blunder_to_call(st)
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
    await page.wait_for_function(SETTLED)
    await page.evaluate("window.__karty.motion.scale = 10")  # slow enough to catch mid-flight on a busy machine
    await _one_move(kstore, table.id, rng)  # the next seat calls «ЗЕВОК!»
    assert await _freeze_midflight(page, "penalty_move")
    await screenshot(page, "penki-motion-zevok", docs=True)
    await page.evaluate("() => document.getAnimations().forEach((a) => a.play())")
    await page.evaluate("window.__karty.motion.scale = 1")

    def before_bita(st):  # the next play closes a trick (R13: as many cards as players still in)
        if st.over or st.phase != 2 or st.to_move is None or st.penalty_to is not None:
            return False
        action = engine.computer_action(st, st.to_move)
        return action["a"] == "play" and any(e["a"] == "bita" for e in engine.apply(st, st.to_move, action).events) \
            and len(st.table) >= 2

    st = await _drive(kstore, table.id, rng, moves=2000, pause=(0, 0), stop=before_bita)
    assert before_bita(st)
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
    await page.wait_for_function(SETTLED)
    await page.evaluate("window.__karty.motion.scale = 10")  # slow enough to catch mid-sweep on a busy machine
    await kstore.apply(table.id, st.to_move, engine.computer_action(st, st.to_move))
    assert await _freeze_midflight(page, "bita"), await page.evaluate("window.__karty.motion")
    await screenshot(page, "penki-motion-bita", docs=True)
    swept = st.version + 1
    assert await page.locator(f".flights .flight[data-version='{swept}']").count() >= len(st.table) + 1
    # The sweep, held mid-air, is cut short by the next version: no ghost stays behind.
    st = await _one_move(kstore, table.id, rng)
    await page.wait_for_function("v => window.__karty.state.shownVersion === v", arg=st.version)
    assert await page.locator(f".flights .flight[data-version='{swept}']").count() == 0
    await page.wait_for_function(SETTLED)
    assert await page.locator(".flights .flight").count() == 0
    assert page.karty_errors == []


async def test_reduced_motion_nothing_flies(server, kstore, browser):
    """``prefers-reduced-motion: reduce``: the same fast play, every version drawn in
    order, and not one flight (no ghost, no running animation of the layer)."""
    seats = [person("Alice"), person("Bob"), person("Cyril")]
    table = await kstore.create_table(game="prsi", seats=seats, seed=5)
    page = await open_table(browser, server, "Alice", table.id, reduced_motion="reduce")
    assert await page.evaluate("matchMedia('(prefers-reduced-motion: reduce)').matches")
    await page.evaluate(SAMPLER)
    rng = random.Random(5)
    st = await _drive(kstore, table.id, rng, moves=25, stop=lambda st: st.over or st.round > 1)
    out = await _settle(page, st.version)
    motion, sampler = out["motion"], out["sampler"]
    assert motion["flights"] == 0 and motion["kinds"] == {}, motion["kinds"]
    assert sampler["maxFlights"] == 0 and sampler["maxGhosts"] == 0 and sampler["frames"] > 0
    assert any(x["events"] for x in motion["log"])  # there were moves to show
    await _check_order(kstore, table.id, motion, st.version)
    assert page.karty_errors == []


def test_docs_motion_screenshots_present():
    """The README's and docs' motion screenshots exist (refreshed by KARTY_DOCS_SCREENSHOTS=1)."""
    from browser_support import DOCS_SCREENSHOTS

    names = {p.name for p in DOCS_SCREENSHOTS.glob("*.png")}
    for name in ("prsi-motion-play", "prsi-motion-draw", "penki-motion-zevok", "penki-motion-bita"):
        assert f"{name}.png" in names, name
