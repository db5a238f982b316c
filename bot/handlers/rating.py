"""``/rating`` (S6: privately if possible) and ``/top`` (this week's boards).

``store.user_rating(game, user_id, chat_id=None)`` and ``store.leaderboard(game,
"week", chat_id=None, limit=10)`` provide the numbers; both games are shown.
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import Router
from aiogram.exceptions import TelegramBadRequest, TelegramForbiddenError
from aiogram.filters import Command
from aiogram.types import Message

from bot import keyboards, texts
from bot.handlers.common import anonymous, thread_of
from bot.i18n import display_name
from bot.sender import Sender

log = logging.getLogger(__name__)
GAMES = ("prsi", "penki")


def make_router() -> Router:
    router = Router(name="rating")

    @router.message(Command("rating"))
    async def cmd_rating(message: Message, store: Any, sender: Sender, settings: Any = None) -> None:
        if anonymous(message):
            await sender.send_message(message.chat.id, texts.anonymous_text(), thread_id=thread_of(message))
            return
        user = message.from_user
        chat = message.chat
        in_group = chat.type != "private"
        per_game: dict[str, dict[str, Any]] = {}
        for game in GAMES:
            per_game[game] = {
                "all": await store.user_rating(game, user.id),
                "chat": await store.user_rating(game, user.id, chat_id=chat.id) if in_group else None,
            }
        link = None
        if settings is not None:  # each last result whose table is still kept links to its replay (issue 15)
            username = await keyboards.bot_username(message.bot)
            ids = {r["table"] for g in per_game.values() for r in ((g.get("all") or {}).get("last") or [])[:5]
                   if r.get("table")}
            alive = {i for i in ids if await store.table_version(i) is not None}

            def link(table_id: str) -> str | None:
                return keyboards.replay_link(username, settings, table_id) if table_id in alive else None
        text = texts.rating_text(display_name(user), per_game, in_chat=in_group, replay_link=link)
        if not in_group:
            await sender.send_message(chat.id, text)
            return
        try:
            sent = await sender.send_message(user.id, text, raise_errors=True)
        except (TelegramForbiddenError, TelegramBadRequest):
            sent = None
        if sent is not None:
            await store.set_reachable(user.id, True)
            await sender.send_message(chat.id, texts.rating_sent_note(), thread_id=thread_of(message))
        else:
            note = texts.private_only_rating_note()
            await sender.send_message(chat.id, text + "\n\n" + note, thread_id=thread_of(message))

    @router.message(Command("top"))
    async def cmd_top(message: Message, store: Any, sender: Sender) -> None:
        chat = message.chat
        boards: list[tuple[str, str, list[Any]]] = []
        for game in GAMES:
            if chat.type != "private":
                boards.append((game, "chat", await store.leaderboard(game, "week", chat_id=chat.id, limit=10)))
            boards.append((game, "all", await store.leaderboard(game, "week", limit=10)))
        await sender.send_message(chat.id, texts.top_text(boards), thread_id=thread_of(message))

    return router
