"""A fault proxy on asyncio, between the service and one Redis node, for the network-fault tests.

``FaultProxy(upstream_host, upstream_port)`` listens on a free loopback port (``.port``,
``.url``) and copies bytes both ways, one task per direction and connection. Faults, each
switched on and off while traffic runs:

* :meth:`delay` — latency each way (``ms`` ± ``jitter`` ms, uniform, seeded), bytes kept in
  order (a chunk never overtakes the one before it);
* :meth:`reset_all` — every open connection reset now (RST to the client, the upstream closed);
* :meth:`forget` — every open connection is kept open but dead: the next bytes either side
  sends get it reset (what a client sees after a restart of Redis or of a middlebox whose
  FIN it never got: the pooled connection looks alive until used);
* :meth:`blackhole` — bytes of one direction (``"up"``: client → Redis, ``"down"``, or
  ``"both"``) are swallowed, connections stay open (a one-way partition); new connections are
  accepted and swallowed too;
* :meth:`heal` — back to a clean pass-through (latency kept unless ``delay(0)``).

Counters (``connections``, ``resets``, ``bytes_up``, ``bytes_down``) are for the reports.
Loopback only; :meth:`close` stops everything it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from typing import Any


class _Link:
    """One client connection and its upstream."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.dead = False  # forgotten: reset at the next byte
        self.tasks: list[asyncio.Task[Any]] = []

    def reset(self) -> None:
        for writer in (self.client, self.upstream):
            sock = writer.get_extra_info("socket")
            with contextlib.suppress(Exception):
                if sock is not None:  # SO_LINGER 0: close sends RST, not FIN
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(Exception):
                writer.transport.abort()
        for task in self.tasks:
            if task is not asyncio.current_task():
                task.cancel()


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, seed: int = 27) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.rng = random.Random(seed)
        self.latency = 0.0  # seconds each way
        self.jitter = 0.0
        self.holes: set[str] = set()  # "up", "down"
        self.links: set[_Link] = set()
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self.connections = self.resets = self.bytes_up = self.bytes_down = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> FaultProxy:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    # -- faults ------------------------------------------------------------------------------------
    def delay(self, ms: float, jitter: float = 0.0) -> None:
        self.latency, self.jitter = ms / 1000.0, jitter / 1000.0

    def reset_all(self) -> int:
        links = list(self.links)
        for link in links:
            self._reset(link)
        return len(links)

    def forget(self) -> int:
        for link in self.links:
            link.dead = True
        return len(self.links)

    def blackhole(self, direction: str = "both") -> None:
        self.holes = {"up", "down"} if direction == "both" else {direction}

    def heal(self) -> None:
        self.holes = set()

    # -- plumbing ----------------------------------------------------------------------------------
    def _reset(self, link: _Link) -> None:
        if link in self.links:
            self.links.discard(link)
            self.resets += 1
        link.reset()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()  # Redis down: the client's connect fails as it would
            return
        link = _Link(writer, up_writer)
        self.links.add(link)
        link.tasks = [asyncio.create_task(self._pump(link, reader, up_writer, "up")),
                      asyncio.create_task(self._pump(link, up_reader, writer, "down"))]
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*link.tasks, return_exceptions=True)
        self.links.discard(link)
        for w in (writer, up_writer):
            with contextlib.suppress(Exception):
                w.close()

    async def _pump(self, link: _Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    direction: str) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if direction in self.holes:
                    continue
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        last_due = 0.0
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk and link.dead:  # the far side closed, and the near one is not told
                    await asyncio.Event().wait()  # until the next bytes of the near side reset it
                if not chunk:
                    break
                if link.dead:
                    self._reset(link)
                    return
                if direction == "up":
                    self.bytes_up += len(chunk)
                else:
                    self.bytes_down += len(chunk)
                delay = self.latency + (self.rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0)
                due = max(loop.time() + max(0.0, delay), last_due)  # in order: never before the last one
                last_due = due
                queue.put_nowait((due, chunk))
            while not queue.empty():
                await asyncio.sleep(0.001)
            with contextlib.suppress(Exception):
                writer.write_eof()
        except (ConnectionError, OSError):
            self._reset(link)
        finally:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        self.reset_all()
        if self.server is not None:
            with contextlib.suppress(Exception):
                await self.server.wait_closed()
