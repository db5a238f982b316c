"""The table as a player reads it (issue 17), in real headless Chromium against the
real webapp server (``python -m webapp --local`` in a subprocess, its Redis an
embedded fakeredis server the test owns).

Dialogs derived from the current view on every version: two penalty hand-overs in a
row rebuild the give dialog for the second recipient; random fast play by taps never
gets two refused taps in a row.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

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
)

import engine

pytest.importorskip("playwright.async_api")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



def _turn_policy(st, seat, rng: random.Random):
    """A random legal turn action or give (never a callout): plays mostly, takes sometimes."""
    legal = engine.legal_actions(st, seat)
    if not legal:
        return None
    if st.phase == 1:
        return legal[0]  # never a blunder: the forced move, a fitting place, else the own pile
    plays = [a for a in legal if a["a"] != "take"]
    if plays and rng.random() < 0.85:
        return rng.choice(plays)
    return rng.choice(legal)


def _two_debts_setup(state, alice: str, rng: random.Random, limit: int = 4000):
    """Actions from ``state`` (every seat by :func:`_turn_policy`, nobody declaring) to a
    phase-2 moment where a seat X other than Alice owes «ОДНА КАРТА!», another seat G
    (not Alice) holds exactly two cards and Alice at least three: then an ask catches X,
    G's penalty card leaves it owing too, a second ask queues G behind X, and Alice owes
    X a card and then G one. Returns (actions, X, G, asker) or None."""
    actions = []
    st = state
    for _ in range(limit):
        if st.over:
            return None
        obs = engine.observer(st)
        if st.phase == 2 and st.penalty_to is None and obs["owes_declaration"]:
            x = obs["owes_declaration"][0]
            hands = obs["hands"]
            if x != alice and len(hands[alice]) >= 3:
                gs = [p for p in st.players if p not in (x, alice) and p not in st.places and len(hands[p]) == 2]
                askers = [p for p in st.players if p not in (x, alice) and p not in gs[:1]]
                if gs and askers:
                    return actions, x, gs[0], askers[0]
        waiting = engine.awaiting(st)
        seat = st.to_move or (waiting[0] if waiting else None)
        action = _turn_policy(st, seat, rng)
        st = engine.apply(st, seat, action).state
        actions.append((seat, action))
    return None


async def _dialog_cards(page) -> list[str]:
    return await page.eval_on_selector_all("#dialog[open] .give-grid .card", "els => els.map(e => e.dataset.card)")


async def _give_as(kstore, table_id: str, seat: str) -> None:
    st = (await kstore.get_table(table_id)).state
    card = min(st.hands[seat])
    await kstore.apply(table_id, seat, {"a": "give", "card": card})


async def test_back_to_back_penalty_gives_rebuild_the_dialog(server, kstore, browser):
    """Penki, six players: Alice owes X a penalty card and, right after her give ends
    X's hand-over, G one. The give dialog is rebuilt for G (name, reason, cards without
    the one just given); a give tapped while another seat's card lands meanwhile still
    goes through; no tap is refused."""
    names = ["Alice", "Bob", "Cyril", "Dana", "Eva", "Filip"]
    seats = [person(n) for n in names]
    alice = seats[0]
    name_of = {s.seat: s.name for s in seats}
    table = None
    for seed in range(1, 60):
        table = await kstore.create_table(game="penki", seats=seats, seed=seed)
        found = _two_debts_setup(table.state, alice.seat, random.Random(seed))
        if found:
            break
    else:
        pytest.fail("no deal gave two debtors in a row")
    actions, x, g, asker = found
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)

    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".penki.phase2")
    # The ask catches X; G's card leaves G with one card; a second ask queues G.
    await kstore.apply(table.id, asker, {"a": "how_many"})
    await _give_as(kstore, table.id, g)
    await kstore.apply(table.id, asker, {"a": "how_many"})
    st = (await kstore.get_table(table.id)).state
    assert st.penalty_to == x and list(st.penalty_queue) == [g], (st.penalty_to, st.penalty_queue)
    for p in list(st.penalty_from):
        if p != alice.seat:
            await _give_as(kstore, table.id, p)
    st = (await kstore.get_table(table.id)).state
    assert list(st.penalty_from) == [alice.seat]

    await page.wait_for_function(
        "([v, to]) => window.__karty.state.version >= v && document.querySelector('#dialog[open][data-kind=give]')"
        " && document.querySelector('#dialog-title').textContent.includes(to)",
        arg=[st.version, name_of[x]],
    )
    await asyncio.sleep(0.3)  # the dialog's pop-in
    await screenshot(page, "penki-give-first")
    why = await page.locator("#dialog .give-why").inner_text()
    assert name_of[asker] in why and name_of[x] in why, why
    assert name_of[g] in await page.locator("#dialog .give-then").inner_text()
    offered = await _dialog_cards(page)
    assert sorted(offered) == sorted(st.hands[alice.seat])
    first = offered[0]
    await page.locator(f"#dialog[open] .give-grid .card[data-card='{first}']").tap()

    # X's hand-over is complete: G's starts at once and the dialog is rebuilt for G.
    await page.wait_for_function(
        "to => document.querySelector('#dialog[open][data-kind=give]')"
        " && document.querySelector('#dialog-title').textContent.includes(to)",
        arg=name_of[g],
    )
    st = (await kstore.get_table(table.id)).state
    assert st.penalty_to == g and alice.seat in st.penalty_from
    assert first in st.hands[x] and first not in st.hands[alice.seat]
    offered = await _dialog_cards(page)
    assert first not in offered and sorted(offered) == sorted(st.hands[alice.seat])
    await screenshot(page, "penki-give-second")

    # Another giver's card lands and Alice taps before her page may have seen it: the
    # give is on an older version (409) and is sent again, since it still means the same.
    others = [p for p in st.penalty_from if p != alice.seat]
    second = offered[-1]
    if others:
        await _give_as(kstore, table.id, others[0])
    await page.locator(f"#dialog[open] .give-grid .card[data-card='{second}']").tap()
    await page.wait_for_function(
        "c => !window.__karty.state.view.hand.includes(c)", arg=second, timeout=15000
    )
    for p in others[1:]:
        await _give_as(kstore, table.id, p)
    await page.wait_for_selector("#dialog[data-kind=give]:not([open])", state="attached")

    log = await kstore.log(table.id)
    gives = [(e["action"]["card"], ev["to"]) for e in log if e["seat"] == alice.seat for ev in e["events"] if ev["a"] == "give"]
    assert gives == [(first, x), (second, g)], gives
    # The toast comes with the action's answer, which may come after the socket's news
    # of the same give (the hand without the card): wait for it rather than race it.
    await page.wait_for_function("() => window.__seen.filter(([, t]) => t.startsWith('You gave')).length >= 2")
    seen = await page.evaluate("window.__seen")
    refused = [text for kind, text in seen if "error" in kind or "moved on" in text]
    assert not refused, seen
    assert [text for _, text in seen if text.startswith("You gave")][:2] == [
        f"You gave {_short(first)} to {name_of[x]}",
        f"You gave {_short(second)} to {name_of[g]}",
    ], seen
    assert all(s < 400 or s == 409 for s in page.karty_action_statuses), page.karty_action_statuses
    assert page.karty_errors == []


def _short(card: str) -> str:
    return card[:-1] + {"h": "♥", "d": "♦", "c": "♣", "s": "♠"}[card[-1]]


# --------------------------------------------------------------------------- fast play

# The element a tap on ``action`` goes to, in the order the taps must come.
async def _tap_for(page, me: str, action: dict, view: dict) -> bool:
    """Tap the visible control for ``action`` (one or two taps); False when not there."""
    kind = action["a"]
    if kind == "give":
        sel = [f"#dialog[open] .give-grid .card[data-card='{action['card']}']"]
    elif kind == "play":
        sel = [f".hand .card.playable[data-card='{action['card']}']"]
    elif kind == "take":
        sel = [".btn.action.take"]
    elif kind == "draw":
        sel = [".pile.stock.can"]
    elif kind == "place":
        sel = [f".pile-btn[data-seat='{action['to']}']"]
    elif kind == "move":
        sel = [f".pile-btn[data-seat='{me}']", f".pile-btn.target[data-seat='{action['to']}']"]
    else:
        return False
    for s in sel:
        loc = page.locator(s)
        if not await loc.count():
            return False
        try:
            await loc.first.tap(timeout=2000)
        except Exception:
            return False
    return True


@pytest.mark.slow
async def test_random_fast_play_never_two_refused_taps_in_a_row(server, kstore, browser):
    """Penki with three computers: Alice taps a random legal choice the moment the page
    offers one, never waiting for animations. Computers move, call and catch around her;
    whatever arrives in between, no two of her taps in a row are refused."""
    alice = person("Alice")
    seats = [alice] + [computer(i, n) for i, n in enumerate(["Ваня", "Маша", "Петя"], 1)]
    table = await kstore.create_table(game="penki", seats=seats, seed=31)
    page = await open_table(browser, server, "Alice", table.id)
    rng = random.Random(17)
    outcomes: list[str] = []
    deadline = time.monotonic() + 80
    while time.monotonic() < deadline and len(outcomes) < 30:
        await page.wait_for_function(
            """() => { const s = window.__karty.state, v = s.view;
                       return v && (v.over || (!s.busy && v.legal.length > 0 && s.shownVersion === s.version)); }""",
            timeout=30000,
        )
        view = await view_of(page)
        if view["over"]:
            break
        action = rng.choice(view["legal"])
        seen_before = len(await page.evaluate("window.__seen"))
        if not await _tap_for(page, alice.seat, action, view):
            continue  # the page moved on under the finger: nothing was sent
        # The outcome: a new version or a refusal (an error toast, "the table moved on").
        await page.wait_for_function(
            """([v, n]) => { const s = window.__karty.state;
                            const fresh = window.__seen.slice(n);
                            return (!s.busy && s.version > v) || fresh.some(([k, t]) => k.includes('error') || t.includes('moved on')); }""",
            arg=[view["version"], seen_before],
            timeout=20000,
        )
        fresh = (await page.evaluate("window.__seen"))[seen_before:]
        refused = any("error" in k or "moved on" in t for k, t in fresh)
        outcomes.append("refused" if refused else "ok")
    await screenshot(page, "penki-fast-play")
    print("fast play outcomes:", " ".join(outcomes))
    assert len(outcomes) >= 15, outcomes
    pairs = ["".join(o[0] for o in outcomes[i : i + 2]) for i in range(len(outcomes) - 1)]
    assert "rr" not in pairs, outcomes
    assert page.karty_errors == []


# --------------------------------------------------------------------------- callouts


async def _toast_after(page, n: int, timeout: float = 15.0) -> str:
    """The text of the first error toast shown after the first ``n`` seen."""
    await page.wait_for_function(
        "n => window.__seen.slice(n).some(([k]) => k.includes('error'))", arg=n, timeout=timeout * 1000
    )
    seen = await page.evaluate("window.__seen")
    return next(text for kind, text in seen[n:] if "error" in kind)


async def _tap_callout(page, text: str) -> str:
    n = len(await page.evaluate("window.__seen"))
    await page.get_by_role("button", name=text).tap()
    return await _toast_after(page, n)


def _drive(state, until, rng: random.Random, limit: int = 3000):
    """Actions (seat, action) by :func:`_turn_policy` from ``state`` until ``until(state)``."""
    actions = []
    st = state
    for _ in range(limit):
        if until(st):
            return actions, st
        if st.over:
            break
        waiting = engine.awaiting(st)
        seat = st.to_move or (waiting[0] if waiting else None)
        action = _turn_policy(st, seat, rng)
        st = engine.apply(st, seat, action).state
        actions.append((seat, action))
    raise AssertionError("never reached the wanted position")


async def test_callout_refusals_say_what_happened(server, kstore, browser):
    """A refused callout says why, from what the caller may know: the wrong phase, no
    blunder to call, «ОДНА КАРТА!» while holding many cards, nobody owing a declaration,
    and "too late" naming who called first when a call landed while the finger was down."""
    alice, bob, carol = person("Alice"), person("Bob"), person("Carol")
    table = await kstore.create_table(game="penki", seats=[alice, bob, carol], seed=8)
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".penki.phase1")
    assert "phase 2" in await _tap_callout(page, "ОДНА КАРТА!")
    assert "No blunder to call" in await _tap_callout(page, "ЗЕВОК!")

    rng = random.Random(3)
    st = (await kstore.get_table(table.id)).state
    # Phase 2, nobody owing, Alice holding several cards.
    actions, st = _drive(
        st, lambda s: s.phase == 2 and not s.owes and s.penalty_to is None and len(s.hands[alice.seat]) >= 3, rng
    )
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)
    await page.wait_for_function("v => window.__karty.state.shownVersion >= v", arg=st.version)
    held = len(st.hands[alice.seat])
    assert f"You hold {held} cards" in await _tap_callout(page, "ОДНА КАРТА!")
    assert "Nobody owes a declaration" in await _tap_callout(page, "СКОЛЬКО КАРТ?")
    assert "phase 1" in await _tap_callout(page, "ЗЕВОК!")

    # Bob owes a declaration. Alice's finger is on «СКОЛЬКО КАРТ?» when Carol's ask lands:
    # Alice's ask is refused as too late, naming Carol.
    actions, st = _drive(st, lambda s: bob.seat in s.owes and s.penalty_to is None and len(s.hands[carol.seat]) > 0, rng)
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)
    await page.wait_for_function("v => window.__karty.state.shownVersion >= v", arg=st.version)
    button = page.get_by_role("button", name="СКОЛЬКО КАРТ?")
    box = await button.bounding_box()
    n = len(await page.evaluate("window.__seen"))
    await page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    await page.mouse.down()
    await kstore.apply(table.id, carol.seat, {"a": "how_many"})
    await page.wait_for_function("v => window.__karty.state.version > v", arg=st.version)
    await page.mouse.up()
    text = await _toast_after(page, n)
    assert text == "Too late: Carol called «СКОЛЬКО КАРТ?» first", text
    await screenshot(page, "penki-callout-too-late")
    # Nothing the refusals said is more than the caller may see (S3): no owed seat is named.
    seen = " ".join(t for _, t in await page.evaluate("window.__seen"))
    assert "Bob" not in seen.replace("Too late: Carol", "")
    assert page.karty_errors == []


# --------------------------------------------------------------------------- wording


async def test_wording_refusals_indices_faces_button(server, kstore, browser):
    """Refusals in the player's words (no "Not allowed: that move is not allowed now"),
    Czech indices Sp and Sv told apart, the faces button saying what it does."""
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=7)
    page = await open_table(browser, server, "Alice", table.id, locale="cs-CZ")
    await page.wait_for_selector(".hand .card")
    texts = await page.evaluate(
        """async () => {
          const i18n = await import(document.querySelector('link[rel=modulepreload][href*="i18n.js?"]').href)  /* the page's own module: its URL is versioned */;
          const nameOf = (s) => s === 'u1' ? 'Bob' : s;
          return [
            i18n.reasonText('illegal', '8s must go to u1, the first fitting opponent', { faces: 'french', nameOf }),
            i18n.reasonText('illegal', 'Qh follows neither the suit in play (s) nor the top card 9s (P5)', { faces: 'german' }),
            i18n.reasonText('illegal', 'something new'),
            i18n.reasonText('not_in_hand', 'Ah is not in your hand'),
            i18n.indexLabel('Jh', 'german'), i18n.indexLabel('Qh', 'german'),
          ];
        }"""
    )
    assert texts[0] == "8♠ musí k hráči Bob: k prvnímu soupeři po směru, kam pasuje", texts
    assert texts[1] == "svršek červené nesedí ani na barvu ve hře (zelené), ani na devítka zelené", texts
    assert texts[2] == "Tento tah teď nejde" and texts[3] == "Tu kartu nemáte", texts
    assert texts[4] == "Sp" and texts[5] == "Sv"
    faces = page.locator(".faces-btn")
    assert await faces.get_attribute("aria-label") == "Přepnout na francouzské karty"
    await faces.click()
    assert await page.locator(".faces-btn").get_attribute("aria-label") == "Přepnout na české karty"
    assert page.karty_errors == []


# --------------------------------------------------------------------------- after the match


async def _play_out(kstore, table_id: str, until=lambda st: st.over, limit: int = 4000):
    rng = random.Random(5)
    for _ in range(limit):
        st = (await kstore.get_table(table_id)).state
        if until(st):
            return st
        waiting = engine.awaiting(st)
        seat = st.to_move or (waiting[0] if waiting else None)
        legal = engine.legal_actions(st, seat)
        plays = [a for a in legal if a["a"] in ("play", "give", "move", "place")]
        action = (plays or legal)[0] if st.game == "prsi" else _turn_policy(st, seat, rng)
        if action.get("card", "").startswith("Q") and st.game == "prsi" and "suit" not in action:
            action = {**action, "suit": action["card"][-1]}
        await kstore.apply(table_id, seat, action)
    raise AssertionError("the game did not finish")


async def test_final_sheet_says_why_unrated(server, kstore, browser):
    """A match with a computer ends with a balance; its final sheet says it is not rated
    and why, so the empty leaderboard after it is no surprise."""
    alice = person("Alice")
    table = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], seed=12)
    await _play_out(kstore, table.id)
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector("#dialog[open][data-kind=final] .rated-note")
    note = await page.locator("#dialog .rated-note").inner_text()
    assert note.startswith("Not rated") and "computer" in note, note
    await page.locator("#dialog").get_by_role("button", name="Leaderboard").click()
    await page.wait_for_selector(".lb-body p.muted")
    assert "computer" in await page.locator(".lb-body").inner_text()


# --------------------------------------------------------------------------- my tables


async def test_my_tables_tell_tables_apart(server, kstore, browser):
    """Two Prší tables of Alice's: each line says the round, whose turn, the players and
    the chat, so they differ."""
    alice = person("Alice")
    first = await kstore.create_table(game="prsi", seats=[alice, computer(1, "Karel")], chat_id=-1001, seed=21)
    second = await kstore.create_table(game="prsi", seats=[alice, person("Bob")], chat_id=-1002, seed=22)
    await _play_out(kstore, second.id, until=lambda st: st.round == 2)
    page = await new_phone_page(browser, server.url)
    await sign_in(page, "Alice")
    links = page.locator(".my-tables .table-link")
    await links.nth(1).wait_for()
    texts = await links.all_inner_texts()
    by_id = dict(zip(await links.evaluate_all("els => els.map(e => new URL(e.href).searchParams.get('table'))"), texts, strict=True))
    one, two = by_id[first.id], by_id[second.id]
    assert "Round 1/5" in one and "Karel (computer)" in one and "Group chat" in one, one
    assert "Round 2/5" in two and "Bob" in two, two
    st = (await kstore.get_table(second.id)).state
    assert ("Your turn" in two) == (st.to_move == alice.seat), two
    if st.to_move != alice.seat:
        assert "Bob to move" in two
    await screenshot(page, "my-tables")
    assert page.karty_errors == []


# --------------------------------------------------------------------------- round end


def _last_seven_position(seats, limit_seeds: int = 400):
    """A seed and actions (every seat's first legal play, else draw) to a position where
    Alice's last card is a playable 7: playing it ends the round and Bob draws for it."""
    alice = seats[0].seat
    for seed in range(1, limit_seeds):
        players = [s.seat for s in seats]
        st = engine.new_game("prsi", players, dealer=random.Random(seed).choice(players), seed=seed)
        rng = random.Random(seed)
        actions = []
        for _ in range(400):
            if st.over or st.round > 1:
                break
            seat = engine.awaiting(st)[0]
            legal = engine.legal_actions(st, seat)
            hand = st.hands[st.players.index(seat)]
            if seat == alice and len(hand) == 1 and hand[0].startswith("7") and {"a": "play", "card": hand[0]} in legal:
                return seed, actions
            plays = [a for a in legal if a["a"] == "play"]
            if seat == alice:  # Alice keeps a 7 for last if she can
                plays = [a for a in plays if not a["card"].startswith("7")] or plays
            action = rng.choice(plays) if plays else legal[0]
            if action["a"] == "play" and action["card"].startswith("Q") and len(hand) > 1:
                action = {**action, "suit": rng.choice("hdcs")}
            st = engine.apply(st, seat, action).state
            actions.append((seat, action))
    return None


async def test_round_end_holds_with_the_last_card_and_the_last_seven(server, kstore, browser):
    """Alice goes out with a 7: the round's end shows her 7 on the pile, that Bob drew
    for it, what everyone had left and the points, with a countdown; it closes by itself."""
    alice, bob = person("Alice"), person("Bob")
    found = _last_seven_position([alice, bob])
    assert found, "no deal ends with a last 7"
    seed, actions = found
    table = await kstore.create_table(game="prsi", seats=[alice, bob], seed=seed)
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)
    st = (await kstore.get_table(table.id)).state
    seven = st.hands[st.players.index(alice.seat)][0]
    outcome = engine.apply(st, alice.seat, {"a": "play", "card": seven})
    debt = sum(e.get("n", 1) for e in outcome.events if e["a"] == "draw" and e["seat"] == bob.seat)
    assert debt >= 2
    bob_left = len(st.hands[st.players.index(bob.seat)]) + debt
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(f".hand .card.playable[data-card='{seven}']")
    await page.locator(f".hand .card.playable[data-card='{seven}']").tap()
    await page.wait_for_selector("#dialog[open][data-kind=round]")
    dialog = page.locator("#dialog")
    text = await dialog.inner_text()
    assert "Round 1: Alice went out" in text, text
    assert "Alice went out with seven of" in text, text  # the card as the Czech pack names it
    assert f"Bob drew {debt} for the last 7" in text, text
    assert await dialog.locator(f".round-last .card[data-card='{seven}']").count() == 1
    rows = await dialog.locator("table.round tbody tr").all_inner_texts()
    assert any(r.startswith("Bob") and f"{bob_left} cards" in r for r in rows), rows
    mover = (await view_of(page))["to_move"]
    said = await dialog.locator(".round-countdown").inner_text()
    assert said == ("Round 2 is dealt: your turn" if mover == alice.seat else "Round 2 is dealt: Bob to move"), said
    await asyncio.sleep(0.3)
    await screenshot(page, "prsi-round-end")
    # Nobody taps: the countdown runs out and the dialog closes; the new round is on.
    await page.wait_for_selector("#dialog[data-kind=round]:not([open])", state="attached", timeout=15000)
    assert (await view_of(page))["round"] == 2
    assert page.karty_errors == []


