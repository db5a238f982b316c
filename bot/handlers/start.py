"""``/start`` (welcome, or a deep link ``/start <table|lobby>``), ``/help``, ``/rules``.

``/start`` in the private chat also marks the user reachable again (S5) and
refreshes lobby messages that carried a note about them; so does Telegram's
``my_chat_member`` update when they unblock the bot (blocking marks them unreachable).
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import F, Router
from aiogram.filters import KICKED, MEMBER, ChatMemberUpdatedFilter, Command, CommandObject, CommandStart
from aiogram.types import ChatMemberUpdated, InlineKeyboardMarkup, Message
from aiogram.utils.deep_linking import decode_payload

from bot import keyboards, texts
from bot.handlers.common import thread_of
from bot.i18n import display_name
from bot.lobbies import LobbyMessages
from bot.sender import Sender
from bot.settings import BotSettings

log = logging.getLogger(__name__)


def _candidates(payload: str) -> list[str]:
    out = [payload]
    try:
        decoded = decode_payload(payload)
    except Exception:
        decoded = None
    if decoded and decoded != payload:
        out.append(decoded)
    return out


def make_router() -> Router:
    router = Router(name="start")

    @router.message(CommandStart(), F.chat.type == "private")
    async def cmd_start_private(message: Message, command: CommandObject, store: Any, sender: Sender,
                                lobbies: LobbyMessages, settings: BotSettings) -> None:
        """Welcome; with a payload, the table (``web_app`` button: this is a private chat)."""
        uid = message.from_user.id
        await store.set_reachable(uid, True)
        lobbies.user_reachable(uid)
        if command.args:
            for ident in _candidates(command.args.strip()):
                if ident.startswith("replay_") and await store.get_table(ident[7:]) is not None:  # issue 15
                    button = await keyboards.replay_button(lobbies.bot, settings, ident[7:], chat_id=message.chat.id)
                    await sender.send_message(message.chat.id, texts.replay_open_text(),
                                              reply_markup=InlineKeyboardMarkup(inline_keyboard=[[button]]))
                    return
                if await _open(ident, message, store, sender, lobbies, settings):
                    return
        await sender.send_message(message.chat.id, texts.welcome_text(display_name(message.from_user)))

    @router.message(CommandStart())
    async def cmd_start_group(message: Message, sender: Sender) -> None:
        await sender.send_message(message.chat.id, texts.help_text(), thread_id=thread_of(message))

    @router.my_chat_member(F.chat.type == "private", ChatMemberUpdatedFilter(member_status_changed=KICKED))
    async def on_blocked(event: ChatMemberUpdated, store: Any) -> None:
        """The user blocked the bot: no more private messages until they unblock it (S5)."""
        await store.set_reachable(event.from_user.id, False)

    @router.my_chat_member(F.chat.type == "private", ChatMemberUpdatedFilter(member_status_changed=MEMBER))
    async def on_unblocked(event: ChatMemberUpdated, store: Any, lobbies: LobbyMessages) -> None:
        await store.set_reachable(event.from_user.id, True)
        lobbies.user_reachable(event.from_user.id)

    @router.message(Command("help"))
    async def cmd_help(message: Message, sender: Sender) -> None:
        await sender.send_message(message.chat.id, texts.help_text(), thread_id=thread_of(message))

    @router.message(Command("rules"))
    async def cmd_rules(message: Message, sender: Sender, lobbies: LobbyMessages, settings: BotSettings) -> None:
        markup = await keyboards.rules_keyboard(lobbies.bot, settings, chat_id=message.chat.id)
        await sender.send_message(message.chat.id, texts.rules_text(), thread_id=thread_of(message), reply_markup=markup)

    return router


async def _open(ident: str, message: Message, store: Any, sender: Sender, lobbies: LobbyMessages,
                settings: BotSettings) -> bool:
    """Answer a deep link to table or lobby ``ident``; False if it names neither."""
    table = await store.get_table(ident)
    lobby = None
    if table is None:
        lobby = await store.get_lobby(ident)
        if lobby is None:
            return False
        if lobby.table_id:
            table = await store.get_table(lobby.table_id)
    if table is not None:
        markup = await keyboards.open_keyboard(lobbies.bot, settings, table.id, chat_id=message.chat.id)
        await sender.send_message(message.chat.id, texts.open_table_text(table), reply_markup=markup)
        return True
    await sender.send_message(message.chat.id, texts.lobby_waiting_text(lobby))
    await lobbies.changed(lobby.id)
    return True
