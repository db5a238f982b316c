"""A fake Telegram Bot API server for tests, plus builders of real update JSON.

The real aiogram ``Bot`` talks HTTP to it (``TelegramAPIServer.from_base(server.url)``),
so every request goes through aiogram's serialisation and error mapping exactly as
in production. Every call is recorded; chats can be told to fail.

Usage::

    async with FakeBotAPI() as api:              # binds 127.0.0.1 on an ephemeral port
        bot = api.make_bot()                     # aiogram Bot pointed at the fake server
        api.block(555)                           # 403 "bot was blocked by the user" for chat 555
        api.fail(-100, status=429, retry_after=1, times=1)   # next call to chat -100 → 429
        await dp.feed_raw_update(bot, message_update(...))
        calls = api.calls_of("sendMessage")      # [Call(method, params, ts, chat_id, status)]
        await api.wait_for(lambda: api.calls_of("editMessageText"), timeout=3)
        await bot.session.close()

``Call.params`` are the request's form fields decoded: JSON values (``reply_markup``
…) parsed into dicts/lists, integer fields (``chat_id``, ``message_thread_id``,
``message_id`` …) as ``int``. ``Call.ts`` is ``time.monotonic()`` at arrival.

Answers: ``getMe`` → the bot user (``username`` = :attr:`FakeBotAPI.username`);
``sendMessage`` → a ``Message`` (incrementing ``message_id`` per chat, ``chat.type``
"private" for positive ids, "supergroup" otherwise, ``message_thread_id`` echoed);
``editMessageText`` → the edited ``Message``; ``getUpdates`` → ``[]`` after a short
wait (or the updates queued with :meth:`FakeBotAPI.queue_update`); anything else →
``true``. Failures: :meth:`block` (403 for every call to that chat), :meth:`fail`
(any status, optional ``retry_after`` → Telegram's ``parameters.retry_after``).

Telegram's documented refusals, answered as Telegram does:

* a text over 4,096 characters after entity parsing (``sendMessage``,
  ``editMessageText``) → 400 "Bad Request: message is too long"; a callback answer
  over 200 → 400 "Bad Request: MESSAGE_TOO_LONG"; HTML whose tags do not pair up →
  400 "Bad Request: can't parse entities: …";
* :meth:`close_topic` → 400 "Bad Request: TOPIC_CLOSED" for messages into that forum
  topic, :meth:`delete_topic` → 400 "Bad Request: message thread not found";
* :meth:`migrate` (a group upgraded to a supergroup) → every call to the old id
  answers 400 "Bad Request: group chat was upgraded to a supergroup chat" with
  ``parameters.migrate_to_chat_id``;
* ``deleteMessage`` removes a message: editing or deleting it again → 400
  "Bad Request: message to edit not found" / "message to delete not found".

``FakeBotAPI(limits=TelegramLimits())`` (:mod:`benchmarks.telegram`) also limits like
Telegram: about 30 messages a second in all, one a second per chat, 20 a minute per group,
``editMessageText`` counted like a send, 429 "Too Many Requests: retry after N" with
``parameters.retry_after`` beyond; ``latency`` (seconds) delays every answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from aiohttp import web

BOT_TOKEN = "123456:TEST-token"
BOT_ID = 123456
BOT_USERNAME = "karty_test_bot"

_INT_FIELDS = {
    "chat_id",
    "message_thread_id",
    "message_id",
    "user_id",
    "from_chat_id",
    "offset",
    "limit",
    "timeout",
    "cache_time",
}


MAX_TEXT = 4096  # sendMessage/editMessageText, after entity parsing
MAX_CALLBACK_TEXT = 200  # answerCallbackQuery
_HTML_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre",
              "span", "tg-spoiler", "blockquote", "tg-emoji"}


class _Entities(HTMLParser):
    """Telegram's HTML parse mode, enough to count what a user sees and to refuse bad tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.open: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag not in _HTML_TAGS:
            self.error = self.error or f"unsupported start tag \"{tag}\""
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.error = self.error or f"unmatched end tag \"{tag}\""
            return
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(text: str) -> tuple[str, str | None]:
    """(the text a user sees, an error like Telegram's "can't parse entities" or None)."""
    parser = _Entities()
    parser.feed(text)
    parser.close()
    if parser.open and not parser.error:
        parser.error = f"can't find end tag corresponding to start tag \"{parser.open[-1]}\""
    return "".join(parser.text), parser.error


