"""Presence: who is looking at a table right now (heartbeats with a short TTL).
"""

from __future__ import annotations

from collections.abc import Iterable

from store.common import (
    StoreBase,
)


class Presence(StoreBase):
    """The presence part of :class:`store.Store`."""

    async def heartbeat(self, table_id: str, user_id: int, ttl: int = 30) -> None:
        """Mark ``user_id`` as looking at the table for ``ttl`` seconds."""
        await self.redis.set(self.keys.presence(table_id, user_id), "1", ex=ttl)

    async def heartbeats(self, marks: Iterable[tuple[str, int]], ttl: int = 30) -> None:
        """:meth:`heartbeat` for many ``(table_id, user_id)`` marks in one round trip.

        Each mark is its own key in its table's slot; a pipeline of independent ``SET``
        commands (no transaction), so it also works key by key on a cluster.
        """
        pipe = self.redis.pipeline(transaction=False)
        for table_id, user_id in marks:
            pipe.set(self.keys.presence(table_id, user_id), "1", ex=ttl)
        if len(pipe):
            await pipe.execute()

    async def is_present(self, table_id: str, user_id: int) -> bool:
        """Whether a heartbeat for the user at this table is still alive."""
        return bool(await self.redis.exists(self.keys.presence(table_id, user_id)))
