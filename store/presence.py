"""Presence: who is looking at a table right now (heartbeats with a short TTL).
"""

from __future__ import annotations

from store.common import (
    StoreBase,
)


class Presence(StoreBase):
    """The presence part of :class:`store.Store`."""

    async def heartbeat(self, table_id: str, user_id: int, ttl: int = 30) -> None:
        """Mark ``user_id`` as looking at the table for ``ttl`` seconds."""
        await self.redis.set(self.keys.presence(table_id, user_id), "1", ex=ttl)

    async def is_present(self, table_id: str, user_id: int) -> bool:
        """Whether a heartbeat for the user at this table is still alive."""
        return bool(await self.redis.exists(self.keys.presence(table_id, user_id)))
