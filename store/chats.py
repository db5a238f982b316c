"""Chats: a group upgraded to a supergroup (Telegram's ``migrate_to_chat_id``) and who is
known to be in a chat (the privacy of a chat's tables and boards).

A migration moves everything of the old chat id to the new one, once and idempotently:
the lobbies (their documents and the chat's index), the index of its tables, its
leaderboards, and the ledger entries and last results that name it. Live table
documents keep the id they were created with; every reader resolves it through
:meth:`Chats.chat_id_now` (the notifier posting, the ledger entry of a match that ends
later, the privacy check). Each step can be repeated without harm, so a crash midway is
finished by the next call (the bot calls it for the service message, its repeat in the
supergroup, and the 400 that carries ``migrate_to_chat_id``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from store.common import (
    StoreBase,
    _dumps,
    _s,
)

MEMBER_TTL = 90 * 86400  # someone seen in a chat is remembered this long after last seen


class Chats(StoreBase):
    """The chats part of :class:`store.Store`."""

    # -- migration ----------------------------------------------------------------------------------
    async def chat_id_now(self, chat_id: int | None) -> int | None:
        """The id ``chat_id`` has now: the supergroup's after a migration (followed through
        repeated upgrades), else ``chat_id`` itself."""
        if chat_id is None:
            return None
        seen = {chat_id}
        current = chat_id
        for _ in range(4):
            moved = await self.redis.hget(self.keys.chat_moves, str(current))
            if moved is None:
                return current
            current = int(_s(moved))
            if current in seen:
                return current
            seen.add(current)
        return current

    async def migrate_chat(self, old_chat_id: int, new_chat_id: int) -> bool:
        """Move the chat ``old_chat_id`` to ``new_chat_id`` (see the module docstring).

        Returns True when this call finished the move, False when it was done before
        (then nothing changes). ``ValueError`` for the same id twice.
        """
        if old_chat_id == new_chat_id:
            raise ValueError("a chat cannot migrate to itself")
        await self.redis.hsetnx(self.keys.chat_moves, str(old_chat_id), str(new_chat_id))
        target = await self.chat_id_now(old_chat_id)
        done_key = self.keys.chat_moved(old_chat_id)
        if await self.redis.exists(done_key):
            return False
        await self._move_lobbies(old_chat_id, target)
        await self._move_index(self.keys.chat_tables(old_chat_id), self.keys.chat_tables(target))
        await self._move_members(old_chat_id, target)
        await self._move_ratings(old_chat_id, target)
        title = await self.redis.hget(self.keys.chat_titles, str(old_chat_id))
        if title:  # the supergroup keeps the group's title until the bot sees it anew
            await self.redis.hsetnx(self.keys.chat_titles, str(target), _s(title))
        return bool(await self.redis.set(done_key, str(target), nx=True))

    async def _move_index(self, old_key: str, new_key: str) -> None:
        members = await self.redis.zrange(old_key, 0, -1, withscores=True)
        if members:
            await self.redis.zadd(new_key, {_s(m): score for m, score in members})
        await self.redis.delete(old_key)

    async def _move_lobbies(self, old: int, new: int) -> None:
        old_key = self.keys.chat_lobbies(old)
        for lobby_id in [_s(i) for i in await self.redis.zrange(old_key, 0, -1)]:
            try:
                await self._change_lobby(lobby_id, lambda lobby: None if lobby.chat_id == new
                                         else lobby.model_copy(update={"chat_id": new}))
            except Exception:  # gone (expired) meanwhile: nothing to move
                continue
        await self._move_index(old_key, self.keys.chat_lobbies(new))

    async def _move_members(self, old: int, new: int) -> None:
        members = await self.redis.zrange(self.keys.chat_members(old), 0, -1, withscores=True)
        if members:
            await self.redis.zadd(self.keys.chat_members(new), {_s(m): s for m, s in members})
            await self.redis.expire(self.keys.chat_members(new), MEMBER_TTL)
        await self.redis.delete(self.keys.chat_members(old))

    async def _move_ratings(self, old: int, new: int) -> None:
        """Ledger entries and last results naming ``old`` name ``new``; its boards merge into ``new``'s."""
        users: set[tuple[str, str]] = set()
        async for table_id, raw in self.redis.hscan_iter(self.keys.ledger, count=500):
            match = json.loads(_s(raw))
            if match.get("chat_id") != old:
                continue
            match["chat_id"] = new
            await self.redis.hset(self.keys.ledger, _s(table_id), _dumps(match))
            users |= {(match["game"], uid) for uid in match.get("balances") or {}}
        pattern = self.keys.board_pattern
        scope = f":c{old}:"
        async for key in self.redis.scan_iter(match=pattern, count=500):
            key = _s(key)
            if scope not in key:
                continue
            fields = await self.redis.hgetall(key)
            new_key = key.replace(scope, f":c{new}:")
            if fields:
                await self.redis.hset(new_key, mapping={_s(f): _s(v) for f, v in fields.items()})
            await self.redis.delete(key)
        for game, uid in users:
            key = self.keys.results(game, int(uid))
            items = [json.loads(_s(r)) for r in await self.redis.lrange(key, 0, -1)]
            if not any(r.get("chat_id") == old for r in items):
                continue
            fixed = [_dumps({**r, "chat_id": new if r.get("chat_id") == old else r.get("chat_id")}) for r in items]
            pipe = self.redis.pipeline(transaction=True)
            pipe.delete(key)
            pipe.rpush(key, *fixed)
            await pipe.execute()

    # -- who is in a chat ------------------------------------------------------------------------------
    async def seen_in_chat(self, chat_id: int, user_id: int) -> None:
        """``user_id`` wrote or pressed a button in ``chat_id`` (or took a seat at its table)."""
        key = self.keys.chat_members(chat_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.zadd(key, {str(user_id): self.clock()})
        pipe.expire(key, MEMBER_TTL)
        await pipe.execute()

    async def set_chat_title(self, chat_id: int, title: str) -> None:
        """Remember a group's title as the bot saw it (at most 128 characters, Telegram's limit)."""
        await self.redis.hset(self.keys.chat_titles, str(chat_id), title[:128])

    async def chat_titles(self, chat_ids: Iterable[int]) -> dict[int, str]:
        """``{chat id: title}`` for the given chats whose title the bot has seen (others left out)."""
        ids = sorted({int(c) for c in chat_ids})
        if not ids:
            return {}
        raw = await self.redis.hmget(self.keys.chat_titles, [str(c) for c in ids])
        return {c: _s(t) for c, t in zip(ids, raw, strict=True) if t}

    async def left_chat(self, chat_id: int, user_id: int) -> None:
        """``user_id`` left or was removed from ``chat_id`` (Telegram's ``chat_member`` update)."""
        await self.redis.zrem(self.keys.chat_members(chat_id), str(user_id))

    async def known_in_chat(self, chat_id: int, user_id: int) -> bool:
        """Whether ``user_id`` is known to be in ``chat_id``: seen there by the bot within
        90 days (:meth:`seen_in_chat`), or seated at one of its tables or lobbies."""
        chat_id = await self.chat_id_now(chat_id) or chat_id
        score = await self.redis.zscore(self.keys.chat_members(chat_id), str(user_id))
        return score is not None and score >= self.clock() - MEMBER_TTL

    async def chat_moves(self) -> dict[int, int]:
        """Every recorded migration: old chat id → new chat id (tests, maintenance)."""
        raw: dict[Any, Any] = await self.redis.hgetall(self.keys.chat_moves)
        return {int(_s(k)): int(_s(v)) for k, v in raw.items()}
