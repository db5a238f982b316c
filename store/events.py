"""Live events: each commit published on the table's pub/sub channel.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from store.common import (
    StoreBase,
    _s,
)


class Events(StoreBase):
    """The events part of :class:`store.Store`."""

    async def subscribe(self, table_id: str) -> AsyncIterator[dict[str, Any]]:
        """Yield ``{table, version, seat, by, events, over}`` after every commit (pub/sub).

        ``by`` is ``"timer"`` or ``"computer"`` when the move was played for the seat.
        Runs until the consumer stops iterating (or cancels); then unsubscribes.
        """
        pubsub = self.redis.pubsub()
        channel = self.keys.events(table_id)
        await pubsub.subscribe(channel)
        try:
            while True:
                msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if msg is not None and msg.get("type") == "message":
                    yield json.loads(_s(msg["data"]))
        finally:
            try:
                await pubsub.unsubscribe(channel)
            finally:
                await pubsub.aclose()
