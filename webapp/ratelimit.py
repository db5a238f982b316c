"""Limits: per-user and per-address request buckets, a socket's frame rate, a token
bucket for posting actions and a cap on open sockets.

``rate`` tokens per second refill a bucket of ``burst`` tokens; an action takes one.
The defaults (10/s, burst 20) leave the callout race («СКОЛЬКО КАРТ?», «ЗЕВОК!»)
and fast normal play untouched while stopping scripted floods.

The app uses :class:`SharedBuckets` and :class:`SocketLeases`, whose state lives in
the store (:mod:`store.limits`, one script per check), so behind several processes a
held-down button or a pile of tabs is limited exactly as on one. :class:`TokenBuckets`
is the same bucket in process memory: :class:`RequestLimits` (every ``/api`` request
and socket handshake by address and by user, every socket's frames) uses it, so a
refused request costs no Redis work (:func:`limit_middleware`); what it lets through
then takes a token of the user's bucket in Redis, so a user's reads and writes are
limited as on one process however many processes they are spread over.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from webapp.clock import server_time
from webapp.errors import json_error
from webapp.keys import AUTH, CALLER

log = logging.getLogger(__name__)

REPORT_EVERY = 60.0  # s between two aggregated "requests refused" log lines
#: set on a response answering a refusal of the request limits (counted, not logged line by line)
REFUSED: web.ResponseKey[bool] = web.ResponseKey("karty.refused")
SHARED_WAIT = 0.25  # s a request waits for its shared bucket in Redis before it goes on without it


class TokenBuckets:
    """Token buckets keyed by user id (or any hashable key: an address).

    :meth:`take` returns 0.0 when a token was taken, else the seconds to wait for one.
    """

    MAX_KEYS = 100_000

    def __init__(self, rate: float, burst: int, clock=time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[Any, tuple[float, float]] = {}  # key → (tokens, at)

    def take(self, key: Any) -> float:
        """Take one token for ``key``; 0.0 if allowed, else seconds until one is available."""
        now = self.clock()
        tokens, at = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate if self.rate > 0 else 60.0
        if len(self._buckets) >= self.MAX_KEYS:
            self._prune(now)
        self._buckets[key] = (tokens - 1.0, now)
        return 0.0

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled completely (they equal a fresh one)."""
        full_after = self.burst / self.rate if self.rate > 0 else 0.0
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}


class SharedBuckets:
    """The action bucket of each user, shared by every process (``store.take_action``).

    ``await take(user_id)``: 0.0 when allowed, else seconds until a token is back; 0.0 too
    when the bucket's Redis does not answer within :data:`SHARED_WAIT` s (fails open, as the
    request buckets do: on a Redis Cluster the bucket may live on a dead primary while the
    table's is healthy; the process's own buckets still bound the caller).
    """

    def __init__(self, store: Any, rate: float, burst: int) -> None:
        self.store = store
        self.rate = float(rate)
        self.burst = int(burst)

    async def take(self, key: Any) -> float:
        from store import UNAVAILABLE

        try:
            async with asyncio.timeout(SHARED_WAIT):
                return await self.store.take_action(key, self.rate, self.burst)
        except (TimeoutError, *UNAVAILABLE):
            return 0.0

    def spec(self, user_id: int) -> tuple[int, float, int]:
        """``store.apply``'s ``limit``: the token taken in the move's own round trip."""
        return (user_id, self.rate, self.burst)


class SocketLeases:
    """At most ``cap`` open sockets per user across every process (``store.open_socket``).

    ``async with leases.hold(user_id) as admitted:`` — ``admitted`` is False when the
    user already has ``cap`` open; while held, the lease is renewed every third of
    ``lease`` seconds, and it is freed on exit (a process that dies frees it when the
    lease runs out).

    Fails closed: when the store cannot say (Redis unreachable, or its answer lost), no socket
    is admitted uncounted — the error is raised from ``hold`` (one of ``store.UNAVAILABLE``:
    the socket closes 1013 ``unavailable`` and the app's reconnect tries again), so a user
    never holds more than ``cap`` sockets, however Redis fares. (The call itself is retried
    once on a lost connection by the store: opening a lease is idempotent.)
    """

    def __init__(self, store: Any, cap: int, lease: float = 60.0) -> None:
        self.store = store
        self.cap = int(cap)
        self.lease = float(lease)

    @contextlib.asynccontextmanager
    async def hold(self, user_id: int) -> AsyncIterator[bool]:
        sid = secrets.token_urlsafe(9)
        admitted = await self.store.open_socket(user_id, sid, self.cap, lease=self.lease)  # raises: closed
        if not admitted:
            yield False
            return
        renew = asyncio.create_task(self._renew(user_id, sid), name=f"socket-lease:{user_id}")
        try:
            yield True
        finally:
            renew.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renew
            with contextlib.suppress(Exception):  # unreachable Redis: the lease runs out by itself
                await asyncio.shield(self.store.close_socket(user_id, sid))

    async def _renew(self, user_id: int, sid: str) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            with contextlib.suppress(Exception):  # a blip: the next renewal (or the lease) covers it
                await self.store.keep_socket(user_id, sid, lease=self.lease)


