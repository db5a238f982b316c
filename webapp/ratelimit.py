"""A per-user token bucket (in process memory) for posting actions.

``rate`` tokens per second refill a bucket of ``burst`` tokens; an action takes one.
The defaults (10/s, burst 20) leave the callout race («СКОЛЬКО КАРТ?», «ЗЕВОК!»)
and fast normal play untouched while stopping scripted floods. The bucket is per
process: behind several processes a user may get up to that many times the rate,
which is fine for its purpose (the store's compare-and-set keeps the game correct).
"""

from __future__ import annotations

import time


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
