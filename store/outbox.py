"""The bot's outbox: a capped stream read through a consumer group (S5), split into shards on a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from store.keys import shard_of

#: A blocking read waits at most this long: within the pool's per-call time bound.
MAX_BLOCK_MS = int(CALL_TIMEOUT * 1000 * 3 / 4)


class Outbox(StoreBase):
    """The outbox part of :class:`store.Store`.

    The stream is split into ``shards`` (:mod:`store.keys`: one per slot, each beside its
    shard of the deadlines; a table's entries always in its own shard, so in order).
    With one shard, entry ids are the stream's; with more, ``"<shard>/<stream id>"``.
    """

    def _entry_shard(self, entry: dict[str, Any]) -> int:
        return shard_of(str(entry.get("table") or entry.get("lobby_id") or ""), self.shards)

    async def _outbox(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        pipe = self.redis.pipeline(transaction=False)
        for entry in entries:
            pipe.xadd(self.keys.outbox_of(self._entry_shard(entry)), {"data": _dumps(entry)},
                      maxlen=OUTBOX_MAXLEN, approximate=True)
        await pipe.execute()

    async def _ensure_group(self, shard: int = 0) -> None:
        if shard in self._groups_ready:
            return
        try:
            await self.redis.xgroup_create(self.keys.outbox_of(shard), OUTBOX_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._groups_ready.add(shard)

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
        (on one server with one shard; otherwise in a call of their own first).
        ``block_ms=0``: don't wait.
        Every shard is read (at most ``count`` entries in all without waiting; a call
        that waited returns what the first shards to answer had, at most ``count`` each);
        a shard's wait still going on when another's answered carries over to the next call.
        """
        if ack and (self.shards != 1 or is_cluster(self.redis) or (consumer, 0) not in self._pending_done):
            await self.outbox_ack(*ack)
            ack = ()
        for attempt in (1, 2):
            try:
                if self.shards == 1:
                    return await self._outbox_read(consumer, count, block_ms, ack)
                return await self._outbox_read_shards(consumer, count, block_ms)
            except ResponseError as exc:
                if "NOGROUP" not in str(exc) or attempt == 2:
                    raise
                # The stream or its group was lost (a flushed or restored Redis): make it again.
                self._groups_ready.clear()
                self._pending_done = {c for c in self._pending_done if c[0] != consumer}
                ack = ()  # (acknowledging in a lost group is moot)
        raise AssertionError("unreachable")

    async def _outbox_read(self, consumer: str, count: int, block_ms: int,
                           ack: Sequence[str] = ()) -> list[tuple[str, dict]]:
        await self._ensure_group()
        if (consumer, 0) not in self._pending_done:
            self._pending_done.add((consumer, 0))
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

    async def _outbox_read_shards(self, consumer: str, count: int, block_ms: int) -> list[tuple[str, dict]]:
        shards = range(self.shards)
        await asyncio.gather(*(self._ensure_group(k) for k in shards))
        out: list[tuple[str, dict]] = []
        for k in shards:  # after a start: this consumer's unacknowledged entries first
            if (consumer, k) not in self._pending_done:
                self._pending_done.add((consumer, k))
                got = await self.redis.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox_of(k): "0"}, count=count)
                out += self._entries(got, k)
        if out:
            return out
        waits = self._outbox_waits.setdefault(consumer, {})
        out += self._finished(waits)  # waits of an earlier call that have answered since
        start = self._rng.randrange(self.shards)
        for k in (*range(start, self.shards), *range(start)):  # without waiting, fairly
            if len(out) >= count:
                return out
            if k in waits:  # a wait is reading this shard: it answers for it
                continue
            got = await self.redis.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox_of(k): ">"},
                                              count=count - len(out))
            out += self._entries(got, k)
        block = min(block_ms, MAX_BLOCK_MS)
        if out or not block:
            return out
        for k in shards:
            if k not in waits:
                waits[k] = asyncio.ensure_future(self.redis.xreadgroup(
                    OUTBOX_GROUP, consumer, {self.keys.outbox_of(k): ">"}, count=count, block=block))
        deadline = asyncio.get_running_loop().time() + block / 1000 + CALL_TIMEOUT
        while not out and waits and asyncio.get_running_loop().time() < deadline:
            await asyncio.wait(list(waits.values()), timeout=deadline - asyncio.get_running_loop().time(),
                               return_when=asyncio.FIRST_COMPLETED)
            out += self._finished(waits)
            if all(k not in waits for k in shards):
                break
        return out

    def _finished(self, waits: dict[int, asyncio.Future]) -> list[tuple[str, dict]]:
        """The entries of the waits that have answered (removed from ``waits``); a failed
        wait's error is raised after the others' entries are taken."""
        out: list[tuple[str, dict]] = []
        error: BaseException | None = None
        for k, fut in list(waits.items()):
            if not fut.done():
                continue
            del waits[k]
            if fut.cancelled():
                continue
            if fut.exception() is not None:
                error = error or fut.exception()
                continue
            out += self._entries(fut.result(), k)
        if error is not None and not out:
            raise error
        return out

    def _entries(self, got: Any, shard: int | None = None) -> list[tuple[str, dict]]:
        out: list[tuple[str, dict]] = []
        if isinstance(got, dict):  # RESP3
            got = list(got.items())
        for _stream, items in got or []:
            for entry_id, fields in items:
                if not fields:
                    continue
                data = fields.get("data") or fields.get(b"data")
                ident = _s(entry_id) if shard is None else f"{shard}/{_s(entry_id)}"
                out.append((ident, json.loads(_s(data))))
        return out

    async def outbox_ack(self, *entry_ids: str) -> None:
        """Acknowledge outbox entries (they are not delivered again): one ``XACK`` per shard
        they are in, all in one round trip."""
        by_stream: dict[str, list[str]] = {}
        for entry_id in entry_ids:
            shard, sep, stream_id = entry_id.partition("/")
            key = self.keys.outbox_of(int(shard)) if sep else self.keys.outbox
            by_stream.setdefault(key, []).append(stream_id if sep else entry_id)
        if len(by_stream) == 1:
            ((key, ids),) = by_stream.items()
            await self.redis.xack(key, OUTBOX_GROUP, *ids)
        elif by_stream:
            pipe = self.redis.pipeline(transaction=False)
            for key, ids in by_stream.items():
                pipe.xack(key, OUTBOX_GROUP, *ids)
            await pipe.execute()

    async def _close_outbox(self) -> None:
        """Cancel the outbox waits still going on (their entries stay pending: read again
        first by the next start, as after a crash)."""
        for waits in self._outbox_waits.values():
            for fut in waits.values():
                fut.cancel()
            for fut in waits.values():
                with contextlib.suppress(BaseException):
                    await fut
        self._outbox_waits.clear()
