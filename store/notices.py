"""Turn notices: the one live "your turn" message each player has in their private chat
with the bot (S5), so that it can be edited or withdrawn when the turn passes.
"""

from __future__ import annotations

import json
from typing import Any

from store.common import (
    TABLE_TTL,
    StoreBase,
    _dumps,
    _s,
)


class Notices(StoreBase):
    """The turn-notices part of :class:`store.Store`."""

    async def turn_notice(self, user_id: int) -> dict[str, Any] | None:
        """The user's live turn notice ``{message_id, tables: [table id…], at}``, or ``None``.

        ``tables`` empty: the message says nothing waits any more ("done").
        """
        raw = await self.redis.get(self.keys.turn_notice(user_id))
        return json.loads(_s(raw)) if raw else None

    async def notice_hints(self, present: list[tuple[str, int]], users: list[int]) -> tuple[
            dict[tuple[str, int], bool], dict[int, dict[str, Any] | None]]:
        """What the notifier asks for a batch of outbox entries, in one round trip.

        ``present``: ``(table_id, user_id)`` pairs → whether each has a live presence
        heartbeat (:meth:`store.Store.is_present`); ``users`` → each one's live turn notice
        (:meth:`turn_notice`, None when there is none). A pipeline of independent reads
        (no transaction), so it also works key by key on a cluster.
        """
        pairs = list(dict.fromkeys(present))
        people = list(dict.fromkeys(users))
        if not pairs and not people:
            return {}, {}
        if self.pipelined is not None:  # one plain server: its pipelined connection (store.pipelined)
            got = await self.pipelined.execute_many(
                [*(("EXISTS", self.keys.presence(t, u)) for t, u in pairs),
                 *(("GET", self.keys.turn_notice(u)) for u in people)])
        else:
            pipe = self.redis.pipeline(transaction=False)
            for table_id, user_id in pairs:
                pipe.exists(self.keys.presence(table_id, user_id))
            for user_id in people:
                pipe.get(self.keys.turn_notice(user_id))
            got = await pipe.execute()
        seen = {pair: bool(v) for pair, v in zip(pairs, got[: len(pairs)], strict=True)}
        notices = {u: (json.loads(_s(raw)) if raw else None) for u, raw in zip(people, got[len(pairs):], strict=True)}
        return seen, notices

    async def set_turn_notice(self, user_id: int, notice: dict[str, Any] | None) -> None:
        """Remember (``None``: forget) the user's live turn notice; kept 48 h (S7) after the last change."""
        key = self.keys.turn_notice(user_id)
        if notice is None:
            await self.redis.delete(key)
        else:
            await self.redis.set(key, _dumps(notice), ex=TABLE_TTL)
