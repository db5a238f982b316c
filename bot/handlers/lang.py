"""``/lang``: choose Czech, Russian or English (kept in ``store.User.language``)."""

from __future__ import annotations

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


def make_router() -> Router:
    router = Router(name="lang")

    @router.message(Command("lang"))
    async def cmd_lang(message: Message, sender: Sender) -> None:
        await sender.send_message(message.chat.id, texts.lang_prompt(), thread_id=thread_of(message),
                                  reply_markup=keyboards.lang_keyboard())

    @router.callback_query(LangCb.filter(F.code.in_(set(LANGUAGES))))
    async def on_lang(query: CallbackQuery, callback_data: LangCb, store: Any, i18n: I18n,
                      lang_prefs: LanguagePrefs, i18n_middleware: UserLocaleMiddleware) -> None:
        from store import User

        tg = query.from_user
        code = callback_data.code
        await store.save_user(User(id=tg.id, name=display_name(tg), username=tg.username, language=code))
        await lang_prefs.mark(tg.id)
        i18n_middleware.forget(tg.id)
        with i18n.use_locale(code):
            done = texts.lang_done()
        await answer(query, done)

    return router
