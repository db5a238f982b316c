"""A graceful drain on SIGTERM (issue 26): a restart loses no move and strands no socket.

On SIGTERM (``python -m webapp`` installs the handler, :func:`install`) the process:

1. says ``503 {"ok": false, "status": "draining"}`` on ``/healthz`` (a proxy with health
   checks takes it out) and answers every later response with ``Connection: close`` (the
   proxy's kept-alive connections to it end after their answer, none is left to race the
   listener's close);
2. refuses new table sockets before the upgrade: 503 ``draining`` (``deploy/nginx.conf``
   tries the next process on a 503, so the client never sees it);
3. waits for the moves it holds (a move being applied: :meth:`Drain.holding`) to be answered;
4. closes its open table sockets with **1012** (*service restart*, RFC 6455 §7.4.1: the
   ``error`` frame before it says ``draining``): the Mini App reconnects at once, without
   its backoff, and reaches another process;
5. stops listening and shuts down as usual: requests under way are answered, the worker and
   the bot's notifier stop (the notifier acknowledges every entry it handled; one it was
   handling comes again to the next process, and a "your turn" is marked before it is sent,
   so none goes twice), the store closes.

All of it within ``DRAIN_SECONDS`` (10): steps 1-4 take at most 40 % of it, the shutdown of
step 5 another 40 %; should anything still hang at ``DRAIN_SECONDS`` the process exits
(status 1). A second SIGTERM, or SIGINT, skips what is left of the drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from aiohttp.web_runner import GracefulExit

from webapp.keys import DRAIN, HUB, SOCKETS

log = logging.getLogger(__name__)

#: The close code a draining process closes its table sockets with (RFC 6455: service restart).
CLOSE_RESTART = 1012
DRAIN_SHARE = 0.4  # of DRAIN_SECONDS for steps 1-4, and again for aiohttp's shutdown
FLUSH_WAIT = 1.0  # s the sockets' send queues get to empty before the sockets close


class Drain:
    """Whether this process drains, and the moves it holds (``with drain.holding(): ...``)."""

    def __init__(self) -> None:
        self.draining = False
        self.started: float | None = None
        self.held = 0
        self._idle: asyncio.Event | None = None

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Counts a move being applied for as long as the block runs."""
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1
            if self.held == 0 and self._idle is not None:
                self._idle.set()

    async def idle(self, timeout: float) -> bool:
        """Wait until no move is held (True), at most ``timeout`` s (False)."""
        if self.held == 0:
            return True
        self._idle = asyncio.Event()
        try:
            async with asyncio.timeout(max(0.0, timeout)):
                while self.held:
                    self._idle.clear()
                    await self._idle.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self._idle = None


async def close_connections(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: while draining, every answer closes its connection."""
    drain = request.app.get(DRAIN)
    if drain is not None and drain.draining and not isinstance(response, web.WebSocketResponse):
        response.force_close()  # the connection ends after this answer …
        response.headers["Connection"] = "close"  # … and says so (the headers are made before this hook)


async def drain(app: web.Application, seconds: float) -> None:
    """Steps 1-4 of the module docstring, within ``DRAIN_SHARE * seconds``."""
    state = app[DRAIN]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds * DRAIN_SHARE
    state.draining, state.started = True, time.monotonic()
    sockets = list(app[SOCKETS])
    log.info("draining: the health check says 503, new sockets are refused; %d moves held, %d sockets open",
             state.held, len(sockets))
    if not await state.idle(deadline - loop.time()):
        log.warning("draining: %d moves still held after %.1f s; shutting down anyway", state.held,
                    seconds * DRAIN_SHARE)
    from webapp.clock import stamp_text
    from webapp.errors import dumps

    note = stamp_text(dumps({"type": "error", "error": "draining", "detail": "the server restarts: connect again"}))

    async def close(ws: web.WebSocketResponse) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(max(0.1, deadline - loop.time())):
                await ws.send_str(note)
                await ws.close(code=CLOSE_RESTART, message=b"draining")

    # what the sockets were sent already (a held move's "acted", its new state) goes out first
    clients = [c for feed in app[HUB].feeds.values() for c in feed.clients] if HUB in app else []
    flush_by = min(deadline, loop.time() + FLUSH_WAIT)
    while any(not c.queue.empty() for c in clients) and loop.time() < flush_by:
        await asyncio.sleep(0.01)
    await asyncio.gather(*(close(ws) for ws in list(app[SOCKETS])))
    log.info("draining: %d sockets told to reconnect after %.2f s; stopping", len(sockets),
             time.monotonic() - state.started)


def install(app: web.Application, seconds: float) -> None:
    """Make SIGTERM drain this app (:func:`drain`), then exit as aiohttp does on a signal;
    a watchdog ends the process at ``seconds`` should the shutdown hang. Call from the app's
    startup, once aiohttp has installed its own handlers (they are replaced for SIGTERM)."""
    loop = asyncio.get_running_loop()
    begun: list[Any] = []

    def leave() -> None:
        raise GracefulExit()

    def on_sigterm() -> None:
        if begun:  # a second SIGTERM: stop now
            leave()
        timer = threading.Timer(seconds, _overdue, (seconds,))
        timer.daemon = True
        timer.start()
        task = loop.create_task(drain(app, seconds), name="drain")
        begun.append(task)
        task.add_done_callback(lambda _t: loop.call_soon(leave))  # raised from a callback: run_app stops

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)


def _overdue(seconds: float) -> None:
    log.error("drain: still running %.0f s after SIGTERM (DRAIN_SECONDS): exiting now", seconds)
    logging.shutdown()
    os._exit(1)
