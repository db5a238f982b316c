"""Live events: each commit publishes its new document on the table's pub/sub channel.

The message is the new version, its document and each seat's ready state message
(:func:`store.live.pack`, ``commit.lua``); the document's ``move`` is ``{seat, by, events}``. The web app reads these through :mod:`store.live` (one
connection per process for every table); :meth:`Events.subscribe` is the simple form
for one table (tools, tests).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

from store.common import (
    StoreBase,
    _loads,
    _s,
)
from store.connect import is_cluster
from store.live import WATCHERS_TTL, unpack


def commit_message(data: str) -> dict[str, Any]:
    """``{table, version, seat, by, events, over, doc}`` of one published commit."""
    _, raw, _ = unpack(_s(data))
    doc = _loads(raw)
    move = doc.get("move") or {}
    return {"table": doc["id"], "version": doc["version"], "seat": move.get("seat"), "by": move.get("by"),
            "events": move.get("events") or [], "over": "ended" in doc, "doc": doc}


class Events(StoreBase):
    """The events part of :class:`store.Store`."""

    async def subscribe(self, table_id: str) -> AsyncIterator[dict[str, Any]]:
        """Yield ``{table, version, seat, by, events, over, doc}`` after every commit (pub/sub).

        ``by`` is ``"timer"`` or ``"computer"`` when the move was played for the seat;
        ``doc`` the table's new document. Runs until the consumer stops iterating (or
        cancels); then unsubscribes. A connection of its own: for one table's tools
        and tests; the web app shares one per process (:mod:`store.live`).
        """
        pubsub = self.redis.pubsub()
        channel = self.keys.events(table_id)
        watchers, me = self.keys.watchers(table_id), f"events-{secrets.token_hex(8)}"
        sharded = is_cluster(self.redis)  # commits SPUBLISH there (store.pubsub)
        await self.redis.sadd(watchers, me)  # a listener before subscribed: commits publish (commit.lua)
        await self.redis.expire(watchers, WATCHERS_TTL)
        try:
            if sharded:
                await pubsub.ssubscribe(channel)
            else:
                await pubsub.subscribe(channel)
            while True:
                if sharded:
                    msg = await pubsub.get_sharded_message(ignore_subscribe_messages=True, timeout=1.0)
                else:
                    msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if msg is not None and msg.get("type") in ("message", "smessage"):
                    yield commit_message(msg["data"])
        finally:
            try:
                await self.redis.srem(watchers, me)
                await (pubsub.sunsubscribe(channel) if sharded else pubsub.unsubscribe(channel))
            finally:
                await pubsub.aclose()
