"""End to end: the service as in production, Telegram faked, a whole Prší match.

``python -m webapp`` runs as a subprocess exactly as deployed: a bot token (a fake
one), webhook mode (``WEBHOOK_URL``, the secret-token header), the real Redis (its
own key prefix in its own database) and the Bot API at ``TELEGRAM_API_URL`` — the
fake server of ``tests/fake_bot_api.py``, running in this test's event loop, which
records every call the bot makes.

Three users open a lobby in a supergroup and fill it through webhook POSTs of real
update JSON. Anna plays in the Mini App in headless Chromium (clicks), opened as a
direct link opens it inside Telegram: ``?tgWebAppStartParam=<table>#tgWebAppData=…``
with initData signed by the bot token, and Telegram's ``telegram-web-app.js``
replaced by a stand-in that reads the hash as the real one does. Boris and Cyril play
through the HTTP API with their own signed initData. Midway the service is killed
(SIGKILL) and started again: the match goes on from Redis and the page reconnects.

Checked: the group gets the lobby, the start, every round's result and the final
table; "your turn" messages reach a player only while their Mini App is closed;
``/rating`` afterwards shows each player's balance; the service log has no ERROR.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "test-output" / "e2e"
CHROMIUM = Path("/usr/bin/chromium")
# A database of its own on the tests' Redis, on top of a key prefix of its own.
E2E_DB = 15

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.redis,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs headless Chromium at /usr/bin/chromium"),
    pytest.mark.timeout(600),
]

TG_STAND_IN = r"""
// Stand-in for https://telegram.org/js/telegram-web-app.js: like the real script it
// reads tgWebAppData / tgWebAppVersion / tgWebAppPlatform from the URL hash.
(function () {
  const hash = new URLSearchParams((location.hash || "").replace(/^#/, ""));
  const initData = hash.get("tgWebAppData") || "";
  const unsafe = {};
  for (const [k, v] of new URLSearchParams(initData)) {
    if (k === "user" || k === "chat" || k === "receiver") {
      try { unsafe[k] = JSON.parse(v); } catch (e) { unsafe[k] = null; }
    } else unsafe[k] = v;
  }
  const version = hash.get("tgWebAppVersion") || "8.0";
  const handlers = {};
  const chain = function () { return this; };
  const button = () => ({ isVisible: false, isActive: true, text: "", show: chain, hide: chain,
    onClick: chain, offClick: chain, setText: chain, setParams: chain, enable: chain, disable: chain,
    showProgress: chain, hideProgress: chain });
  const inset = { top: 0, bottom: 0, left: 0, right: 0 };
  window.__tg_calls = [];
  const called = (name) => function () { window.__tg_calls.push(name); };
  window.Telegram = { WebApp: {
    initData, initDataUnsafe: unsafe, version, platform: hash.get("tgWebAppPlatform") || "tdesktop",
    colorScheme: "light", themeParams: {}, isExpanded: true, viewportHeight: innerHeight,
    viewportStableHeight: innerHeight, safeAreaInset: inset, contentSafeAreaInset: inset,
    isVersionAtLeast(v) { return parseFloat(v) <= parseFloat(version); },
    ready: called("ready"), expand: called("expand"), close: called("close"),
    disableVerticalSwipes: called("disableVerticalSwipes"), enableClosingConfirmation: called("ecc"),
    setHeaderColor: called("setHeaderColor"), setBackgroundColor: called("setBackgroundColor"),
    openLink: called("openLink"), openTelegramLink: called("openTelegramLink"),
    showAlert(m, cb) { if (cb) cb(); }, showConfirm(m, cb) { if (cb) cb(true); },
    showPopup(p, cb) { if (cb) cb(null); },
    onEvent(n, f) { (handlers[n] = handlers[n] || []).push(f); },
    offEvent(n, f) { handlers[n] = (handlers[n] || []).filter((g) => g !== f); },
    HapticFeedback: { impactOccurred() {}, notificationOccurred() {}, selectionChanged() {} },
    BackButton: button(), MainButton: button(), SecondaryButton: button(), SettingsButton: button(),
  } };
})();
"""


# ------------------------------------------------------------------------------------ helpers
def _fake_api_module():
    try:
        import fake_bot_api
    except ImportError:
        from tests import fake_bot_api
    return fake_bot_api


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sign_init_data(token: str, user: dict[str, Any], **fields: Any) -> str:
    """initData as Telegram makes it: fields + ``hash`` = HMAC(HMAC("WebAppData", token), check string)."""
    data = {"user": json.dumps(user, separators=(",", ":"), ensure_ascii=False),
            "auth_date": str(int(time.time())), **{k: str(v) for k, v in fields.items()}}
    check = "\n".join(f"{k}={data[k]}" for k in sorted(data))
    key = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    data["hash"] = hmac.new(key, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(data, quote_via=quote)


def redis_db_url(url: str, db: int) -> str:
    parts = urlparse(url)
    return parts._replace(path=f"/{db}").geturl()


def choose(legal: list[dict[str, Any]]) -> dict[str, Any]:
    """A plain player's choice: a non-Q card if any, else a Q, else draw / stand / pass."""
    plays = [a for a in legal if a["a"] == "play"]
    plain = [a for a in plays if not a["card"].startswith("Q")]
    if plain:
        return plain[0]
    if plays:
        return plays[0]
    for kind in ("stand", "draw", "pass"):
        for a in legal:
            if a["a"] == kind:
                return a
    raise AssertionError(f"nothing to choose from {legal}")


class Service:
    """``python -m webapp`` as a subprocess, its output appended to ``log``."""

    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.env = env
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        with self.log.open("ab") as fh:
            fh.write(f"\n===== start #{self.starts} =====\n".encode())
        self._fh = self.log.open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "webapp"], cwd=ROOT, env=self.env,
                                     stdout=self._fh, stderr=subprocess.STDOUT)

    async def ready(self, http, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the service exited with {self.proc.returncode}; see {self.log}")
            with contextlib.suppress(Exception):
                async with http.get(f"{self.base}/api/config") as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the service did not answer within {timeout} s; see {self.log}")

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would: no cleanup at all."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._fh.close()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._fh.close()


class Player:
    """One Telegram user: their Telegram ``User`` JSON and signed initData."""

    def __init__(self, uid: int, name: str, token: str) -> None:
        self.id = uid
        self.name = name
        self.token = token
        self.tg = {"id": uid, "is_bot": False, "first_name": name, "language_code": "en",
                   "username": f"{name.lower()}_{uid}"}
        self.seat: str | None = None

    def init_data(self, table: str | None = None) -> str:
        user = {k: v for k, v in self.tg.items() if k != "is_bot"}
        extra: dict[str, Any] = {"chat_instance": "-4815162342", "chat_type": "supergroup"}
        if table:
            extra["start_param"] = table
        return sign_init_data(self.token, user, **extra)


# ------------------------------------------------------------------------------------ the test
async def test_prsi_match_end_to_end(redis_url: str) -> None:
    pytest.importorskip("webapp.app")
    pytest.importorskip("bot.app")
    pytest.importorskip("store")
    async_playwright = pytest.importorskip("playwright.async_api").async_playwright
    import aiohttp
    import redis.asyncio as aredis

    url = redis_db_url(redis_url, E2E_DB)
    probe = aredis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        await probe.ping()
    except Exception:
        await probe.aclose()
        pytest.skip(f"no Redis at {url}")

    fb = _fake_api_module()
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / "service.log"
    log.write_bytes(b"")
    prefix = f"karty-e2e-{uuid.uuid4().hex[:8]}"
    secret = "e2e-" + uuid.uuid4().hex
    api = fb.FakeBotAPI()
    await api.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WS_", "ACTION_", "RATE_"))}
    env.update({
        "BOT_TOKEN": api.token, "BOT_USERNAME": api.username, "WEBAPP_SHORT_NAME": "play",
        "PUBLIC_URL": base, "WEBHOOK_URL": f"{base}/telegram/webhook", "WEBHOOK_PATH": "/telegram/webhook",
        "WEBHOOK_SECRET": secret, "TELEGRAM_API_URL": api.url, "REDIS_URL": url, "KARTY_PREFIX": prefix,
        "HOST": "127.0.0.1", "PORT": str(port), "LOCAL_PLAY": "false", "PYTHONUNBUFFERED": "1",
        "LOBBY_EDIT_DELAY": "0.2",
    })
    service = Service(env, port, log)
    run_id = int(uuid.uuid4().int % 10**8)
    anna, boris, cyril = (Player(7_000_000_000 + run_id * 10 + i, name, api.token)
                          for i, name in enumerate(("Anna", "Boris", "Cyril"), 1))
    players = [anna, boris, cyril]
    group = {"id": -1_000_000_000_000 - run_id, "type": "supergroup", "title": "Karty e2e"}
    update_ids = itertools.count(run_id * 1000)  # Telegram's ids only grow; the bot drops repeats
    browser = None
    http = aiohttp.ClientSession()
    try:
        service.start()
        await service.ready(http)
        await api.wait_for(lambda: api.calls_of("setWebhook"), timeout=10)
        hook = api.calls_of("setWebhook")[-1].params
        assert hook["url"] == f"{base}/telegram/webhook" and hook.get("secret_token") == secret

        async def post_update(update: dict[str, Any]) -> None:
            update["update_id"] = next(update_ids)
            async with http.post(f"{base}/telegram/webhook", json=update,
                                 headers={"X-Telegram-Bot-Api-Secret-Token": secret}) as r:
                assert r.status == 200, f"webhook answered {r.status}"

        # A forged update (no or a wrong secret) is refused.
        async with http.post(f"{base}/telegram/webhook", json=fb.message_update("/new prsi", user=anna.tg,
                                                                                  chat=group)) as r:
            assert r.status in (401, 403)

        # ---- the lobby, through the webhook -------------------------------------------------
        for p in players:  # each has pressed Start in the bot's private chat once
            await post_update(fb.message_update("/start", user=p.tg))
        await api.settle(quiet=0.4)
        await post_update(fb.message_update("/new prsi", user=anna.tg, chat=group))

        def lobby_call():
            for c in api.sent_messages(group["id"]):
                if any(str(b.get("callback_data", "")).startswith("lb:") for b in c.buttons()):
                    return c
            return None

        lobby = await api.wait_for(lobby_call, timeout=10)
        lobby_msg_id = 1000 + api.sent_messages(group["id"]).index(lobby)
        datas = {b["callback_data"].rsplit(":", 1)[1]: b["callback_data"]
                 for b in lobby.buttons() if str(b.get("callback_data", "")).startswith("lb:")}
        assert {"join", "start"} <= set(datas), datas
        lobby_message = {"message_id": lobby_msg_id, "date": int(time.time()), "chat": group, "text": lobby.text,
                         "from": {"id": api.bot_id, "is_bot": True, "first_name": "Karty",
                                  "username": api.username}}
        for p in (boris, cyril):
            await post_update(fb.callback_update(datas["join"], user=p.tg, message=lobby_message))
            await asyncio.sleep(0.3)
        await api.settle(quiet=0.5)
        await post_update(fb.callback_update(datas["start"], user=anna.tg, message=lobby_message))

        def start_call():
            for c in api.sent_messages(group["id"]):
                if "begins" in (c.text or ""):
                    return c
            return None

        start = await api.wait_for(start_call, timeout=15)
        assert all(p.name in start.text for p in players), start.text
        table_id = await api.wait_for(lambda: _table_link(api, group["id"]), timeout=10)

        # ---- seats and the HTTP API ------------------------------------------------------------
        async def api_call(p: Player, method: str, path: str, body: Any = None) -> tuple[int, Any]:
            headers = {"Authorization": f"tma {p.init_data(table_id)}"}
            for _ in range(20):
                async with http.request(method, f"{base}{path}", json=body, headers=headers) as r:
                    data = await r.json(content_type=None)
                    if r.status == 429:
                        await asyncio.sleep(0.5)
                        continue
                    return r.status, data
            raise AssertionError(f"{path}: still rate limited")

        async def table_view(p: Player) -> dict[str, Any]:
            status, data = await api_call(p, "GET", f"/api/tables/{table_id}")
            assert status == 200, (status, data)
            p.seat = data["seat"]
            return data["view"]

        for p in players:
            await table_view(p)
        by_seat = {p.seat: p for p in players}
        assert len(by_seat) == 3 and None not in by_seat, by_seat

        actions = {"api": 0, "click": 0}

        async def api_move(p: Player) -> dict[str, Any]:
            view = await table_view(p)
            action = choose(view["legal"])
            status, data = await api_call(p, "POST", f"/api/tables/{table_id}/actions",
                                          {"action": action, "client_action_id": uuid.uuid4().hex,
                                           "version": view["version"]})
            assert status == 200, (status, data, action)
            actions["api"] += 1
            return data["view"]

        # ---- Anna's app is closed: when her turn comes, the bot tells her privately -----------
        view = await table_view(anna)
        while view["to_move"] != anna.seat:
            await api_move(by_seat[view["to_move"]])
            view = await table_view(anna)
        await api.wait_for(lambda: api.sent_messages(anna.id) and _turn_messages(api, anna.id), timeout=15)
        told_closed = len(_turn_messages(api, anna.id))

        # ---- Anna opens the Mini App (direct link inside Telegram) ----------------------------
        pw = await async_playwright().start()
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                           args=["--no-sandbox", "--disable-dev-shm-usage"])
        context = await browser.new_context(viewport={"width": 420, "height": 860}, locale="en-US")

        async def route_external(route):
            if route.request.url.startswith("https://telegram.org/js/telegram-web-app.js"):
                await route.fulfill(status=200, content_type="application/javascript", body=TG_STAND_IN)
            else:
                await route.abort()

        await context.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), route_external)
        page = await context.new_page()
        page_errors: list[str] = []
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        hash_part = urlencode({"tgWebAppData": anna.init_data(table_id), "tgWebAppVersion": "8.0",
                               "tgWebAppPlatform": "tdesktop"}, quote_via=quote)
        await page.goto(f"{base}/?tgWebAppStartParam={table_id}#{hash_part}")
        await page.wait_for_selector(".table-screen", timeout=15000)
        await _page_at_version(page, view["version"])
        opened_at = time.monotonic()
        assert "ready" in await page.evaluate("window.__tg_calls"), "the app did not call Telegram.WebApp.ready()"

        async def click_move() -> None:
            view = await table_view(anna)
            await _page_at_version(page, view["version"])
            await _close_dialogs(page)
            action = choose(view["legal"])
            before = view["version"]
            if action["a"] == "play":
                await page.click(f'.hand button.card[data-card="{action["card"]}"]', timeout=5000)
                if action["card"].startswith("Q"):
                    suit = action.get("suit") or "h"
                    with contextlib.suppress(Exception):
                        await page.click(f"dialog[open] .suit-choice.suit-{suit}", timeout=2500)
            else:
                await page.click(f".btn.action.{action['a']}", timeout=5000)
            for _ in range(100):
                if (await table_view(anna))["version"] > before:
                    actions["click"] += 1
                    return
                await asyncio.sleep(0.1)
            raise AssertionError(f"the click on {action} did not reach the server")

        # ---- the match: Anna clicks, Boris and Cyril use the API; a crash midway --------------
        killed_at: tuple[float, float] | None = None
        rounds_seen = set()
        for _ in range(3000):
            view = await table_view(anna)
            if view["over"]:
                break
            rounds_seen.add(view["round"])
            if killed_at is None and view["round"] >= 3:
                # SIGKILL mid-match, then start again: the game continues from Redis.
                version = view["version"]
                t0 = time.monotonic()
                service.kill()
                service.start()
                await service.ready(http)
                killed_at = (t0, time.monotonic())
                view = await table_view(anna)
                assert view["version"] == version, "the restart lost or invented moves"
                # The page reconnects by itself and gets the next move over the WebSocket.
                mover = by_seat[view["to_move"]]
                if mover is anna:
                    await click_move()
                else:
                    await api_move(mover)
                await _page_at_version(page, (await table_view(anna))["version"], timeout=30)
                continue
            if view["to_move"] == anna.seat:
                await click_move()
            else:
                await api_move(by_seat[view["to_move"]])
        else:
            raise AssertionError("the match did not end")
        closed_at = time.monotonic()
        assert killed_at is not None, "the match ended before the restart"
        final = await table_view(anna)
        assert final["over"] and final["balances"], final
        await _page_at_version(page, final["version"])
        await page.screenshot(path=str(OUT / "prsi-final.png"))
        assert actions["click"] >= 5, actions

        # ---- the group: start, every round's result, the final table ---------------------------
        def group_texts() -> list[str]:
            return [c.text or "" for c in api.sent_messages(group["id"])]

        def results_in():
            texts = group_texts()
            rounds = [t for t in texts if re.search(r"round \d/5 is over", t)]
            final_t = [t for t in texts if "final table" in t]
            return (rounds, final_t) if len(rounds) >= 5 and final_t else None

        rounds, final_t = await api.wait_for(results_in, timeout=90)
        assert sorted({int(re.search(r"round (\d)/5", t).group(1)) for t in rounds}) == [1, 2, 3, 4, 5]
        for p in players:
            assert p.name in final_t[-1]
            assert f"({final['balances'][p.seat]:+d})" in final_t[-1], (final_t[-1], final["balances"])

        # ---- "your turn" only while the app is closed ------------------------------------------
        grace = 3.0  # a turn message already queued when the app opened may still go out
        open_turns = [c for c in _turn_messages(api, anna.id)
                      if opened_at + grace < c.ts < closed_at
                      and not (killed_at[0] - 1 < c.ts < killed_at[1] + grace)]
        assert told_closed >= 1
        assert not open_turns, [(c.ts - opened_at, c.text) for c in open_turns]
        for p in (boris, cyril):
            assert _turn_messages(api, p.id), f"{p.name} (app never open) was never told it was their turn"

        # ---- /rating afterwards ----------------------------------------------------------------
        for p in players:
            mark = time.monotonic()
            await post_update(fb.message_update("/rating", user=p.tg))

            def rating_reply(p=p, mark=mark):
                return [c for c in api.sent_messages(p.id) if c.ts > mark and "Rating" in (c.text or "")]

            reply = (await api.wait_for(rating_reply, timeout=15))[-1].text
            balance = final["balances"][p.seat]
            place = final["places"][p.seat]
            assert f"{balance:+d} ({place}.)" in reply, (p.name, balance, place, reply)

        # ---- the log ---------------------------------------------------------------------------
        await asyncio.sleep(0.5)
        errors = [line for line in log.read_text(errors="replace").splitlines() if " ERROR " in line]
        assert not errors, errors[:10]
        assert not page_errors, page_errors
        (OUT / "summary.json").write_text(json.dumps({
            "table": table_id, "version": final["version"], "actions": actions,
            "rounds_seen": sorted(rounds_seen), "restarted_after_s": round(killed_at[0] - opened_at, 1),
            "balances": final["balances"], "turn_messages": {p.name: len(_turn_messages(api, p.id)) for p in players},
            "group_messages": len(group_texts()),
        }, indent=1))
    finally:
        with contextlib.suppress(Exception):  # every Bot API call, for reading after a failure
            (OUT / "bot_calls.json").write_text(json.dumps(
                [{"method": c.method, "params": c.params, "ts": c.ts, "status": c.status} for c in api.calls],
                ensure_ascii=False, indent=1, default=str))
        with contextlib.suppress(Exception):
            await page.screenshot(path=str(OUT / "prsi-last.png"))  # type: ignore[possibly-undefined]
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
            with contextlib.suppress(Exception):
                await pw.stop()  # type: ignore[possibly-undefined]
        service.stop()
        await http.close()
        await api.stop()
        with contextlib.suppress(Exception):
            if os.environ.get("E2E_KEEP"):  # debugging: leave the keys for a look
                raise RuntimeError
            # Our prefix; and the default one, should the service not honour KARTY_PREFIX
            # (this database is the end-to-end test's own).
            for pattern in (f"{prefix}*", "karty:*"):
                async for key in probe.scan_iter(match=pattern, count=500):
                    await probe.delete(key)
        await probe.aclose()