# --------------------------------------------------------------------------- one card


async def test_one_card_button_ready_after_a_play_and_after_a_give(server, kstore, browser):
    """«ОДНА КАРТА!» lights up when Alice's hand drops to one card, by her play and by
    her penalty card alike, and goes quiet once she declared."""
    alice, bob, carol = person("Alice"), person("Bob"), person("Carol")
    seats = [alice, bob, carol]
    for seed in range(1, 80):
        table = await kstore.create_table(game="penki", seats=seats, seed=seed)
        try:
            actions, _ = _drive(
                table.state,
                lambda s: s.phase == 2 and s.to_move == alice.seat and s.penalty_to is None and not s.owes
                and len(s.hands[alice.seat]) == 2 and any(a["a"] == "play" for a in engine.legal_actions(s, alice.seat))
                and len(s.table) + 1 < len(s.players) - len(s.places),  # the play makes no Бита
                random.Random(seed),
            )
            break
        except AssertionError:
            continue
    else:
        pytest.fail("no deal left Alice with two cards on her turn")
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)
    page = await open_table(browser, server, "Alice", table.id)
    ready = page.locator("nav.callouts .callout-one_card.ready")
    await page.wait_for_selector(".penki.phase2 .hand .card.playable")
    assert await ready.count() == 0
    await page.locator(".hand .card.playable").first.tap()
    await ready.wait_for()
    await screenshot(page, "penki-one-card-ready")
    await page.get_by_role("button", name="ОДНА КАРТА!").tap()
    await page.wait_for_selector(".me .declared")
    assert await ready.count() == 0
    assert page.karty_errors == []


