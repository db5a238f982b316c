"""The access log: aiohttp's, one line per request, with what the client sent escaped.

aiohttp's :class:`~aiohttp.web_log.AccessLogger` copies header values (``Referer``,
``User-Agent``, any ``%{X}i``) into the line as they came. Its parser refuses CR and LF,
but not the other characters that end a line for a reader of the log: U+0085 (NEL),
U+2028 and U+2029 (what ``str.splitlines`` and many log viewers split on), nor other
control characters, or bytes that are not UTF-8 (kept as lone surrogates). A client could
forge a line with them. :class:`AccessLog` writes every character that is not printable
as its Python escape (``\\x85``, ``\\u2028``, ``\\udc85``), in the line and in the record's
fields, so a line is always one line and says exactly what was sent. The 429s of the request
limits are not written one by one (a flood would write the log at its own rate): they are
counted, and :mod:`webapp.ratelimit` logs one aggregated line a minute.
"""

from __future__ import annotations

from typing import Any

from aiohttp.web_log import AccessLogger

from webapp.ratelimit import REFUSED


def escape(text: str) -> str:
    """``text`` with every non-printable character but the space as its escape (``\\x85``);
    a printable text (nearly every one) is returned as it is, at the cost of one scan."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else ascii(c)[1:-1] for c in text)


class AccessLog(AccessLogger):
    """aiohttp's access logger (same format, same fields) with every value escaped
    (:func:`escape`). Pass it as ``access_log_class`` to ``web.run_app`` or ``AppRunner``."""

    #: answers of the request limits' refusals not written (each is counted there instead:
    #: ``webapp.ratelimit.RequestLimits.count_refusal`` logs one aggregated line a minute)
    unlogged = 0

    def log(self, request: Any, response: Any, time: float) -> None:
        if response.get(REFUSED):  # a flood's 429s: no line each
            AccessLog.unlogged += 1
            return
        try:
            values: list[Any] = []
            extra: dict[str, Any] = {}
            for key, value in self._format_line(request, response, time):
                if isinstance(value, str):
                    value = escape(value)
                values.append(value)
                if isinstance(key, str):
                    extra[key] = value
                else:
                    extra.setdefault(key[0], {})[key[1]] = value
            self.logger.info(self._log_format % tuple(values), extra=extra)
        except Exception:
            self.logger.exception("Error in logging")
