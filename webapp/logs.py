"""The service's logs (issue 26): for people (text) or machines (``LOG_FORMAT=json``), a failure
repeated logged once per interval with its count, secrets never written.

* :func:`setup` installs one handler on the root logger (stderr): ``LOG_FORMAT=text``
  (default: ``time LEVEL logger: message``) or ``json``: one JSON object a line,
  ``{"ts", "level", "logger", "msg"}`` plus, where known, ``table``, ``user`` and ``update``
  (the request's table id, the signed-in user's id, the Telegram update's id: bound by
  :func:`bind`, :func:`context_middleware`), an access-log line's ``status``/``method``/``path``/
  ``remote``/``duration_ms``, and for an exception ``error`` (its class and message) and
  ``traceback`` (text: the same, multi-line).
* :class:`Repeats`: a WARNING or worse whose logger, message template and exception class
  were already logged in the last ``LOG_REPEAT_INTERVAL`` seconds (60) is held back and
  counted; once the interval is over the next one is logged as one line with
  ``(and N more like it in the last 60 s)``, without a traceback, and a count still held
  when the interval ends is logged as such a line by the next record that passes. So a
  Redis outage writes one traceback per failing place and a count a minute, not one
  traceback per failed call.
* :class:`Redact`: initData (``tma …``, ``init_data``, ``tgWebAppData``, ``hash=``), bot
  tokens (``123456:AA…``), ``Bearer`` credentials and the webhook's secret are replaced by
  ``[redacted]`` in every message and traceback. Cards never reach the log: the code logs
  table ids, seats and versions, never a hand.

The access log (aiohttp's, one line per request) is off in local play and on otherwise;
``ACCESS_LOG=1``/``0`` switches it (:func:`access_logger`).
"""

from __future__ import annotations

import contextvars
import logging
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

#: The ids a record is about, where known: ``{"table": ..., "user": ..., "update": ...}``.
CONTEXT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("karty_log_context", default=None)

REPEAT_INTERVAL = 60.0

_SECRETS = [
    (re.compile(r"(tma\s+)[^\s\"',]+", re.I), r"\1[redacted]"),
    (re.compile(r"((?:init_?data|tgWebAppData|session)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]+", re.I), r"\1[redacted]"),
    (re.compile(r"((?:^|[?&\s])(?:hash|signature)=)[0-9a-zA-Z_\-]+"), r"\1[redacted]"),
    (re.compile(r"\b\d{5,12}:[A-Za-z0-9_-]{30,}\b"), "[redacted-token]"),
    (re.compile(r"(Bearer\s+)[^\s\"',]+", re.I), r"\1[redacted]"),
    (re.compile(r"(X-Telegram-Bot-Api-Secret-Token[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+", re.I), r"\1[redacted]"),
]


def redact(text: str) -> str:
    """``text`` with initData, tokens and credentials replaced (the patterns above)."""
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    return text


def bind(**ids: Any) -> contextvars.Token:
    """Add ``ids`` (``table=``, ``user=``, ``update=``; None values are skipped) to the records
    logged in this task from now on; returns the token for :func:`unbind`."""
    now = dict(CONTEXT.get() or {})
    now.update({k: v for k, v in ids.items() if v is not None})
    return CONTEXT.set(now)


def unbind(token: contextvars.Token) -> None:
    CONTEXT.reset(token)


