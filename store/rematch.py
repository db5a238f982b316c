"""Play again (issue 15): a finished table's "Play again" lobby.

The first person of a finished table to ask makes the lobby (once: ``SET NX`` on
``rematch:<table>``); the table's computers sit in it at once and every other
person of the table takes their seat with one tap of their own (:meth:`rematch`),
or gives it up (:meth:`decline_rematch`). Their seats are kept for them for
:data:`REMATCH_HOLD` seconds; after that, and for those who declined, the lobby
fills as any lobby does (Join). It starts by itself once every seat is taken,
everyone where they sat before and the next dealer to deal
(:func:`store.lobbies.ordered_seats`); its creator may start it earlier with fewer.
In a chat, an outbox entry ``lobby`` asks the bot to post the lobby message once
and to edit it as it changes.
"""

from __future__ import annotations

import secrets
from typing import Any

import engine
from store.common import LOBBY_TTL, StoreBase, _s
from store.models import Lobby, LobbySettings, Seat, StoreError, User

REMATCH_HOLD = 120.0  # seconds the old seats wait for their people


class Rematches(StoreBase):
    """The "Play again" part of :class:`store.Store`."""

    async def rematch(self, table_id: str, user: User) -> Lobby:
        """``user`` wants to play again after table ``table_id``: their seat in its "Play again" lobby.

        Idempotent. Returns the lobby (``table_id`` set once the new table runs).
        ``StoreError``: ``not_found`` (no such table), ``invalid`` (it is not over),
        ``not_seated`` (``user`` did not play there), ``full`` (their seat went to
        someone else after they declined or let it lapse), ``expired``.
        """
        doc = await self._doc(table_id)
        if doc is None:
            raise StoreError("not_found", f"table {table_id}")
        if not doc.get("state", {}).get("over"):
            raise StoreError("invalid", "the game is not over yet")
        if not any(s["user_id"] == user.id and not s.get("computer") for s in doc["seats"]):
            raise StoreError("not_seated")
        key = self.keys.rematch(table_id)
        lobby_id = _s(await self.redis.get(key) or b"") or None
        created = False
        if lobby_id is None:
            people = [s["user_id"] for s in doc["seats"] if s["user_id"] is not None and not s.get("computer")]
            said_no = {u for u in people if await self.redis.exists(self.keys.once("rematch_no", f"{table_id}:{u}"))}
            lobby = self._rematch_lobby(doc, user, said_no)
            ok = await self._cas(keys=[self.keys.lobby(lobby.id)], args=["", 1, lobby.model_dump_json(), LOBBY_TTL])
            if not int(ok):  # pragma: no cover - a 48-bit id collision
                raise StoreError("busy", "lobby id taken")
            keep = max(int(await self.redis.ttl(self.keys.table(table_id))), LOBBY_TTL)
            if await self.redis.set(key, lobby.id, nx=True, ex=keep):
                lobby_id, created = lobby.id, True
                await self.save_user(user)
                if lobby.chat_id is not None:
                    await self.redis.zadd(self.keys.chat_lobbies(lobby.chat_id), {lobby.id: self.clock()})
            else:  # another person's tap made it a moment earlier: join theirs
                await self.redis.delete(self.keys.lobby(lobby.id))
                lobby_id = _s(await self.redis.get(key))
        if created:
            lobby = await self.get_lobby(lobby_id)
            if lobby is None:  # pragma: no cover - deleted right away
                raise StoreError("expired")
            if len(lobby.seats) >= lobby.settings.players:
                lobby = await self._start_when_full(lobby)
        else:
            current = await self.get_lobby(lobby_id)
            if current is None:
                raise StoreError("expired", "the Play again lobby has expired")
            if current.table_id is not None or current.seat_of(user.id) is not None:
                return current
            lobby = await self.join(lobby_id, user)
        await self._tell_chat(lobby)
        return lobby

    async def decline_rematch(self, table_id: str, user_id: int) -> Lobby | None:
        """``user_id`` will not play again: their kept seat opens to anyone (or they leave it).

        Returns the lobby, or ``None`` when nobody asked to play again yet (then a
        later "Play again" lobby does not keep a seat for them either).
        """
        key = self.keys.rematch(table_id)
        lobby_id = _s(await self.redis.get(key) or b"") or None
        if lobby_id is None:
            await self.redis.set(self.keys.once("rematch_no", f"{table_id}:{user_id}"), 1, ex=LOBBY_TTL)
            return None

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.table_id is not None:
                return None
            before = (list(lobby.reserved), list(lobby.seats))
            lobby.reserved = [u for u in lobby.reserved if u != user_id]
            lobby.seats = [s for s in lobby.seats if s.user_id != user_id]
            return None if (lobby.reserved, lobby.seats) == before else lobby

        lobby = await self._change_lobby(lobby_id, change)
        await self._tell_chat(lobby)
        return lobby

    async def rematch_of(self, table_id: str) -> Lobby | None:
        """The "Play again" lobby of table ``table_id``, or ``None`` when nobody asked yet."""
        lobby_id = _s(await self.redis.get(self.keys.rematch(table_id)) or b"") or None
        return await self.get_lobby(lobby_id) if lobby_id else None

    def _rematch_lobby(self, doc: dict[str, Any], user: User, said_no: set[int]) -> Lobby:
        seats = [Seat(**s) for s in doc["seats"]]
        order = [s.seat for s in seats]
        state = engine.load(doc["state"])
        last_dealer = getattr(state, "dealer", None) or doc.get("dealer")
        dealer_pos = (order.index(last_dealer) + 1) % len(order) if last_dealer in order else None
        settings = LobbySettings(**doc["settings"]).model_copy(update={"players": len(seats)})
        kept = [
            Seat(**s.model_dump(include={"seat", "user_id", "name", "computer"}))
            for s in seats if s.computer or s.user_id == user.id
        ]
        kept = [s.model_copy(update={"name": user.name}) if s.user_id == user.id else s for s in kept]
        return Lobby(
            id=secrets.token_urlsafe(6), chat_id=doc["chat_id"], thread_id=doc["thread_id"], game=doc["game"],
            creator_id=user.id, settings=settings, seats=kept, version=1, rematch_of=doc["id"], order=order,
            dealer_pos=dealer_pos,
            reserved=[s.user_id for s in seats
                      if s.user_id is not None and not s.computer and s.user_id != user.id and s.user_id not in said_no],
            reserved_until=self.clock() + REMATCH_HOLD,
        )

    async def _tell_chat(self, lobby: Lobby) -> None:
        """Ask the bot to post (once) or edit the lobby message in the chat (outbox ``lobby``)."""
        if lobby.chat_id is None:
            return
        await self._outbox([{"kind": "lobby", "lobby_id": lobby.id, "chat_id": lobby.chat_id,
                             "thread_id": lobby.thread_id, "rematch_of": lobby.rematch_of,
                             "version": lobby.version}])
