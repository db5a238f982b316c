"""Typed application keys (``web.AppKey``) shared by the webapp modules."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from webapp.auth import Authenticator
    from webapp.ratelimit import TokenBuckets
    from webapp.settings import WebSettings
    from webapp.ws import Hub

SETTINGS: web.AppKey[WebSettings] = web.AppKey("karty.settings")
STORE: web.AppKey[Any] = web.AppKey("karty.store")  # store.Store
AUTH: web.AppKey[Authenticator] = web.AppKey("karty.auth")
LIMITER: web.AppKey[TokenBuckets] = web.AppKey("karty.limiter")
HUB: web.AppKey[Hub] = web.AppKey("karty.hub")
SOCKETS: web.AppKey[weakref.WeakSet[web.WebSocketResponse]] = web.AppKey("karty.sockets")