def client_address(request: web.Request, trusted: frozenset[str]) -> str:
    """The client's address: ``request.remote``, or — only when that is one of the
    ``trusted`` proxies (``TRUSTED_PROXIES``) — the nearest ``X-Forwarded-For`` hop that is
    not a trusted proxy itself (the address our proxy saw; hops left of it are what the
    client claimed, so they are never believed). An IPv6 address counts by its /64 (one
    subscriber's network), so rotating addresses within it gains nothing.
    """
    addr = request.remote or "?"
    if addr in trusted:
        for hop in reversed(request.headers.get("X-Forwarded-For", "").split(",")):
            hop = hop.strip()
            if hop and hop not in trusted:
                addr = hop
                break
    if ":" in addr:
        with contextlib.suppress(ValueError):
            return str(ipaddress.IPv6Network(f"{addr}/64", strict=False).network_address) + "/64"
    return addr


class RequestLimits:
    """Per-process token buckets in front of every request under ``/api/`` and ``/ws/``
    (and a separate, generous one for ``/healthz``), kept in memory: a refusal costs a
    dict lookup and no Redis work at all.

    * ``address``: every request by its client address (:func:`client_address`), signed
      in or not, so junk without auth is limited too;
    * ``reads`` / ``writes``: every request carrying a valid credential, by its user
      (GET/HEAD read; anything else writes; a posted action also takes the user's shared
      action bucket in Redis, :class:`SharedBuckets`);
    * ``health``: ``/healthz`` by address (it pings Redis);
    * :meth:`frames`: one bucket per WebSocket for the client's frames.

    A request the user's bucket here lets through also takes a token of the user's bucket
    of the same kind in Redis (:meth:`shared_take`, when ``store`` is set), shared by every
    process, so behind N processes a user still gets one process's worth; a flood is refused
    here first, at no Redis cost. A move (``POST …/actions``) skips it: its own bucket
    is taken in the move's one script (``store.apply``'s ``limit``). By address stays per
    process (its requests may not be signed in: a Redis call for each would be the flood's).
    ``clock``: monotonic seconds, ``wall``: epoch seconds for the shared buckets (every
    process's clock agrees on it); both replaceable (tests freeze them).
    """

    def __init__(self, settings: Any, clock=time.monotonic, store: Any = None, wall=time.time) -> None:
        self.clock = clock
        self.wall = wall
        self.store = store
        self.read_rate, self.read_burst = float(settings.read_rate), int(settings.read_burst)
        self.write_rate, self.write_burst = float(settings.write_rate), int(settings.write_burst)
        now = self._now
        self.address = TokenBuckets(settings.address_rate, settings.address_burst, clock=now)
        self.reads = TokenBuckets(settings.read_rate, settings.read_burst, clock=now)
        self.writes = TokenBuckets(settings.write_rate, settings.write_burst, clock=now)
        self.health = TokenBuckets(settings.health_rate, settings.health_burst, clock=now)
        self.frame_rate = float(settings.ws_frame_rate)
        self.frame_burst = int(settings.ws_frame_burst)
        self.trusted = frozenset(p.strip() for p in (settings.trusted_proxies or "").split(",") if p.strip())
        self.delay = float(settings.limit_delay)
        self.refused = 0  # requests answered 429 here (for logs and benchmarks)
        self._tick: asyncio.Future[None] | None = None  # the refusals' shared wait (see :meth:`pause`)
        self._reported = (time.monotonic(), 0)  # when the last "refused" line was logged, and the count then

    def pause(self) -> asyncio.Future[None]:
        """What a refusal awaits before its answer: one future shared by every refusal of the
        same ``delay`` window, resolved by one timer (a flood of refusals makes no timer each),
        so a refused connection waits up to ``delay`` s for its next answer."""
        tick = self._tick
        if tick is None or tick.done():
            loop = asyncio.get_running_loop()
            tick = self._tick = loop.create_future()
            loop.call_later(self.delay, _resolve, tick)
        return tick

    def count_refusal(self) -> None:
        """One more refusal: counted, and logged as one aggregated line at most once a minute
        (never a line per refused request: a flood must not write the log at its own rate)."""
        self.refused += 1
        now = time.monotonic()
        since, before = self._reported
        if now - since >= REPORT_EVERY:
            self._reported = (now, self.refused)
            log.warning("%d requests refused (429 too_fast) in the last %.0f s", self.refused - before, now - since)

    def _now(self) -> float:
        return self.clock()

    def frames(self) -> TokenBuckets:
        """A new socket's frame bucket (take key 0 per client frame)."""
        return TokenBuckets(self.frame_rate, self.frame_burst, clock=self._now)

    def user(self, user_id: int, method: str) -> float:
        """Take one token of ``user_id``'s read or write bucket: 0.0, or seconds to wait."""
        return (self.reads if method in ("GET", "HEAD") else self.writes).take(user_id)

    async def shared_take(self, user_id: int, method: str) -> float:
        """One token of ``user_id``'s read or write bucket in Redis (every process's): 0.0, or
        seconds to wait; 0.0 without a store, and when Redis does not answer within
        :data:`SHARED_WAIT` s (the request itself then meets the same Redis and answers 503
        if it needs it; a read the process can answer from memory is not held up)."""
        if self.store is None:
            return 0.0
        from store import UNAVAILABLE

        read = method in ("GET", "HEAD")
        try:
            async with asyncio.timeout(SHARED_WAIT):
                return await self.store.take_request(user_id, "read" if read else "write",
                                                     self.read_rate if read else self.write_rate,
                                                     self.read_burst if read else self.write_burst, now=self.wall())
        except (TimeoutError, *UNAVAILABLE):
            return 0.0


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


