"""The access log (webapp/accesslog.py): what a client sends in its headers is escaped, so a
line of the log is always one line (issue 27.5)."""

from __future__ import annotations

import asyncio
import logging
import socket

from aiohttp import web

from webapp.accesslog import AccessLog, escape

FORGED = ["\x85", "\u2028", "\u2029", "\x1b[31m", "\x00", "\x7f"]


def test_escape_keeps_printable_text_and_escapes_the_rest():
    assert escape("Mozilla/5.0 (Ä ř ж)") == "Mozilla/5.0 (Ä ř ж)"
    assert escape("a\x85b\u2028c\u2029d\udc85") == "a\\x85b\\u2028c\\u2029d\\udc85"
    for forged in FORGED:
        assert len(escape(f"x{forged}y").splitlines()) == 1 and escape(f"x{forged}y").isprintable()


async def test_header_values_that_end_a_line_are_logged_escaped(caplog):
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hi")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log_class=AccessLog)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    port = sock.getsockname()[1]
    agent = "ok\u2028127.0.0.1 [forged] \"GET /admin\" 200\x85 again".encode() + b" raw\x85byte"
    try:
        with caplog.at_level(logging.INFO, logger="aiohttp.access"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: " + agent + b"\r\nReferer: a\xe2\x80\xa8b\r\n"
                         b"Connection: close\r\n\r\n")
            await writer.drain()
            answer = await reader.read()
            writer.close()
            assert answer.startswith(b"HTTP/1.1 200")
            for _ in range(100):
                if any(r.name == "aiohttp.access" for r in caplog.records):
                    break
                await asyncio.sleep(0.01)
    finally:
        await runner.cleanup()
    [record] = [r for r in caplog.records if r.name == "aiohttp.access"]
    line = record.getMessage()
    assert len(line.splitlines()) == 1 and line.isprintable(), repr(line)
    assert "ok\\u2028127.0.0.1 [forged]" in line and "200\\x85 again" in line and "raw\\udc85byte" in line and "a\\u2028b" in line
    assert all(v.isprintable() for v in record.request_header.values())
