"""Errors in the pipeline (``@router.errors``), answered in the user's language.

* ``StoreError`` → its code in words: an alert for a callback query, a reply for a message;
* anything else → logged with the update, a generic alert/nothing; never re-raised.

Also a catch-all for callback queries nobody handled (old buttons): answered empty,
so Telegram's spinner stops.
"""

from __future__ import annotations

import logging

from aiogram import Router
from aiogram.filters import ExceptionTypeFilter
from aiogram.types import CallbackQuery, ErrorEvent

from bot import texts
from bot.sender import Sender

log = logging.getLogger(__name__)


def make_router() -> Router:
    from store import StoreError

    router = Router(name="errors")

    @router.errors(ExceptionTypeFilter(StoreError))
    async def on_store_error(event: ErrorEvent, sender: Sender) -> None:
        code = getattr(event.exception, "code", "")
        text = texts.error_text(code)
        update = event.update
        if update.callback_query is not None:
            await _answer(update.callback_query, text)
        elif update.message is not None:
            msg = update.message
            thread = msg.message_thread_id if msg.is_topic_message else None
            await sender.send_message(msg.chat.id, text, thread_id=thread)

    @router.errors()
    async def on_error(event: ErrorEvent) -> None:
        log.error("update %s failed", event.update.update_id, exc_info=event.exception)
        if event.update.callback_query is not None:
            await _answer(event.update.callback_query, texts.error_text(""))

    @router.callback_query()
    async def on_unknown_callback(query: CallbackQuery) -> None:
        await query.answer()

    return router


async def _answer(query: CallbackQuery, text: str) -> None:
    try:
        await query.answer(text, show_alert=True)
    except Exception:  # already answered, or too old: nothing more to do
        log.debug("could not answer callback %s", query.id, exc_info=True)