_TOO_FAST_BODY = '{{"error":"too_fast","detail":"too many requests, slow down","retry_after":{},"server_time":{}}}'


def refused(wait: float) -> web.Response:
    """:func:`too_fast` for a refusal of the request limits, made cheaply (a format, no JSON
    encoder, no dict: the answer a flood gets thousands of times a second); marked on the
    response so the access log counts it instead of writing a line (:mod:`webapp.accesslog`)."""
    body = _TOO_FAST_BODY.format(round(wait, 3), server_time()).encode()
    resp = web.Response(body=body, status=429, content_type="application/json",
                        headers={"Retry-After": str(max(1, math.ceil(wait)))})
    resp[REFUSED] = True
    return resp


def too_fast(wait: float, detail: str = "too many requests, slow down") -> web.Response:
    """The 429 ``too_fast`` answer (the shape of the action limit's): ``Retry-After`` in whole
    seconds, ``retry_after`` exact in the body."""
    return json_error(429, "too_fast", detail, {"Retry-After": str(max(1, math.ceil(wait)))},
                      retry_after=round(wait, 3))


def limit_middleware(limits: RequestLimits) -> Callable:
    """An aiohttp middleware applying :class:`RequestLimits` before any other work (before
    admission, before the handler): the address bucket first, then, when the request
    carries a valid credential (checked in memory: ``Authenticator.peek``), its user's,
    here and then (what passes here, a move excepted) in Redis, shared by every process.
    The caller found is kept on the request (``CALLER``) so the handler does not check it
    again. A refusal is answered after ``LIMIT_DELAY`` s (a sleep: no CPU), so a flood on
    kept-alive connections is slowed to ``1 / LIMIT_DELAY`` answers per connection and
    second instead of making the process answer thousands of 429s (one timer for all of them,
:meth:`RequestLimits.pause`; the answer made without a JSON encoder, :func:`refused`; counted,
not logged one by one, :meth:`RequestLimits.count_refusal`). Exempt: static files
    and the bot's webhook (its secret is checked by aiogram; Telegram's few addresses must
    not be limited as one user's)."""

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        path = request.path
        if path == "/healthz":
            wait = limits.health.take(client_address(request, limits.trusted))
        elif path.startswith(("/api/", "/ws/")):
            wait = limits.address.take(client_address(request, limits.trusted))
            if not wait and "Authorization" in request.headers:
                who = request.app[AUTH].peek(request)
                request[CALLER] = who
                if who is not None:
                    wait = limits.user(who.id, request.method)
                    if not wait and not (request.method == "POST" and path.endswith("/actions")):
                        wait = await limits.shared_take(who.id, request.method)
        else:
            return await handler(request)
        if wait:
            limits.count_refusal()
            if limits.delay:  # no work, one shared timer: a flooder's connection waits instead of sending again
                await limits.pause()
            return refused(max(0.001, wait - limits.delay))
        return await handler(request)

    return middleware