def visible_length(text: str, parse_mode: str | None = "HTML") -> int:
    """Length as Telegram counts it: UTF-16 code units of the text after entity parsing."""
    plain = parse_html(text)[0] if parse_mode == "HTML" else text
    return len(plain.encode("utf-16-le")) // 2


@dataclass
class Call:
    """One recorded Bot API request."""

    method: str
    params: dict[str, Any]
    ts: float
    status: int = 200
    content_type: str = ""  # the request's (application/json, application/x-www-form-urlencoded …)
    result: Any = None  # what a 200 answered (a sent Message as a dict …)

    @property
    def chat_id(self) -> int | str | None:
        return self.params.get("chat_id")

    @property
    def text(self) -> str | None:
        return self.params.get("text")

    @property
    def reply_markup(self) -> dict[str, Any] | None:
        return self.params.get("reply_markup")

    def buttons(self) -> list[dict[str, Any]]:
        """All inline keyboard buttons of this call, flattened ([] if none)."""
        markup = self.reply_markup or {}
        return [b for row in markup.get("inline_keyboard", []) for b in row]


@dataclass
class _Failure:
    status: int
    description: str
    retry_after: int | None
    times: int | None  # None = forever
    methods: set[str] | None = None
    parameters: dict[str, Any] | None = None


