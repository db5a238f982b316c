"""A live Karty service for fuzzing and leak tests: the real app on a real loopback socket.

:class:`LiveService` runs ``webapp.app.create_app`` with the bot mounted on its webhook
(``bot.setup_bot``, talking to a :class:`fake_bot_api.FakeBotAPI`) in an event loop of
its own thread, on a store over a private fakeredis server, listening on
``127.0.0.1:<free port>``. Tests drive it synchronously (``requests``, or an asyncio
loop of their own for WebSockets) while hypothesis draws the inputs, and read the
store through :meth:`LiveService.call`.

Also here: initData variants (valid, forged, foreign bot, expired, tampered …), the
store snapshot a rejected request must leave unchanged, and the checks every answer
must pass (no 5xx; an error body is ``{"error", "detail"}`` without tracebacks, keys,
tokens or paths).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Coroutine
from typing import Any
from urllib.parse import parse_qsl, urlencode

WEBHOOK_SECRET = "fuzz-webhook-secret"
OTHER_BOT_TOKEN = "987654321:AAForeignBot-token_abcdefghijklmnopq"

# What no answer, error text or log message may carry (internals of the process).
INTERNAL = re.compile(
    r"Traceback|File \"|\.py\b|/work/|site-packages|karty-test|fuzz-|\{g:|\{sched\}|redis\.|"
    r"Exception|Error\(|object at 0x|TEST-token|WebAppData",
)


class LogTrap(logging.Handler):
    """Collects every log record of the process (all threads) at WARNING and above."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock2:
            self.records.append(record)

    def problems(self) -> list[str]:
        """Errors logged (unhandled exceptions), and any message spanning lines (a forged log line)."""
        out = []
        with self._lock2:
            for r in self.records:
                msg = r.getMessage()
                if r.levelno >= logging.ERROR or r.exc_info:
                    out.append(f"{r.levelname} {r.name}: {msg[:300]}")
                elif "\n" in msg or "\r" in msg:
                    out.append(f"multi-line {r.name}: {msg[:300]!r}")
        return out


