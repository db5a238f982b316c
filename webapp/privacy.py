"""Who may see a chat's tables and boards: people known to be in that chat.

Known means seen there by the bot within 90 days (a command or a button press in that
chat, ``store.known_in_chat``; the bot forgets a member Telegram reports as gone), or
seated at one of the chat's tables. A private chat with the bot belongs to that one
user. A table outside any chat (``chat_id`` null) is seen by its players and, as a
spectator, by anyone with its id. Everyone else gets 403 ``not_in_chat``.
"""

from __future__ import annotations

from typing import Any

from webapp.errors import ApiError


async def may_see_chat(store: Any, chat_id: int, user_id: int) -> bool:
    """Whether ``user_id`` may see ``chat_id``'s tables and leaderboards."""
    if chat_id > 0:
        return chat_id == user_id
    if await store.known_in_chat(chat_id, user_id):
        return True
    now = await store.chat_id_now(chat_id) or chat_id
    return any(t.seat_of(user_id) is not None for t in await store.chat_tables(now))


async def may_see_table(store: Any, table: Any, user_id: int) -> bool:
    """Whether ``user_id`` may see ``table`` (a player always; a spectator when in its chat)."""
    if table.seat_of(user_id) is not None or table.chat_id is None:
        return True
    return await may_see_chat(store, table.chat_id, user_id)


async def check_chat(store: Any, chat_id: int | None, user_id: int) -> None:
    """:func:`may_see_chat`, or ``ApiError(403, "not_in_chat")``; ``None`` (everyone) passes."""
    if chat_id is not None and not await may_see_chat(store, chat_id, user_id):
        raise ApiError(403, "not_in_chat", "only people in that chat see its tables and boards")


async def check_table(store: Any, table: Any, user_id: int) -> None:
    """:func:`may_see_table`, or ``ApiError(403, "not_in_chat")``."""
    if not await may_see_table(store, table, user_id):
        raise ApiError(403, "not_in_chat", "only people in that chat see its tables")
