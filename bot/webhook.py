"""The webhook endpoint: Telegram POSTs each update here (``WEBHOOK_PATH``).

* a wrong or missing ``X-Telegram-Bot-Api-Secret-Token`` → 401, nothing read;
* a body that is not JSON → 400 "not JSON" (one log line, no traceback);
* JSON that is not a Telegram ``Update`` (no integer ``update_id``, fields of the wrong
  type) → 200 and ignored, one log line: Telegram would redeliver anything else forever;
* a valid update → handed to ``accept``, which keeps it in the store, and answered 200
  only then (see :meth:`bot.app.BotRuntime.accept_update`), handled in the background;
  when it cannot be kept (Redis down) → 503, and Telegram delivers it again.

Nothing here ever answers 500 for what a sender put in the body.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiogram import Bot
from aiogram.types import Update
from aiogram.types.update import UpdateTypeLookupError
from aiohttp import web
from pydantic import ValidationError

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MAX_BODY = 1 << 20  # Telegram's updates are far smaller; anything bigger is not one


def parse_update(raw: Any, bot: Bot) -> tuple[Update | None, str | None]:
    """``(Update, None)`` for a valid update dict, else ``(None, why)`` in a few words."""
    if not isinstance(raw, dict):
        return None, f"a JSON {type(raw).__name__}, not an object"
    if type(raw.get("update_id")) is not int:
        return None, "no integer update_id"
    if not _ints_in_range(raw):
        return None, "an integer beyond 64 bits (Telegram's ids take at most 52)"
    try:
        update = Update.model_validate(raw, context={"bot": bot})
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return None, f"{exc.error_count()} invalid field(s), first {where or '?'}: {first.get('msg', '')}"
    try:
        update.event_type  # noqa: B018 — an update must carry one event aiogram knows
    except UpdateTypeLookupError:
        return None, f"update {update.update_id} carries no known event"
    return update, None


def _ints_in_range(value: Any) -> bool:
    """Whether every integer in a decoded JSON value fits in 64 signed bits (what the
    store's JSON and Redis take); iterative, so a deep value cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is int:
            if not -(1 << 63) <= item < (1 << 63):
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


class WebhookHandler:
    """``POST`` handler; ``accept(update, raw)`` takes a valid update (and must not raise for
    its content: it stores or schedules it)."""

    def __init__(self, bot: Bot, secret: str, accept: Callable[[Update, dict[str, Any]], Awaitable[None]]) -> None:
        self.bot = bot
        self.secret = secret
        self.accept = accept
        self.refused = 0
        self.ignored = 0

    def register(self, app: web.Application, path: str) -> None:
        app.router.add_post(path, self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            return web.json_response({"ok": False, "error": "unauthorized"}, status=401)
        if request.content_length is not None and request.content_length > MAX_BODY:
            self.refused += 1
            log.warning("webhook: body of %s bytes refused (too large)", request.content_length)
            return web.json_response({"ok": False, "error": "too large"}, status=413)
        body = await request.content.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            self.refused += 1
            log.warning("webhook: body over %s bytes refused (too large)", MAX_BODY)
            return web.json_response({"ok": False, "error": "too large"}, status=413)
        try:
            raw = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # junk, or nested deeper than the parser goes
            self.refused += 1
            log.warning("webhook: body is not JSON (%s bytes); refused with 400", len(body))
            return web.json_response({"ok": False, "error": "body is not JSON"}, status=400)
        update, why = parse_update(raw, self.bot)
        if update is None:
            self.ignored += 1
            log.warning("webhook: not a Telegram update (%s); ignored", why)
            return web.json_response({"ok": True, "ignored": True})
        try:
            await self.accept(update, raw)
        except Exception as exc:  # not kept: Telegram delivers it again after a non-2xx answer
            log.error("webhook: update %s could not be kept (%s: %s); answered 503", update.update_id,
                      type(exc).__name__, exc, extra={"update": update.update_id})
            return web.json_response({"ok": False, "error": "try again"}, status=503)
        return web.json_response({"ok": True})