@dataclass
class FakeBotAPI:
    """The fake server. Use as ``async with FakeBotAPI() as api`` (or ``await api.start()``/``stop()``)."""

    username: str = BOT_USERNAME
    bot_id: int = BOT_ID
    token: str = BOT_TOKEN
    poll_wait: float = 0.2
    calls: list[Call] = field(default_factory=list)
    _failures: dict[Any, list[_Failure]] = field(default_factory=dict)
    _msg_ids: dict[Any, itertools.count] = field(default_factory=dict)
    _updates: list[dict[str, Any]] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    url: str = ""
    topics: dict[tuple[Any, int], str] = field(default_factory=dict)  # (chat, thread) → "closed"|"deleted"
    migrated: dict[Any, int] = field(default_factory=dict)  # old group id → supergroup id
    deleted: set[tuple[Any, int]] = field(default_factory=set)  # (chat, message_id)
    admins: dict[Any, set[int]] = field(default_factory=dict)  # chat → its admins (getChatMember)
    limits: Any = None  # benchmarks.telegram.TelegramLimits: Telegram's sending limits, 429 beyond
    latency: float = 0.0  # seconds before each answer

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> FakeBotAPI:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeBotAPI:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def make_bot(self, **kwargs: Any):
        """An aiogram ``Bot`` (HTML parse mode by default) talking to this server through the
        bot's own session (:class:`bot.session.Session`)."""
        from aiogram import Bot
        from aiogram.client.default import DefaultBotProperties
        from aiogram.client.telegram import TelegramAPIServer

        from bot.session import Session

        session = Session(api=TelegramAPIServer.from_base(self.url))
        kwargs.setdefault("default", DefaultBotProperties(parse_mode="HTML"))
        return Bot(self.token, session=session, **kwargs)

    # -- failure control ---------------------------------------------------------------------
    def block(self, chat_id: int) -> None:
        """Every call to ``chat_id`` answers 403 "Forbidden: bot was blocked by the user"."""
        self._failures.setdefault(chat_id, []).append(
            _Failure(403, "Forbidden: bot was blocked by the user", None, None)
        )

    def unblock(self, chat_id: int) -> None:
        self._failures.pop(chat_id, None)

    def fail(
        self,
        chat_id: int | str,
        *,
        status: int = 429,
        retry_after: int | None = None,
        times: int | None = 1,
        description: str | None = None,
        methods: set[str] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        """The next ``times`` calls (``None``: all) to ``chat_id`` (``"*"``: any chat) fail.

        429 with ``retry_after`` becomes aiogram's ``TelegramRetryAfter``; 403 →
        ``TelegramForbiddenError``; 400 → ``TelegramBadRequest`` (with ``parameters=
        {"migrate_to_chat_id": id}``: ``TelegramMigrateToChat``). ``methods`` limits it
        to those API methods.
        """
        if description is None:
            description = {
                429: f"Too Many Requests: retry after {retry_after or 1}",
                403: "Forbidden: bot was blocked by the user",
                400: "Bad Request: chat not found",
            }.get(status, "Internal Server Error")
        if status == 429 and retry_after is None:
            retry_after = 1
        self._failures.setdefault(chat_id, []).append(
            _Failure(status, description, retry_after, times, methods, parameters)
        )

    def close_topic(self, chat_id: int, thread_id: int) -> None:
        """Messages into this forum topic answer 400 "Bad Request: TOPIC_CLOSED"."""
        self.topics[(chat_id, thread_id)] = "closed"

    def delete_topic(self, chat_id: int, thread_id: int) -> None:
        """Messages into this forum topic answer 400 "Bad Request: message thread not found"."""
        self.topics[(chat_id, thread_id)] = "deleted"

    def reopen_topic(self, chat_id: int, thread_id: int) -> None:
        self.topics.pop((chat_id, thread_id), None)

    def migrate(self, old_chat_id: int, new_chat_id: int) -> None:
        """The group ``old_chat_id`` became the supergroup ``new_chat_id``: calls to the old id
        answer 400 with ``parameters.migrate_to_chat_id`` (aiogram's ``TelegramMigrateToChat``)."""
        self.migrated[old_chat_id] = new_chat_id

    def queue_update(self, update: dict[str, Any]) -> None:
        """Hand ``update`` to the next ``getUpdates`` (long-polling tests)."""
        self._updates.append(update)

    # -- inspection --------------------------------------------------------------------------
    def calls_of(self, *methods: str, chat_id: int | None = None, ok: bool | None = True) -> list[Call]:
        """Recorded calls of these methods (all if none given), optionally for one chat.

        ``ok=True`` (default) keeps only answered-200 calls, ``False`` only failed, ``None`` all.
        """
        out = []
        for c in self.calls:
            if methods and c.method not in methods:
                continue
            if chat_id is not None and c.chat_id != chat_id:
                continue
            if ok is not None and (c.status == 200) != ok:
                continue
            out.append(c)
        return out

    def sent_messages(self, chat_id: int | None = None) -> list[Call]:
        """Successful ``sendMessage`` calls (optionally to one chat)."""
        return self.calls_of("sendMessage", chat_id=chat_id)

    def live_messages(self, chat_id: int) -> list[dict[str, Any]]:
        """Messages the bot sent to ``chat_id`` and has not deleted, as they read now (edits applied):
        ``[{"message_id", "text", "reply_markup"}]`` oldest first."""
        live: dict[int, dict[str, Any]] = {}
        for c in self.calls:
            if c.status != 200 or c.chat_id != chat_id:
                continue
            if c.method == "sendMessage":
                live[c.result["message_id"]] = {"message_id": c.result["message_id"], "text": c.text,
                                                "reply_markup": c.reply_markup}
            elif c.method == "editMessageText" and c.params.get("message_id") in live:
                live[c.params["message_id"]].update(text=c.text, reply_markup=c.reply_markup)
            elif c.method == "deleteMessage":
                live.pop(c.params.get("message_id"), None)
        return list(live.values())

    def clear(self) -> None:
        self.calls.clear()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.02) -> Any:
        """Poll ``predicate`` until truthy; returns its value or raises ``TimeoutError``."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("condition not met in time")
            await asyncio.sleep(interval)

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Wait until no call has arrived for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.calls[-1].ts if self.calls else 0.0
            if time.monotonic() - last >= quiet:
                return
            await asyncio.sleep(quiet / 3)

    # -- server ------------------------------------------------------------------------------
    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if request.content_type == "application/json":
            with contextlib.suppress(ValueError):
                params.update(await request.json())
        else:
            post = await request.post()
            for key, value in post.items():
                if not isinstance(value, str):
                    params[key] = "<file>"
                    continue
                params[key] = value
        params.update({k: v for k, v in request.query.items() if k not in params})
        for key, value in list(params.items()):
            if not isinstance(value, str):
                continue
            if key in _INT_FIELDS:
                with contextlib.suppress(ValueError):
                    params[key] = int(value)
            elif value[:1] in "{[" or value in ("true", "false"):
                with contextlib.suppress(ValueError):
                    params[key] = json.loads(value)
        return params

    def _failure_for(self, method: str, chat_id: Any) -> _Failure | None:
        for key in (chat_id, "*"):
            queue = self._failures.get(key)
            if not queue:
                continue
            for f in queue:
                if f.methods and method not in f.methods:
                    continue
                if f.times is not None:
                    f.times -= 1
                    if f.times <= 0:
                        queue.remove(f)
                return f
        return None

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        call = Call(method=method, params=params, ts=time.monotonic(), content_type=request.content_type)
        self.calls.append(call)
        if request.match_info["token"] != self.token:
            call.status = 401
            return web.json_response({"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401)
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.limits is not None:
            wait = self.limits.check(method, params.get("chat_id"), paid=params.get("allow_paid_broadcast") is True)
            if wait is not None:
                call.status = 429
                return web.json_response({"ok": False, "error_code": 429,
                                          "description": f"Too Many Requests: retry after {wait}",
                                          "parameters": {"retry_after": wait}}, status=429)
        failure = self._failure_for(method, params.get("chat_id")) if "chat_id" in params else None
        if failure is None and method not in ("getMe", "getUpdates", "setWebhook", "deleteWebhook"):
            failure = self._failure_for(method, "*")
        if failure is not None:
            call.status = failure.status
            body: dict[str, Any] = {"ok": False, "error_code": failure.status, "description": failure.description}
            params = dict(failure.parameters or {})
            if failure.retry_after is not None:
                params["retry_after"] = failure.retry_after
            if params:
                body["parameters"] = params
            return web.json_response(body, status=failure.status)
        refusal = self._refusal(method, params)
        if refusal is not None:
            call.status = 400
            description, extra = refusal
            body = {"ok": False, "error_code": 400, "description": description}
            if extra:
                body["parameters"] = extra
            return web.json_response(body, status=400)
        result = await self._result(method, params)
        call.result = result
        return web.json_response({"ok": True, "result": result})

    def _refusal(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, Any] | None] | None:
        """Telegram's documented 400s for this request (see the module docstring), or None."""
        chat_id = params.get("chat_id")
        if chat_id in self.migrated:
            return ("Bad Request: group chat was upgraded to a supergroup chat",
                    {"migrate_to_chat_id": self.migrated[chat_id]})
        thread = params.get("message_thread_id")
        if method.startswith("send") and thread:
            state = self.topics.get((chat_id, thread))
            if state == "closed":
                return "Bad Request: TOPIC_CLOSED", None
            if state == "deleted":
                return "Bad Request: message thread not found", None
        if method in ("sendMessage", "editMessageText"):
            text = params.get("text")
            if not isinstance(text, str) or not text.strip():
                return "Bad Request: message text is empty", None
            parse_mode = params.get("parse_mode")
            if parse_mode == "HTML":
                error = parse_html(text)[1]
                if error:
                    return f"Bad Request: can't parse entities: {error}", None
            if visible_length(text, parse_mode) > MAX_TEXT:
                return "Bad Request: message is too long", None
        if method == "answerCallbackQuery" and len(str(params.get("text") or "")) > MAX_CALLBACK_TEXT:
            return "Bad Request: MESSAGE_TOO_LONG", None
        if method in ("editMessageText", "editMessageReplyMarkup", "deleteMessage"):
            key = (chat_id, params.get("message_id"))
            if key in self.deleted:
                verb = "delete" if method == "deleteMessage" else "edit"
                return f"Bad Request: message to {verb} not found", None
            if method == "deleteMessage":
                self.deleted.add(key)
        return None

    def _chat(self, chat_id: Any) -> dict[str, Any]:
        if isinstance(chat_id, int) and chat_id > 0:
            return {"id": chat_id, "type": "private", "first_name": f"User{chat_id}"}
        return {"id": chat_id, "type": "supergroup", "title": "Test group"}

    def _message(self, params: dict[str, Any], message_id: int | None = None) -> dict[str, Any]:
        chat_id = params.get("chat_id")
        if message_id is None:
            message_id = next(self._msg_ids.setdefault(chat_id, itertools.count(1000)))
        msg: dict[str, Any] = {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": self._chat(chat_id),
            "from": {"id": self.bot_id, "is_bot": True, "first_name": "Karty", "username": self.username},
            "text": params.get("text", ""),
        }
        if params.get("message_thread_id"):
            msg["message_thread_id"] = params["message_thread_id"]
            msg["is_topic_message"] = True
        if isinstance(params.get("reply_markup"), dict):
            msg["reply_markup"] = params["reply_markup"]
        return msg

    async def _result(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getMe":
            return {
                "id": self.bot_id,
                "is_bot": True,
                "first_name": "Karty",
                "username": self.username,
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
            }
        if method == "getUpdates":
            if self._updates:
                out, self._updates = self._updates, []
                return out
            await asyncio.sleep(self.poll_wait)
            return []
        if method in ("sendMessage", "sendPhoto", "sendDocument"):
            return self._message(params)
        if method in ("editMessageText", "editMessageReplyMarkup"):
            if "inline_message_id" in params:
                return True
            return self._message(params, message_id=params.get("message_id"))
        if method == "getChatMember":
            user = {"id": params.get("user_id"), "is_bot": False, "first_name": f"User{params.get('user_id')}"}
            if params.get("user_id") in self.admins.get(params.get("chat_id"), set()):
                return {"status": "creator", "user": user, "is_anonymous": False}
            return {"status": "member", "user": user}
        if method == "getWebhookInfo":
            return {"url": "", "has_custom_certificate": False, "pending_update_count": 0}
        return True


# -- update builders (exactly Telegram's shapes) --------------------------------------------------
_update_ids = itertools.count(10_000)
_message_ids = itertools.count(1)


def tg_user(user_id: int, first_name: str | None = None, *, language_code: str | None = "en",
            username: str | None = None, last_name: str | None = None) -> dict[str, Any]:
    """A Telegram ``User`` object."""
    user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name or f"User{user_id}"}
    if last_name:
        user["last_name"] = last_name
    if username:
        user["username"] = username
    if language_code:
        user["language_code"] = language_code
    return user


