"""Per-user limits: a token bucket for posting actions and a cap on open sockets.

``rate`` tokens per second refill a bucket of ``burst`` tokens; an action takes one.
The defaults (10/s, burst 20) leave the callout race («СКОЛЬКО КАРТ?», «ЗЕВОК!»)
and fast normal play untouched while stopping scripted floods.

The app uses :class:`SharedBuckets` and :class:`SocketLeases`, whose state lives in
the store (:mod:`store.limits`, one script per check), so behind several processes a
held-down button or a pile of tabs is limited exactly as on one. :class:`TokenBuckets`
is the same bucket in process memory (for a single process without the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

log = logging.getLogger(__name__)


class TokenBuckets:
    """Token buckets keyed by user id.

    :meth:`take` returns 0.0 when a token was taken, else the seconds to wait for one.
    """

    MAX_KEYS = 100_000

    def __init__(self, rate: float, burst: int, clock=time.monotonic) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[int, tuple[float, float]] = {}  # user → (tokens, at)

    def take(self, key: int) -> float:
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

    ``await take(user_id)``: 0.0 when allowed, else seconds until a token is back.
    Raises the store's "unavailable" errors when Redis does not answer (the action
    could not be committed either).
    """

    def __init__(self, store: Any, rate: float, burst: int) -> None:
        self.store = store
        self.rate = float(rate)
        self.burst = int(burst)

    async def take(self, key: int) -> float:
        return await self.store.take_action(key, self.rate, self.burst)


class SocketLeases:
    """At most ``cap`` open sockets per user across every process (``store.open_socket``).

    ``async with leases.hold(user_id) as admitted:`` — ``admitted`` is False when the
    user already has ``cap`` open; while held, the lease is renewed every third of
    ``lease`` seconds, and it is freed on exit (a process that dies frees it when the
    lease runs out).
    """

    def __init__(self, store: Any, cap: int, lease: float = 60.0) -> None:
        self.store = store
        self.cap = int(cap)
        self.lease = float(lease)

    @contextlib.asynccontextmanager
    async def hold(self, user_id: int) -> AsyncIterator[bool]:
        sid = secrets.token_urlsafe(9)
        try:
            admitted = await self.store.open_socket(user_id, sid, self.cap, lease=self.lease)
        except Exception:  # Redis unreachable a moment: let the socket try (its own reads will tell)
            log.warning("socket cap of user %s not checked: the store did not answer", user_id, exc_info=True)
            admitted = True
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
