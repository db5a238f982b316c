"""``/lang``: in the private chat a person's language (``store.set_language``: it beats their
Telegram code from then on, here and in the Mini App); in a group the chat's language for
its posts (``store.set_chat_language``), which only the chat's admins may set."""

from __future__ import annotations

import logging
from typing import Any

from aiogram import F, Router
from aiogram.filters import Command
from aiogram.types import CallbackQuery, Message
from aiogram.utils.i18n import I18n

from bot import keyboards, texts
from bot.callbacks import LangCb
from bot.handlers.common import answer, thread_of
from bot.i18n import LANGUAGES, LanguagePrefs, UserLocaleMiddleware, display_name
from bot.sender import Sender

log = logging.getLogger(__name__)


async def _is_admin(query: CallbackQuery, chat_id: int, user_id: int) -> bool:
    """Whether ``user_id`` administers ``chat_id`` (Telegram's ``getChatMember``); False if unknown."""
    try:
        member = await query.bot.get_chat_member(chat_id, user_id)
    except Exception as exc:
        log.info("getChatMember %s/%s failed: %s", chat_id, user_id, exc)
        return False
    return member.status in ("creator", "administrator")


def make_router() -> Router:
    router = Router(name="lang")

    @router.message(Command("lang"))
    async def cmd_lang(message: Message, sender: Sender) -> None:
        """In the private chat: the person's own language; in a group: the chat's (its admins)."""
        prompt = texts.lang_prompt() if message.chat.type == "private" else texts.chat_lang_prompt()
        await sender.send_message(message.chat.id, prompt, thread_id=thread_of(message),
                                  reply_markup=keyboards.lang_keyboard())

    @router.callback_query(LangCb.filter(F.code.in_(set(LANGUAGES))))
    async def on_lang(query: CallbackQuery, callback_data: LangCb, store: Any, i18n: I18n,
                      lang_prefs: LanguagePrefs, i18n_middleware: UserLocaleMiddleware) -> None:
        tg = query.from_user
        code = callback_data.code
        chat = query.message.chat if query.message is not None else None
        if chat is not None and chat.type != "private":
            if not await _is_admin(query, chat.id, tg.id):
                await answer(query, texts.chat_lang_admins_only(), show_alert=True)
                return
            await store.set_chat_language(chat.id, code)
            with i18n.use_locale(code):
                done = texts.chat_lang_done()
            await answer(query, done)
            return
        await store.set_language(tg.id, code, name=display_name(tg), username=tg.username)
        await lang_prefs.mark(tg.id)
        i18n_middleware.forget(tg.id)
        with i18n.use_locale(code):
            done = texts.lang_done()
        await answer(query, done)

    return router
