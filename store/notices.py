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

    async def set_turn_notice(self, user_id: int, notice: dict[str, Any] | None) -> None:
        """Remember (``None``: forget) the user's live turn notice; kept 48 h (S7) after the last change."""
        key = self.keys.turn_notice(user_id)
        if notice is None:
            await self.redis.delete(key)
        else:
            await self.redis.set(key, _dumps(notice), ex=TABLE_TTL)
