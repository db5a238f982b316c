"""Telegram Mini App initData: checking it, and signing it for local play and tests.

Telegram signs initData as ``hash = HMAC_SHA256(key=HMAC_SHA256("WebAppData", token),
data_check_string)`` where the data-check-string is every received field but ``hash``,
``key=value`` sorted by key and joined with ``\\n`` (values URL-decoded, JSON kept
exactly as sent, escaped slashes included). :func:`check_signature` is that
algorithm (the same as aiogram's ``check_webapp_signature``, in the standard library:
local play and the web app never import a Telegram library, and aiogram's import costs
seconds of CPU); :func:`verify_init_data` adds a maximum age of ``auth_date`` (24 h by
default) and a user with an integer id and a first name being present.

Long sessions: initData lives 24 h, an app may stay open longer. ``POST /api/session``
exchanges valid initData (or a session still valid) for a server-issued session
(:func:`sign_session`: signed, not stored, :data:`SESSION_TTL`), which the app sends as
``Authorization: session <token>`` and renews while it is in use.

Reuse of the same initData within its age is normal (the Mini App sends it on every
call) and accepted: :class:`Authenticator` keeps each string it verified (bounded, LRU)
until its ``auth_date`` is older than the maximum age, so a repeat costs a dict lookup,
not an HMAC and a JSON parse. initData signed for another bot fails the signature check.

In local play (no bot token) the same scheme is used with a random key generated at
start (:func:`new_local_key`), so the same checks serve both.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from aiohttp import web

from webapp.errors import ApiError
from webapp.keys import CALLER

MAX_INIT_DATA = 4096  # bytes; real initData is well under 1.5 KiB
SESSION_TTL = 12 * 3600  # seconds a server-issued session lasts; renewed while the app is in use
SESSION_PREFIX = "s1."
FUTURE_SKEW = 300  # seconds an auth_date may lie in the future (clock skew)


@dataclass(frozen=True, slots=True)
class Identity:
    """The signed-in caller, from checked initData.

    ``id`` Telegram user id; ``name`` first and last name; ``username``, ``language``
    (IETF tag) when given; ``start_param`` the ``startapp`` value (a table id) when
    opened from a direct link; ``auth_date`` epoch seconds.
    """

    id: int
    name: str
    username: str | None
    language: str | None
    start_param: str | None
    auth_date: int


def verify_init_data(init_data: str, token: str, *, max_age: int, now: float | None = None) -> Identity:
    """Check ``init_data`` against ``token`` and return the caller.

    Raises :class:`~webapp.errors.ApiError` 401 with ``error``: ``unauthorized`` (missing,
    malformed, bad or foreign signature, no user) or ``auth_expired`` (``auth_date`` older
    than ``max_age`` seconds).
    """
    if not init_data or not isinstance(init_data, str):
        raise ApiError(401, "unauthorized", "initData missing")
    if len(init_data) > MAX_INIT_DATA:
        raise ApiError(401, "unauthorized", "initData too long")
    fields = check_signature(init_data, token)
    if fields is None:
        raise ApiError(401, "unauthorized", "initData signature invalid")
    raw_date = fields.get("auth_date", "")
    if not raw_date.isascii() or not raw_date.isdigit():
        raise ApiError(401, "unauthorized", "initData signature invalid")  # signed, but not Telegram's shape
    now = time.time() if now is None else now
    auth_date = int(raw_date)
    if now - auth_date > max_age:
        raise ApiError(401, "auth_expired", "initData expired, reopen the app")
    if auth_date - now > FUTURE_SKEW:
        raise ApiError(401, "unauthorized", "initData from the future")
    if "user" not in fields:
        raise ApiError(401, "unauthorized", "initData without a user")
    user = _user(fields["user"])
    if user is None:
        raise ApiError(401, "unauthorized", "initData signature invalid")  # a user of the wrong shape
    uid, first, last, username, language = user
    name = " ".join(p for p in (first, last) if p).strip() or (username or str(uid))
    start_param = fields.get("start_param")
    return Identity(
        id=uid,
        name=name[:64],
        username=username,
        language=language,
        start_param=start_param,
        auth_date=auth_date,
    )


def check_signature(init_data: str, token: str) -> dict[str, str] | None:
    """The fields of ``init_data`` (URL-decoded, ``hash`` removed) when Telegram's HMAC over
    them checks out against ``token``, else None (also for a malformed query string)."""
    try:
        fields = dict(parse_qsl(init_data, strict_parsing=True))
    except ValueError:
        return None
    given = fields.pop("hash", None)
    if given is None:
        return None
    check = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    expected = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return fields if hmac.compare_digest(expected, given) else None


def _user(raw: str) -> tuple[int, str, str | None, str | None, str | None] | None:
    """``(id, first_name, last_name, username, language_code)`` of initData's ``user`` JSON
    (Telegram's WebAppUser), None when it is not that shape."""
    try:
        user = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(user, dict):
        return None
    uid, first = user.get("id"), user.get("first_name")
    if type(uid) is not int or not isinstance(first, str):
        return None
    optional = [user.get(k) for k in ("last_name", "username", "language_code")]
    if any(v is not None and not isinstance(v, str) for v in optional):
        return None
    last, username, language = optional
    return uid, first, last, username, language


def header_credential(request: web.Request) -> str:
    """The credential of ``Authorization: tma <initData>`` or ``Authorization: session <token>``;
    401 ``unauthorized`` when absent."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    value = value.strip()
    if scheme.lower() == "session" and value:
        return value if value.startswith(SESSION_PREFIX) else SESSION_PREFIX + value
    if scheme.lower() != "tma" or not value:
        raise ApiError(401, "unauthorized", "Authorization: tma <initData> or session <token> required")
    return value


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_session(who: Identity, token: str, *, now: float, ttl: int = SESSION_TTL) -> tuple[str, float]:
    """A session for ``who``: ``("s1.<payload>.<mac>", expires_at)``. The payload (the caller,
    issued and expiry times) is signed with a key derived from ``token`` (the bot token), so
    only this server's processes issue or accept it; nothing is stored."""
    expires = float(int(now) + ttl)
    body = {"i": who.id, "n": who.name, "u": who.username, "l": who.language, "s": who.start_param,
            "a": who.auth_date, "t": int(now), "e": int(expires)}
    payload = _b64(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
    mac = hmac.new(_session_key(token), payload.encode(), hashlib.sha256).digest()
    return f"{SESSION_PREFIX}{payload}.{_b64(mac)}", expires


def verify_session(session: str, token: str, *, now: float) -> tuple[Identity, float]:
    """``(caller, expires_at)`` of a session from :func:`sign_session`. 401 ``unauthorized``
    (malformed, forged, another bot's) or ``session_expired``."""
    try:
        payload, mac = session[len(SESSION_PREFIX):].split(".")
        expected = hmac.new(_session_key(token), payload.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, _unb64(mac)):
            raise ValueError("bad mac")
        body = json.loads(_unb64(payload))
        who = Identity(id=int(body["i"]), name=str(body["n"]), username=body.get("u"), language=body.get("l"),
                       start_param=body.get("s"), auth_date=int(body["a"]))
        expires = float(body["e"])
    except (ValueError, KeyError, TypeError):
        raise ApiError(401, "unauthorized", "session invalid") from None
    if now >= expires:
        raise ApiError(401, "session_expired", "session expired, reopen the app")
    return who, expires


def _session_key(token: str) -> bytes:
    return hmac.new(b"KartySession", token.encode(), hashlib.sha256).digest()


def header_init_data(request: web.Request) -> str:
    """The initData of ``Authorization: tma <initData>``; 401 ``unauthorized`` when absent."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "tma" or not value.strip():
        raise ApiError(401, "unauthorized", "Authorization: tma <initData> required")
    return value.strip()


def sign_init_data(fields: dict[str, Any], token: str) -> str:
    """Sign ``fields`` as Telegram does and return the initData query string.

    Values that are dicts or lists are JSON-encoded (compactly, slashes escaped as
    Telegram's clients do); strings are used as given, so a test can pass the exact
    JSON text Telegram would send.
    """
    values: dict[str, str] = {}
    for key, value in fields.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("/", "\\/")
        values[key] = str(value)
    check = "\n".join(f"{k}={v}" for k, v in sorted(values.items()))
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    values["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(values)


def new_local_key() -> str:
    """A random signing key for local play, in the shape of a bot token (never a real one)."""
    return f"0:{secrets.token_urlsafe(32)}"


def local_user_id(name: str) -> int:
    """A stable numeric user id for a local player's ``name`` (case-insensitive).

    In 10^12 … 10^12 + 2^40, above the ids local play could confuse with small test ids.
    """
    digest = hashlib.sha256(b"karty-local:" + name.strip().casefold().encode()).digest()
    return 10**12 + int.from_bytes(digest[:5], "big")


class Authenticator:
    """Checks initData against one key and saves every user it sees (``store.save_user``).

    ``token``: the bot token, or the local key in local play. Verified initData strings
    are kept (at most :attr:`MAX_VERIFIED`, least recently used dropped) with their
    :class:`Identity`; a repeat is only checked for age against ``clock`` (epoch s), so
    it expires exactly when a fresh check would say ``auth_expired``. A string that failed
    as ``unauthorized`` (bad signature, malformed, no user: it can never become valid) keeps
    its verdict too (at most :attr:`MAX_REFUSED`, all dropped when full), so a flood of one
    forged string costs a dict lookup, not an HMAC each. A user is saved again only
    when their name, username or language changed or :attr:`RESAVE` seconds passed.
    """

    RESAVE = 600.0
    MAX_CACHE = 50_000
    MAX_VERIFIED = 20_000
    MAX_REFUSED = 4096  # bad initData strings whose verdict is kept (a forged flood costs a lookup)

    def __init__(self, token: str, store: Any, *, max_age: int, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.store = store
        self.max_age = max_age
        self.clock = clock
        self.session_ttl = SESSION_TTL
        self._seen: dict[int, tuple[tuple[str, str | None, str | None], float]] = {}
        self._verified: OrderedDict[str, Identity] = OrderedDict()
        self._refused: dict[str, str] = {}  # bad initData → the detail of its 401

    def verify(self, init_data: str) -> Identity:
        """:func:`verify_init_data` of ``init_data``, from the cache when verified before."""
        now = self.clock()
        who = self._verified.get(init_data) if isinstance(init_data, str) else None
        if who is not None:
            if now - who.auth_date > self.max_age:
                del self._verified[init_data]
                raise ApiError(401, "auth_expired", "initData expired, reopen the app")
            self._verified.move_to_end(init_data)
            return who
        refused = self._refused.get(init_data) if isinstance(init_data, str) else None
        if refused is not None:  # the same bad string again: the same verdict, no HMAC
            raise ApiError(401, "unauthorized", refused)
        try:
            who = verify_init_data(init_data, self.token, max_age=self.max_age, now=now)
        except ApiError as e:
            # never valid later: not an expiry, nor a date ahead of the clock (that one may pass)
            if isinstance(init_data, str) and e.code == "unauthorized" and "future" not in e.detail:
                if len(self._refused) >= self.MAX_REFUSED:
                    self._refused.clear()
                self._refused[init_data] = e.detail
            raise
        self._verified[init_data] = who
        if len(self._verified) > self.MAX_VERIFIED:
            self._verified.popitem(last=False)
        return who

    async def identify(self, credential: str) -> Identity:
        """Check ``credential`` — initData, or a session from :meth:`issue` (``s1.…``) — (401
        :class:`ApiError` if bad or expired) and save its user."""
        if isinstance(credential, str) and credential.startswith(SESSION_PREFIX):
            who, _ = verify_session(credential, self.token, now=self.clock())
        else:
            who = self.verify(credential)
        await self.remember(who)
        return who

    def issue(self, who: Identity) -> tuple[str, float]:
        """A fresh session for ``who`` (see :func:`sign_session`): ``(token, expires_at)``."""
        return sign_session(who, self.token, now=self.clock(), ttl=self.session_ttl)

    async def request(self, request: web.Request) -> Identity:
        """The caller of an HTTP request, from ``Authorization: tma <initData>`` or
        ``Authorization: session <token>`` (already checked by :meth:`peek` when the limit
        middleware ran; only saving the user is left then)."""
        who = request.get(CALLER)
        if who is not None:
            await self.remember(who)
            return who
        return await self.identify(header_credential(request))

    def peek(self, request: web.Request) -> Identity | None:
        """The caller the request's ``Authorization`` names if its credential is valid now,
        else None — checked in memory only (no Redis, nothing saved, never raises): the
        limit middleware's key for the user's bucket."""
        try:
            credential = header_credential(request)
            if credential.startswith(SESSION_PREFIX):
                return verify_session(credential, self.token, now=self.clock())[0]
            return self.verify(credential)
        except Exception:
            return None

    async def remember(self, who: Identity) -> None:
        """Save ``who`` with ``store.save_user`` unless saved recently unchanged."""
        key = (who.name, who.username, who.language)
        now = time.monotonic()
        seen = self._seen.get(who.id)
        if seen and seen[0] == key and now - seen[1] < self.RESAVE:
            return
        # the one precedence (store.languages): an explicit choice stays, else the code mapped
        await self.store.seen_user(who.id, who.name, who.username, who.language)
        if len(self._seen) >= self.MAX_CACHE:
            self._seen.clear()
        self._seen[who.id] = (key, now)
