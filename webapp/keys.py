"""Typed application keys (``web.AppKey``) shared by the webapp modules."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from webapp.admission import Admission
    from webapp.assets import Assets
    from webapp.auth import Authenticator, Identity
    from webapp.drain import Drain
    from webapp.presence import Presence
    from webapp.ratelimit import RequestLimits, SharedBuckets, SocketLeases
    from webapp.settings import WebSettings
    from webapp.ws import Hub

SETTINGS: web.AppKey[WebSettings] = web.AppKey("karty.settings")
STORE: web.AppKey[Any] = web.AppKey("karty.store")  # store.Store
AUTH: web.AppKey[Authenticator] = web.AppKey("karty.auth")
LIMITER: web.AppKey[SharedBuckets] = web.AppKey("karty.limiter")
LIMITS: web.AppKey[RequestLimits] = web.AppKey("karty.request_limits")
LEASES: web.AppKey[SocketLeases] = web.AppKey("karty.socket_leases")
HUB: web.AppKey[Hub] = web.AppKey("karty.hub")
SOCKETS: web.AppKey[weakref.WeakSet[web.WebSocketResponse]] = web.AppKey("karty.sockets")
PRESENCE: web.AppKey[Presence] = web.AppKey("karty.presence")
ADMISSION: web.AppKey[Admission] = web.AppKey("karty.admission")
DRAIN: web.AppKey[Drain] = web.AppKey("karty.drain")  # webapp.drain: whether this process drains
ASSETS: web.AppKey[Assets] = web.AppKey("karty.assets")  # webapp/static, versioned and compressed
#: Set on a request by the admission middleware: call it to give the request's slot back early.
ADMISSION_RELEASE: web.RequestKey[Callable[[], None]] = web.RequestKey("karty.admission_release")
#: Set on a request by the limit middleware when it carries an ``Authorization`` header: the
#: caller it names, checked in memory (None: not valid; the handler checks it again and says why).
CALLER: web.RequestKey[Identity | None] = web.RequestKey("karty.caller")
