"""Presence ("this user is looking at this table"), written in batches per process.

A seated user's socket touches presence when it opens and on every ping (every
10–20 s). Writing each touch to Redis at once was one round trip per ping; here a
touch only marks ``(table, user)`` as pending, and one writer task sends every
pending mark in one batch (``store.heartbeats``) at most every ``flush`` seconds.
A mark written less than ``refresh`` seconds ago is not written again; to make up
for that, each write lives ``ttl + refresh`` seconds, so after a user's last ping
they count as present for at least ``ttl`` seconds, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class Presence:
    """Batched presence writes of one process (see the module docstring).

    ``ttl``: seconds a user counts as present after a touch; ``flush``: seconds
    between batches; ``refresh``: seconds a written mark is not rewritten (default
    ``ttl / 3``); ``clock``: monotonic seconds (tests pass a fake one).
    """

    MAX_KNOWN = 100_000

    def __init__(self, store: Any, ttl: int = 30, flush: float = 0.25, refresh: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.ttl = int(ttl)
        self.flush_every = float(flush)
        self.refresh = ttl / 3 if refresh is None else float(refresh)
        self.clock = clock
        self.pending: set[tuple[str, int]] = set()
        self._written: dict[tuple[str, int], float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def touch(self, table_id: str, user_id: int) -> None:
        """Mark ``user_id`` as looking at ``table_id`` (written with the next batch if due)."""
        key = (table_id, user_id)
        at = self._written.get(key)
        if at is not None and self.clock() - at < self.refresh:
            return
        self.pending.add(key)
        self._wake.set()

    async def flush(self) -> int:
        """Write every pending mark now in one batch; returns how many were written.

        On a Redis error the marks stay pending for the next batch (and the error is raised).
        """
        if not self.pending:
            return 0
        batch, self.pending = self.pending, set()
        try:
            await self.store.heartbeats(sorted(batch), ttl=self.ttl + int(self.refresh + 0.999))
        except BaseException:
            self.pending |= batch
            raise
        now = self.clock()
        if len(self._written) + len(batch) > self.MAX_KNOWN:
            self._written = {k: t for k, t in self._written.items() if now - t < self.refresh}
        for key in batch:
            self._written[key] = now
        return len(batch)

    def start(self) -> None:
        """Start the writer task (:meth:`close` stops it after a last batch)."""
        self._task = asyncio.create_task(self._run(), name="presence-writer")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.flush()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # Redis away: the marks wait for the next batch
                log.warning("presence batch failed: %s", e)
                self._wake.set()
            await asyncio.sleep(self.flush_every)

    async def close(self) -> None:
        """Stop the writer, writing what is pending first (best effort)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 2.0)
