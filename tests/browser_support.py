"""Helpers and fixtures for the browser tests (tests/test_browser*.py): a real webapp server
as a subprocess on a free port (local play, its Redis an embedded fakeredis the test owns,
so the server can be killed and started again without losing the games), and headless
Debian Chromium driven by Playwright's async API.

Fixtures (import them into a test module by name; a module may override one, e.g. with
another scope or environment):

* ``embedded_redis`` — a private embedded fakeredis server (:class:`store.embedded.EmbeddedRedis`);
* ``server`` — :class:`Server` on it, started, stopped afterwards;
* ``kstore`` — a :class:`store.Store` on the server's Redis (same default prefix as the server);
* ``browser`` — headless Chromium (:func:`chromium`).

Helpers: :func:`person`, :func:`computer` (seats), :func:`new_phone_page`, :func:`sign_in`,
:func:`open_table` (signed in, at a table, toasts watched), :func:`view_of`,
:func:`wait_version_above`, :func:`screenshot`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import pytest_asyncio

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "test-output" / "screenshots"
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
PHONE = {"width": 390, "height": 844}


# ``python -m webapp`` with one change: the "does Redis answer?" probe waits 10 s instead
# of 1 s, so a busy test machine never makes it fall back to a private embedded Redis.
SERVER_MAIN = """
import webapp.__main__ as entry
import store.embedded as embedded
probe = embedded.redis_answers
async def patient(url, timeout=1.0):
    return await probe(url, timeout=10.0)
entry.redis_answers = patient
entry.main()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m webapp --local`` on a free port, against ``redis_url``.

    :meth:`start` waits until ``/api/config`` answers; :meth:`kill` ends the process
    (SIGKILL: a crash, not a goodbye); :meth:`start` again brings it back on the same port.
    """

    def __init__(self, redis_url: str, port: int | None = None, log_path: Path | None = None) -> None:
        self.redis_url = redis_url
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = log_path or (ROOT / "test-output" / f"webapp-{self.port}.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 300.0) -> Server:  # a hang guard: a saturated machine starts slowly
        env = dict(os.environ)
        env.update(
            {
                "REDIS_URL": self.redis_url,
                "LOCAL_PLAY": "1",
                "HOST": "127.0.0.1",
                "PORT": str(self.port),
                "WS_RESYNC_SECONDS": "0.5",
                "ACTION_RATE": "50",
                "ACTION_BURST": "100",
            }
        )
        env.pop("BOT_TOKEN", None)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_MAIN, "--local", "--port", str(self.port), "--log-level", "WARNING"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"webapp exited with {self.proc.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.url + "api/config", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"webapp did not answer on {self.url}; see {self.log_path}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


# The first-time hints count as seen (their first tap plays nothing: issue 25, point 1).
HINTS_SEEN = "for (const k of ['prsi', 'penki1', 'penki2']) localStorage.setItem('karty.hint.' + k, '1');"


async def new_phone_page(browser, base_url: str, *, locale: str = "en-US", reduced_motion: str | None = None,
                         hints: bool = False):
    """A fresh context (own sessionStorage) at phone size, opened at ``base_url``;
    ``reduced_motion="reduce"`` emulates ``prefers-reduced-motion: reduce``; the first-time
    hints count as seen (the tap that closes one plays nothing) unless ``hints=True``."""
    extra = {"reduced_motion": reduced_motion} if reduced_motion else {}
    ctx = await browser.new_context(viewport=PHONE, device_scale_factor=2, locale=locale, has_touch=True, is_mobile=True, **extra)
    if not hints:
        await ctx.add_init_script(script=HINTS_SEEN)
    page = await ctx.new_page()
    page.set_default_timeout(60000)  # a hang guard, not a speed bound: a saturated machine is slow
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.karty_errors = errors  # type: ignore[attr-defined]
    await page.goto(base_url)
    return page


async def sign_in(page, name: str) -> None:
    """The local sign-in screen: type a name, submit, wait for the lobby."""
    await page.fill("#name", name)
    await page.click("button[type=submit]")
    await page.wait_for_selector("#new-prsi")


async def view_of(page) -> dict:
    """The view the page shows now."""
    return await page.evaluate("() => window.__karty.state.view")


async def wait_version_above(page, version: int, timeout: float = 15.0) -> dict:
    """Wait until the page shows a version newer than ``version``; returns the view."""
    await page.wait_for_function(
        "v => window.__karty && window.__karty.state.version > v", arg=version, timeout=timeout * 1000
    )
    return await view_of(page)


async def screenshot(page, name: str, docs: bool = False) -> Path:
    """``test-output/screenshots/<name>.png``; with ``docs`` and ``KARTY_DOCS_SCREENSHOTS=1``
    also copied to ``docs/screenshots/`` (the screenshots the README and docs show)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path))
    if docs and os.environ.get("KARTY_DOCS_SCREENSHOTS"):
        DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_SCREENSHOTS / path.name)
    return path


