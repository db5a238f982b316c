"""The bot's outbox: a capped stream read through a consumer group (S5).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from redis.exceptions import ResponseError

from store.common import (
    CALL_TIMEOUT,
    OUTBOX_GROUP,
    OUTBOX_MAXLEN,
    StoreBase,
    _dumps,
    _s,
)
from store.connect import is_cluster

#: A blocking read waits at most this long: within the pool's per-call time bound.
MAX_BLOCK_MS = int(CALL_TIMEOUT * 1000 * 3 / 4)


class Outbox(StoreBase):
    """The outbox part of :class:`store.Store`."""

    async def _outbox(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        pipe = self.redis.pipeline(transaction=False)
        for entry in entries:
            pipe.xadd(self.keys.outbox, {"data": _dumps(entry)}, maxlen=OUTBOX_MAXLEN, approximate=True)
        await pipe.execute()

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await self.redis.xgroup_create(self.keys.outbox, OUTBOX_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def outbox_read(self, consumer: str, count: int = 50, block_ms: int = 1000,
                          ack: Sequence[str] = ()) -> list[tuple[str, dict]]:
        """Entries for the bot: ``[(id, {kind, table, chat_id, thread_id, ...}), ...]``.

        Kinds: ``start`` (seats, game, lobby_id, rated, variants), ``turn`` (seat, user_id, name,
        deadline — once per turn, people only), ``round`` (round, round_points, points,
        winner, names), ``end`` (places, balances, names, user_ids by seat, rated, unplayed: the
        people's seats that never made a move of their own, P16; variants).
        A consumer group: each entry goes to one consumer; the first call of a
        consumer in this process returns its unacknowledged entries first (after a
        crash). Acknowledge each with :meth:`outbox_ack`, or pass the ids handled since the
        last read as ``ack``: they are acknowledged in the same round trip, before the read
        (on one server; a cluster acknowledges them in a call of their own). ``block_ms=0``:
        don't wait.
        """
        if ack and (is_cluster(self.redis) or consumer not in self._pending_done):
            await self.outbox_ack(*ack)
            ack = ()
        try:
            return await self._outbox_read(consumer, count, block_ms, ack)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # The stream or its group was lost (a flushed or restored Redis): make it again.
            self._group_ready = False
            self._pending_done.discard(consumer)
            return await self._outbox_read(consumer, count, block_ms)

    async def _outbox_read(self, consumer: str, count: int, block_ms: int,
                           ack: Sequence[str] = ()) -> list[tuple[str, dict]]:
        await self._ensure_group()
        if consumer not in self._pending_done:
            self._pending_done.add(consumer)
            got = await self.redis.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox: "0"}, count=count)
            out = self._entries(got)
            if out:
                return out
        block = min(block_ms, MAX_BLOCK_MS) or None
        if ack:  # one server: the acknowledgement and the (blocking) read in one round trip
            pipe = self.redis.pipeline(transaction=False)
            pipe.xack(self.keys.outbox, OUTBOX_GROUP, *ack)
            pipe.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox: ">"}, count=count, block=block)
            got = (await pipe.execute())[1]
        else:
            got = await self.redis.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox: ">"}, count=count,
                                              block=block)
        return self._entries(got)

    @staticmethod
    def _entries(got: Any) -> list[tuple[str, dict]]:
        out: list[tuple[str, dict]] = []
        if isinstance(got, dict):  # RESP3
            got = list(got.items())
        for _stream, items in got or []:
            for entry_id, fields in items:
                if not fields:
                    continue
                data = fields.get("data") or fields.get(b"data")
                out.append((_s(entry_id), json.loads(_s(data))))
        return out

    async def outbox_ack(self, *entry_ids: str) -> None:
        """Acknowledge outbox entries (they are not delivered again), all in one call."""
        if entry_ids:
            await self.redis.xack(self.keys.outbox, OUTBOX_GROUP, *entry_ids)
