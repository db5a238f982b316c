"""Helpers of the operating tests (issue 26): ``python -m webapp --local`` as a process of its
own on a free loopback port, a local player signing in and making a move, promtool and
Prometheus found on the machine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
PROMTOOL = shutil.which("promtool")
PROMETHEUS = shutil.which("prometheus")
STARTUP_GUARD = 300  # only stops a start that hangs (a saturated machine imports slowly): no speed bound


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalService:
    """``python -m webapp --local`` (or ``args``) on ``port`` with ``env`` on top of a minimal environment;
    its output in ``log``. Stopped by its pid (SIGTERM, then SIGKILL)."""

    def __init__(self, port: int, log: Path, env: dict[str, str], args: tuple[str, ...] = ("--local",)) -> None:
        self.port = port
        self.args = list(args)
        self.base = f"http://127.0.0.1:{port}"
        self.log = log
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(log.parent), "HOST": "127.0.0.1", "PORT": str(port),
                    "PYTHONUNBUFFERED": "1", **env}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._fh = self.log.open("ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "webapp", *self.args], cwd=ROOT, env=self.env,
                                     stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True)

    async def ready(self, http: aiohttp.ClientSession) -> None:
        """Wait until ``/healthz`` answers 200 (the process serves and its Redis answers)."""
        deadline = time.monotonic() + STARTUP_GUARD
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text(errors="replace")[-3000:]
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with http.get(f"{self.base}/healthz") as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the service did not answer; see {self.log}")

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._fh.close()


async def local_player(http: aiohttp.ClientSession, base: str, name: str = "Tester") -> dict[str, str]:
    """Sign in to local play as ``name``: the ``Authorization`` header."""
    async with http.post(f"{base}/api/local/login", json={"name": name}) as r:
        assert r.status == 200, await r.text()
        login = await r.json()
    return {"Authorization": f"tma {login['init_data']}"}


async def local_table(http: aiohttp.ClientSession, base: str, headers: dict[str, str], game: str = "prsi",
                      players: int = 2) -> dict[str, Any]:
    """A local table against computers: ``POST /api/local/tables``'s answer."""
    async with http.post(f"{base}/api/local/tables", json={"game": game, "players": players},
                         headers=headers) as r:
        assert r.status == 201, await r.text()
        return await r.json()


async def play_one_move(http: aiohttp.ClientSession, base: str, headers: dict[str, str], table_id: str,
                        guard: float = 120.0) -> dict[str, Any]:
    """Wait for the player's turn (the computers move first when it is theirs) and POST a legal move."""
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        async with http.get(f"{base}/api/tables/{table_id}", headers=headers) as r:
            assert r.status == 200, await r.text()
            got = await r.json()
        view = got.get("view") or {}
        if view.get("to_move") == got.get("seat") and view.get("legal") and not view.get("over"):
            async with http.post(f"{base}/api/tables/{table_id}/actions", headers=headers,
                                 json={"action": view["legal"][0], "version": got["version"]}) as r:
                if r.status == 200:
                    return await r.json()
                assert r.status == 409, await r.text()  # a computer moved meanwhile: again
        await asyncio.sleep(0.1)
    raise AssertionError("the player's turn never came")


def sample_value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples ``name`` whose labels include ``labels``, in exposition ``text``."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


async def delete_prefix(url: str, prefix: str) -> None:
    """Remove every key under ``prefix`` (a test's own) from the Redis at ``url``."""
    import redis.asyncio as aredis

    r = aredis.Redis.from_url(url)
    try:
        keys = [k async for k in r.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await r.delete(*keys)
    finally:
        await r.aclose()


def environ_redis() -> str:
    return os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