@contextlib.asynccontextmanager
async def chromium():
    """Headless Debian Chromium (never a downloaded browser)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 10)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def embedded_redis():
    from store.embedded import EmbeddedRedis

    r = EmbeddedRedis().start()
    yield r
    r.stop()


@pytest.fixture
def server(embedded_redis, tmp_path: Path):
    srv = Server(embedded_redis.url, log_path=tmp_path / "webapp.log").start()
    yield srv
    srv.stop()


@pytest_asyncio.fixture
async def kstore(embedded_redis):
    """A Store on the server's Redis (same default prefix as the server)."""
    from store import Store

    st = Store.from_url(embedded_redis.url)
    yield st
    await st.close()


@pytest_asyncio.fixture
async def browser():
    async with chromium() as b:
        yield b


def module_fixtures(label: str, *, with_browser: bool = True) -> tuple:
    """``embedded_redis``, ``server`` (its log in a folder named ``label``) and, with
    ``with_browser``, ``browser``, each once for a whole test module instead of once per test:
    ``embedded_redis, server, browser = module_fixtures("phone")`` at a module's top level."""

    @pytest.fixture(scope="module", name="embedded_redis")
    def module_redis():
        from store.embedded import EmbeddedRedis

        r = EmbeddedRedis().start()
        yield r
        r.stop()

    @pytest.fixture(scope="module", name="server")
    def module_server(embedded_redis, tmp_path_factory):
        srv = Server(embedded_redis.url, log_path=tmp_path_factory.mktemp(label) / "webapp.log").start()
        yield srv
        srv.stop()

    if not with_browser:
        return module_redis, module_server

    @pytest.fixture(scope="module", name="browser")
    async def module_browser():
        async with chromium() as b:
            yield b

    return module_redis, module_server, module_browser


# --------------------------------------------------------------------------- seats and tables


def person(name: str):
    """The seat of a person signed in locally as ``name``."""
    from store import Seat
    from webapp.auth import local_user_id

    uid = local_user_id(name)
    return Seat(seat=f"u{uid}", user_id=uid, name=name)


def computer(i: int, name: str):
    """The seat of computer player ``c<i>``."""
    from store import Seat

    return Seat(seat=f"c{i}", user_id=None, name=name, computer=True)


# Every toast and banner the page shows, kept in window.__seen (kind, text), so a test
# can tell a refused tap (an error toast, "the table moved on") from a quiet success.
WATCH_TOASTS = """
() => {
  window.__seen = [];
  const box = document.getElementById('toasts');
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType === 1) window.__seen.push([n.className, n.textContent]);
    }
  }).observe(box, { childList: true });
}
"""


async def open_table(browser, server, name: str, table_id: str, **kw):
    """A phone page signed in as ``name`` showing table ``table_id``; its toasts are kept
    in ``window.__seen``, the statuses of its moves' answers in ``page.karty_action_statuses``
    (``page.karty_posted_moves``: the POSTed ones; ``page.karty_socket_moves``: those sent on the
    socket, 200 for an ``acted`` frame, a ``refused`` frame's status).
    ``kw`` goes to :func:`new_phone_page`."""
    page = await new_phone_page(browser, server.url, **kw)
    await sign_in(page, name)
    watch_moves(page)
    await page.goto(f"{server.url}?table={table_id}")
    await page.wait_for_selector(".table-screen")
    await page.evaluate(WATCH_TOASTS)
    return page


def watch_moves(page) -> None:
    """Keep the statuses of ``page``'s moves' answers (before its table's socket opens):
    ``page.karty_action_statuses`` all, ``page.karty_posted_moves`` the POSTed ones,
    ``page.karty_socket_moves`` those sent on the socket (200 for ``acted``, else the
    ``refused`` frame's status)."""
    actions: list[int] = []  # every move's answer: POSTed and on the socket
    posted: list[int] = []  # the statuses of the moves POSTed (when the socket was not serving)

    def answered(r) -> None:
        if r.request.method == "POST" and r.url.endswith("/actions"):
            actions.append(r.status)
            posted.append(r.status)

    page.on("response", answered)
    page.karty_action_statuses = actions  # type: ignore[attr-defined]
    page.karty_posted_moves = posted  # type: ignore[attr-defined]
    moves: list[int] = []  # the same statuses of the moves the page sent on its socket (act frames)

    def frame(payload) -> None:
        try:
            msg = json.loads(payload)
        except (TypeError, ValueError):
            return
        if isinstance(msg, dict) and msg.get("type") in ("acted", "refused"):
            status = 200 if msg["type"] == "acted" else int(msg["status"])
            moves.append(status)
            actions.append(status)

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    page.karty_socket_moves = moves  # type: ignore[attr-defined]
