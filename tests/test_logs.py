"""Logs (issue 26, :mod:`webapp.logs`): JSON lines with the request's ids, secrets redacted,
a repeated failure logged once with a count per interval, the access log off in local play.

The outage test is real: the app on a ``redis-server`` of the test's own (a free loopback
port, a temporary directory), which is then stopped (SIGKILL) while the worker keeps
ticking; the log written meanwhile is read back.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import shutil
import signal
import subprocess
import time

import aiohttp
import pytest
from ops_support import LocalService, free_port

from webapp import logs

REDIS_SERVER = shutil.which("redis-server")


@pytest.fixture
def captured():
    """The root logger on :func:`webapp.logs.setup` into a buffer; the old handlers back after."""
    root = logging.getLogger()
    old_handlers, old_level = list(root.handlers), root.level
    buffers: list[io.StringIO] = []

    def make(fmt: str = "json", interval: float = 60.0) -> tuple[io.StringIO, logging.Handler]:
        buf = io.StringIO()
        buffers.append(buf)
        return buf, logs.setup("INFO", fmt, repeat_interval=interval, stream=buf)

    yield make
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in old_handlers:
        root.addHandler(h)
    root.setLevel(old_level)


def lines(buf: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


def test_json_lines_carry_the_bound_ids_and_never_init_data_or_tokens(captured) -> None:
    buf, _ = captured("json")
    log = logging.getLogger("karty.test")
    token = logs.bind(table="T42x", user=777)
    try:
        log.warning("auth header %s refused", "tma query_id=AAH&user=%7B%7D&auth_date=1&hash=abcdef0123")
        log.info("bot 123456789:AAHdF6IQ0123456789abcdefghijklmnopqrs answered; init_data=user%3D1&hash=ff")
        log.info("scrape with Bearer s3cret-metrics-token", extra={"update": 99})
        try:
            raise ValueError("initData tgWebAppData=query_id%3DX&hash=0a1b in the error")
        except ValueError:
            log.exception("failed")
    finally:
        logs.unbind(token)
    log.info("unbound")
    got = lines(buf)
    assert [g["level"] for g in got] == ["WARNING", "INFO", "INFO", "ERROR", "INFO"]
    assert all(g["logger"] == "karty.test" and g["ts"].endswith("Z") for g in got)
    assert got[0]["table"] == "T42x" and got[0]["user"] == 777
    assert got[2]["update"] == 99
    assert "table" not in got[4] and "user" not in got[4]
    assert got[3]["error"].startswith("ValueError") and "Traceback" in got[3]["traceback"]
    text = buf.getvalue()
    for secret in ("query_id=AAH", "hash=abcdef", "AAHdF6IQ0123456789", "user%3D1", "s3cret-metrics-token",
                   "query_id%3DX", "0a1b"):
        assert secret not in text, secret
    assert text.count("[redacted") >= 5


def test_a_failure_repeated_73_times_is_one_traceback_and_a_count(captured) -> None:
    now = [1000.0]
    buf, handler = captured("text", interval=60.0)
    repeats = next(f for f in handler.filters if isinstance(f, logs.Repeats))
    repeats.clock = lambda: now[0]
    log = logging.getLogger("store.worker")
    for _ in range(73):  # a Redis outage: 73 failed ticks in 26 s
        try:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        except ConnectionError:
            log.exception("worker tick failed")
        now[0] += 26 / 73
    text = buf.getvalue()
    assert text.count("Traceback") == 1 and text.count("worker tick failed") == 1
    now[0] += 60  # the interval is over: the next record (any) writes the count held back
    logging.getLogger("other").info("later")
    text = buf.getvalue()
    assert "worker tick failed [ConnectionError: Error 111" in text
    assert "(and 72 like it in the last 60 s)" in text
    assert text.count("Traceback") == 1
    # it comes back after the interval: logged once more, with the count of the new interval
    for _ in range(3):
        try:
            raise ConnectionError("refused")
        except ConnectionError:
            log.exception("worker tick failed")
    assert buf.getvalue().count("Traceback") == 2
    # a different failure is its own
    log.error("follow-up of table %s version %s failed", "T1", 3)
    log.error("follow-up of table %s version %s failed", "T2", 4)
    assert buf.getvalue().count("follow-up of table") == 1


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
async def test_a_redis_outage_logs_a_traceback_once_per_place_not_once_per_failure(captured, aiohttp_client,
                                                                                    tmp_path, monkeypatch) -> None:
    from webapp.__main__ import build
    from webapp.settings import WebSettings

    port = free_port()
    redis = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path),
                              "--save", "", "--appendonly", "no", "--daemonize", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        buf, handler = captured("text", interval=60.0)
        repeats = next(f for f in handler.filters if isinstance(f, logs.Repeats))
        url = f"redis://127.0.0.1:{port}/0"
        from store.embedded import redis_answers

        for _ in range(200):
            if await redis_answers(url):
                break
            await asyncio.sleep(0.05)
        monkeypatch.setenv("REDIS_TIMEOUT", "0.5")
        settings = WebSettings(redis_url=url, local_play=True, bot_token=None, run_worker=True)
        client = await aiohttp_client(await build(settings))
        assert (await client.get("/healthz")).status == 200
        redis.send_signal(signal.SIGKILL)
        redis.wait(10)
        deadline = time.monotonic() + 120  # a hang guard: the worker ticks every 0.2 s
        while sum(seen[1] for seen in repeats._seen.values()) < 30:
            assert time.monotonic() < deadline, buf.getvalue()[-3000:]
            await asyncio.sleep(0.1)
        held = sum(seen[1] for seen in repeats._seen.values())
        text = buf.getvalue()
        tracebacks = text.count("Traceback")
        assert tracebacks <= 3, text[-5000:]  # one per failing place (the worker's tick, its sweep, …)
        assert held >= 30  # … while at least 30 more failures were counted, not written
    finally:
        if redis.poll() is None:
            redis.kill()
            redis.wait(10)


async def test_the_access_log_is_off_in_local_play_and_switched_on_by_access_log(tmp_path) -> None:
    async def run(env: dict[str, str], name: str) -> str:
        svc = LocalService(free_port(), tmp_path / f"{name}.log",
                           {"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", **env})  # embedded fakeredis
        svc.start()
        try:
            async with aiohttp.ClientSession() as http:
                await svc.ready(http)
                async with http.get(f"{svc.base}/api/config") as r:
                    assert r.status == 200
        finally:
            svc.stop()
        return svc.log.read_text(errors="replace")

    quiet = await run({}, "default")
    assert "GET /api/config" not in quiet and "/healthz" not in quiet
    loud = await run({"ACCESS_LOG": "1", "LOG_FORMAT": "json"}, "json")
    records = [json.loads(line) for line in loud.splitlines() if line.startswith("{")]
    access = [r for r in records if r["logger"] == "aiohttp.access" and "GET /api/config" in r["msg"]]
    assert access and access[0]["status"] == 200 and access[0]["remote"] == "127.0.0.1", loud[-3000:]
    assert all({"ts", "level", "logger", "msg"} <= set(r) for r in records)
