"""The store: live games, lobbies, deadlines, outbox and ratings on Redis (DESIGN.md, S1–S7).

The only module that talks to Redis. Key names: :mod:`store.keys`. Scripts: the
``*.lua`` files beside this module, registered once per :class:`Store` and called
as objects (redis-py reloads them on NOSCRIPT).

Concurrency model
-----------------
* A table is a hash ``{version, doc}``. :meth:`Store.apply` loads it, runs the
  engine, and commits with ``commit.lua``, which writes only if the version is
  unchanged (compare-and-set), appends the log entry, records the
  client_action_id, refreshes the TTLs and publishes — one round trip. On a
  conflict it reloads and tries again (or raises ``stale`` when the caller named
  the version it expected).
* Lobbies are versioned documents changed with ``cas.lua``; :meth:`Store.start`
  creates the table first and then flips the lobby with a compare-and-set, so two
  simultaneous starts make exactly one table (the loser's draft table is deleted).
* Turn deadlines and computer moves (S4) are one sorted set, table id → when the
  worker must look at the table. ``claim.lua`` leases due entries (their score
  moves to ``now + LEASE``), so exactly one worker gets each; a worker that dies
  leaves an entry that comes due again after the lease: no deadline is lost.
  ``schedule.lua`` never lets an older version overwrite a newer due time.
* After a commit (not atomically with it, since those keys live in other cluster
  slots) come the ledger entry for a finished rated game (``record.lua``,
  idempotent on the table id), then the outbox entries for the bot together with
  the due time (``schedule.lua``: one script, both in the ``{sched}`` slot). If
  the process dies in between, :meth:`Store.sweep` (run by the workers every
  minute) finds the table by its stale scheduled version and redoes the ledger
  entry, the outbox entries of that commit and the due time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

import engine
from engine import ratings
from engine.errors import Rejected
from store.keys import Keys
from store.models import (
    PLAYER_LIMITS,
    ApplyResult,
    Lobby,
    LobbySettings,
    Seat,
    StoreError,
    Table,
    User,
)

log = logging.getLogger("karty.store")

SCHEMA = 1
TABLE_TTL = 48 * 3600  # S7: live game state, since the last move
FINISHED_TTL = 7 * 24 * 3600  # S7: a finished game's summary
LOBBY_TTL = 3600  # S1, S7: since the last change
LEASE = 30.0  # seconds a worker's claim on a due table lasts
RETRY_LATER = 5.0
SWEEP_EVERY = 60.0  # seconds between sweeps (Store.sweep) across all workers
SWEEP_SETTLE = 10.0  # a commit's follow-up counts as lost only after this many seconds  # a due move the engine refused is looked at again after this
COMPUTER_DELAY = (0.6, 1.2)  # seconds before a computer seat moves, so people can follow
# Seconds before a computer calls «ЗЕВОК!» or «СКОЛЬКО КАРТ?» on someone: slower than a
# move, so a person has a fair chance to declare first or to win the race themselves.
CALLOUT_DELAY = (1.6, 3.0)
OUTBOX_MAXLEN = 10_000
OUTBOX_GROUP = "bot"
MAX_TRIES = 200  # compare-and-set attempts before StoreError("busy")
RESULTS_KEPT = 50
INDEX_KEEP = 90 * 24 * 3600  # chat/user index entries older than this are trimmed (their tables are long gone)
CALLOUTS = frozenset({"zevok", "one_card", "how_many"})
BYS = ("player", "timer", "computer")


@cache
def _lua(name: str) -> str:
    return resources.files("store").joinpath(name).read_text(encoding="utf-8")


def _s(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _utc(at: datetime | float | None, clock: Callable[[], float]) -> datetime:
    if at is None:
        return datetime.fromtimestamp(clock(), tz=UTC)
    if isinstance(at, int | float):
        return datetime.fromtimestamp(at, tz=UTC)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Store:
    """Karty's Redis store (docs/CONTRACTS.md §2).

    ``redis``: a ``redis.asyncio.Redis`` (``decode_responses`` either way);
    ``prefix``: the key prefix; ``clock``: epoch seconds (tests pass a fake one).
    """

    def __init__(self, redis: Redis, prefix: str = "karty", *, clock: Callable[[], float] = time.time) -> None:
        self.redis = redis
        self.keys = Keys(prefix)
        self.clock = clock
        self._rng = random.Random()
        self._commit = redis.register_script(_lua("commit.lua"))
        self._cas = redis.register_script(_lua("cas.lua"))
        self._schedule = redis.register_script(_lua("schedule.lua"))
        self._claim = redis.register_script(_lua("claim.lua"))
        self._release = redis.register_script(_lua("release.lua"))
        self._record = redis.register_script(_lua("record.lua"))
        self._group_ready = False
        self._pending_done: set[str] = set()

    @classmethod
    def from_url(cls, url: str, prefix: str = "karty", **kwargs: Any) -> Store:
        """A store on a new connection pool to ``url`` (``redis://host:port/db``)."""
        return cls(Redis.from_url(url, decode_responses=True), prefix=prefix, **kwargs)

    async def close(self) -> None:
        """Close the Redis connection pool."""
        await self.redis.aclose()

    # ------------------------------------------------------------------ users
    async def save_user(self, user: User) -> None:
        """Remember ``user`` (no TTL)."""
        await self.redis.hset(self.keys.users, str(user.id), user.model_dump_json())

    async def get_user(self, user_id: int) -> User | None:
        """The saved :class:`User`, or ``None``."""
        raw = await self.redis.hget(self.keys.users, str(user_id))
        return User.model_validate_json(_s(raw)) if raw else None

    async def set_reachable(self, user_id: int, reachable: bool) -> None:
        """Mark whether the bot can message ``user_id`` (False after TelegramForbiddenError, S5)."""
        if reachable:
            await self.redis.srem(self.keys.unreachable, str(user_id))
        else:
            await self.redis.sadd(self.keys.unreachable, str(user_id))

    async def is_reachable(self, user_id: int) -> bool:
        """False once :meth:`set_reachable` marked the user unreachable."""
        return not await self.redis.sismember(self.keys.unreachable, str(user_id))

    # ---------------------------------------------------------------- small service state
    async def ping(self) -> bool:
        """True when Redis answers; raises the client's connection errors (see :data:`UNAVAILABLE`)."""
        return bool(await self.redis.ping())

    async def set_flag(self, name: str, member: str | int) -> None:
        """Add ``member`` to the durable flag set ``name`` (no TTL), e.g. ``("lang_explicit", user_id)``."""
        await self.redis.sadd(self.keys.flags(name), str(member))

    async def has_flag(self, name: str, member: str | int) -> bool:
        """Whether :meth:`set_flag` added ``member`` to ``name``."""
        return bool(await self.redis.sismember(self.keys.flags(name), str(member)))

    async def once(self, name: str, ident: str | int, ttl: int) -> bool:
        """True the first time ``(name, ident)`` is offered within ``ttl`` seconds (SET NX EX):
        how a repeated Telegram update or a repeated notice is done once across processes."""
        return bool(await self.redis.set(self.keys.once(name, str(ident)), "1", nx=True, ex=ttl))

    async def mark_once(self, name: str, ident: str | int, ttl: int) -> None:
        """Record ``(name, ident)`` as done for ``ttl`` seconds (after the work it guards)."""
        await self.redis.set(self.keys.once(name, str(ident)), "1", ex=ttl)

    async def done_once(self, name: str, ident: str | int) -> bool:
        """Whether ``(name, ident)`` was offered to :meth:`once` or marked by :meth:`mark_once`."""
        return bool(await self.redis.exists(self.keys.once(name, str(ident))))

    # ---------------------------------------------------------------- lobbies
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

        Raises ``StoreError``: ``not_found``, ``started``, ``full``.
        """

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.seat_of(user.id) is not None:
                return None
            if lobby.table_id is not None:
                raise StoreError("started")
            if len(lobby.seats) >= lobby.settings.players:
                raise StoreError("full")
            lobby.seats.append(Seat(seat=f"u{user.id}", user_id=user.id, name=user.name))
            return lobby

        lobby = await self._change_lobby(lobby_id, change)
        await self.save_user(user)
        return lobby

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

    async def add_computer(self, lobby_id: str, by_user_id: int) -> Lobby:
        """The creator fills the next seat with a computer (``c1``, ``c2``…; S1).

        ``StoreError``: ``not_found``, ``not_creator``, ``started``, ``full``.
        """

        def change(lobby: Lobby) -> Lobby | None:
            if lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            if len(lobby.seats) >= lobby.settings.players:
                raise StoreError("full")
            taken = {s.seat for s in lobby.seats}
            n = next(i for i in range(1, 10) if f"c{i}" not in taken)
            lobby.seats.append(Seat(seat=f"c{n}", user_id=None, name=f"Computer {n}", computer=True))
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
        """
        for _ in range(MAX_TRIES):
            lobby = await self.get_lobby(lobby_id)
            if lobby is None:
                raise StoreError("not_found", f"lobby {lobby_id}")
            if lobby.creator_id != by_user_id:
                raise StoreError("not_creator")
            if lobby.table_id is not None:
                raise StoreError("started")
            if len(lobby.seats) < PLAYER_LIMITS[lobby.game][0]:
                raise StoreError("too_few")
            table, doc, new_turns = await self._draft_table(
                game=lobby.game, seats=lobby.seats, chat_id=lobby.chat_id, thread_id=lobby.thread_id,
                settings=lobby.settings, seed=seed, lobby_id=lobby.id,
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

    # ----------------------------------------------------------------- tables
    async def create_table(
        self,
        *,
        game: str,
        seats: list[Seat],
        chat_id: int | None = None,
        thread_id: int | None = None,
        settings: LobbySettings | None = None,
        seed: int | None = None,
        lobby_id: str | None = None,
    ) -> Table:
        """A new table: a seeded deal and a random (seeded) first dealer; TTL 48 h.

        ``seed`` defaults to a fresh random one. Rated (P16) only when no seat is a
        computer. Raises ``StoreError("invalid")`` for an unknown game, a seat count
        the game does not allow or repeated seat ids.
        """
        _, doc, new_turns = await self._draft_table(
            game=game, seats=seats, chat_id=chat_id, thread_id=thread_id, settings=settings,
            seed=seed, lobby_id=lobby_id,
        )
        await self._register(doc, new_turns)
        return self._table(doc)

    async def _draft_table(
        self, *, game: str, seats: list[Seat], chat_id: int | None, thread_id: int | None,
        settings: LobbySettings | None, seed: int | None, lobby_id: str | None,
    ) -> tuple[Table, dict[str, Any], list[str]]:
        """Write a new table (version 0) without indexing or scheduling it."""
        if game not in PLAYER_LIMITS:
            raise StoreError("invalid", f"unknown game {game!r}")
        lo, hi = PLAYER_LIMITS[game]
        players = [s.seat for s in seats]
        if not lo <= len(players) <= hi or len(set(players)) != len(players):
            raise StoreError("invalid", f"{game} takes {lo}-{hi} distinct seats")
        settings = (settings or LobbySettings.default(game)).model_copy(update={"players": len(players)})
        seed = secrets.randbits(63) if seed is None else int(seed)
        dealer = random.Random(seed).choice(players)
        state = engine.new_game(game, players, dealer=dealer, seed=seed)
        now = self.clock()
        fresh = [Seat(**s.model_dump(include={"seat", "user_id", "name", "computer"})) for s in seats]
        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "id": secrets.token_urlsafe(8),
            "game": game,
            "chat_id": chat_id,
            "thread_id": thread_id,
            "lobby_id": lobby_id,
            "seats": [s.model_dump() for s in fresh],
            "settings": settings.model_dump(),
            "seed": seed,
            "dealer": dealer,
            "rated": all(not s.computer and s.user_id is not None for s in fresh),
            "created": now,
            "ts": now,
        }
        new_turns = self._plan(doc, state, None, now)
        doc["state"] = engine.dump(state)
        doc["version"] = state.version
        ok = await self._cas(keys=[self.keys.table(doc["id"])], args=["", doc["version"], _dumps(doc), TABLE_TTL])
        if not int(ok):  # pragma: no cover - a 64-bit id collision
            raise StoreError("busy", "table id taken")
        return self._table(doc, state), doc, new_turns

    async def _index(self, doc: dict[str, Any]) -> None:
        """List a new table under its chat and its people (``chat_tables``, ``user_tables``).

        Reads prune ids of expired tables only among the newest; entries older than
        :data:`INDEX_KEEP` are trimmed here, so the indexes do not grow without end.
        """
        keys = [self.keys.chat_tables(doc["chat_id"])] if doc["chat_id"] is not None else []
        keys += [self.keys.user_tables(s["user_id"]) for s in doc["seats"] if s["user_id"] is not None]
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:
            pipe.zadd(key, {doc["id"]: doc["created"]})
            pipe.zremrangebyscore(key, "-inf", doc["created"] - INDEX_KEEP)
        await pipe.execute()

    async def _register(self, doc: dict[str, Any], new_turns: list[str], scheduled: bool = False) -> None:
        """Index a new table (unless ``scheduled``: :meth:`start` did both), schedule it, tell the bot."""
        if not scheduled:
            await self._index(doc)
        entries: list[dict[str, Any]] = []
        if doc["chat_id"] is not None:
            start = {
                "kind": "start", **self._where(doc), "lobby_id": doc["lobby_id"], "game": doc["game"],
                "seats": [{k: s[k] for k in ("seat", "user_id", "name", "computer")} for s in doc["seats"]],
                "rated": doc["rated"], "version": doc["version"],
            }
            entries = [start, *self._turn_entries(doc, new_turns)]
        if scheduled:
            await self._outbox(entries)
        else:
            await self._set_due(doc, entries=entries)

    async def get_table(self, table_id: str) -> Table | None:
        """The table (engine state loaded), or ``None`` when unknown or expired (S7)."""
        doc = await self._doc(table_id)
        return self._table(doc) if doc else None

    async def table_version(self, table_id: str) -> int | None:
        """The table's current version (one small read, no state loaded), or ``None`` when gone."""
        raw = await self.redis.hget(self.keys.table(table_id), "version")
        return None if raw is None else int(_s(raw))

    async def _doc(self, table_id: str) -> dict[str, Any] | None:
        raw = await self.redis.hget(self.keys.table(table_id), "doc")
        return json.loads(_s(raw)) if raw else None

    def _table(self, doc: dict[str, Any], state: Any = None) -> Table:
        return Table(
            id=doc["id"], game=doc["game"], chat_id=doc["chat_id"], thread_id=doc["thread_id"],
            lobby_id=doc["lobby_id"], seats=[Seat(**s) for s in doc["seats"]],
            settings=LobbySettings(**doc["settings"]),
            state=state if state is not None else engine.load(doc["state"]),
            version=doc["version"], deadline=doc.get("deadline"), rated=doc["rated"], created=doc["created"],
        )

    async def apply(
        self,
        table_id: str,
        seat: str,
        action: Mapping[str, Any],
        client_action_id: str | None = None,
        expected_version: int | None = None,
        by: str = "player",
        *,
        now: float | None = None,
    ) -> ApplyResult:
        """Apply ``action`` by ``seat`` and commit it exactly once.

        Load → ``engine.apply`` → ``commit.lua`` (compare-and-set on the version, log,
        client_action_id, TTLs, publish) → on a conflict reload and retry. Then the
        next due time, the outbox entries and, for a finished rated game, the ledger.

        ``client_action_id``: a repeat of an id this seat already committed returns that
        first outcome with ``duplicate=True`` and applies nothing (rejected attempts are
        not remembered: their retry is judged afresh; ids are per seat, so another
        seat's action under the same id is judged and committed as usual). ``expected_version``: if given
        and the table is at another version (also when one commits meanwhile),
        ``StoreError("stale")``. ``by``: ``"player"`` (resets the seat's strikes and
        auto play), ``"timer"`` (played for an absent player: a strike, the third in
        a row hands the seat to the computer, S4) or ``"computer"``. ``now``: the
        time of the move (the worker passes its tick's time).

        Once committed, the move is reported as done even if its follow-up fails
        (Redis unreachable a moment later): :meth:`sweep` redoes that follow-up.

        Raises ``engine.Rejected`` (the rules' reason), ``StoreError``: ``not_found``,
        ``stale``, ``invalid`` (unknown ``by``, client_action_id over 200 characters), ``busy``.
        """
        if by not in BYS:
            raise StoreError("invalid", f"by must be one of {BYS}")
        if not isinstance(action, Mapping):
            raise Rejected("bad_action", "an action is an object")
        action = dict(action)
        cid = "" if client_action_id is None else str(client_action_id)
        if len(cid) > 200:
            raise StoreError("invalid", "client_action_id longer than 200 characters")
        # Ids are per seat: another seat's action under the same id is not a retry.
        cid_field = f"{seat}|{cid}" if cid else ""
        for attempt in range(MAX_TRIES):
            pipe = self.redis.pipeline(transaction=False)
            pipe.hget(self.keys.table(table_id), "doc")
            pipe.hget(self.keys.cids(table_id), cid_field or "-")
            raw, first = await pipe.execute()
            if not raw:
                raise StoreError("not_found", f"table {table_id}")
            doc = json.loads(_s(raw))
            if cid and first:
                return self._duplicate(doc, json.loads(_s(first)))
            if expected_version is not None and expected_version != doc["version"]:
                raise StoreError("stale", f"table is at version {doc['version']}")
            state = engine.load(doc["state"])
            outcome = engine.apply(state, seat, action)  # raises Rejected
            t = self.clock() if now is None else now
            new = dict(doc)
            new["seats"] = [self._after_move(s, seat, by) for s in doc["seats"]]
            new_turns = self._plan(new, outcome.state, seat, t)
            new["state"] = engine.dump(outcome.state)
            new["version"] = outcome.state.version
            new["ts"] = t
            over = bool(outcome.state.over)
            if over:
                new["ended"] = t
            entry = {"version": new["version"], "seat": seat, "action": action, "by": by,
                     "events": outcome.events, "ts": t, "cid": cid or None}
            message = {"table": table_id, "version": new["version"], "seat": seat, "by": by,
                       "events": outcome.events, "over": over}
            res = await self._commit(
                keys=[self.keys.table(table_id), self.keys.log(table_id), self.keys.cids(table_id)],
                args=[str(doc["version"]), new["version"], _dumps(new), _dumps(entry), cid_field,
                      _dumps({"version": new["version"], "events": outcome.events}),
                      FINISHED_TTL if over else TABLE_TTL, self.keys.events(table_id), _dumps(message)],
            )
            code = int(res[0])
            if code == 1:
                table = self._table(new, outcome.state)
                try:
                    await self._after_commit(new, outcome.events, new_turns, t)
                except Exception:  # committed: the move stands; Store.sweep redoes the follow-up
                    log.exception("follow-up of table %s version %s failed", table_id, new["version"])
                return ApplyResult(version=new["version"], events=outcome.events, table=table)
            if code == 2:
                return self._duplicate(await self._doc(table_id) or new, json.loads(_s(res[1])))
            if code == -1:
                raise StoreError("not_found", f"table {table_id}")
            if expected_version is not None:
                raise StoreError("stale", f"table moved on to version {int(res[1])}")
            await asyncio.sleep(self._rng.uniform(0, 0.001 * min(attempt, 20)))
        raise StoreError("busy", f"table {table_id}")

    def _duplicate(self, doc: dict[str, Any], first: dict[str, Any]) -> ApplyResult:
        return ApplyResult(version=first["version"], events=first["events"], table=self._table(doc), duplicate=True)

    @staticmethod
    def _after_move(seat: dict[str, Any], actor: str, by: str) -> dict[str, Any]:
        """S4: a player's own move clears strikes and auto; a timeout adds a strike (3 → auto)."""
        if seat["seat"] != actor:
            return seat
        seat = dict(seat)
        if by == "player":
            seat["strikes"], seat["auto"] = 0, False
        elif by == "timer":
            seat["strikes"] += 1
            seat["auto"] = seat["auto"] or seat["strikes"] >= 3
        return seat

    def _plan(self, doc: dict[str, Any], state: Any, actor: str | None, now: float) -> list[str]:
        """Fill ``doc["turns"]``, ``doc["callouts"]``, ``doc["deadline"]`` for ``state``; new human turns.

        ``turns``: ``{seat: {since, due, driven}}`` for every awaited seat. A seat keeps
        its entry while it stays awaited without acting; otherwise its turn starts
        now: due after ``turn_seconds`` for a person (``None``: no timer), after a
        short delay for a computer-driven seat (a computer, or a person in auto).
        ``callouts``: ``{seat: due}`` for computer-driven seats, not awaited, whose
        computer player wants to act now (Penki's callouts). ``deadline``: the
        earliest person's due time (the turn timer shown in the Mini App).
        """
        prev_turns: dict[str, Any] = doc.get("turns") or {}
        prev_callouts: dict[str, float] = doc.get("callouts") or {}
        prev_kinds: dict[str, str] = doc.get("callout_kinds") or {}
        seats = {s["seat"]: s for s in doc["seats"]}
        turn_seconds = doc["settings"].get("turn_seconds")
        turns: dict[str, Any] = {}
        callouts: dict[str, float] = {}
        kinds: dict[str, str] = {}
        new_turns: list[str] = []
        if not state.over:
            for sid in engine.awaiting(state):
                seat = seats[sid]
                driven = bool(seat["computer"] or seat["auto"])
                prev = prev_turns.get(sid)
                if prev is not None and sid != actor and prev["driven"] == driven:
                    turns[sid] = prev
                    continue
                if driven:
                    due = now + self._rng.uniform(*COMPUTER_DELAY)
                else:
                    due = now + turn_seconds if turn_seconds else None
                    if prev is None or sid == actor:
                        new_turns.append(sid)
                turns[sid] = {"since": now, "due": due, "driven": driven}
            for sid, seat in seats.items():
                if sid in turns or not (seat["computer"] or seat["auto"]):
                    continue
                wanted = engine.computer_action(state, sid)
                if wanted is not None:
                    kind = wanted["a"]
                    delay = CALLOUT_DELAY if kind in ("zevok", "how_many") else COMPUTER_DELAY
                    kept = prev_callouts.get(sid) if prev_kinds.get(sid) == kind else None
                    callouts[sid] = kept or now + self._rng.uniform(*delay)
                    kinds[sid] = kind
        doc["turns"] = turns
        doc["callouts"] = callouts
        doc["callout_kinds"] = kinds
        people = [t["due"] for t in turns.values() if not t["driven"] and t["due"] is not None]
        doc["deadline"] = min(people) if people else None
        return new_turns

    @staticmethod
    def _dues(doc: dict[str, Any]) -> list[tuple[float, str]]:
        """``(due, seat)`` of every seat the worker may have to move for, soonest first."""
        out = [(t["due"], sid) for sid, t in (doc.get("turns") or {}).items() if t["due"] is not None]
        out += [(due, sid) for sid, due in (doc.get("callouts") or {}).items()]
        return sorted(out)

    async def _set_due(self, doc: dict[str, Any], over: bool = False,
                       entries: list[dict[str, Any]] | None = None, gone: bool = False) -> None:
        """``schedule.lua``: the outbox ``entries`` of ``doc``'s version and its next due time, at once.

        ``over``: the game ended (nothing due; a tombstone stays for :meth:`sweep`);
        ``gone``: the table no longer exists (forgotten).
        """
        await self._schedule_version(doc["id"], doc["version"], [] if over or gone else self._dues(doc),
                                     "2" if gone else "1" if over else "0", entries)

    async def _schedule_version(self, table_id: str, version: int, dues: list[tuple[float, str]], flag: str,
                                entries: list[dict[str, Any]] | None = None) -> None:
        await self._schedule(
            keys=[self.keys.deadlines, self.keys.deadline_versions, self.keys.outbox],
            args=[table_id, version, repr(dues[0][0]) if dues else "", flag,
                  OUTBOX_MAXLEN, *(_dumps(e) for e in entries or ())],
        )

    async def _after_commit(self, doc: dict[str, Any], events: list[dict[str, Any]],
                            new_turns: list[str], now: float) -> None:
        """Ledger (rated, finished), then the outbox entries and the next due time at once."""
        state_over = "ended" in doc
        if state_over and doc["rated"]:
            try:
                await self._record_table(doc)
            except Exception:  # the game is committed; never fail the move for the ledger
                log.exception("ledger entry for table %s failed", doc["id"])
        await self._set_due(doc, over=state_over, entries=self._commit_entries(doc, events, new_turns))

    def _commit_entries(self, doc: dict[str, Any], events: list[dict[str, Any]],
                        new_turns: list[str]) -> list[dict[str, Any]]:
        """The outbox entries of one commit (``round``, ``end``, ``turn``); none outside a chat."""
        if doc["chat_id"] is None:
            return []
        entries: list[dict[str, Any]] = []
        names = {s["seat"]: s["name"] for s in doc["seats"]}
        for ev in events:
            if ev.get("a") == "round_end":
                entries.append({"kind": "round", **self._where(doc), "game": doc["game"],
                                "version": doc["version"], "names": names,
                                **{k: ev.get(k) for k in ("round", "round_points", "points", "winner")}})
        if "ended" in doc:
            st = doc["state"]
            entries.append({
                "kind": "end", **self._where(doc), "game": doc["game"], "version": doc["version"],
                "places": st.get("places"), "balances": st.get("balances"), "names": names,
                "user_ids": {s["seat"]: s["user_id"] for s in doc["seats"]}, "rated": doc["rated"],
            })
        return entries + self._turn_entries(doc, new_turns)

    @staticmethod
    def _fresh_turns(doc: dict[str, Any]) -> list[str]:
        """People's turns that began with ``doc``'s commit (what :meth:`_plan` returned then)."""
        return [sid for sid, t in (doc.get("turns") or {}).items() if not t["driven"] and t["since"] == doc["ts"]]

    @staticmethod
    def _where(doc: dict[str, Any]) -> dict[str, Any]:
        return {"table": doc["id"], "chat_id": doc["chat_id"], "thread_id": doc["thread_id"]}

    def _turn_entries(self, doc: dict[str, Any], new_turns: list[str]) -> list[dict[str, Any]]:
        seats = {s["seat"]: s for s in doc["seats"]}
        return [
            {"kind": "turn", **self._where(doc), "game": doc["game"], "seat": sid,
             "user_id": seats[sid]["user_id"], "name": seats[sid]["name"], "version": doc["version"],
             "deadline": doc["turns"][sid]["due"]}
            for sid in new_turns
            if seats[sid]["user_id"] is not None and not seats[sid]["computer"]
        ]

    async def log(self, table_id: str, since: int = 0) -> list[dict[str, Any]]:
        """Committed actions after version ``since``: ``{version, seat, action, by, events, ts, cid}``.

        ``StoreError("not_found")`` when the table is unknown or expired.
        """
        raw = await self.redis.lrange(self.keys.log(table_id), max(0, since), -1)
        if not raw and not await self.redis.exists(self.keys.table(table_id)):
            raise StoreError("not_found", f"table {table_id}")
        return [json.loads(_s(r)) for r in raw]

    async def export_case(self, table_id: str) -> dict[str, Any]:
        """The game as a replay case (conformance/FORMAT.md with ``seed``) for ``python -m engine replay``."""
        doc = await self._doc(table_id)
        if doc is None:
            raise StoreError("not_found", f"table {table_id}")
        entries = await self.log(table_id)
        return {
            "title": f"table {table_id}", "game": doc["game"], "players": [s["seat"] for s in doc["seats"]],
            "dealer": doc["dealer"], "seed": doc["seed"],
            "actions": [{"p": e["seat"], **e["action"]} for e in entries],
        }

    async def _tables(self, key: str) -> list[Table]:
        ids = [_s(i) for i in await self.redis.zrevrange(key, 0, 49)]
        out: list[Table] = []
        gone: list[str] = []
        for table_id in ids:
            doc = await self._doc(table_id)
            (out.append(self._table(doc)) if doc else gone.append(table_id))
        if gone:
            await self.redis.zrem(key, *gone)
        return out

    async def chat_tables(self, chat_id: int) -> list[Table]:
        """Tables of a chat still kept (live, or finished within 7 days), newest first."""
        return await self._tables(self.keys.chat_tables(chat_id))

    async def user_tables(self, user_id: int) -> list[Table]:
        """Tables where ``user_id`` has a seat, still kept, newest first."""
        return await self._tables(self.keys.user_tables(user_id))

    # ------------------------------------------------------------- live events
    async def subscribe(self, table_id: str) -> AsyncIterator[dict[str, Any]]:
        """Yield ``{table, version, seat, by, events, over}`` after every commit (pub/sub).

        ``by`` is ``"timer"`` or ``"computer"`` when the move was played for the seat.
        Runs until the consumer stops iterating (or cancels); then unsubscribes.
        """
        pubsub = self.redis.pubsub()
        channel = self.keys.events(table_id)
        await pubsub.subscribe(channel)
        try:
            while True:
                msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if msg is not None and msg.get("type") == "message":
                    yield json.loads(_s(msg["data"]))
        finally:
            try:
                await pubsub.unsubscribe(channel)
            finally:
                await pubsub.aclose()

    # --------------------------------------------------------- worker (S4)
    async def tick(self, now: float | None = None, limit: int = 100) -> int:
        """One pass of the worker: claim due tables and move for them; returns moves made.

        For each claimed table, the soonest due seat moves (``engine.computer_action``):
        ``by="computer"`` for a computer seat or a person in auto, ``by="timer"`` for a
        person whose turn time ran out. At most one move per table per pass; the
        commit schedules the next one. Safe in any number of processes at once.
        """
        now = self.clock() if now is None else now
        token = repr(now + LEASE + self._rng.random() * 1e-3)
        claimed = await self._claim(keys=[self.keys.deadlines], args=[repr(now), token, limit])
        done = await asyncio.gather(*(self._work(_s(t), now, token) for t in claimed), return_exceptions=True)
        for table_id, result in zip(claimed, done, strict=True):
            if isinstance(result, BaseException):  # the lease runs out and a later pass retries
                log.error("worker failed on table %s", _s(table_id), exc_info=result)
        return sum(r for r in done if isinstance(r, int))

    async def _work(self, table_id: str, now: float, token: str) -> int:
        doc = await self._doc(table_id)
        if doc is None or "ended" in doc:
            # Gone: forget it. Ended: nothing more is due; if the final commit's follow-up
            # never ran, the versions hash still says so and the sweeper redoes it.
            await self._release_claim(table_id, token, "", final=doc is None)
            return 0
        state = engine.load(doc["state"])
        seats = {s["seat"]: s for s in doc["seats"]}
        dues = self._dues(doc)
        retry = False
        for due, sid in dues:
            if due > now:
                break
            by = "computer" if seats[sid]["computer"] or seats[sid]["auto"] else "timer"
            action = engine.computer_action(state, sid)
            if by == "timer" and action is not None and action.get("a") in CALLOUTS:
                # the timer moves for an absent person; it never calls out for them (S3)
                legal = engine.legal_actions(state, sid)
                action = legal[0] if legal else None
            if action is None:
                continue
            try:
                await self.apply(table_id, sid, action, expected_version=doc["version"], by=by, now=now)
                return 1
            except StoreError as exc:
                if exc.code != "stale":
                    raise
                return 0  # someone committed meanwhile and scheduled the table afresh
            except Rejected as exc:
                log.warning("table %s: computer move %s for %s refused: %s", table_id, action, sid, exc)
                retry = True
        later = [d for d, _ in dues if d > now]
        if retry:
            later.append(now + RETRY_LATER)
        await self._release_claim(table_id, token, repr(min(later)) if later else "")
        return 0

    async def _release_claim(self, table_id: str, token: str, due: str, final: bool = False) -> None:
        await self._release(keys=[self.keys.deadlines, self.keys.deadline_versions],
                            args=[table_id, token, due, "1" if final else "0"])

    async def run_worker(self, stop_event: asyncio.Event, interval: float = 0.2,
                         sweep_every: float = SWEEP_EVERY) -> None:
        """Run :meth:`tick` until ``stop_event`` is set (S4: timers and computer seats).

        Every ``sweep_every`` seconds one of the running workers also runs :meth:`sweep`.
        """
        next_sweep = 0.0
        while not stop_event.is_set():
            try:
                moves = await self.tick()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + sweep_every
                    await self.sweep(lease=sweep_every)
            except Exception:
                log.exception("worker tick failed")
                moves = 0
            if moves:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_event.wait(), interval)

    async def sweep(self, now: float | None = None, lease: float | None = SWEEP_EVERY,
                    settle: float = SWEEP_SETTLE) -> int:
        """Finish commits whose follow-up never ran (the process died right after committing).

        The versions hash lists every live table with the version its due time was
        computed from (a finished one as a tombstone, ``-<version>``). A live table
        whose stored version is newer, and whose last commit is more than ``settle``
        seconds old, gets its ledger entry (if it ended rated; idempotent), that
        commit's outbox entries (round, end, turn) and its due time now.
        ``schedule.lua`` adds a version's entries once, so a slow original follow-up
        arriving later repeats none. A table that is gone (expired) is forgotten. One
        table failing is logged and skipped. ``lease``: seconds during which other
        processes' sweeps are skipped (``None``: always sweep). Returns the number of
        tables repaired.
        """
        now = self.clock() if now is None else now
        if lease and not await self.redis.set(self.keys.sweep_lock, "1", nx=True, px=int(lease * 1000)):
            return 0
        repaired = 0
        batch: list[tuple[str, int]] = []

        async def flush() -> int:
            pipe = self.redis.pipeline(transaction=False)
            for table_id, known in batch:
                if known < 0:  # a finished table: only whether it is still kept
                    pipe.exists(self.keys.table(table_id))
                else:
                    pipe.hget(self.keys.table(table_id), "doc")
            docs = await pipe.execute()
            fixed = 0
            for (table_id, known), raw in zip(batch, docs, strict=True):
                try:
                    if not raw:
                        await self._schedule_version(table_id, abs(known), [], "2")
                    elif known >= 0 and await self._repair(json.loads(_s(raw)), known, now, settle):
                        fixed += 1
                except Exception:
                    log.exception("sweep: table %s failed", table_id)
            batch.clear()
            return fixed

        async for table_id, version in self.redis.hscan_iter(self.keys.deadline_versions, count=200):
            batch.append((_s(table_id), int(_s(version))))
            if len(batch) >= 200:
                repaired += await flush()
        if batch:
            repaired += await flush()
        return repaired

    async def _repair(self, doc: dict[str, Any], known: int, now: float, settle: float) -> bool:
        """Redo the follow-up of ``doc``'s last commit if it is older than ``settle`` s and never ran."""
        if doc["version"] <= known or now - doc.get("ts", 0) < settle:
            return False
        over = "ended" in doc
        if over and doc["rated"]:
            await self._record_table(doc)
        entries: list[dict[str, Any]] = []
        if doc["chat_id"] is not None:  # the bot's entries of that commit
            v = doc["version"]
            last = await self.redis.lrange(self.keys.log(doc["id"]), v - 1, v - 1)
            events = json.loads(_s(last[0]))["events"] if last else []
            entries = self._commit_entries(doc, events, self._fresh_turns(doc))
        await self._set_due(doc, over=over, entries=entries)
        log.warning("sweep: table %s was left unscheduled at version %s", doc["id"], doc["version"])
        return True

    async def next_due(self, table_id: str) -> float | None:
        """When the worker will next look at the table (epoch s), or ``None``."""
        score = await self.redis.zscore(self.keys.deadlines, table_id)
        return None if score is None else float(score)

    # ---------------------------------------------------------------- presence
    async def heartbeat(self, table_id: str, user_id: int, ttl: int = 30) -> None:
        """Mark ``user_id`` as looking at the table for ``ttl`` seconds."""
        await self.redis.set(self.keys.presence(table_id, user_id), "1", ex=ttl)

    async def is_present(self, table_id: str, user_id: int) -> bool:
        """Whether a heartbeat for the user at this table is still alive."""
        return bool(await self.redis.exists(self.keys.presence(table_id, user_id)))

    # ------------------------------------------------------------------ outbox
    async def _outbox(self, entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        pipe = self.redis.pipeline(transaction=False)
        for entry in entries:
            pipe.xadd(self.keys.outbox, {"data": _dumps(entry)}, maxlen=OUTBOX_MAXLEN, approximate=True)
        await pipe.execute()

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            await self.redis.xgroup_create(self.keys.outbox, OUTBOX_GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def outbox_read(self, consumer: str, count: int = 50, block_ms: int = 1000) -> list[tuple[str, dict]]:
        """Entries for the bot: ``[(id, {kind, table, chat_id, thread_id, ...}), ...]``.

        Kinds: ``start`` (seats, game, lobby_id, rated), ``turn`` (seat, user_id, name,
        deadline — once per turn, people only), ``round`` (round, round_points, points,
        winner, names), ``end`` (places, balances, names, user_ids by seat, rated).
        A consumer group: each entry goes to one consumer; the first call of a
        consumer in this process returns its unacknowledged entries first (after a
        crash). Acknowledge each with :meth:`outbox_ack`. ``block_ms=0``: don't wait.
        """
        try:
            return await self._outbox_read(consumer, count, block_ms)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # The stream or its group was lost (a flushed or restored Redis): make it again.
            self._group_ready = False
            self._pending_done.discard(consumer)
            return await self._outbox_read(consumer, count, block_ms)

    async def _outbox_read(self, consumer: str, count: int, block_ms: int) -> list[tuple[str, dict]]:
        await self._ensure_group()
        if consumer not in self._pending_done:
            self._pending_done.add(consumer)
            got = await self.redis.xreadgroup(OUTBOX_GROUP, consumer, {self.keys.outbox: "0"}, count=count)
            out = self._entries(got)
            if out:
                return out
        got = await self.redis.xreadgroup(
            OUTBOX_GROUP, consumer, {self.keys.outbox: ">"}, count=count, block=block_ms or None
        )
        return self._entries(got)

    @staticmethod
    def _entries(got: Any) -> list[tuple[str, dict]]:
        out: list[tuple[str, dict]] = []
        if isinstance(got, dict):  # RESP3
            got = list(got.items())
        for _stream, items in got or []:
            for entry_id, fields in items:
                if not fields:
                    continue
                data = fields.get("data") or fields.get(b"data")
                out.append((_s(entry_id), json.loads(_s(data))))
        return out

    async def outbox_ack(self, entry_id: str) -> None:
        """Acknowledge an outbox entry (it is not delivered again)."""
        await self.redis.xack(self.keys.outbox, OUTBOX_GROUP, entry_id)

    # ---------------------------------------------------------------- ratings
    async def _record_table(self, doc: dict[str, Any]) -> bool:
        st = doc["state"]
        seats = {s["seat"]: s for s in doc["seats"]}
        balances, places = st.get("balances") or {}, st.get("places") or {}
        return await self.record_match(
            table_id=doc["id"], game=doc["game"], chat_id=doc["chat_id"],
            ended=datetime.fromtimestamp(doc["ended"], tz=UTC),
            balances={seats[sid]["user_id"]: b for sid, b in balances.items()},
            places={seats[sid]["user_id"]: p for sid, p in places.items()},
            names={seats[sid]["user_id"]: seats[sid]["name"] for sid in balances},
        )

    def _match_writes(self, match: dict[str, Any]) -> tuple[list[str], list[str], list[Any]]:
        """Board keys, results keys and per-user ARGV of one ledger entry."""
        game, chat_id = match["game"], match["chat_id"]
        ended = datetime.fromisoformat(match["ended"].replace("Z", "+00:00"))
        week, month = ratings.period_keys(game, ended)
        boards = [self.keys.board(game, None, week), self.keys.board(game, None, month)]
        if chat_id is not None:
            boards += [self.keys.board(game, chat_id, week), self.keys.board(game, chat_id, month)]
        results: list[str] = []
        argv: list[Any] = []
        for uid, balance in match["balances"].items():
            results.append(self.keys.results(game, int(uid)))
            result = {"table": match["table"], "ended": match["ended"], "balance": balance,
                      "place": match["places"].get(uid), "chat_id": chat_id}
            argv += [uid, balance, match["names"].get(uid, ""), _dumps(result)]
        return boards, results, argv

    async def record_match(
        self,
        *,
        table_id: str,
        game: str,
        chat_id: int | None,
        ended: datetime | float,
        balances: Mapping[int, int],
        places: Mapping[int, int] | None = None,
        names: Mapping[int, str] | None = None,
    ) -> bool:
        """Append a rated match to the durable ledger once and fold it into the boards (S6).

        Ledger entry: ``{table, game, chat_id, ended (ISO UTC), balances, places, names}``
        keyed by user id. Boards: ``game`` × (everyone, the chat) × (ISO week, month in
        the game's time zone, P15/R19), each a hash ``"<user>|<table>" → balance``;
        scores come from ``engine.ratings.board`` when read. Called for every finished
        rated game (P16); public for imports and tests. Returns False (and changes
        nothing) when ``table_id`` is already in the ledger.
        """
        when = _utc(ended, self.clock)
        match = {
            "table": table_id, "game": game, "chat_id": chat_id, "ended": _iso(when),
            "balances": {str(u): int(b) for u, b in balances.items()},
            "places": {str(u): int(p) for u, p in (places or {}).items()},
            "names": {str(u): n for u, n in (names or {}).items()},
        }
        boards, results, argv = self._match_writes(match)
        done = await self._record(
            keys=[self.keys.ledger, self.keys.names, *boards, *results],
            args=[table_id, _dumps(match), len(boards), len(results), *argv],
        )
        return bool(int(done))

    async def ledger(self) -> list[dict[str, Any]]:
        """Every rated match in the ledger, oldest first."""
        raw = await self.redis.hgetall(self.keys.ledger)
        return sorted((json.loads(_s(v)) for v in raw.values()), key=lambda m: (m["ended"], m["table"]))

    async def _board_rows(self, game: str, period: str, chat_id: int | None, when: datetime) -> tuple[str, list]:
        if period not in ("week", "month"):
            raise StoreError("invalid", "period is 'week' or 'month'")
        week, month = ratings.period_keys(game, when)
        period_key = week if period == "week" else month
        raw = await self.redis.hgetall(self.keys.board(game, chat_id, period_key))
        rows: dict[str, list[int]] = {}
        for field, balance in raw.items():
            user = _s(field).split("|", 1)[0]
            rows.setdefault(user, []).append(int(_s(balance)))
        return period_key, ratings.board(rows, period)

    async def _named(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        names = await self.redis.hmget(self.keys.names, [r["player"] for r in rows]) if rows else []
        return [
            {"user_id": int(r["player"]), "name": _s(n) or "", "score": r["score"], "matches": r["matches"],
             "rank": r["rank"]}
            for r, n in zip(rows, names, strict=True)
        ]

    async def leaderboard(self, game: str, period: str, chat_id: int | None = None,
                          at: datetime | float | None = None, limit: int | None = 20) -> list[dict[str, Any]]:
        """P15/R19 board for the period holding ``at`` (default now): ``[{user_id, name, score, matches, rank}]``.

        ``period``: ``"week"`` (best 3 balances) or ``"month"`` (best 5); ``chat_id``
        None for everyone. Ranks: score, then matches; ties share (1, 1, 3).
        """
        _, rows = await self._board_rows(game, period, chat_id, _utc(at, self.clock))
        return await self._named(rows[:limit] if limit is not None else rows)

    async def leaderboard_key(self, game: str, period: str, at: datetime | float | None = None) -> str:
        """The period key (``"2026-W49"`` / ``"2026-11"``) of ``at`` in the game's time zone."""
        week, month = ratings.period_keys(game, _utc(at, self.clock))
        return week if period == "week" else month

    async def user_rating(self, game: str, user_id: int, chat_id: int | None = None,
                          at: datetime | float | None = None, last: int = 10) -> dict[str, Any]:
        """``{week: row|None, month: row|None, week_key, month_key, last: [{table, ended, balance, place, chat_id}]}``.

        Rows as in :meth:`leaderboard` (rank among everyone, or in ``chat_id``).
        ``last``: newest first, only that chat's matches when ``chat_id`` is given.
        """
        when = _utc(at, self.clock)
        out: dict[str, Any] = {}
        for period in ("week", "month"):
            key, rows = await self._board_rows(game, period, chat_id, when)
            mine = [r for r in rows if r["player"] == str(user_id)]
            out[period] = (await self._named(mine))[0] if mine else None
            out[f"{period}_key"] = key
        raw = await self.redis.lrange(self.keys.results(game, user_id), 0, RESULTS_KEPT - 1)
        results = sorted((json.loads(_s(r)) for r in raw), key=lambda r: (r["ended"], r["table"]), reverse=True)
        if chat_id is not None:
            results = [r for r in results if r.get("chat_id") == chat_id]
        out["last"] = results[:last]
        return out

    async def rebuild_leaderboards(self) -> int:
        """Recompute every board, results list and name from the ledger; returns the matches folded.

        One MULTI/EXEC replaces the old boards, so readers never see them half built.
        A maintenance command (``python -m store rebuild-leaderboards``).
        """
        matches = await self.ledger()
        boards: dict[str, dict[str, int]] = {}
        results: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for m in matches:  # oldest first: later names win, results end newest first
            board_keys, result_keys, argv = self._match_writes(m)
            for i, key in enumerate(result_keys):  # newest ended first, as user_rating sorts
                uid, balance, name, result = argv[4 * i: 4 * i + 4]
                names[uid] = name
                results.setdefault(key, []).insert(0, result)
                for b in board_keys:
                    boards.setdefault(b, {})[f"{uid}|{m['table']}"] = balance
        old = [k async for k in self.redis.scan_iter(match=self.keys.board_pattern, count=500)]
        old += [k async for k in self.redis.scan_iter(match=self.keys.results_pattern, count=500)]
        pipe = self.redis.pipeline(transaction=True)
        if old:
            pipe.delete(*old)
        for key, fields in boards.items():
            pipe.hset(key, mapping=fields)
        for key, items in results.items():
            pipe.rpush(key, *items[:RESULTS_KEPT])
        if names:
            pipe.hset(self.keys.names, mapping=names)
        await pipe.execute()
        return len(matches)
