"""One live "your turn" message per player (S5), listing every table that waits for them.

A player at six busy tables gets one message, not one per turn, and it is never stale:

* a turn at a table the player is not looking at (no open Mini App) sends a fresh
  message listing every table waiting for them (so Telegram notifies), and the
  previous one is deleted (or, when Telegram no longer allows that, edited to done);
* whether the table still waits is asked again at the moment of sending, after every
  wait (the per-chat spacing, a ``retry_after``): a turn that passed meanwhile sends
  nothing;
* when a listed table stops waiting (the player moved, the timer played, the match
  ended) the message is edited silently: the table leaves the list, and once nothing
  waits it reads "done" without buttons; such an edit too is withdrawn when, by the time
  it goes out, a table it lists has stopped waiting (it is made anew from what waits then);
* beyond Telegram's budget (:meth:`bot.sender.Sender.congested`) a turn edits the player's
  live message to list the table instead of sending a new one and deleting the old: one
  request instead of two, without a sound; and the edit of a passed turn waits for the
  notifier's next sweep of live messages (or the player's next turn). A "your turn" goes
  before every other kind of message (:data:`bot.sender.URGENCY`).

The message's id and the tables it lists are kept in the store
(``store.turn_notice``/``set_turn_notice``), so another process or a restart edits the
same message. Calls for one player must not overlap (the notifier runs them in that
player's lane).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from aiogram import Bot
from aiogram.types import InlineKeyboardMarkup
from aiogram.utils.i18n import I18n

from bot import keyboards, texts
from bot.i18n import locale_scope
from bot.sender import Sender
from bot.settings import BotSettings

log = logging.getLogger(__name__)
#: A language, or an async function that gives it (asked only when a message is written).
Locale = str | Callable[[], Awaitable[str]]
MAX_LISTED = 10  # tables with a button; more are counted ("…and N more")


class TurnNotices:
    """Keeps each player's live turn message in step with the tables (see the module docstring)."""

    def __init__(self, bot: Bot, store: Any, sender: Sender, i18n: I18n, settings: BotSettings) -> None:
        self.bot = bot
        self.store = store
        self.sender = sender
        self.i18n = i18n
        self.settings = settings
        self.live: dict[int, float] = {}  # users whose live message lists tables → when last checked
        self.clock = time.monotonic  # for ``live``
        self.wall = time.time  # epoch seconds, for "N s left"
        self.edited_not_sent = 0  # turns told by editing the live message (beyond the budget)
        self.deferred = 0  # edits of passed turns put off (beyond the budget)

    # -- what waits ------------------------------------------------------------------------------
    async def waiting(self, user_id: int) -> list[Any]:
        """The user's tables (newest first) that await a move of their seat, which they play
        themselves (a seat in auto play is the computer's until they act again)."""
        out = []
        for table in await self.store.user_tables(user_id):
            if table.state.over:
                continue
            seat = next((s for s in table.seats if s.user_id == user_id and not s.computer), None)
            if seat is None or seat.auto:
                continue
            if seat.seat in _awaiting(table.state):
                out.append(table)
        return out

    async def still_waits(self, table_id: str, user_id: int) -> bool:
        """Whether ``table_id`` awaits ``user_id`` now and they are not looking at it (a table
        the store cannot show is taken at the turn entry's word)."""
        table = await self.store.get_table(table_id)
        if table is None:
            return not await self.store.is_present(table_id, user_id)
        if table.state.over:
            return False
        seat = next((s for s in table.seats if s.user_id == user_id and not s.computer), None)
        if seat is None or seat.seat not in _awaiting(table.state):
            return False
        return not await self.store.is_present(table_id, user_id)

    # -- the message ------------------------------------------------------------------------------
    async def turn(self, user_id: int, table_id: str, locale: str, deadline: float | None = None,
                   game: str = "") -> None:
        """A new turn of ``user_id`` at ``table_id`` (of ``game``): a fresh message if it still
        waits for them when it goes out, else the live one brought up to date."""
        notice = await self.store.turn_notice(user_id)

        async def guard() -> bool:
            return await self.still_waits(table_id, user_id)

        if not await guard():
            await self.refresh(user_id, locale, notice)
            return
        tables = await self.waiting(user_id)
        if not any(t.id == table_id for t in tables):
            if await self.store.get_table(table_id) is not None:
                await self.refresh(user_id, locale, notice)
                return
            tables.insert(0, SimpleNamespace(id=table_id, game=game, seats=[]))
        text, markup = await self._render(user_id, tables, locale, first=table_id, deadline=deadline)
        if notice is not None and notice.get("message_id") and self.sender.congested():
            # Beyond the budget: the live message edited to list this table (one request, not two).
            edited = await self.sender.edit_message(user_id, notice["message_id"], text, reply_markup=markup,
                                                    guard=guard, urgency="turn")
            if edited:
                self.edited_not_sent += 1
                await self.store.set_turn_notice(user_id, {**notice, "tables": [t.id for t in tables],
                                                            "at": self.wall()})
                self.live[user_id] = self.clock()
                return
            if not await guard():  # withdrawn: the turn passed while it waited
                await self.refresh(user_id, locale)
                return
            # the live message could not be edited (gone): a new one, as within the budget
        message = await self.sender.send_message(user_id, text, reply_markup=markup, guard=guard, urgency="turn")
        if message is None:  # withdrawn at the moment of sending, or not delivered
            await self.refresh(user_id, locale, notice)
            return
        await self.store.set_turn_notice(user_id, {"message_id": message.message_id,
                                                    "tables": [t.id for t in tables], "at": self.wall()})
        self.live[user_id] = self.clock()
        if notice is not None and notice.get("message_id") != message.message_id:
            await self._retire(user_id, notice, locale)

    async def refresh(self, user_id: int, locale: Locale, notice: dict[str, Any] | None = ...,  # type: ignore[assignment]
                      *, again: int = 2) -> None:
        """Edit the live message to the tables that wait now ("done" once none does); silent.

        ``locale``: the language, or an async function giving it (asked only when the
        message is edited); ``notice``: the live notice if just read (else it is read).
        """
        if notice is ...:
            notice = await self.store.turn_notice(user_id)
        if self.settled(user_id, notice):
            return
        assert notice is not None
        listed = notice["tables"]
        tables = await self.waiting(user_id)
        ids = [t.id for t in tables]
        if ids == listed or (not listed and not ids):
            self._track(user_id, ids)
            return
        if ids and not set(ids) <= set(listed):
            # a table that was never announced in this message: keep what was listed and
            # still waits (the new one gets its own message from its turn entry)
            tables = [t for t in tables if t.id in listed]
            ids = [t.id for t in tables]
            if ids == listed:
                self._track(user_id, ids)
                return
        if self.sender.congested():
            # Beyond the budget a passed turn's message is put right later (the notifier's sweep of
            # live messages, or this player's next turn), not now: new turns go first.
            self.deferred += 1
            self._track(user_id, listed)
            return
        text, markup = await self._render(user_id, tables, await _resolve(locale))

        async def guard() -> bool:  # every table it lists still waits when it goes out
            return not ids or set(ids) <= {t.id for t in await self.waiting(user_id)}

        edited = await self.sender.edit_message(user_id, notice["message_id"], text, reply_markup=markup,
                                                guard=guard, urgency="refresh")
        if edited is None and ids and not await guard():
            if again:  # withdrawn: what waits changed while it waited; made anew from what waits now
                await self.refresh(user_id, locale, again=again - 1)
            return
        await self.store.set_turn_notice(user_id, {**notice, "tables": ids, "at": self.wall()})
        self._track(user_id, ids)

    def settled(self, user_id: int, notice: dict[str, Any] | None) -> bool:
        """Whether :meth:`refresh` with ``notice`` (the user's live notice as just read) has
        nothing to do: no live message, or one that lists no table ("done") and so never
        changes. When so, what :meth:`refresh` would do is done here, at once."""
        if (notice or {}).get("tables"):
            return False
        self.live.pop(user_id, None)
        return True

    def _track(self, user_id: int, ids: list[str]) -> None:
        if ids:
            self.live[user_id] = self.clock()
        else:
            self.live.pop(user_id, None)

    async def _retire(self, user_id: int, notice: dict[str, Any], locale: str) -> None:
        """The previous live message: deleted, or (older than Telegram lets bots delete) edited to done."""
        if await self.sender.delete_message(user_id, notice["message_id"], urgency="cleanup"):
            return
        text, markup = await self._render(user_id, [], locale)
        await self.sender.edit_message(user_id, notice["message_id"], text, reply_markup=markup, urgency="cleanup")

    async def _render(self, user_id: int, tables: list[Any], locale: str, *, first: str | None = None,
                      deadline: float | None = None) -> tuple[str, InlineKeyboardMarkup | None]:
        if first is not None:  # the table whose turn this is leads the list
            tables = sorted(tables, key=lambda t: t.id != first)
        with locale_scope(self.i18n, locale):
            if not tables:
                return texts.turn_done_text(), None
            if len(tables) == 1:
                left = int(deadline - self.wall()) if isinstance(deadline, int | float) else None
                text = texts.turn_text(SimpleNamespace(game=tables[0].game), left)
                markup = await keyboards.open_keyboard(self.bot, self.settings, tables[0].id, chat_id=user_id)
                return text, markup
            rows = [texts.waiting_row(t, user_id) for t in tables]
            text = texts.turns_text(rows, MAX_LISTED)
            buttons = []
            for i, table in enumerate(tables[:MAX_LISTED], 1):
                button = await keyboards.open_button(self.bot, self.settings, table.id, chat_id=user_id)
                buttons.append([button.model_copy(update={"text": texts.waiting_button(i, table)})])
        return text, InlineKeyboardMarkup(inline_keyboard=buttons)


async def _resolve(locale: Locale) -> str:
    return locale if isinstance(locale, str) else await locale()


def _awaiting(state: Any) -> list[str]:
    import engine

    try:
        return list(engine.awaiting(state))
    except Exception:
        log.exception("awaiting() failed")
        return []
