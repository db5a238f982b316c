"""Per-user limits that hold across every service process: the action rate and open sockets.

Behind a proxy with N processes, a per-process limit lets a user have N times as
much (a held-down button spread over the processes). Both limits live in Redis
under the user's ``{u:<user>}`` hash tag, each changed by one script in one slot:

* ``bucket.lua``: a token bucket (``rate`` per second, ``burst`` at most) for posting
  actions; :meth:`Limits.take_action` returns 0.0 or the seconds to wait.
* ``sockets.lua``: open WebSockets as leases (``SOCKET_LEASE`` seconds, renewed
  while open): :meth:`Limits.open_socket` admits at most ``cap`` at once; a process
  that dies without closing its sockets frees them when their leases run out.
"""

from __future__ import annotations

from store.common import StoreBase
from store.connect import idempotent

SOCKET_LEASE = 60.0  # seconds an open socket's place lasts unless renewed (webapp renews every ~20 s)


class Limits(StoreBase):
    """The limits part of :class:`store.Store`."""

    async def take_action(self, user_id: int, rate: float, burst: int, *, now: float | None = None) -> float:
        """Take one token from ``user_id``'s action bucket: 0.0 when allowed, else seconds to wait.

        ``rate``: tokens per second; ``burst``: the bucket's size (a new user starts
        full). Shared by every process on this Redis (``bucket.lua``, atomic).
        """
        wait = await self._bucket(keys=[self.keys.action_bucket(user_id)],
                                  args=[repr(self.clock() if now is None else now), repr(float(rate)), int(burst)])
        return float(wait)

    async def take_request(self, user_id: int, kind: str, rate: float, burst: int, *,
                           now: float | None = None) -> float:
        """Take one token from ``user_id``'s ``kind`` (``read``/``write``) request bucket, shared
        by every process (``bucket.lua``): 0.0 when allowed, else seconds to wait.
        ``now``: epoch seconds (default the store's clock). Raises ``ValueError`` for another kind."""
        if kind not in ("read", "write"):
            raise ValueError(f"kind must be 'read' or 'write', not {kind!r}")
        wait = await self._bucket(keys=[self.keys.request_bucket(user_id, kind)],
                                  args=[repr(self.clock() if now is None else now), repr(float(rate)), int(burst)])
        return float(wait)

    async def open_socket(self, user_id: int, socket_id: str, cap: int, *,
                          lease: float = SOCKET_LEASE, now: float | None = None) -> bool:
        """Admit one more open socket of ``user_id`` unless ``cap`` are open already (in any process).

        ``socket_id``: unique per socket. Renew with :meth:`keep_socket` before ``lease``
        seconds pass; free with :meth:`close_socket`.
        """
        args = ["open", socket_id, repr(self.clock() if now is None else now), repr(float(lease)), int(cap)]
        with idempotent():  # the same socket id again is the same lease: retried once on a lost connection
            return bool(await self._sockets(keys=[self.keys.user_sockets(user_id)], args=args))

    async def keep_socket(self, user_id: int, socket_id: str, *, lease: float = SOCKET_LEASE,
                          now: float | None = None) -> None:
        """Renew an admitted socket's lease for another ``lease`` seconds."""
        await self._sockets(keys=[self.keys.user_sockets(user_id)],
                            args=["keep", socket_id, repr(self.clock() if now is None else now),
                                  repr(float(lease)), 0])

    async def close_socket(self, user_id: int, socket_id: str) -> None:
        """Free the socket's place (idempotent)."""
        await self.redis.zrem(self.keys.user_sockets(user_id), socket_id)

    async def open_sockets(self, user_id: int, *, now: float | None = None) -> int:
        """How many sockets of ``user_id`` hold a live lease right now (all processes)."""
        t = self.clock() if now is None else now
        return int(await self.redis.zcount(self.keys.user_sockets(user_id), f"({t!r}", "+inf"))
