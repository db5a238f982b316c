"""Chat-level events: a group upgraded to a supergroup (the service messages with
``migrate_to_chat_id`` in the old chat and ``migrate_from_chat_id`` in the new one), and
people leaving a chat (``chat_member``: they no longer see its tables, see
:mod:`webapp.api`).

Either service message (and its repeat) moves the chat in the store once
(``store.migrate_chat``: lobbies, tables, boards, ledger) and reposts its open lobbies
in the supergroup, where their buttons work (:meth:`bot.app.BotRuntime.chat_migrated`).
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import F, Router
from aiogram.filters import LEAVE_TRANSITION, ChatMemberUpdatedFilter
from aiogram.types import ChatMemberUpdated, Message

log = logging.getLogger(__name__)


def make_router() -> Router:
    router = Router(name="chats")

    @router.message(F.migrate_to_chat_id)
    async def on_migrate_to(message: Message, migrations: Any) -> None:
        await migrations(message.chat.id, message.migrate_to_chat_id)

    @router.message(F.migrate_from_chat_id)
    async def on_migrate_from(message: Message, migrations: Any) -> None:
        await migrations(message.migrate_from_chat_id, message.chat.id)

    @router.chat_member(ChatMemberUpdatedFilter(member_status_changed=LEAVE_TRANSITION))
    async def on_left(event: ChatMemberUpdated, store: Any, members: Any) -> None:
        """Someone left or was removed: they no longer see the chat's tables and boards."""
        user = event.new_chat_member.user
        await store.left_chat(event.chat.id, user.id)
        members.forget(event.chat.id, user.id)

    return router
