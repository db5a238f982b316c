"""The entry point (webapp/__main__.py): local play on an embedded Redis, the bot mounted."""

from __future__ import annotations

import asyncio
import json
import socket
import sys

import aiohttp
import pytest

from store.embedded import EmbeddedRedis, redis_answers
from webapp.__main__ import build
from webapp.settings import WebSettings

# Only stops a start that hangs: on a machine saturated by other work, importing the
# service alone took 82 s of wall clock (5 s of CPU), so this is no speed bound.
STARTUP_GUARD = 300


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_embedded_redis_answers():
    server = EmbeddedRedis().start()
    try:
        assert await redis_answers(server.url)
    finally:
        server.stop()
    assert not await redis_answers(f"redis://127.0.0.1:{closed_port()}/0", timeout=0.5)


async def test_s9_local_play_end_to_end_on_embedded_redis(aiohttp_client):
    """S9: no Redis, no token: sign in, open a Prší table with computers, watch them play."""
    settings = WebSettings(
        redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=True, bot_token=None, run_worker=True
    )
    client = await aiohttp_client(await build(settings))
    assert (await (await client.get("/api/config")).json())["local"] is True
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    headers = {"Authorization": f"tma {login['init_data']}"}
    resp = await client.post("/api/local/tables", json={"game": "prsi", "players": 3}, headers=headers)
    assert resp.status == 201
    made = await resp.json()
    me = made["seat"]

    ws = await client.ws_connect(f"/ws/tables/{made['table']['id']}")
    await ws.send_str(json.dumps({"type": "auth", "init_data": login["init_data"]}))
    bys: set[str] = set()
    version = made["version"]
    deadline = asyncio.get_running_loop().time() + 20
    while "computer" not in bys or "player" not in bys:
        assert asyncio.get_running_loop().time() < deadline, bys
        msg = json.loads((await ws.receive(timeout=10)).data)
        if msg["type"] != "state":
            continue
        assert msg["version"] >= version
        version = msg["version"]
        if msg["by"]:
            bys.add(msg["by"])
        view = msg["view"]
        if view["to_move"] == me and view["legal"] and not view["over"]:
            action = view["legal"][0]
            resp = await client.post(
                f"/api/tables/{made['table']['id']}/actions",
                json={"action": action, "version": msg["version"]},
                headers=headers,
            )
            assert resp.status in (200, 409), await resp.text()
    await ws.close()


async def test_no_redis_without_local_play_refuses_to_start():
    settings = WebSettings(redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=False, bot_token=None)
    with pytest.raises(SystemExit):
        await build(settings)


async def test_bot_is_mounted_with_a_token(aiohttp_client, fake_bot_api, redis_url):
    from conftest import real_redis_answers

    from bot import BotSettings

    if not real_redis_answers(redis_url):
        pytest.skip("needs a Redis")
    settings = WebSettings(redis_url=redis_url, bot_token=fake_bot_api.token, local_play=True, run_worker=False)
    bot_settings = BotSettings(
        bot_token=fake_bot_api.token,
        telegram_api_url=fake_bot_api.url,
        webhook_url="https://karty.example/telegram/webhook",
    )
    app = await build(settings, bot_settings)
    client = await aiohttp_client(app)
    paths = {r.resource.canonical for r in app.router.routes() if r.resource is not None}
    assert "/telegram/webhook" in paths
    cfg = await (await client.get("/api/config")).json()
    assert cfg["local"] is False and cfg["bot_username"] == fake_bot_api.username
    assert (await client.post("/api/local/login", json={"name": "X"})).status == 404
    # the webhook refuses a request without Telegram's secret header
    resp = await client.post("/telegram/webhook", json={"update_id": 1})
    assert resp.status in (401, 403)


@pytest.mark.slow
async def test_python_m_webapp_local_prints_the_url_and_serves(tmp_path):
    port = closed_port()
    env = {
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
        "PATH": "/usr/bin:/bin",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "webapp", "--local",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        line = b""
        async with asyncio.timeout(STARTUP_GUARD):
            while url.encode() not in line:
                line = await proc.stdout.readline()
                assert line, "server exited"
        async with aiohttp.ClientSession() as session, session.get(url + "api/config") as resp:
            assert (await resp.json())["local"] is True
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 20)


