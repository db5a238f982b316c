"""Language preferences (S8): one per person, one per chat, one precedence.

A person's language is their explicit choice (``/lang`` in the bot, the switch in the Mini
App), else their Telegram ``language_code`` mapped by :func:`store.models.language_of`; it
is kept in ``User.language`` for every process. An explicit choice is marked in the durable
flag set ``lang_explicit``, so no later sighting with another Telegram code overrides it.
A group's posts use the chat's language when one of its admins set it (``/lang`` there),
else the language of the person who opened the table.
"""

from __future__ import annotations

from store.common import (
    StoreBase,
    _s,
)
from store.models import (
    LANGUAGES,
    StoreError,
    User,
    language_of,
)

EXPLICIT = "lang_explicit"


class Languages(StoreBase):
    """The languages part of :class:`store.Store`."""

    async def set_language(self, user_id: int, language: str, *, name: str | None = None,
                           username: str | None = None) -> User:
        """``user_id`` chose ``language`` (``StoreError("invalid")`` unless cs/ru/en): it wins
        over their Telegram code from now on, in the bot and in the Mini App."""
        if language not in LANGUAGES:
            raise StoreError("invalid", f"language must be one of {LANGUAGES}")
        user = await self.get_user(user_id)
        user = (user or User(id=user_id, name=name or str(user_id), username=username)).model_copy(
            update={"language": language, **({"name": name} if name else {}),
                    **({"username": username} if username is not None else {})})
        await self.redis.sadd(self.keys.flags(EXPLICIT), str(user_id))
        await self.save_user(user)
        return user

    async def explicit_language(self, user_id: int) -> str | None:
        """The language ``user_id`` chose explicitly, or None (Telegram's code rules)."""
        if not await self.redis.sismember(self.keys.flags(EXPLICIT), str(user_id)):
            return None
        user = await self.get_user(user_id)
        return user.language if user is not None and user.language in LANGUAGES else None

    async def seen_user(self, user_id: int, name: str, username: str | None, telegram_code: str | None) -> User:
        """``user_id`` showed up (an update, the Mini App's initData) with this name and Telegram
        code: saved with the language of the one precedence (explicit choice, else the code
        mapped), only when something changed. Returns the stored user."""
        stored = await self.get_user(user_id)
        explicit = await self.explicit_language(user_id) if stored is not None else None
        user = User(id=user_id, name=name, username=username, language=explicit or language_of(telegram_code))
        if stored is None or (stored.name, stored.username, stored.language) != (user.name, user.username,
                                                                                 user.language):
            await self.save_user(user)
        return user

    async def set_chat_language(self, chat_id: int, language: str | None) -> None:
        """A chat admin chose the chat's language for its posts (None: back to the table's opener)."""
        if language is None:
            await self.redis.hdel(self.keys.chat_languages, str(chat_id))
            return
        if language not in LANGUAGES:
            raise StoreError("invalid", f"language must be one of {LANGUAGES}")
        await self.redis.hset(self.keys.chat_languages, str(chat_id), language)

    async def chat_language(self, chat_id: int | None) -> str | None:
        """The language a chat admin set for ``chat_id`` (followed through a migration), or None."""
        if chat_id is None:
            return None
        raw = await self.redis.hget(self.keys.chat_languages, str(chat_id))
        if raw is None:
            moved = await self.chat_id_now(chat_id)
            if moved != chat_id:
                raw = await self.redis.hget(self.keys.chat_languages, str(moved))
        return _s(raw) if raw is not None else None