async def test_one_card_button_ready_after_a_penalty_card(server, kstore, browser):
    alice, bob, carol = person("Alice"), person("Bob"), person("Carol")
    seats = [alice, bob, carol]
    for seed in range(1, 80):
        table = await kstore.create_table(game="penki", seats=seats, seed=seed)
        try:
            actions, _ = _drive(
                table.state,
                lambda s: s.phase == 2 and s.penalty_to is None and bob.seat in s.owes and len(s.hands[alice.seat]) == 2
                and len(s.hands[carol.seat]) > 0,
                random.Random(seed),
            )
            break
        except AssertionError:
            continue
    else:
        pytest.fail("no deal left Alice with two cards while Bob owed")
    for seat, action in actions:
        await kstore.apply(table.id, seat, action)
    page = await open_table(browser, server, "Alice", table.id)
    await page.wait_for_selector(".penki.phase2")
    await kstore.apply(table.id, carol.seat, {"a": "how_many"})
    await page.wait_for_selector("#dialog[open][data-kind=give] .give-grid .card")
    await page.locator("#dialog[open] .give-grid .card").first.tap()
    await page.wait_for_selector("nav.callouts .callout-one_card.ready")
    assert len((await view_of(page))["hand"]) == 1
    assert page.karty_errors == []


# --------------------------------------------------------------------------- rules


