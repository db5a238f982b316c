"""Typed callback data of every inline button (``CallbackData``; never ``split(":")``).

Packed forms stay far below Telegram's 64-byte limit: ``lb:<lobby>:<action>``,
``new:<game>``, ``lang:<code>``.
"""

from __future__ import annotations

from enum import StrEnum

from aiogram.filters.callback_data import CallbackData


class LobbyAction(StrEnum):
    """What a lobby button does."""

    join = "join"
    leave = "leave"
    computer = "cpu"
    time = "time"  # cycle the turn time off → 30 → 60 → 120 → off
    players = "n"  # cycle the player count within the game's limits
    start = "start"


class LobbyCb(CallbackData, prefix="lb"):
    """A lobby button: ``lobby`` id and the :class:`LobbyAction`."""

    lobby: str
    action: LobbyAction


class NewCb(CallbackData, prefix="new"):
    """``/new`` without a game: the game picked (``prsi`` | ``penki``)."""

    game: str


class LangCb(CallbackData, prefix="lang"):
    """``/lang``: the language picked (``cs`` | ``ru`` | ``en``)."""

    code: str