def tg_chat(chat_id: int, *, forum: bool = False, title: str = "Cards") -> dict[str, Any]:
    """A ``Chat``: private for positive ids (``first_name`` set), supergroup otherwise."""
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": f"User{chat_id}"}
    chat: dict[str, Any] = {"id": chat_id, "type": "supergroup", "title": title}
    if forum:
        chat["is_forum"] = True
    return chat


def message_update(
    text: str,
    *,
    user: dict[str, Any],
    chat: dict[str, Any] | None = None,
    thread_id: int | None = None,
    update_id: int | None = None,
    message_id: int | None = None,
) -> dict[str, Any]:
    """An ``Update`` with a text ``message``; bot commands get their ``entities``.

    ``thread_id`` makes it a forum-topic message (``message_thread_id`` and
    ``is_topic_message``). ``chat`` defaults to the user's private chat.
    """
    if chat is None:
        chat = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
    msg: dict[str, Any] = {
        "message_id": message_id if message_id is not None else next(_message_ids),
        "from": user,
        "chat": chat,
        "date": int(time.time()),
        "text": text,
    }
    if text.startswith("/"):
        msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    if thread_id is not None:
        msg["message_thread_id"] = thread_id
        msg["is_topic_message"] = True
    return {"update_id": update_id if update_id is not None else next(_update_ids), "message": msg}


def callback_update(
    data: str,
    *,
    user: dict[str, Any],
    message: dict[str, Any] | None = None,
    chat: dict[str, Any] | None = None,
    message_id: int = 1,
    thread_id: int | None = None,
    update_id: int | None = None,
) -> dict[str, Any]:
    """An ``Update`` with a ``callback_query`` pressed on ``message`` (or a stub bot message)."""
    if message is None:
        chat = chat or {"id": user["id"], "type": "private", "first_name": user["first_name"]}
        message = {
            "message_id": message_id,
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Karty", "username": BOT_USERNAME},
            "chat": chat,
            "date": int(time.time()),
            "text": "…",
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
    uid = next(_update_ids) if update_id is None else update_id
    return {
        "update_id": uid,
        "callback_query": {
            "id": str(uid * 7),
            "from": user,
            "message": message,
            "chat_instance": str(abs(message["chat"]["id"])),
            "data": data,
        },
    }
