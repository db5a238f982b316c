"""Lobbies (S1): ``/new prsi|penki`` and the lobby's buttons.

Data injected by the dispatcher: ``store`` (``store.Store``), ``lobbies``
(:class:`bot.lobbies.LobbyMessages`), ``sender`` (:class:`bot.sender.Sender`),
``prober`` (:class:`Prober`), ``user`` (``store.User``, from the middleware).
Refusals are raised as ``StoreError`` and answered by :mod:`bot.handlers.errors`
(an alert for callback queries: full, started, not creator …).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from aiogram import F, Router
from aiogram.filters import Command, CommandObject
from aiogram.methods import SendChatAction
from aiogram.types import CallbackQuery, Message
from aiogram.utils.i18n import gettext as _

from bot import keyboards, texts
from bot.callbacks import LevelCb, LobbyAction, LobbyCb, NewCb, RematchCb, VariantCb
from bot.handlers.common import anonymous, answer, store_user, thread_of
from bot.lobbies import LobbyMessages
from bot.sender import Sender

log = logging.getLogger(__name__)

GAME_ALIASES = {
    "prsi": "prsi", "prší": "prsi", "prshi": "prsi", "прши": "prsi",
    "penki": "penki", "пеньки": "penki", "пенки": "penki",
}


def parse_game(args: str | None) -> str | None:
    """``"prsi"``/``"Prší"``/``"penki"``/``"пеньки"`` … → ``"prsi"`` | ``"penki"``; else None."""
    if not args:
        return None
    return GAME_ALIASES.get(args.split()[0].strip().lower())


class Prober:
    """Finds out early whether the bot may write to a player privately.

    A ``sendChatAction`` to the user's private chat fails with 403 when they never
    started the bot or blocked it; :class:`Sender` then marks them unreachable and
    the lobby shows a note. A user known reachable is probed at most every 10 min.
    """

    def __init__(self, sender: Sender, store: Any, *, every: float = 600.0) -> None:
        self.sender = sender
        self.store = store
        self.every = every
        self._ok: dict[int, float] = {}

    async def probe(self, user_id: int) -> bool:
        now = time.monotonic()
        if now - self._ok.get(user_id, -1e9) < self.every and await self.store.is_reachable(user_id):
            return True
        result = await self.sender.call(SendChatAction(chat_id=user_id, action="typing"), chat_id=user_id)
        if result:
            self._ok[user_id] = now
            await self.store.set_reachable(user_id, True)
            return True
        self._ok.pop(user_id, None)
        return False


def make_router() -> Router:
    router = Router(name="lobby")

    async def create(chat_id: int, thread_id: int | None, game: str, user: Any, store: Any,
                     lobbies: LobbyMessages, prober: Prober) -> None:
        lobby = await store.create_lobby(chat_id=chat_id, thread_id=thread_id, game=game, creator=user)
        await lobbies.post(lobby)
        if chat_id != user.id and not await prober.probe(user.id):
            await lobbies.changed(lobby.id)  # show the note asking them to press Start

    @router.message(Command("new"))
    async def cmd_new(message: Message, command: CommandObject, store: Any, lobbies: LobbyMessages,
                      sender: Sender, prober: Prober, user: Any = None) -> None:
        """``/new prsi`` | ``/new penki``: post a lobby here (in this forum topic)."""
        if anonymous(message):
            await sender.send_message(message.chat.id, texts.anonymous_text(), thread_id=thread_of(message))
            return
        game = parse_game(command.args)
        if game is None:
            await sender.send_message(message.chat.id, texts.unknown_game_text(), thread_id=thread_of(message),
                                      reply_markup=keyboards.new_game_keyboard())
            return
        user = store_user(user, message.from_user)
        await create(message.chat.id, thread_of(message), game, user, store, lobbies, prober)

    @router.callback_query(NewCb.filter(F.game.in_({"prsi", "penki"})))
    async def on_new(query: CallbackQuery, callback_data: NewCb, store: Any, lobbies: LobbyMessages,
                     prober: Prober, user: Any = None) -> None:
        await answer(query)
        message = query.message
        if not isinstance(message, Message):
            return
        user = store_user(user, query.from_user)
        await create(message.chat.id, thread_of(message), callback_data.game, user, store, lobbies, prober)

    @router.callback_query(LevelCb.filter())
    async def on_level(query: CallbackQuery, callback_data: LevelCb, store: Any, lobbies: LobbyMessages,
                       user: Any = None) -> None:
        """A computer seat's level button: the next level (creator only; ``StoreError`` → alert)."""
        user = store_user(user, query.from_user)
        lobby = await store.set_computer_level(callback_data.lobby, user.id, callback_data.seat)
        seat = next((s for s in lobby.seats if s.seat == callback_data.seat), None)
        await answer(query, texts.level_button(seat) if seat is not None else None)
        lobbies.touch(callback_data.lobby)

    @router.callback_query(LobbyCb.filter())
    async def on_lobby(query: CallbackQuery, callback_data: LobbyCb, store: Any, lobbies: LobbyMessages,
                       prober: Prober, user: Any = None) -> None:
        """A lobby button. Answers the query (``StoreError`` → alert by the error handler)."""
        user = store_user(user, query.from_user)
        lid = callback_data.lobby
        action = callback_data.action
        if action is LobbyAction.start:
            await store.start(lid, user.id)
            await answer(query, _("The game begins!"))
            await lobbies.refresh(lid)
            return
        if action is LobbyAction.join:
            before = await store.get_lobby(lid)
            lobby = await store.join(lid, user)
            already = before is not None and before.seat_of(user.id) is not None
            await answer(query, texts.error_text("already") if already else _("You took a seat."))
            if not already and lobby.chat_id != user.id:
                await prober.probe(user.id)
        elif action is LobbyAction.leave:
            before = await _lobby(store, lid)
            await store.leave(lid, user.id)
            if before.seat_of(user.id) is None:  # nothing changed: no edit
                await answer(query, texts.error_text("not_seated"))
                return
            await answer(query, _("You left the table."))
        elif action is LobbyAction.computer:
            await store.add_computer(lid, user.id)
            await answer(query, _("A computer player sat down."))
        elif action is LobbyAction.time:
            lobby = await _lobby(store, lid)
            new = keyboards.next_time(lobby.settings.turn_seconds)
            await store.update_settings(lid, user.id, turn_seconds=new)
            await answer(query, _("Turn time: {time}").format(time=texts.turn_time(new)))
        elif action is LobbyAction.players:
            lobby = await _lobby(store, lid)
            n = keyboards.next_players(lobby.game, lobby.settings.players)
            if n < len(lobby.seats):
                n = max(len(lobby.seats), n)
            await store.update_settings(lid, user.id, players=n)
            await answer(query, _("Players: {n}").format(n=n))
        elif action in (LobbyAction.variants, LobbyAction.back):
            lobby = await _lobby(store, lid)
            if lobby.creator_id != user.id:
                from store import StoreError

                raise StoreError("not_creator")
            await answer(query)
            lobbies.show_menu(lid, "variants" if action is LobbyAction.variants else None)
            return
        await lobbies.changed(lid)

    @router.callback_query(RematchCb.filter())
    async def on_rematch(query: CallbackQuery, callback_data: RematchCb, store: Any, lobbies: LobbyMessages,
                         prober: Prober, user: Any = None) -> None:
        """The final post's "Play again" / "Not this time" (issue 15): one tap each.

        ``StoreError`` (not seated, expired, full) → an alert by the error handler.
        """
        user = store_user(user, query.from_user)
        if callback_data.answer == "n":
            lobby = await store.decline_rematch(callback_data.table, user.id)
            await answer(query, _("Maybe next time."))
            if lobby is not None:
                lobbies.touch(lobby.id)
            return
        lobby = await store.rematch(callback_data.table, user)
        if lobby.table_id is not None:
            await answer(query, _("The next match is on: open it from the chat."))
        else:
            await answer(query, _("You are in for the next match. Waiting for the others…"))
            if lobby.chat_id is not None and lobby.chat_id != user.id:
                await prober.probe(user.id)
        lobbies.touch(lobby.id)

    @router.callback_query(VariantCb.filter())
    async def on_variant(query: CallbackQuery, callback_data: VariantCb, store: Any, lobbies: LobbyMessages,
                         user: Any = None) -> None:
        """A table-variant switch (PV1–PV7, PV3q) of a Prší lobby; only its creator may (``not_creator``)."""
        from engine.prsi_variants import VARIANTS
        from store import StoreError

        user = store_user(user, query.from_user)
        lid = callback_data.lobby
        lobby = await _lobby(store, lid)
        if callback_data.variant not in VARIANTS:
            raise StoreError("invalid", f"unknown variant {callback_data.variant!r}")
        new = keyboards.toggle_variant(lobby.settings.variants, callback_data.variant)
        lobby = await store.update_settings(lid, user.id, variants=new)
        name = texts.variant_name(callback_data.variant)
        on = callback_data.variant in lobby.settings.variants
        await answer(query, (_("On: {variant}") if on else _("Off: {variant}")).format(variant=name))
        await lobbies.changed(lid)

    return router


async def _lobby(store: Any, lobby_id: str) -> Any:
    from store import StoreError

    lobby = await store.get_lobby(lobby_id)
    if lobby is None:
        raise StoreError("not_found")
    return lobby