class LiveService:
    """The app (and bot webhook) served on loopback from a thread of its own."""

    def __init__(self, *, web_overrides: dict[str, Any] | None = None) -> None:
        self.web_overrides = web_overrides or {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="live-service", daemon=True)
        self.url = ""
        self.requests = 0

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> LiveService:
        self.thread.start()
        self.call(self._start(), timeout=120)
        return self

    async def _start(self) -> None:
        import fakeredis
        from aiohttp import web
        from fake_bot_api import FakeBotAPI

        from bot import BotSettings, setup_bot
        from store import Store
        from webapp.app import create_app
        from webapp.settings import WebSettings

        self.api = await FakeBotAPI().start()
        self.token = self.api.token
        self.store = Store(fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True),
                           prefix="fuzz")
        values = {"bot_token": self.token, "local_play": False, "run_worker": False, "ws_resync_seconds": 0.5,
                  "ws_auth_timeout": 5.0, "action_rate": 1e6, "action_burst": 10**6,
                  # The fuzzing sends thousands of requests and frames from one address and a few users
                  # as fast as it can: with the request limits on, most would be 429 too_fast and never
                  # reach the code under test. The limits are raised out of the way here; they are
                  # tested by tests/test_webapp_request_limits.py.
                  "read_rate": 1e6, "read_burst": 10**6, "write_rate": 1e6, "write_burst": 10**6,
                  "address_rate": 1e6, "address_burst": 10**6, "health_rate": 1e6, "health_burst": 10**6,
                  "ws_frame_rate": 1e6, "ws_frame_burst": 10**6, **self.web_overrides}
        app = create_app(WebSettings(**values), self.store)
        bot_settings = BotSettings(bot_token=self.token, telegram_api_url=self.api.url,
                                   public_url="https://karty.example",
                                   webhook_url="https://karty.example/telegram/webhook",
                                   webhook_secret=WEBHOOK_SECRET, rate_chat=1000.0, rate_global=1000.0,
                                   rate_group_per_minute=100000.0, lobby_edit_delay=0.05)
        await setup_bot(app, self.store, bot_settings)
        self.app = app
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        async def _stop() -> None:
            await self.runner.cleanup()
            await self.api.stop()

        try:
            self.call(_stop(), timeout=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float = 60.0) -> Any:
        """Run ``coro`` in the service's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def settle_bot(self, timeout: float = 60.0) -> None:
        """Wait until the bot has handled every update it accepted (the inbox is empty) and
        shown every lobby change (none pending): work an accepted update does in the
        background after its 200, which a later request's before/after snapshot must not see.
        ``timeout`` is a hang guard only."""

        async def settled() -> None:
            while await self.store.inbox_pending() or await self.store.lobby_edits_pending():
                await asyncio.sleep(0.02)

        self.call(asyncio.wait_for(settled(), timeout), timeout + 5)

    # -- identities --------------------------------------------------------------------
    def init_data(self, user_id: int, *, token: str | None = None, age: float = 0, **extra: Any) -> str:
        from webapp.auth import sign_init_data

        fields: dict[str, Any] = {"auth_date": int(time.time() - age), "query_id": "AAHfuzz",
                                  "user": {"id": user_id, "first_name": f"P{user_id}", "language_code": "en"}}
        fields.update(extra)
        return sign_init_data(fields, token or self.token)

    def auth_header(self, kind: str, user_id: int) -> dict[str, str]:
        """``Authorization`` of one kind: ``valid``, ``forged``, ``foreign_bot``, ``expired``,
        ``future``, ``tampered``, ``unsigned``, ``no_user``, ``bad_scheme``, ``garbage``, ``none``."""
        if kind == "none":
            return {}
        if kind == "valid":
            init = self.init_data(user_id)
        elif kind == "forged":
            pairs = dict(parse_qsl(self.init_data(user_id)))
            pairs["hash"] = "0" * 64
            init = urlencode(pairs)
        elif kind == "foreign_bot":
            init = self.init_data(user_id, token=OTHER_BOT_TOKEN)
        elif kind == "expired":
            init = self.init_data(user_id, age=2 * 86400)
        elif kind == "future":
            init = self.init_data(user_id, age=-3600)
        elif kind == "tampered":  # signed for someone else, then the user swapped in
            pairs = dict(parse_qsl(self.init_data(user_id + 1)))
            pairs["user"] = json.dumps({"id": user_id, "first_name": "Mallory"})
            init = urlencode(pairs)
        elif kind == "unsigned":
            pairs = dict(parse_qsl(self.init_data(user_id)))
            pairs.pop("hash")
            init = urlencode(pairs)
        elif kind == "no_user":
            from webapp.auth import sign_init_data

            init = sign_init_data({"auth_date": int(time.time()), "query_id": "x"}, self.token)
        elif kind == "bad_scheme":
            return {"Authorization": f"Bearer {self.init_data(user_id)}"}
        else:
            return {"Authorization": "tma %%%\u0000junk=="}
        return {"Authorization": f"tma {init}"}

    # -- state -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Every key of the store's prefix and its value, except what is bookkeeping of the
        requests themselves rather than state: the outbox stream (read and acknowledged in
        the background by the bot's notifier; only commits write it, and a commit shows in
        the table's keys), presence (batched and flushed in the background), each user's
        action bucket and read and write buckets (every request spends a token, refused or
        not: that is their purpose) and socket leases."""
        return self.call(self._snapshot())

    async def _snapshot(self) -> dict[str, Any]:
        r = self.store.redis
        out: dict[str, Any] = {}
        outbox = self.store.keys.outbox
        async for key in r.scan_iter(match=self.store.keys.everything, count=1000):
            # a process listening on a table's commits (":watchers", store.live) is its bookkeeping,
            # as its sockets and presence are, not something the request changed
            if key == outbox or key.endswith((":rate", ":rate:read", ":rate:write", ":sockets", ":watchers")) \
                    or ":here:" in key:
                continue
            kind = await r.type(key)
            if kind == "string":
                out[key] = await r.get(key)
            elif kind == "hash":
                out[key] = await r.hgetall(key)
            elif kind == "list":
                out[key] = await r.lrange(key, 0, -1)
            elif kind == "set":
                out[key] = sorted(await r.smembers(key))
            elif kind == "zset":
                out[key] = await r.zrange(key, 0, -1, withscores=True)
            elif kind == "stream":
                out[key] = await r.xrange(key)
            else:
                out[key] = kind
        return out


def check_answer(status: int, content_type: str, text: str, method: str = "GET", path: str = "/api/") -> list[str]:
    """What is wrong with one HTTP answer: a 5xx, an error body that is not ``{error, detail}``
    JSON (the API's contract, under /api and /ws; the webhook answers Telegram in its own
    shape), or any text carrying internals."""
    problems = []
    if status >= 500:
        problems.append(f"status {status}: {text[:300]}")
    is_json = content_type.startswith("application/json")
    if (status >= 400 or (is_json and '"openapi"' not in text[:100])) and INTERNAL.search(text):
        problems.append(f"internals in the answer: {text[:300]!r}")
    api = path.startswith(("/api/", "/ws/"))
    if status >= 400 and is_json and not (method == "HEAD" and not text):
        try:
            body = json.loads(text)
        except ValueError:
            problems.append(f"an error that is not JSON: {text[:200]!r}")
        else:
            if api and not (isinstance(body, dict) and isinstance(body.get("error"), str)
                    and isinstance(body.get("detail"), str)
                    and set(body) <= {"error", "detail", "retry_after", "server_time"}):
                problems.append(f"an error body of another shape: {text[:200]!r}")
    return problems