async def test_rules_from_the_table_lobby_and_link_with_first_time_hint(server, kstore, browser):
    """A first-time hint over a new table goes with the first tap, for good; the ? button opens the game's rules (sections, card pictures) and Back
    returns to the table; the lobby and ``?page=rules`` reach them too, in Russian."""
    alice = person("Alice")
    table = await kstore.create_table(game="penki", seats=[alice, person("Bob")], seed=3)
    page = await open_table(browser, server, "Alice", table.id, hints=True)
    hint = page.locator("#first-hint")
    await hint.wait_for()
    assert "Phase 1" in await hint.inner_text()
    # It hides none of what it asks for (the stock, the opponents' piles) nor the callouts.
    for width, height in ((390, 844), (360, 640)):
        await page.set_viewport_size({"width": width, "height": height})
        await page.reload()  # not tapped yet: shown again, placed for this size
        await hint.wait_for()
        await page.wait_for_timeout(400)  # its rise (0.25 s) over
        covered = await page.evaluate(
            """(() => {
              const r = document.getElementById('first-hint').getBoundingClientRect();
              const hits = (e) => { const b = e.getBoundingClientRect();
                return b.left < r.right && r.left < b.right && b.top < r.bottom && r.top < b.bottom; };
              return [...document.querySelectorAll('.piles.opponents .ptile, .center .stock, nav.callouts')]
                .filter(hits).map(e => e.className);
            })()"""
        )
        await screenshot(page, "penki-first-hint" if width == 390 else f"penki-first-hint-{width}")
        assert covered == [], (width, height, covered)
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.wait_for_timeout(400)  # the hint ignores a tap already under way
    await page.locator(".topbar .title").tap()
    await hint.wait_for(state="detached")
    await page.reload()
    await page.wait_for_selector(".penki.phase1")
    await page.wait_for_timeout(500)
    assert await hint.count() == 0  # seen once: never again

    await page.get_by_role("button", name="Rules").tap()
    await page.wait_for_selector(".rules-screen .rules-section")
    assert await page.locator(".rules-screen [role=tab][aria-selected=true]").inner_text() == "Penki"
    sections = await page.locator(".rules-section h2").all_inner_texts()
    assert "«ЗЕВОК!»: the blunder" in sections and any("ОДНА КАРТА" in s for s in sections), sections
    assert await page.locator(".rules-section[data-rule=rk6] .card").count() == 4
    await screenshot(page, "rules-penki")
    await page.get_by_role("tab", name="Prší").tap()
    assert "Ober" in await page.locator(".rules-section[data-rule=rp5]").inner_text()
    await page.locator(".rules-screen .back-btn").tap()
    await page.wait_for_selector(".penki.phase1")

    ru = await new_phone_page(browser, server.url, locale="ru-RU")
    await sign_in(ru, "Boris")
    await ru.locator("#lobby-rules").tap()
    await ru.wait_for_selector(".rules-screen")
    assert "Правила" in await ru.locator(".rules-screen .title").inner_text()
    await ru.goto(f"{server.url}?page=rules&game=penki")
    await ru.wait_for_selector(".rules-section[data-rule=rk9]")
    assert "СКОЛЬКО КАРТ" in await ru.locator(".rules-section[data-rule=rk9]").inner_text()
    assert page.karty_errors == [] and ru.karty_errors == []