async def test_the_server_keeps_its_keys_under_karty_prefix(aiohttp_client, monkeypatch):
    """README/CONTRACTS: KARTY_PREFIX prefixes every key (several deployments on one Redis)."""
    from webapp.keys import STORE

    monkeypatch.setenv("KARTY_PREFIX", "karty-other")
    settings = WebSettings(redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=True, bot_token=None,
                           run_worker=False)
    client = await aiohttp_client(await build(settings))
    store = client.app[STORE]
    assert store.keys.prefix == "karty-other"
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    resp = await client.post("/api/local/tables", json={"game": "prsi", "players": 2},
                             headers={"Authorization": f"tma {login['init_data']}"})
    assert resp.status == 201
    keys = [k async for k in store.redis.scan_iter(match="*")]
    assert keys and all(k.startswith("karty-other:") for k in keys), keys


def test_the_redis_url_is_logged_without_its_password():
    from webapp.__main__ import _safe

    assert _safe("redis://:s3cret@db:6379/0") == "redis://:***@db:6379/0"
    assert _safe("rediss://user:s3cret@db:6380/1") == "rediss://user:***@db:6380/1"
    assert _safe("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


async def test_local_table_computer_levels(aiohttp_client):
    """Issue 14: the local lobby picks the computers' level (default regular), per seat if listed."""
    settings = WebSettings(
        redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=True, bot_token=None, run_worker=False
    )
    client = await aiohttp_client(await build(settings))
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    headers = {"Authorization": f"tma {login['init_data']}"}

    async def levels(body: dict) -> list:
        resp = await client.post("/api/local/tables", json=body, headers=headers)
        assert resp.status == 201, await resp.text()
        return [s.get("level") for s in (await resp.json())["table"]["seats"]]

    assert await levels({"game": "penki", "players": 3}) == [None, "regular", "regular"]
    assert await levels({"game": "prsi", "players": 3, "level": "expert"}) == [None, "expert", "expert"]
    assert await levels({"game": "penki", "players": 4, "level": "beginner", "levels": ["expert"]}) == [
        None, "expert", "beginner", "beginner"]
    resp = await client.post("/api/local/tables", json={"game": "prsi", "level": "god"}, headers=headers)
    assert resp.status == 400


def _serve_and_read_log(env_extra: dict[str, str]) -> str:
    """``python -m webapp --local`` with ``env_extra``: a few requests, stopped; what it printed."""
    import os
    import subprocess
    import time
    import urllib.request

    port = closed_port()
    env = {k: v for k, v in os.environ.items() if k not in ("BOT_TOKEN", "LOG_LEVEL", "ACCESS_LOG")}
    env.update(REDIS_URL=f"redis://127.0.0.1:{closed_port()}/0", **env_extra)
    proc = subprocess.Popen([sys.executable, "-m", "webapp", "--local", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_GUARD
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/config", timeout=2):
                    break
            except OSError:
                time.sleep(0.2)
        for path in ("", "main.js", "style.css", "api/config"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=10) as r:
                r.read()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    return out.decode("utf-8", "replace")


def test_local_play_logs_no_line_per_request_unless_asked() -> None:
    """Issue 25: `make run` prints its URL and what matters, not a line per file; ACCESS_LOG=1
    brings the access log back, LOG_LEVEL is honoured."""
    quiet = _serve_and_read_log({})
    assert "Karty (local play) at http://" in quiet
    assert "no Redis at" in quiet  # a WARNING: the default level (INFO) shows it
    assert "GET /main.js" not in quiet and '"GET /' not in quiet
    asked = _serve_and_read_log({"ACCESS_LOG": "1", "LOG_LEVEL": "ERROR"})
    assert "GET /main.js" in asked and "GET /api/config" in asked
    assert "no Redis at" not in asked  # below ERROR
