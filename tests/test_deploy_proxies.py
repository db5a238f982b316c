"""deploy/nginx.conf and deploy/Caddyfile route a table's sockets and moves to one process,
chosen by the table's id, and serve the Mini App compressed with the service's cache headers.

The shipped files themselves, run by the real nginx and Caddy (each skipped where it is not
installed: Karty does not need them, only this check of its deployment files): their
upstreams pointed at four small aiohttp servers on free loopback ports that answer which one
they are, TLS taken out (no certificate here), the proxy started by process id and stopped so.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
CADDY = shutil.which("caddy")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def backend(index: int) -> tuple[web.AppRunner, int]:
    async def who(request: web.Request) -> web.Response:
        return web.json_response({"process": index, "path": request.path})

    async def ws(request: web.Request) -> web.WebSocketResponse:
        sock = web.WebSocketResponse()
        await sock.prepare(request)
        await sock.send_json({"process": index})
        await sock.close()
        return sock

    app = web.Application()
    app.router.add_get("/ws/tables/{id}", ws)
    app.router.add_route("*", "/{tail:.*}", who)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


async def asset_backend(assets) -> tuple[web.AppRunner, int]:
    """The service's own static serving (a ``webapp.assets.Assets``) and a plain JSON API answer."""

    async def static(request: web.Request) -> web.StreamResponse:
        asset = assets.get(request.match_info.get("path") or "index.html")
        if asset is None:
            raise web.HTTPNotFound()
        return assets.response(request, asset)

    async def api(request: web.Request) -> web.Response:
        return web.json_response({"rows": [{"name": f"player {i}", "points": i} for i in range(200)]},
                                 headers={"Cache-Control": "no-store"})

    app = web.Application()
    app.router.add_get("/api/config", api)
    app.router.add_get("/api/leaderboard", api)
    app.router.add_get("/", static)
    app.router.add_get("/{path:.+}", static)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port


