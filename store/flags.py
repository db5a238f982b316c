"""Small service state: ping, durable flags and "done once" markers across processes.
"""

from __future__ import annotations

from store.common import (
    StoreBase,
)


class Flags(StoreBase):
    """The flags part of :class:`store.Store`."""

    async def ping(self) -> bool:
        """True when Redis answers; raises the client's connection errors (see :data:`UNAVAILABLE`)."""
        return bool(await self.redis.ping())

    async def set_flag(self, name: str, member: str | int) -> None:
        """Add ``member`` to the durable flag set ``name`` (no TTL), e.g. ``("lang_explicit", user_id)``."""
        await self.redis.sadd(self.keys.flags(name), str(member))

    async def has_flag(self, name: str, member: str | int) -> bool:
        """Whether :meth:`set_flag` added ``member`` to ``name``."""
        return bool(await self.redis.sismember(self.keys.flags(name), str(member)))

    async def once(self, name: str, ident: str | int, ttl: int) -> bool:
        """True the first time ``(name, ident)`` is offered within ``ttl`` seconds (SET NX EX):
        how a repeated Telegram update or a repeated notice is done once across processes."""
        return bool(await self.redis.set(self.keys.once(name, str(ident)), "1", nx=True, ex=ttl))

    async def mark_once(self, name: str, ident: str | int, ttl: int) -> None:
        """Record ``(name, ident)`` as done for ``ttl`` seconds (after the work it guards)."""
        await self.redis.set(self.keys.once(name, str(ident)), "1", ex=ttl)

    async def done_once(self, name: str, ident: str | int) -> bool:
        """Whether ``(name, ident)`` was offered to :meth:`once` or marked by :meth:`mark_once`."""
        return bool(await self.redis.exists(self.keys.once(name, str(ident))))