def _table_link(api, chat_id: int) -> str | None:
    """The table id from a group message's button (``startapp=<id>`` or ``?table=<id>``)."""
    for c in api.calls_of("sendMessage", "editMessageText", "editMessageReplyMarkup", chat_id=chat_id):
        for b in c.buttons():
            link = b.get("url") or (b.get("web_app") or {}).get("url") or ""
            q = parse_qs(urlparse(link).query)
            for key in ("startapp", "table"):
                if q.get(key):
                    return q[key][0]
    return None


def _turn_messages(api, user_id: int) -> list:
    return [c for c in api.sent_messages(user_id) if "Your turn" in (c.text or "")]


async def _page_at_version(page, version: int, timeout: float = 10) -> None:
    """Wait until the Mini App shows ``version`` (or newer) of the table."""
    await page.wait_for_function(
        "v => (window.__karty && window.__karty.state.view && window.__karty.state.view.version >= v)",
        arg=version, timeout=timeout * 1000)


async def _close_dialogs(page) -> None:
    """Dismiss a round-result dialog or toast that would sit over the hand."""
    for _ in range(3):
        if not await page.locator("dialog[open]").count():
            return
        buttons = page.locator("dialog[open] button")
        if await buttons.count():
            await buttons.last.click(timeout=2000)
        else:
            await page.keyboard.press("Escape")
        await asyncio.sleep(0.1)
