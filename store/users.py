"""Users: who they are and whether the bot can reach them (S5).
"""

from __future__ import annotations

from store.common import (
    StoreBase,
    _s,
)
from store.models import (
    User,
)


class Users(StoreBase):
    """The users part of :class:`store.Store`."""

    async def save_user(self, user: User) -> None:
        """Remember ``user`` (no TTL)."""
        await self.redis.hset(self.keys.users, str(user.id), user.model_dump_json())

    async def get_user(self, user_id: int) -> User | None:
        """The saved :class:`User`, or ``None``."""
        raw = await self.redis.hget(self.keys.users, str(user_id))
        return User.model_validate_json(_s(raw)) if raw else None

    async def set_reachable(self, user_id: int, reachable: bool) -> None:
        """Mark whether the bot can message ``user_id`` (False after TelegramForbiddenError, S5)."""
        if reachable:
            await self.redis.srem(self.keys.unreachable, str(user_id))
        else:
            await self.redis.sadd(self.keys.unreachable, str(user_id))

    async def is_reachable(self, user_id: int) -> bool:
        """False once :meth:`set_reachable` marked the user unreachable."""
        return not await self.redis.sismember(self.keys.unreachable, str(user_id))
