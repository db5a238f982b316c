"""Clocks a test controls, so no test depends on how fast the machine runs.

* :class:`StepClock` — a clock that stands still until the test moves it.
* :class:`HeldClock` — real time, except that a wait of at least ``hold`` seconds
  (a 429's ``retry_after``) is parked until the test calls :meth:`HeldClock.release`,
  which moves the clock past it. What must happen *while* that wait lasts is then
  checked while it is held, not by measuring seconds.
* :class:`benchmarks.telegram.VirtualLoop` — a whole event loop on a virtual clock that
  jumps to the next timer when nothing is ready (for code with no real I/O: an in-process
  store and Bot API); ``tests/test_bot_budget.py`` runs the sender and notifier on it.
"""

from __future__ import annotations

import asyncio
import time


class StepClock:
    """``clock()`` returns ``now``; the test moves it with :meth:`advance`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class HeldClock:
    """``clock``/``sleep`` for code under test: waits ≥ ``hold`` seconds park until :meth:`release`.

    ``held``: the lengths of the waits parked so far (what the code asked to wait).
    """

    def __init__(self, hold: float = 1.5) -> None:
        self.hold = hold
        self.jump = 0.0
        self.held: list[float] = []
        self._released = asyncio.Event()
        self._parked = asyncio.Event()

    def clock(self) -> float:
        return time.monotonic() + self.jump

    async def sleep(self, seconds: float) -> None:
        if seconds >= self.hold and not self._released.is_set():
            self.held.append(seconds)
            self._parked.set()
            await self._released.wait()
            return
        await asyncio.sleep(seconds)

    async def wait_parked(self, timeout: float = 60.0) -> None:
        """Until some long wait is parked."""
        await asyncio.wait_for(self._parked.wait(), timeout)

    def release(self) -> None:
        """Let every parked wait (and any later one) go, the clock moved past the longest."""
        self.jump += max(self.held, default=0.0)
        self._released.set()
