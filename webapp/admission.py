"""Backpressure: a process takes no more work than it can finish quickly.

Every request under ``/api/`` and every WebSocket handshake (``/ws/``) holds one of
``limit`` slots while it runs. A request that finds them all taken waits its turn
(first come, first served) for at most ``max_wait`` seconds and only while fewer than
``queue`` others wait; and, when ``max_lag`` is set (``ADMIT_MAX_LAG``, for a machine of
the service's own), none is taken while the event loop runs more than ``max_lag`` seconds
late (the CPU, not the slots, is what runs out; on a shared machine other programs make
every loop late, so it is off by default). Otherwise it is answered at
once with 503 ``overloaded`` and
``Retry-After`` (whole seconds) and ``retry_after`` in the body. So under more load
than the process can carry, the requests it admits stay fast and the rest learn
quickly when to come back, instead of every request slowing down together until the
process collapses. ``/healthz`` and static files are never held back (a health check
must see a busy process as alive).

The request limits (:mod:`webapp.ratelimit`: per address, per user, 429 ``too_fast``) are
a separate, earlier guard against one client's flood (the middleware before this one: a
refused request takes no slot); this one protects the process as a whole.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
from collections.abc import Awaitable, Callable

from aiohttp import web

from webapp.errors import json_error
from webapp.keys import ADMISSION_RELEASE


class Admission:
    """At most ``limit`` requests at once, ``queue`` more waiting at most ``max_wait`` s each.

    ``retry_after``: seconds suggested to a refused client. Counters ``admitted`` and
    ``refused`` are for logs and benchmarks.
    """

    def __init__(self, limit: int = 64, queue: int = 256, max_wait: float = 0.25, retry_after: float = 1.0,
                 max_lag: float | None = None) -> None:
        if limit < 1 or queue < 0 or max_wait < 0:
            raise ValueError("limit >= 1, queue >= 0, max_wait >= 0")
        self.limit = limit
        self.queue = queue
        self.max_wait = max_wait
        self.retry_after = retry_after
        self.max_lag = max_lag
        self.lag = 0.0  # seconds the event loop ran late at the last probe (:meth:`watch_lag`)
        self.running = 0
        self.admitted = 0
        self.refused = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> bool:
        """Take a slot (True), or False when none frees up within the bounds (refused)."""
        if self.max_lag is not None and self.lag > self.max_lag:  # the CPU cannot keep up
            self.refused += 1
            return False
        if self.running < self.limit and not self._waiters:
            self.running += 1
            self.admitted += 1
            return True
        if len(self._waiters) >= self.queue or self.max_wait <= 0:
            self.refused += 1
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.max_wait)
        except TimeoutError:
            if fut.done() and not fut.cancelled():  # handed a slot just as the wait ran out
                self.release()
            else:
                fut.cancel()
            self._drop(fut)
            self.refused += 1
            return False
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()
            else:
                fut.cancel()
            self._drop(fut)
            raise
        self.admitted += 1
        return True  # release() passed its slot on to us: running already counts it

    async def watch_lag(self, every: float = 0.05) -> None:
        """Probe the event loop's lateness every ``every`` s, for as long as it runs: a loop
        running late means the CPU is the bottleneck, whatever the slots say."""
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(every)
            late = max(0.0, loop.time() - start - every)
            # smoothed over about a second: one slow moment (a GC pass) refuses nobody
            self.lag = late if late > self.lag else self.lag + (late - self.lag) * min(1.0, every)

    def release(self) -> None:
        """Give a slot back: to the oldest waiter still waiting, else free it."""
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self.running -= 1

    def _drop(self, fut: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(fut)

    def refusal(self) -> web.Response:
        """The 503 ``overloaded`` answer with ``Retry-After``."""
        return json_error(
            503,
            "overloaded",
            "the server is busy, try again shortly",
            {"Retry-After": str(max(1, math.ceil(self.retry_after)))},
            retry_after=self.retry_after,
        )


def admission_middleware(admission: Admission) -> Callable:
    """An aiohttp middleware holding ``/api/`` requests and ``/ws/`` handshakes to ``admission``.

    A WebSocket holds its slot only until its first snapshot is queued (the handler
    calls ``request[ADMISSION_RELEASE]()``), not for the socket's lifetime.
    """

    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        path = request.path
        if not path.startswith(("/api/", "/ws/")):
            return await handler(request)
        if not await admission.acquire():
            return admission.refusal()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                admission.release()

        request[ADMISSION_RELEASE] = release
        try:
            return await handler(request)
        finally:
            release()

    return middleware
