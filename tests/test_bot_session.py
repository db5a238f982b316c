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
