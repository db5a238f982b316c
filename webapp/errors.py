"""HTTP-facing errors and the one middleware that maps domain errors to HTTP.

Every error answer is JSON ``{"error": code, "detail": text}`` (CONTRACTS §3):

=========================  ======  ==============================================
raised                     status  ``error``
=========================  ======  ==============================================
:class:`ApiError`          any     its ``code`` (``unauthorized``, ``auth_expired``,
                                   ``bad_request``, ``not_seated``, ``too_fast`` …)
``engine.Rejected``        422     the engine's reason (``not_your_turn`` …)
``store.StoreError``       see     :data:`STORE_STATUS` (``stale`` 409, ``not_found`` 404 …)
``pydantic.ValidationError`` 400   ``bad_request``
an unreadable body         400     ``bad_request`` (e.g. a false ``Content-Encoding``)
``web.HTTPException``      its     ``too_large`` (413), ``not_found`` (404),
                                   ``method_not_allowed`` (405) … (only under /api, /ws)
Redis unreachable / slow   503     ``unavailable`` (with ``Retry-After``)
anything else              500     ``internal`` (logged)
=========================  ======  ==============================================
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pydantic
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

from engine import Rejected
from store import UNAVAILABLE, StoreError

log = logging.getLogger(__name__)

STORE_STATUS: dict[str, int] = {
    "not_found": 404,
    "expired": 410,
    "stale": 409,
    "not_seated": 403,
    "not_creator": 403,
    "full": 409,
    "started": 409,
    "too_few": 409,
    "left": 409,
    "over": 409,
    "not_your_turn": 409,
    "invalid": 400,
    "busy": 503,
}

#: ``Retry-After`` of a 503 (storage unavailable or busy): whole seconds.
RETRY_LATER: dict[str, str] = {"Retry-After": "1"}

HTTP_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "too_fast",
}


class ApiError(Exception):
    """An error answered as ``status`` with body ``{"error": code, "detail": detail}``.

    ``extra`` keys are merged into the body (e.g. ``retry_after`` for 429) and
    ``headers`` are added to the answer.
    """

    def __init__(
        self,
        status: int,
        code: str,
        detail: str = "",
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


def dumps(obj: Any) -> str:
    """Compact JSON, UTF-8 kept as is (names are Czech and Russian); orjson, as every
    state message and answer goes through here."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def json_error(
    status: int, code: str, detail: str = "", headers: dict[str, str] | None = None, **extra: Any
) -> web.Response:
    """The JSON error answer ``{"error": code, "detail": detail, **extra, "server_time"}``."""
    from webapp.clock import stamp

    return web.json_response(
        stamp({"error": code, "detail": detail, **extra}), status=status, headers=headers, dumps=dumps
    )


def _is_api(request: web.Request) -> bool:
    return request.path.startswith(("/api/", "/ws/")) or request.path == "/api"


def as_api_error(e: BaseException) -> ApiError:
    """The :class:`ApiError` a domain error is answered as (the module docstring's table):
    the one mapping of the HTTP answers and of the table socket's ``refused`` frames.

    ``e``: an :class:`ApiError` (itself), ``engine.Rejected``, ``store.StoreError``,
    ``pydantic.ValidationError`` or one of ``store.UNAVAILABLE`` (logged here, one line);
    anything else is ``500 internal`` (the caller logs it).
    """
    if isinstance(e, ApiError):
        return e
    if isinstance(e, Rejected):
        return ApiError(422, e.code, e.detail)
    if isinstance(e, StoreError):
        code = getattr(e, "code", "error")
        status = STORE_STATUS.get(code, 400)
        return ApiError(status, code, str(e), headers=dict(RETRY_LATER) if status == 503 else None)
    if isinstance(e, pydantic.ValidationError):
        return ApiError(400, "bad_request", _validation_detail(e))
    if isinstance(e, UNAVAILABLE):
        # Also a Redis call over its time bound, or no pooled connection free in time.
        log.warning("redis unavailable: %s", e)
        return ApiError(503, "unavailable", "storage unavailable, try again", headers=dict(RETRY_LATER),
                        retry_after=1)
    return ApiError(500, "internal", "internal error")


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Map domain errors raised by the handlers to JSON HTTP errors (see the module docstring)."""
    try:
        return await handler(request)
    except (ApiError, Rejected, StoreError, pydantic.ValidationError, *UNAVAILABLE) as e:
        err = as_api_error(e)
        return json_error(err.status, err.code, err.detail, err.headers or None, **err.extra)
    except web.HTTPException as e:
        if e.status < 400 or not _is_api(request):
            raise
        return json_error(e.status, HTTP_CODES.get(e.status, "error"), e.reason, _safe_headers(e))
    except (RequestPayloadError, HttpProcessingError):  # e.g. a body that lies about its Content-Encoding
        return json_error(400, "bad_request", "the request body could not be read")
    except Exception:
        # the raw path, quoted: a decoded one could carry a newline (%0a) and forge log lines
        log.exception("unhandled error in %s %r", request.method, request.raw_path[:300])
        return json_error(500, "internal", "internal error")


class MalformedRequestFilter(logging.Filter):
    """aiohttp's server logs every malformed request (a NUL in a header, a broken request
    line, a body that is not the gzip it claims to be) at ERROR with a traceback quoting the
    raw bytes. That is the client's error, which
    aiohttp already answers with a 400: this filter turns such a record into one INFO line
    naming the address and the kind of error, without the traceback or the raw text."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (HttpProcessingError, RequestPayloadError)):
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "a client"
            code = getattr(exc, "code", 400)
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "malformed HTTP request from %s: %s (%s)", (remote, code, type(exc).__name__)
            record.exc_info = record.exc_text = None
        return True


def quiet_malformed_requests() -> None:
    """Install :class:`MalformedRequestFilter` on ``aiohttp.server`` (once per process)."""
    logger = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequestFilter) for f in logger.filters):
        logger.addFilter(MalformedRequestFilter())


def _safe_headers(e: web.HTTPException) -> dict[str, str]:
    return {k: v for k, v in e.headers.items() if k.lower() in ("allow", "retry-after")}


def _validation_detail(e: pydantic.ValidationError) -> str:
    parts = []
    for err in e.errors(include_url=False, include_input=False)[:5]:
        where = ".".join(str(x) for x in err.get("loc", ())) or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)
