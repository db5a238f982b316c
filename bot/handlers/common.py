"""Small helpers shared by the handlers."""

from __future__ import annotations

import logging
from typing import Any

from aiogram.exceptions import TelegramAPIError
from aiogram.types import CallbackQuery, Message
from aiogram.types import User as TgUser

from bot.i18n import display_name, pick_language

log = logging.getLogger(__name__)


def thread_of(message: Message | None) -> int | None:
    """The forum topic of ``message`` (``message_thread_id`` of a topic message), else None."""
    if message is None:
        return None
    if message.is_topic_message and message.message_thread_id:
        return message.message_thread_id
    return None


def anonymous(message: Message) -> bool:
    """Sent on behalf of a chat (an anonymous group admin, a channel), not by a person we can seat."""
    return message.sender_chat is not None or message.from_user is None or message.from_user.is_bot


def store_user(user: Any, tg_user: TgUser) -> Any:
    """The ``store.User`` the middleware put in the data, or one built from ``tg_user``."""
    if user is not None:
        return user
    from store import User

    return User(id=tg_user.id, name=display_name(tg_user), username=tg_user.username,
                language=pick_language(tg_user.language_code))


async def answer(query: CallbackQuery, text: str | None = None, *, show_alert: bool = False) -> None:
    """Answer a callback query; a failure (the query is too old after a slow update or a
    restart, the network) is logged and swallowed, so what the press did is still shown
    (the lobby message edited)."""
    try:
        await query.answer(text, show_alert=show_alert)
    except TelegramAPIError as exc:
        log.info("could not answer callback %s: %s", query.id, exc)
