"""Small helpers shared by the handlers."""

from __future__ import annotations

from typing import Any

from aiogram.types import Message
from aiogram.types import User as TgUser

from bot.i18n import display_name, pick_language


def thread_of(message: Message | None) -> int | None:
    """The forum topic of ``message`` (``message_thread_id`` of a topic message), else None."""
    if message is None:
        return None
    if message.is_topic_message and message.message_thread_id:
        return message.message_thread_id
    return None


def store_user(user: Any, tg_user: TgUser) -> Any:
    """The ``store.User`` the middleware put in the data, or one built from ``tg_user``."""
    if user is not None:
        return user
    from store import User

    return User(id=tg_user.id, name=display_name(tg_user), username=tg_user.username,
                language=pick_language(tg_user.language_code))