def nginx(tmp: Path, ports: list[int], listen: int) -> list[str]:
    """deploy/nginx.conf on these ports (TLS out), in an nginx of its own under ``tmp``: its command."""
    text = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    for i, port in enumerate(ports):
        text = text.replace(f"127.0.0.1:{8080 + i}", f"127.0.0.1:{port}")
    text = re.sub(r"listen 443 ssl http2;.*", f"listen 127.0.0.1:{listen};", text)
    text = re.sub(r"listen \[::\]:\d+.*|^\s*ssl_\w+.*$", "", text, flags=re.M)
    text = re.sub(r"listen 80;", f"listen 127.0.0.1:{free_port()};", text)
    (tmp / "karty.conf").write_text(text, encoding="utf-8")
    main = tmp / "nginx.conf"
    main.write_text(f"""daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  include {tmp}/karty.conf;
}}
""", encoding="utf-8")
    check = subprocess.run([NGINX, "-t", "-p", str(tmp), "-c", str(main)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    return [NGINX, "-p", str(tmp), "-c", str(main)]


def caddy(tmp: Path, ports: list[int], listen: int) -> list[str]:
    """deploy/Caddyfile on these ports, served over plain HTTP on ``listen``: its command."""
    text = (ROOT / "deploy" / "Caddyfile").read_text(encoding="utf-8")
    for i, port in enumerate(ports):
        text = text.replace(f"127.0.0.1:{8080 + i}", f"127.0.0.1:{port}")
    text = "{\n\tadmin off\n}\n" + text.replace("karty.example.com {", f"http://:{listen} {{\n\tbind 127.0.0.1")
    (tmp / "Caddyfile").write_text(text, encoding="utf-8")
    return [CADDY, "run", "--config", str(tmp / "Caddyfile"), "--adapter", "caddyfile"]


PROXIES = {
    "nginx": pytest.param(nginx, marks=pytest.mark.skipif(NGINX is None, reason="nginx is not installed")),
    "caddy": pytest.param(caddy, marks=pytest.mark.skipif(CADDY is None, reason="caddy is not installed")),
}


def start_proxy(proxy, tmp_path: Path, ports: list[int], listen: int) -> subprocess.Popen:
    command = proxy(tmp_path, ports, listen)
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def stop_proxy(proxy, proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGQUIT if proxy is nginx else signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def until_up(http: aiohttp.ClientSession, base: str) -> None:
    for _ in range(400):  # until the proxy listens and has found its upstreams healthy
        try:
            async with http.get(f"{base}/api/config") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientConnectionError:
            pass
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("proxy", list(PROXIES.values()), ids=list(PROXIES))
async def test_the_mini_app_is_served_compressed_with_the_services_cache_headers(proxy, tmp_path) -> None:
    """Through the proxy: the service's precompressed br/gzip bodies and cache headers pass
    untouched (a year immutable at ?v=, index.html no-cache and 304 on its ETag), and the
    JSON the service sends plain is compressed by the proxy."""
    import brotli

    from webapp.app import STATIC_DIR
    from webapp.assets import Assets

    assets = Assets(STATIC_DIR)
    started = [await asset_backend(assets) for _ in range(4)]
    listen = free_port()
    proc = start_proxy(proxy, tmp_path, [port for _, port in started], listen)
    base = f"http://127.0.0.1:{listen}"
    try:
        async with aiohttp.ClientSession(headers={"Host": "karty.example.com"}, auto_decompress=False) as http:
            await until_up(http, base)
            plain = assets.get("main.js").bodies[""]
            url = f"{base}/main.js?v={assets.versions['main.js']}"
            for accept, coding, decode in (("gzip, br", "br", brotli.decompress), ("gzip", "gzip", gzip.decompress)):
                async with http.get(url, headers={"Accept-Encoding": accept}) as r:
                    assert r.status == 200
                    assert r.headers["Content-Encoding"] == coding
                    assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable"
                    assert "Accept-Encoding" in r.headers.get("Vary", "")
                    body = await r.read()
                    assert body == assets.get("main.js").bodies[coding]  # the service's own, not recompressed
                    assert decode(body) == plain
            async with http.get(f"{base}/", headers={"Accept-Encoding": "gzip"}) as r:
                assert r.status == 200 and r.headers["Cache-Control"] == "no-cache"
                assert r.headers["Content-Encoding"] == "gzip"
                etag = r.headers["ETag"]
            async with http.get(f"{base}/", headers={"Accept-Encoding": "gzip", "If-None-Match": etag}) as r:
                assert r.status == 304
            async with http.get(f"{base}/api/leaderboard", headers={"Accept-Encoding": "gzip"}) as r:
                assert r.status == 200 and r.headers.get("Content-Encoding") in ("gzip", "zstd")
                assert r.headers["Cache-Control"] == "no-store"
                assert b"player 199" in gzip.decompress(await r.read())
    finally:
        stop_proxy(proxy, proc)
        for runner, _ in started:
            await runner.cleanup()


@pytest.mark.parametrize("proxy", list(PROXIES.values()), ids=list(PROXIES))
async def test_a_tables_sockets_and_moves_reach_one_process_chosen_by_its_id(proxy, tmp_path) -> None:
    started = [await backend(i) for i in range(4)]
    listen = free_port()
    proc = start_proxy(proxy, tmp_path, [port for _, port in started], listen)
    base = f"http://127.0.0.1:{listen}"
    try:
        async with aiohttp.ClientSession(headers={"Host": "karty.example.com"}) as http:
            await until_up(http, base)
            chosen: dict[str, int] = {}
            for n in range(24):
                table = f"T{n}x-{n * 7919}"
                seen = set()
                for _ in range(3):
                    async with http.get(f"{base}/api/tables/{table}") as r:
                        seen.add((await r.json())["process"])
                    async with http.post(f"{base}/api/tables/{table}/actions", json={}) as r:
                        seen.add((await r.json())["process"])
                    async with http.ws_connect(f"{base}/ws/tables/{table}") as ws:
                        seen.add((await ws.receive_json())["process"])
                assert len(seen) == 1, (table, seen)  # every request of the table on one process
                chosen[table] = seen.pop()
            assert len(set(chosen.values())) >= 3  # and the tables spread over the processes
    finally:
        stop_proxy(proxy, proc)
        for runner, _ in started:
            await runner.cleanup()
