"""Helpers for the browser tests (tests/test_browser*.py): a real webapp server as a
subprocess on a free port (local play, its Redis an embedded fakeredis the test owns,
so the server can be killed and started again without losing the games), and
headless Debian Chromium driven by Playwright's async API.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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


async def new_phone_page(browser, base_url: str, *, locale: str = "en-US"):
    """A fresh context (own sessionStorage) at phone size, opened at ``base_url``."""
    ctx = await browser.new_context(viewport=PHONE, device_scale_factor=2, locale=locale, has_touch=True, is_mobile=True)
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


async def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path))
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