class Redact(logging.Filter):
    """Replaces secrets in a record's message and traceback (see :func:`redact`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_karty_redacted", False):
            return True
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        clean = redact(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record._karty_redacted = True
        return True


class Repeats(logging.Filter):
    """Holds back a WARNING-or-worse failure seen in the last ``interval`` s and counts it (see
    the module docstring). ``clock``: monotonic seconds (tests pass their own)."""

    def __init__(self, interval: float = REPEAT_INTERVAL, clock: Callable[[], float] = time.monotonic,
                 emit: Callable[[logging.LogRecord], None] | None = None) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self.emit = emit  # where a held count is written once its interval ended (the handler's handle)
        self._seen: dict[tuple[Any, ...], list[Any]] = {}  # key → [first logged at, held count, last record]
        self._lock = threading.Lock()

    @staticmethod
    def key(record: logging.LogRecord) -> tuple[Any, ...]:
        exc = record.exc_info[1] if record.exc_info else None
        return record.name, record.levelno, str(record.msg), type(exc).__name__ if exc is not None else None

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_karty_summary", False):
            return True
        now = self.clock()
        due = self._flush(now)
        if record.levelno < logging.WARNING:
            self._write(due)
            return True
        key = self.key(record)
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.interval:
                seen[1] += 1
                seen[2] = record
                passes = False
            else:
                held = seen[1] if seen is not None else 0
                self._seen[key] = [now, 0, record]
                passes = True
                if held:
                    self._summarise(record, held)
        self._write(due)
        return passes

    def _summarise(self, record: logging.LogRecord, held: int) -> None:
        """Turn ``record`` into the one line standing for it and ``held`` more like it."""
        exc = record.exc_info[1] if record.exc_info else None
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        if exc is not None:
            message += f" [{type(exc).__name__}: {exc}]"
        record.msg = f"{message} (and {held} more like it in the last {self.interval:g} s)"
        record.args = None
        record.exc_info = record.exc_text = None
        record.repeated = held
        record._karty_summary = True

    def _flush(self, now: float) -> list[logging.LogRecord]:
        """Held counts whose interval is over: their summary records (written by :meth:`_write`)."""
        out = []
        with self._lock:
            for key, seen in list(self._seen.items()):
                if now - seen[0] >= self.interval:
                    if seen[1]:
                        record = logging.makeLogRecord(seen[2].__dict__)
                        self._summarise(record, seen[1])
                        record.msg = record.msg.replace(" more like it", " like it", 1)
                        out.append(record)
                    del self._seen[key]
        return out

    def _write(self, records: list[logging.LogRecord]) -> None:
        if self.emit is not None:
            for record in records:
                self.emit(record)


ACCESS_FIELDS = {"remote_address": "remote", "first_request_line": "request", "response_status": "status",
                 "request_time_frac": "duration_s"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts`` (ISO 8601 UTC, ms), ``level``, ``logger``, ``msg``, the
    bound ids (:data:`CONTEXT`), a record's ``table``/``user``/``update``/``repeated`` extras,
    an access line's fields, ``error`` and ``traceback`` for an exception."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        context = CONTEXT.get()
        if context:
            out.update(context)
        for name in ("table", "user", "update", "repeated"):
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        for attr, name in ACCESS_FIELDS.items():
            value = getattr(record, attr, None)
            if value is not None:
                out[name] = value
        if record.exc_info:
            exc = record.exc_info[1]
            out["error"] = redact(f"{type(exc).__name__}: {exc}") if exc is not None else "error"
            if not record.exc_text:
                record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["traceback"] = record.exc_text
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message`` with the bound ids appended (``[table=… user=…]``)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = CONTEXT.get()
        if context:
            ids = " ".join(f"{k}={v}" for k, v in context.items())
            first, nl, rest = text.partition("\n")
            text = f"{first} [{ids}]{nl}{rest}"
        return text


def setup(level: str = "INFO", fmt: str = "text", *, repeat_interval: float = REPEAT_INTERVAL,
          stream: Any = None) -> logging.Handler:
    """Configure the root logger: one stream handler (``stream``, default stderr) with
    :class:`Redact`, :class:`Repeats` and the formatter of ``fmt`` (``text`` or ``json``).
    Replaces any handler installed before. Returns the handler."""
    if fmt not in ("text", "json"):
        raise ValueError(f"LOG_FORMAT must be text or json, not {fmt!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(Repeats(repeat_interval, emit=handler.handle))  # first: it keys on the message template
    handler.addFilter(Redact())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


@web.middleware
async def context_middleware(request: web.Request,
                             handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Binds the request's table id (``/api/tables/<id>``, ``/ws/tables/<id>``) for its records;
    the user's id is bound where the request is authenticated (:func:`bind_user`)."""
    table = request.match_info.get("id") if "/tables/" in request.path else None
    token = CONTEXT.set({"table": table[:64]} if table else None)  # a kept-alive connection's next request starts afresh
    try:
        return await handler(request)
    finally:
        unbind(token)


def bind_user(user_id: Any) -> None:
    """Add the signed-in user's id to this request's records (the task's context)."""
    bind(user=user_id)


def access_logger(enabled: bool) -> logging.Logger | None:
    """aiohttp's access logger when ``enabled`` (``aiohttp.access``, INFO), else None (off)."""
    if not enabled:
        return None
    access = logging.getLogger("aiohttp.access")
    access.setLevel(logging.INFO)
    return access
