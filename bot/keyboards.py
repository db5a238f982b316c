"""Inline keyboards. S2: a ``web_app`` button only ever in a private chat; in groups
URL buttons — the Mini App's direct link ``https://t.me/<bot>/<app>?startapp=<table>``
when ``WEBAPP_SHORT_NAME`` is set, else a ``?start=<table>`` deep link into the
bot's private chat (where :mod:`bot.handlers.start` answers with a ``web_app`` button).
"""

from __future__ import annotations

import re
from typing import Any

from aiogram import Bot
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup, WebAppInfo
from aiogram.utils.deep_linking import create_deep_link
from aiogram.utils.keyboard import InlineKeyboardBuilder

from bot import texts
from bot.callbacks import LangCb, LevelCb, LobbyAction, LobbyCb, NewCb, RematchCb, VariantCb
from bot.i18n import LANGUAGE_NAMES, LANGUAGES
from bot.settings import BotSettings

_PAYLOAD = re.compile(r"[A-Za-z0-9_-]{1,64}")


async def bot_username(bot: Bot) -> str:
    """The bot's @username (``getMe``, cached by aiogram)."""
    return (await bot.me()).username or "bot"


def _link(username: str, kind: str, payload: str, app: str | None = None) -> str:
    encode = not _PAYLOAD.fullmatch(payload)
    return create_deep_link(username=username, link_type=kind, payload=payload, app_name=app, encode=encode)  # type: ignore[arg-type]


def is_private(chat_id: int) -> bool:
    return chat_id > 0


async def open_button(bot: Bot, settings: BotSettings, table_id: str, *, chat_id: int) -> InlineKeyboardButton:
    """The button that opens table ``table_id`` from chat ``chat_id`` (S2)."""
    label = texts.open_label()
    url = settings.table_url(table_id)
    if is_private(chat_id):
        if url.startswith("https://"):
            return InlineKeyboardButton(text=label, web_app=WebAppInfo(url=url))
        return InlineKeyboardButton(text=label, url=url)
    username = await bot_username(bot)
    if settings.webapp_short_name:
        return InlineKeyboardButton(text=label, url=_link(username, "startapp", table_id, settings.webapp_short_name))
    return InlineKeyboardButton(text=label, url=_link(username, "start", table_id))


async def rules_keyboard(bot: Bot, settings: BotSettings, *, chat_id: int) -> InlineKeyboardMarkup | None:
    """``/rules``: a button per game opening the Mini App's rules screen (cards pictured), or
    ``None`` in a group without the Mini App's direct link (S2: no ``web_app`` buttons there)."""
    row = []
    for game in ("prsi", "penki"):
        label = f"📖 {texts.game_name(game)}"
        url = f"{settings.public_url.rstrip('/')}/?page=rules&game={game}"
        if is_private(chat_id):
            row.append(InlineKeyboardButton(text=label, web_app=WebAppInfo(url=url)) if url.startswith("https://")
                       else InlineKeyboardButton(text=label, url=url))
        elif settings.webapp_short_name:
            username = await bot_username(bot)
            row.append(InlineKeyboardButton(text=label, url=_link(username, "startapp", f"rules-{game}",
                                                                  settings.webapp_short_name)))
    return InlineKeyboardMarkup(inline_keyboard=[row]) if row else None


async def open_keyboard(bot: Bot, settings: BotSettings, table_id: str, *, chat_id: int) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup(inline_keyboard=[[await open_button(bot, settings, table_id, chat_id=chat_id)]])


def next_time(current: int | None) -> int | None:
    """The next turn time in the cycle off → 30 → 60 → 120 → off."""
    from store.models import TURN_SECONDS

    options = list(TURN_SECONDS)
    i = options.index(current) if current in options else 0
    return options[(i + 1) % len(options)]


def next_players(game: str, current: int) -> int:
    """The next player count, wrapping within the game's limits (Prší 2–5, Penki 2–6)."""
    from store.models import PLAYER_LIMITS

    lo, hi = PLAYER_LIMITS.get(game, (2, 6))
    return lo if current >= hi else current + 1


def toggle_variant(current: list[str], variant: str) -> list[str]:
    """``current`` with ``variant`` switched; PV3 and PV3q exclude each other (PV3q is the tougher PV3)."""
    on = set(current)
    if variant in on:
        on.discard(variant)
    else:
        on.add(variant)
        on -= {"PV3q"} if variant == "PV3" else {"PV3"} if variant == "PV3q" else set()
    from engine.prsi_variants import VARIANTS

    return [v for v in VARIANTS if v in on]


def variants_keyboard(lobby: Any) -> InlineKeyboardMarkup:
    """The Prší lobby's variant switches, one a row (✅ on, ▫️ off), and Back."""
    from engine.prsi_variants import VARIANTS

    kb = InlineKeyboardBuilder()
    on = set(lobby.settings.variants)
    for v in VARIANTS:
        mark = "✅" if v in on else "▫️"
        kb.row(InlineKeyboardButton(text=f"{mark} {texts.variant_name(v)}",
                                    callback_data=VariantCb(lobby=lobby.id, variant=v).pack()))
    kb.row(InlineKeyboardButton(text=texts.lobby_button("back"),
                                callback_data=LobbyCb(lobby=lobby.id, action=LobbyAction.back).pack()))
    return kb.as_markup()


