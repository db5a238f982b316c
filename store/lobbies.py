"""Lobbies (S1): versioned documents changed with ``cas.lua``.

:meth:`Lobbies.start` creates the table first and then flips the lobby with a
compare-and-set, so two simultaneous starts make exactly one table (the loser's
draft table is deleted).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from store.common import (
    INDEX_KEEP,
    LOBBY_TTL,
    MAX_TRIES,
    StoreBase,
    _s,
)
from store.models import (
    PLAYER_LIMITS,
    Lobby,
    LobbySettings,
    Seat,
    StoreError,
    Table,
    User,
)

COMPUTER_LEVELS = ("beginner", "regular", "expert")  # engine.players.LEVEL_NAMES


class Lobbies(StoreBase):
    """The lobbies part of :class:`store.Store`."""

    async def create_lobby(
        self,
        *,
        chat_id: int,
        thread_id: int | None = None,
        game: str,
        creator: User,
        settings: LobbySettings | None = None,
    ) -> Lobby:
        """S1: a new lobby in ``chat_id``; the creator takes the first seat. TTL 1 h.

        Raises ``StoreError("invalid")`` for an unknown game or players out of range.
        """
        if game not in PLAYER_LIMITS:
            raise StoreError("invalid", f"unknown game {game!r}")
        settings = (settings or LobbySettings.default(game)).check(game)
        lobby = Lobby(
            id=secrets.token_urlsafe(6),
            chat_id=chat_id,
            thread_id=thread_id,
            game=game,
            creator_id=creator.id,
            settings=settings,
            seats=[Seat(seat=f"u{creator.id}", user_id=creator.id, name=creator.name)],
            version=1,
        )
        ok = await self._cas(keys=[self.keys.lobby(lobby.id)], args=["", 1, lobby.model_dump_json(), LOBBY_TTL])
        if not int(ok):  # pragma: no cover - a 48-bit id collision
            raise StoreError("busy", "lobby id taken")
        now = self.clock()
        pipe = self.redis.pipeline(transaction=False)
        pipe.zadd(self.keys.chat_lobbies(chat_id), {lobby.id: now})
        pipe.zremrangebyscore(self.keys.chat_lobbies(chat_id), "-inf", now - INDEX_KEEP)
        await pipe.execute()
        await self.save_user(creator)
        return lobby

    async def get_lobby(self, lobby_id: str) -> Lobby | None:
        """The lobby, or ``None`` when it never existed or expired (1 h unused)."""
        raw = await self.redis.hget(self.keys.lobby(lobby_id), "doc")
        return Lobby.model_validate_json(_s(raw)) if raw else None

    async def _change_lobby(self, lobby_id: str, change: Callable[[Lobby], Lobby | None]) -> Lobby:
        """Apply ``change`` (returns the new lobby, or ``None`` for "nothing to do") with a CAS loop."""
        for _ in range(MAX_TRIES):
            lobby = await self.get_lobby(lobby_id)
            if lobby is None:
                raise StoreError("not_found", f"lobby {lobby_id}")
            new = change(lobby.model_copy(deep=True))
            if new is None:
                return lobby
            new.version = lobby.version + 1
            ok = await self._cas(
                keys=[self.keys.lobby(lobby_id)],
                args=[str(lobby.version), new.version, new.model_dump_json(), LOBBY_TTL],
            )
            if int(ok):
                return new
            await asyncio.sleep(self._rng.uniform(0, 0.003))
        raise StoreError("busy", f"lobby {lobby_id}")

    async def join(self, lobby_id: str, user: User) -> Lobby:
        """Take the next free seat (S1). Idempotent: an already seated user changes nothing.

        In a "Play again" lobby the seats of the old table's people who have not
        answered yet are kept for them (``Lobby.held``), and the table starts by
        itself once every seat is taken (:mod:`store.rematch`).
        Raises ``StoreError``: ``not_found``, ``started``, ``full``.
        """
        now = self.clock()

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.seat_of(user.id) is not None:
                return None
            if lobby.table_id is not None:
                raise StoreError("started")
            held = lobby.held(now)
            kept = 0 if user.id in held else len(held)
            if len(lobby.seats) + kept >= lobby.settings.players:
                raise StoreError("full")
            lobby.seats.append(Seat(seat=f"u{user.id}", user_id=user.id, name=user.name))
            return lobby

        lobby = await self._change_lobby(lobby_id, change)
        await self.save_user(user)
        if lobby.rematch_of and lobby.table_id is None and len(lobby.seats) >= lobby.settings.players:
            lobby = await self._start_when_full(lobby)
        return lobby

    async def _start_when_full(self, lobby: Lobby) -> Lobby:
        """A full "Play again" lobby starts by itself (once; a lost race reads the winner's)."""
        try:
            await self._start(lobby.id, None)
        except StoreError as exc:
            if exc.code != "started":
                raise
        return await self.get_lobby(lobby.id) or lobby

    async def leave(self, lobby_id: str, user_id: int) -> Lobby:
        """Give up the seat before the start. Idempotent. ``StoreError``: ``not_found``, ``started``."""

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.table_id is not None:
                raise StoreError("started")
            if lobby.seat_of(user_id) is None:
                return None
            lobby.seats = [s for s in lobby.seats if s.user_id != user_id]
            return lobby

        return await self._change_lobby(lobby_id, change)

    async def add_computer(self, lobby_id: str, by_user_id: int, level: str = "regular") -> Lobby:
        """The creator fills the next seat with a computer (``c1``, ``c2``…; S1) at ``level``
        (``beginner`` | ``regular`` | ``expert``, issue 14).

        ``StoreError``: ``not_found``, ``not_creator``, ``started``, ``full``, ``invalid`` (level).
        """
        if level not in COMPUTER_LEVELS:
            raise StoreError("invalid", f"level must be one of {COMPUTER_LEVELS}")

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            if len(lobby.seats) >= lobby.settings.players:
                raise StoreError("full")
            taken = {s.seat for s in lobby.seats}
            n = next(i for i in range(1, 10) if f"c{i}" not in taken)
            lobby.seats.append(Seat(seat=f"c{n}", user_id=None, name=f"Computer {n}", computer=True, level=level))
            return lobby

        return await self._change_lobby(lobby_id, change)

    async def set_computer_level(self, lobby_id: str, by_user_id: int, seat: str, level: str | None = None) -> Lobby:
        """The creator sets the level of the computer in ``seat`` (``None``: the next one,
        beginner → regular → expert → beginner). Issue 14.

        ``StoreError``: ``not_found``, ``not_creator``, ``started``, ``invalid`` (no such
        computer seat, unknown level).
        """
        if level is not None and level not in COMPUTER_LEVELS:
            raise StoreError("invalid", f"level must be one of {COMPUTER_LEVELS}")

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            target = next((s for s in lobby.seats if s.seat == seat and s.computer), None)
            if target is None:
                raise StoreError("invalid", f"no computer in seat {seat!r}")
            current = target.level or "regular"
            target.level = level or COMPUTER_LEVELS[(COMPUTER_LEVELS.index(current) + 1) % len(COMPUTER_LEVELS)]
            return lobby

        return await self._change_lobby(lobby_id, change)

    async def update_settings(self, lobby_id: str, by_user_id: int, **changes: Any) -> Lobby:
        """The creator changes ``players`` and/or ``turn_seconds`` (None, 30, 60, 120).

        ``StoreError``: ``not_found``, ``not_creator``, ``started``, ``invalid`` (bad
        value or unknown name), ``full`` (fewer players than already seated).
        """
        unknown = set(changes) - set(LobbySettings.model_fields)
        if unknown:
            raise StoreError("invalid", f"unknown settings {sorted(unknown)}")

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            try:
                new = LobbySettings(**{**lobby.settings.model_dump(), **changes})
            except ValueError as exc:
                raise StoreError("invalid", str(exc)) from None
            new.check(lobby.game)
            if len(lobby.seats) > new.players:
                raise StoreError("full", "more seated than that")
            if new == lobby.settings:
                return None
            lobby.settings = new
            return lobby

        return await self._change_lobby(lobby_id, change)

    async def set_lobby_message(self, lobby_id: str, message_id: int) -> Lobby:
        """Remember the chat message that shows the lobby (the bot edits it)."""

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.message_id == message_id:
                return None
            lobby.message_id = message_id
            return lobby

        return await self._change_lobby(lobby_id, change)

    async def chat_lobbies(self, chat_id: int) -> list[Lobby]:
        """Live lobbies of a chat, newest first, started ones included (``table_id`` set)."""
        key = self.keys.chat_lobbies(chat_id)
        ids = [_s(i) for i in await self.redis.zrevrange(key, 0, 99)]
        out: list[Lobby] = []
        gone: list[str] = []
        for lobby_id in ids:
            lobby = await self.get_lobby(lobby_id)
            (out.append(lobby) if lobby else gone.append(lobby_id))
        if gone:
            await self.redis.zrem(key, *gone)
        return out

    async def start(self, lobby_id: str, by_user_id: int, seed: int | None = None) -> Table:
        """The creator starts the lobby's table, exactly once (S1).

        Pressing Start twice at the same moment still makes one table: the table is
        drafted first and the lobby flips to it with a compare-and-set; the loser's
        draft is deleted and it raises ``StoreError("started")``. Other codes:
        ``not_found``, ``not_creator``, ``too_few`` (fewer than 2 seats).
        A "Play again" lobby seats everyone where they sat before (newcomers in the
        seats left open) and the next dealer deals (:func:`ordered_seats`).
        """
        return await self._start(lobby_id, by_user_id, seed)

    async def _start(self, lobby_id: str, by_user_id: int | None, seed: int | None = None) -> Table:
        """:meth:`start`; ``by_user_id=None``: the store itself (a full "Play again" lobby)."""
        for _ in range(MAX_TRIES):
            lobby = await self.get_lobby(lobby_id)
            if lobby is None:
                raise StoreError("not_found", f"lobby {lobby_id}")
            if by_user_id is not None and lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            if len(lobby.seats) < PLAYER_LIMITS[lobby.game][0]:
                raise StoreError("too_few")
            seats, dealer = ordered_seats(lobby)
            table, doc, new_turns = await self._draft_table(
                game=lobby.game, seats=seats, chat_id=lobby.chat_id, thread_id=lobby.thread_id,
                settings=lobby.settings, seed=seed, lobby_id=lobby.id, dealer=dealer,
            )
            await self._set_due(doc)  # before the flip: a crash right after it loses no deadline
            await self._index(doc)  # … and the table is listed (a lost draft's ids are pruned on read)
            flipped = lobby.model_copy(deep=True)
            flipped.table_id = table.id
            flipped.version = lobby.version + 1
            ok = await self._cas(
                keys=[self.keys.lobby(lobby_id)],
                args=[str(lobby.version), flipped.version, flipped.model_dump_json(), LOBBY_TTL],
            )
            if int(ok):
                await self._register(doc, new_turns, scheduled=True)
                return table
            await self.redis.delete(self.keys.table(table.id))
            await self._set_due(doc, gone=True)
        raise StoreError("busy", f"lobby {lobby_id}")


def ordered_seats(lobby: Lobby) -> tuple[list[Seat], str | None]:
    """The seats of a table about to start, clockwise, and its first dealer (``None``: drawn).

    A plain lobby: join order, dealer drawn at random (seeded). A "Play again" lobby
    (issue 15): who sat at the old table sits where they sat (``order``), newcomers
    take the places left open in turn, and the first dealer is the one at
    ``dealer_pos`` (the seat after the old match's last dealer), or the next seat
    clockwise that is taken when fewer play.
    """
    if not lobby.order:
        return list(lobby.seats), None
    by_id = {s.seat: s for s in lobby.seats}
    newcomers = [s for s in lobby.seats if s.seat not in set(lobby.order)]
    places: list[Seat | None] = []
    for sid in lobby.order:
        if sid in by_id:
            places.append(by_id[sid])
        else:
            places.append(newcomers.pop(0) if newcomers else None)
    places += newcomers
    dealer = None
    if lobby.dealer_pos is not None and places:
        n = len(places)
        for k in range(n):
            seat = places[(lobby.dealer_pos + k) % n]
            if seat is not None:
                dealer = seat.seat
                break
    return [s for s in places if s is not None], dealer
