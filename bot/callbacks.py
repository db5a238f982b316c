"""Typed callback data of every inline button (``CallbackData``; never ``split(":")``).

Packed forms stay far below Telegram's 64-byte limit: ``lb:<lobby>:<action>``,
``lv:<lobby>:<variant>``, ``rm:<table>:y|n``, ``new:<game>``, ``lang:<code>``, ``lvl:<lobby>:<seat>``.
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
    variants = "pv"  # Prší: show the table variants' switches (PV1–PV7) instead of the main buttons
    back = "back"  # back from the variants' switches


class LobbyCb(CallbackData, prefix="lb"):
    """A lobby button: ``lobby`` id and the :class:`LobbyAction`."""

    lobby: str
    action: LobbyAction


class VariantCb(CallbackData, prefix="lv"):
    """A lobby's table-variant switch (RULES.md PV1–PV7, PV3q): turn ``variant`` on or off."""

    lobby: str
    variant: str


class RematchCb(CallbackData, prefix="rm"):
    """The final post's "Play again" (``answer="y"``) or "Not this time" (``"n"``) for ``table``."""

    table: str
    answer: str


class LevelCb(CallbackData, prefix="lvl"):
    """A computer seat's level button in a lobby: cycles beginner → regular → expert (issue 14)."""

    lobby: str
    seat: str


class NewCb(CallbackData, prefix="new"):
    """``/new`` without a game: the game picked (``prsi`` | ``penki``)."""

    game: str


class LangCb(CallbackData, prefix="lang"):
    """``/lang``: the language picked (``cs`` | ``ru`` | ``en``)."""

    code: str