async def lobby_keyboard(bot: Bot, settings: BotSettings, lobby: Any, *, menu: str | None = None) -> InlineKeyboardMarkup:
    """Join/Leave · Add computer/turn time/players · Variants (Prší) · Start · Open (a
    ``?start=<lobby>`` link into the bot in groups, so players can enable private
    messages early). ``menu="variants"``: the variant switches instead (:func:`variants_keyboard`)."""
    if menu == "variants" and lobby.game == "prsi":
        return variants_keyboard(lobby)
    kb = InlineKeyboardBuilder()

    def cb(action: LobbyAction) -> str:
        return LobbyCb(lobby=lobby.id, action=action).pack()

    kb.row(
        InlineKeyboardButton(text=texts.lobby_button("join"), callback_data=cb(LobbyAction.join)),
        InlineKeyboardButton(text=texts.lobby_button("leave"), callback_data=cb(LobbyAction.leave)),
    )
    kb.row(
        InlineKeyboardButton(text=texts.lobby_button("cpu"), callback_data=cb(LobbyAction.computer)),
        InlineKeyboardButton(
            text=texts.lobby_button("time", seconds=lobby.settings.turn_seconds), callback_data=cb(LobbyAction.time)
        ),
        InlineKeyboardButton(
            text=texts.lobby_button("n", players=lobby.settings.players), callback_data=cb(LobbyAction.players)
        ),
    )
    if lobby.game == "prsi":
        kb.row(InlineKeyboardButton(text=texts.variants_button(len(lobby.settings.variants)),
                                    callback_data=cb(LobbyAction.variants)))
    computers = [s for s in lobby.seats if getattr(s, "computer", False)]
    for row in range(0, len(computers), 2):  # each computer's level, a tap cycles it (issue 14)
        kb.row(*(
            InlineKeyboardButton(text=texts.level_button(s), callback_data=LevelCb(lobby=lobby.id, seat=s.seat).pack())
            for s in computers[row:row + 2]
        ))
    kb.row(InlineKeyboardButton(text=texts.lobby_button("start"), callback_data=cb(LobbyAction.start)))
    if not is_private(lobby.chat_id):
        username = await bot_username(bot)
        kb.row(InlineKeyboardButton(text=texts.open_label(), url=_link(username, "start", lobby.id)))
    return kb.as_markup()


def replay_url(settings: BotSettings, table_id: str) -> str:
    """The Mini App URL of a table's replay: ``<public_url>/?replay=<id>`` (issue 15)."""
    return f"{settings.public_url.rstrip('/')}/?replay={table_id}"


def replay_link(username: str, settings: BotSettings, table_id: str) -> str:
    """A t.me link that opens table ``table_id``'s replay from any chat (S2: no web_app in groups):
    the Mini App's direct link with ``startapp=replay_<id>``, else ``?start=replay_<id>`` into the bot."""
    if settings.webapp_short_name:
        return _link(username, "startapp", f"replay_{table_id}", settings.webapp_short_name)
    return _link(username, "start", f"replay_{table_id}")


async def replay_button(bot: Bot, settings: BotSettings, table_id: str, *, chat_id: int) -> InlineKeyboardButton:
    """"▶️ Replay": a ``web_app`` button in a private chat (https), else a t.me link (S2)."""
    label = texts.replay_label()
    url = replay_url(settings, table_id)
    if is_private(chat_id) and url.startswith("https://"):
        return InlineKeyboardButton(text=label, web_app=WebAppInfo(url=url))
    return InlineKeyboardButton(text=label, url=replay_link(await bot_username(bot), settings, table_id))


async def end_keyboard(bot: Bot, settings: BotSettings, table_id: str, *, chat_id: int) -> InlineKeyboardMarkup:
    """Under the final table: "Play again" and "Not this time", then "Replay" (issue 15)."""
    kb = InlineKeyboardBuilder()
    kb.row(
        InlineKeyboardButton(text=texts.rematch_button("y"), callback_data=RematchCb(table=table_id, answer="y").pack()),
        InlineKeyboardButton(text=texts.rematch_button("n"), callback_data=RematchCb(table=table_id, answer="n").pack()),
    )
    kb.row(await replay_button(bot, settings, table_id, chat_id=chat_id))
    return kb.as_markup()


def new_game_keyboard() -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    kb.row(
        InlineKeyboardButton(text=texts.game_name("prsi"), callback_data=NewCb(game="prsi").pack()),
        InlineKeyboardButton(text=texts.game_name("penki"), callback_data=NewCb(game="penki").pack()),
    )
    return kb.as_markup()


def lang_keyboard() -> InlineKeyboardMarkup:
    kb = InlineKeyboardBuilder()
    kb.row(
        *[
            InlineKeyboardButton(text=LANGUAGE_NAMES[code], callback_data=LangCb(code=code).pack())
            for code in LANGUAGES
        ]
    )
    return kb.as_markup()


