import gc

import pytest
from aiogram import Bot
from aiogram.methods import SendMessage
from pydantic._internal import _generics

from bot.session import Session

ANSWER = '{"ok": true, "result": {"message_id": 7, "date": 0, "chat": {"id": 42, "type": "private"}}}'


def test_the_answer_model_is_not_rebuilt_after_a_full_collection(monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic caches ``Response[Message]`` weakly; a full collection freed it and the next
    answer rebuilt it (~5 ms CPU). The bot's session keeps it: no rebuild after ``gc.collect()``."""
    session = Session()
    bot = Bot("123456:" + "A" * 35, session=session)
    built: list[str] = []
    create = _generics.create_generic_submodel

    def counting(name: str, *args: object) -> object:
        built.append(name)
        return create(name, *args)

    monkeypatch.setattr(_generics, "create_generic_submodel", counting)

    def parse() -> int:
        return session.check_response(bot, SendMessage(chat_id=42, text="hi"), 200, ANSWER).result.message_id

    assert parse() == 7
    gc.collect()
    built.clear()
    assert parse() == 7
    assert built == []


async def test_a_request_without_a_file_goes_as_json_with_the_forms_very_fields() -> None:
    """The same sendMessage (HTML in Czech and Russian, an inline keyboard, a topic) sent
    through aiogram's form session and through the bot's: the Bot API gets the same fields,
    the bot's as one JSON body."""
    from aiogram.client.default import DefaultBotProperties
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup
    from fake_bot_api import FakeBotAPI

    markup = InlineKeyboardMarkup(inline_keyboard=[[InlineKeyboardButton(text="Hrát znovu ♠", callback_data="again:t1")]])
    text = "<b>Kolo 3</b>: Žofie +4 · Ярослава −2 & «ЗЕВОК!» 100 %"
    async with FakeBotAPI() as api:
        sent = []
        for session in (AiohttpSession(api=TelegramAPIServer.from_base(api.url)),
                        Session(api=TelegramAPIServer.from_base(api.url))):
            bot = Bot(api.token, session=session, default=DefaultBotProperties(parse_mode="HTML"))
            try:
                message = await bot.send_message(-100123, text, message_thread_id=9, reply_markup=markup,
                                                 disable_notification=True)
            finally:
                await bot.session.close()
            sent.append((message.message_id, api.calls_of("sendMessage")[-1]))
        (_, form), (message_id, body) = sent
    assert form.content_type == "application/x-www-form-urlencoded"
    assert body.content_type == "application/json"
    assert body.params == form.params
    assert body.params["text"] == text and body.params["parse_mode"] == "HTML"
    assert body.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == "again:t1"
    assert message_id > 0


def test_a_request_with_a_file_stays_multipart() -> None:
    from aiogram.methods import SendDocument
    from aiogram.types import BufferedInputFile
    from aiohttp import FormData

    session = Session()
    bot = Bot("123456:" + "A" * 35, session=session)
    body = session.build_form_data(bot, SendDocument(chat_id=42, document=BufferedInputFile(b"{}", "case.json")))
    assert isinstance(body, FormData)
