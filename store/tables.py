"""Tables and their action log: create, load, apply a move exactly once, export.

A table is a hash ``{version, doc}``. :meth:`Tables.apply` runs the engine on the
document this process already knows (:mod:`store.live`, kept fresh by the commits;
read once otherwise) and commits with ``commit.lua``, which writes only if the
version is unchanged (compare-and-set), appends the log entry, remembers the
client_action_id by version, refreshes the TTLs and publishes the new document with
each seat's ready message — one round trip, the only one before the sockets are
fed. A conflict answers with the current document, so the retry needs no read (or
``stale`` when the caller named the version it expected).

After a commit (not atomically with it, since those keys live in other cluster
slots) come the ledger entry for a finished rated game (``record.lua``,
idempotent on the table id), the compaction of a finished game's log
(``compact.lua``, idempotent), then the outbox entries for the bot together with
the due time (``schedule.lua``: one script in the ``{sched}`` slot, batched with
this process's concurrent commits). If the process dies in between, the sweeper
(:mod:`store.schedule`) finds the table by its stale scheduled version and redoes
the ledger entry, the compaction, the outbox entries of that commit and the due time.
"""

from __future__ import annotations

import asyncio
import base64
import random
import secrets
import zlib
from collections.abc import Mapping
from typing import Any

from redis.exceptions import ClusterError

import engine
from engine.errors import Rejected
from engine.players import Memory
from store.common import (
    BUCKET_WAIT,
    BYS,
    FINISHED_TTL,
    INDEX_KEEP,
    MAX_TRIES,
    OUTBOX_MAXLEN,
    SCHEMA,
    TABLE_TTL,
    StoreBase,
    _dumps,
    _loads,
    _s,
    log,
)
from store.computers import driven, remember, replayed_memory, seat_seed, table_memory
from store.embedded import UNAVAILABLE
from store.live import Known, pack
from store.models import (
    PLAYER_LIMITS,
    ApplyResult,
    LobbySettings,
    Seat,
    StoreError,
    Table,
    TooFast,
)


def _entry(raw: str) -> dict[str, Any]:
    """A log entry from its stored form ``'<compact JSON>\t<events JSON>'`` (compacted: no tab)."""
    head, tab, events = raw.partition("\t")
    entry = _loads(head)
    if tab:
        entry["events"] = _loads(events)
    else:
        entry.setdefault("events", [])  # compacted (or an entry of the old, one-part form)
    return entry


COMPACT = "z1:"  # a compacted log's one entry: this, then base64 of zlib of [[seat, action, by, ts, cid], …]


def _uncompact(blob: str) -> list[dict[str, Any]]:
    """The entries of a compacted log (versions 1…n, no events)."""
    rows = _loads(zlib.decompress(base64.b64decode(blob[len(COMPACT):])))
    return [{"version": i, "seat": seat, "action": action, "by": by, "events": [], "ts": ts, "cid": cid}
            for i, (seat, action, by, ts, cid) in enumerate(rows, 1)]


def _entry_events(raw: str) -> list[dict[str, Any]] | None:
    """The events of a stored log entry, or ``None`` when it was compacted."""
    if raw.startswith(COMPACT):
        return None
    head, tab, events = raw.partition("\t")
    if tab:
        return _loads(events)
    old = _loads(head).get("events")
    return old or None


class Tables(StoreBase):
    """The tables part of :class:`store.Store`."""

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
        computer and no table variant is on (``settings.variants``). Raises
        ``StoreError("invalid")`` for an unknown game, a seat count the game does not
        allow, repeated seat ids or variants at a Penki table.
        """
        _, doc, new_turns = await self._draft_table(
            game=game, seats=seats, chat_id=chat_id, thread_id=thread_id, settings=settings,
            seed=seed, lobby_id=lobby_id,
        )
        await self._register(doc, new_turns)
        return self._table(doc)

    async def _draft_table(
        self, *, game: str, seats: list[Seat], chat_id: int | None, thread_id: int | None,
        settings: LobbySettings | None, seed: int | None, lobby_id: str | None, dealer: str | None = None,
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
        if dealer not in players:  # a "Play again" table names its next dealer
            dealer = random.Random(seed).choice(players)
        settings.check(game)
        options = {"variants": settings.variants} if settings.variants else None  # PV1–PV7
        state = engine.new_game(game, players, dealer=dealer, seed=seed, options=options)
        now = self.clock()
        fresh = [Seat(**s.model_dump(include={"seat", "user_id", "name", "computer", "level"})) for s in seats]
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
            # P16; a table with variants is friendly (RULES.md, Prší table variants)
            "rated": all(not s.computer and s.user_id is not None for s in fresh) and not settings.variants,
            "created": now,
            "ts": now,
        }
        new_turns = self._plan(doc, state, None, now, memory=remember(doc, state, list(state.last)))
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
                "seats": [{k: s.get(k) for k in ("seat", "user_id", "name", "computer", "level")} for s in doc["seats"]],
                "rated": doc["rated"], "version": doc["version"],
                "variants": doc["settings"].get("variants", []),
            }
            entries = [start, *self._turn_entries(doc, new_turns)]
        if scheduled:
            await self._outbox(entries)
        else:
            await self._set_due(doc, entries=entries)

    async def get_table(self, table_id: str) -> Table | None:
        """The table (engine state loaded) read from Redis, or ``None`` when unknown or expired (S7).

        (The web app asks :meth:`store.live.Live.current` instead: the version this
        process knows, kept fresh by the commits, without a read.)
        """
        doc = await self._doc(table_id)
        return self._table(doc) if doc else None

    async def current(self, table_id: str) -> Known | None:
        """The table as this process knows it (:meth:`store.live.Live.current`): read once, then
        kept fresh by the commits' pub/sub; ``None`` when unknown or expired."""
        return await self.live.current(table_id)

    async def watch(self, table_id: str, listener: Any) -> Known | None:
        """Feed ``listener`` every version after the returned one (:meth:`store.live.Live.watch`)."""
        return await self.live.watch(table_id, listener)

    def unwatch(self, table_id: str, listener: Any) -> None:
        """Stop feeding ``listener`` (:meth:`store.live.Live.unwatch`)."""
        self.live.unwatch(table_id, listener)

    async def table_version(self, table_id: str) -> int | None:
        """The table's current version (one small read, no state loaded), or ``None`` when gone."""
        raw = await self.redis.hget(self.keys.table(table_id), "version")
        return None if raw is None else int(_s(raw))

    async def _doc(self, table_id: str) -> dict[str, Any] | None:
        raw = await self.redis.hget(self.keys.table(table_id), "doc")
        return _loads(_s(raw)) if raw else None

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
        known: Known | None = None,
        limit: tuple[int, float, int] | None = None,
        leave: bool = False,
    ) -> ApplyResult:
        """Apply ``action`` by ``seat`` and commit it exactly once.

        The move's path is one straight line: the engine on the known document (``known``,
        else the one this process keeps fresh, :meth:`store.live.Live.peek`, else one read)
        → ``commit.lua`` (compare-and-set on the version, log, client_action_id, TTLs and
        the publish of the new document: one round trip) → this process's listeners at
        once, other processes' from the publish → the follow-up (ledger of a finished
        rated game, then outbox entries and next due time, batched: :mod:`store.schedule`).
        A conflict answers with the current document, so a retry needs no reload.

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

        ``leave``: the seat's person leaves the table with this move (:meth:`leave_table`): the
        seat is marked ``left`` and ``auto`` for the rest of the game.

        ``limit``: ``(user_id, rate, burst)``, a token of the user's action bucket
        (:meth:`store.limits.Limits.take_action`) is taken for this call, whatever its
        outcome; an empty bucket raises :class:`store.models.TooFast` and applies nothing.
        On a single Redis the bucket, the commit and its follow-up are one ``move.lua``
        call: a move is **one round trip** (a game's last move excepted: its ledger and
        compaction come first, then the follow-up). On a Redis Cluster the three are
        separate calls (their keys are in different slots), the bucket's first.

        Raises ``engine.Rejected`` (the rules' reason), ``StoreError``: ``not_found``,
        ``left`` (a player's own move for a seat its person left), ``stale``, ``invalid`` (unknown ``by``, client_action_id over 200 characters), ``busy``,
        ``too_fast`` (:class:`store.models.TooFast`, with ``limit``).
        """
        bucket: list[Any] | None = None
        if limit is not None:
            user_id, rate, burst = limit
            bucket = [self.keys.action_bucket(user_id), repr(self.clock()), repr(float(rate)), int(burst)]
            if not self.fused:
                await self._take_token(bucket)
                bucket = None
        pending = [bucket]  # the token still to take: with the commit (move.lua), or below
        try:
            return await self._apply(table_id, seat, action, client_action_id, expected_version, by,
                                     now=now, known=known, pending=pending, leave=leave)
        except (Rejected, StoreError) as e:
            if pending[0] is not None and not isinstance(e, TooFast):
                await self._take_token(pending[0])  # refused before the commit: it still costs a token
            raise

    async def _take_token(self, bucket: list[Any]) -> None:
        """``bucket.lua`` alone: ``bucket`` is ``[key, now, rate, burst]``; raises ``TooFast`` when empty.

        A call of its own (a Redis Cluster: the bucket's key is on its own slot, maybe another
        primary than the table's): when the bucket's node does not answer within
        :data:`~store.common.BUCKET_WAIT` s (dead, or failing over), the move goes on without
        the token — fails open, as the request limits do, within the bound the service's
        per-process buckets still set (``webapp.ratelimit``) — so one dead primary never
        refuses moves on tables whose own primary is healthy. Counted in ``buckets_skipped``."""
        try:
            async with asyncio.timeout(BUCKET_WAIT):
                wait = float(await self._bucket(keys=bucket[:1], args=bucket[1:]))
        except (TimeoutError, ClusterError, *UNAVAILABLE) as e:  # ClusterError: CLUSTERDOWN, no slot owner
            self.buckets_skipped = getattr(self, "buckets_skipped", 0) + 1
            log.warning("action bucket %s not taken (its node did not answer: %s); the move goes on",
                        bucket[0], type(e).__name__)
            return
        if wait > 0:
            raise TooFast(wait)

    async def _apply(self, table_id: str, seat: str, action: Mapping[str, Any], client_action_id: str | None,
                     expected_version: int | None, by: str, *, now: float | None, known: Known | None,
                     pending: list[Any], leave: bool = False) -> ApplyResult:
        """:meth:`apply` itself; ``pending[0]``: the bucket's token still to take (set to None once taken)."""
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
        if known is None or known.doc["id"] != table_id:
            known = self.live.peek(table_id)
        fresh = False  # whether `known` was just read from Redis (not from this process's memory)
        if known is None:
            known, fresh = await self._read_known(table_id), True
        for attempt in range(MAX_TRIES):
            doc = known.doc
            if expected_version is not None and expected_version != doc["version"]:
                if expected_version > doc["version"] and not fresh:  # this process is behind
                    known, fresh = await self._read_known(table_id), True
                    continue
                if cid:  # a retry of a committed move is a duplicate, not stale
                    first = await self.redis.hget(self.keys.cids(table_id), cid_field)
                    if first:
                        return await self._duplicate(table_id, known, _s(first))
                raise StoreError("stale", f"table is at version {doc['version']}")
            if "abandoned" in doc:  # ended by the operator, unrated (store.operate.end_table)
                raise Rejected("game_over", "the table was ended")
            if by == "player" and any(s["seat"] == seat and s.get("left") for s in doc["seats"]):
                raise StoreError("left", "you left this table: the computer plays your seat")
            try:
                outcome = engine.apply(known.state, seat, action)
            except Rejected:
                # Judged on the version known here: a retry of a committed id, or a version
                # this process has not seen yet, must not be refused for that.
                if fresh and not cid:
                    raise
                pipe = self.redis.pipeline(transaction=False)
                pipe.hget(self.keys.table(table_id), "version")
                pipe.hget(self.keys.cids(table_id), cid_field or "-")
                version, first = await pipe.execute()
                if version is None:
                    raise StoreError("not_found", f"table {table_id}") from None
                if cid and first:
                    return await self._duplicate(table_id, known, _s(first))
                if cid and "ended" in doc:  # a finished game's ids are in its compacted log
                    found = await self._compacted_cid(table_id, seat, cid)
                    if found is not None:
                        return self._duplicate_result(known, str(found), None)
                if int(_s(version)) == doc["version"]:
                    raise
                known, fresh = await self._read_known(table_id), True
                continue
            t = self.clock() if now is None else now
            new = dict(doc)
            new["seats"] = [self._after_move(s, seat, by, leave) for s in doc["seats"]]
            if "memory" not in doc and driven(new):  # a seat just went to auto: the memory from the deal on
                new["memory"] = replayed_memory(doc, await self.log(table_id, since=0))
            new_turns = self._plan(new, outcome.state, seat, t, self._hold(outcome.state, outcome.events),
                                   remember(new, known.state, outcome.events))
            new["state"] = engine.dump(outcome.state)
            new["version"] = outcome.state.version
            new["ts"] = t
            new["move"] = {"seat": seat, "by": by, "events": outcome.events}
            over = bool(outcome.state.over)
            if over:
                new["ended"] = t
                unplayed = self._unplayed(new)
                if unplayed and new["rated"]:  # P16 amended: a seat nobody played → unrated for all
                    new["rated"] = False
                    new["unplayed"] = unplayed
            entry = {"version": new["version"], "seat": seat, "action": action, "by": by,
                     "ts": round(t, 3), "cid": cid or None}
            done = Known(new, outcome.state)
            texts = self.live.render(done, outcome.events, by) if self.live.render is not None else None
            doc_text = _dumps(new)
            head, tail = pack(new["version"], doc_text, texts)
            keys = [self.keys.table(table_id), self.keys.log(table_id), self.keys.cids(table_id),
                    self.keys.watchers(table_id)]
            args = [str(doc["version"]), new["version"], doc_text, f"{_dumps(entry)}\t{_dumps(outcome.events)}",
                    cid_field, FINISHED_TTL if over else TABLE_TTL, self.keys.events(table_id), "1" if over else "0",
                    head, tail, self.live.publish, self.live.id]
            fused = self.fused and not over  # the follow-up inside the commit's call (move.lua)
            dues: list[tuple[float, str]] = []
            self.live.expect(table_id, new["version"])
            try:
                bucket = pending[0]
                if fused:
                    dues = self._dues(new)
                    followup = self._followup(table_id, new["version"], dues, "0",
                                              self._commit_entries(new, outcome.events, new_turns))
                    token = bucket[1:] if bucket else []
                    res = await self._move(
                        keys=[*keys, bucket[0] if bucket else keys[0], *self._sched_keys(self._shard(table_id))],
                        args=[len(args), len(token), *args, *token, OUTBOX_MAXLEN, *followup],
                    )
                    pending[0] = None
                else:
                    if bucket is not None:
                        await self._take_token(bucket)
                        pending[0] = None
                    res = await self._commit(keys=keys, args=args)
            except BaseException:
                self.live.abandon(table_id)
                raise
            code = int(res[0])
            if code == 3:
                self.live.abandon(table_id)
                raise TooFast(float(res[1]))
            if code != 1:
                current = Known.parse(res[2 if code == 0 else 3]) if code in (0, 2) and res[-1] else None
                self.live.abandon(table_id, current)
            if code == 1:
                self.live.committed(done, texts)  # this process's sockets, at once
                if fused and dues:  # the follow-up was in the call: wake this worker on time (issue 24)
                    self._note_due(dues[0][0])
                if not fused:
                    try:
                        await self._after_commit(new, outcome.events, new_turns, t)
                    except Exception:  # committed: the move stands; Store.sweep redoes the follow-up
                        log.exception("follow-up of table %s version %s failed", table_id, new["version"])
                return ApplyResult(version=new["version"], events=outcome.events, known=done)
            if code == 2:
                return self._duplicate_result(current or known, _s(res[1]), res[2])
            if code == -1:
                raise StoreError("not_found", f"table {table_id}")
            if expected_version is not None:
                raise StoreError("stale", f"table moved on to version {int(res[1])}")
            known, fresh = current, True  # the conflict answered with the current document
            if attempt:
                await asyncio.sleep(self._rng.uniform(0, 0.001 * min(attempt, 20)))
        raise StoreError("busy", f"table {table_id}")

    async def leave_table(self, table_id: str, user_id: int, *, now: float | None = None) -> Table:
        """``user_id`` leaves ``table_id`` for good: the computer plays their seat to the end of the
        game (S4's auto, at the regular level), so the game finishes by itself → the table after it.

        The seat's own awaited action is committed at once, chosen by the regular computer from
        the seat's view and the table's public memory (replayed from the deal when the table had
        none, :func:`store.computers.replayed_memory`), with ``by="computer"``; the same commit marks
        the seat ``left`` and ``auto``, so the worker moves for it from then on, and a player's own
        move for it is refused (``StoreError("left")``). A rated table stays rated: the result
        counts for the seat as S4's auto does (P16: a seat that never moved by itself still makes
        the match unrated for all). Idempotent: a seat already left returns the table unchanged.

        Raises ``StoreError``: ``not_found`` (unknown or expired), ``not_seated`` (no person's seat
        of ``user_id`` there), ``over`` (the game has ended), ``not_your_turn`` (the game waits for
        someone else: leave on your turn), ``busy``.
        """
        known = self.live.peek(table_id) or await self._read_known(table_id)
        for _ in range(MAX_TRIES):
            doc = known.doc
            seat = next((s for s in doc["seats"] if s["user_id"] == user_id and not s["computer"]), None)
            if seat is None:
                raise StoreError("not_seated", "you have no seat at this table")
            if seat.get("left"):
                return known.table
            if "ended" in doc:
                raise StoreError("over", "the game has ended")
            sid = seat["seat"]
            if sid not in engine.awaiting(known.state):
                raise StoreError("not_your_turn", "the game waits for another player: leave on your turn")
            memory = (table_memory(doc, known.state) if "memory" in doc
                      else Memory.from_dict(replayed_memory(doc, await self.log(table_id, since=0))))
            decision = await self.brains.decide(engine.view(known.state, sid), memory, "regular",
                                                seat_seed(doc, sid))
            if decision is None:  # pragma: no cover - an awaited seat always has an action
                raise StoreError("busy", "no action for the seat")
            try:
                return (await self.apply(table_id, sid, decision.action, expected_version=doc["version"],
                                         by="computer", now=now, known=known, leave=True)).table
            except StoreError as e:
                if e.code != "stale":
                    raise
            known = await self._read_known(table_id)
        raise StoreError("busy", f"table {table_id}")

    async def _read_known(self, table_id: str) -> Known:
        raw = await self.redis.hget(self.keys.table(table_id), "doc")
        if not raw:
            raise StoreError("not_found", f"table {table_id}")
        return Known.parse(raw)

    async def _duplicate(self, table_id: str, known: Known, first: str) -> ApplyResult:
        """The first outcome of an already committed client_action_id (cids value ``first``)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.keys.table(table_id), "doc")
        if first.isdigit():
            pipe.lindex(self.keys.log(table_id), int(first) - 1)
        raw, *entry = await pipe.execute()
        return self._duplicate_result(Known.parse(raw) if raw else known, first, entry[0] if entry else None)

    @staticmethod
    def _duplicate_result(current: Known, first: str, entry: Any) -> ApplyResult:
        """``ApplyResult(duplicate=True)`` from a cids value (a version; before: the outcome
        JSON) and that version's log entry (``None`` or compacted: events from the document
        when it is that version, else none)."""
        if not first.isdigit():  # written before ids were remembered by version
            old = _loads(first)
            return ApplyResult(version=old["version"], events=old["events"], known=current, duplicate=True)
        version = int(first)
        events = _entry_events(_s(entry)) if entry else None
        if events is None:
            events = (current.move.get("events") or []) if current.version == version else []
        return ApplyResult(version=version, events=events, known=current, duplicate=True)

    @staticmethod
    def _after_move(seat: dict[str, Any], actor: str, by: str, leave: bool = False) -> dict[str, Any]:
        """S4: a player's own move clears strikes and auto; a timeout adds a strike (3 → auto);
        ``leave`` (:meth:`leave_table`): the seat is ``left`` and ``auto`` for good."""
        if seat["seat"] != actor:
            return seat
        seat = dict(seat)
        if leave:
            seat["auto"], seat["left"] = True, True
        elif by == "player":
            seat["strikes"], seat["auto"], seat["played"] = 0, False, True
        elif by == "timer":
            seat["strikes"] += 1
            seat["auto"] = seat["auto"] or seat["strikes"] >= 3
        return seat

    @staticmethod
    def _unplayed(doc: dict[str, Any]) -> list[str]:
        """P16 (amended): people's seats that never made a move of their own (every move was
        the timer's or the computer's). Seats of tables from before ``played`` was kept count
        as played."""
        return [s["seat"] for s in doc["seats"]
                if not s.get("computer") and s.get("user_id") is not None and not s.get("played", True)]

    async def _after_commit(self, doc: dict[str, Any], events: list[dict[str, Any]],
                            new_turns: list[str], now: float) -> None:
        """Ledger (rated, finished), then the outbox entries and the next due time at once."""
        state_over = "ended" in doc
        if state_over and doc["rated"]:
            try:
                await self._record_table(doc)
            except Exception:  # the game is committed; never fail the move for the ledger
                log.exception("ledger entry for table %s failed", doc["id"])
        if state_over:
            try:
                await self._compact(doc)
            except Exception:  # kept uncompacted: the sweeper tries again
                log.exception("compacting the log of table %s failed", doc["id"])
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
                "unplayed": doc.get("unplayed") or [],
                "variants": doc["settings"].get("variants", []),
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

        A finished table's log is compact (:meth:`_compact`): its entries' ``events`` are
        ``[]`` (the engine derives them again from the seed, e.g. ``export_case``).
        ``StoreError("not_found")`` when the table is unknown or expired.
        """
        key = self.keys.log(table_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.lindex(key, 0)
        pipe.lrange(key, max(0, since), -1)
        first, raw = await pipe.execute()
        if first is not None and _s(first).startswith(COMPACT):
            return [e for e in _uncompact(_s(first)) if e["version"] > since]
        if not raw and not await self.redis.exists(self.keys.table(table_id)):
            raise StoreError("not_found", f"table {table_id}")
        return [_entry(_s(r)) for r in raw]

    async def _compact(self, doc: dict[str, Any]) -> bool:
        """A finished game's log and client_action_ids become one compressed entry
        (``compact.lua``, idempotent): every action, who, when, by whom and under which id
        stays; the events go (the engine derives them again from the seed). True if done now."""
        table_id, version = doc["id"], doc["version"]
        raw = await self.redis.lrange(self.keys.log(table_id), 0, -1)
        if len(raw) != version or not raw or _s(raw[0]).startswith(COMPACT):
            return False
        rows = [[e["seat"], e["action"], e["by"], e["ts"], e["cid"]] for e in (_entry(_s(r)) for r in raw)]
        blob = COMPACT + base64.b64encode(zlib.compress(_dumps(rows).encode(), 9)).decode()
        done = await self._compact_log(
            keys=[self.keys.table(table_id), self.keys.log(table_id), self.keys.cids(table_id)],
            args=[version, blob],
        )
        return bool(int(done))

    async def _compacted_cid(self, table_id: str, seat: str, cid: str) -> int | None:
        """The version ``seat`` committed under ``cid`` in a compacted log, or None."""
        first = await self.redis.lindex(self.keys.log(table_id), 0)
        if first is None or not _s(first).startswith(COMPACT):
            return None
        return next((e["version"] for e in _uncompact(_s(first)) if e["seat"] == seat and e["cid"] == cid), None)

    async def export_case(self, table_id: str) -> dict[str, Any]:
        """The game as a replay case (conformance/FORMAT.md with ``seed``) for ``python -m engine replay``."""
        doc = await self._doc(table_id)
        if doc is None:
            raise StoreError("not_found", f"table {table_id}")
        entries = await self.log(table_id)
        case = {
            "title": f"table {table_id}", "game": doc["game"], "players": [s["seat"] for s in doc["seats"]],
            "dealer": doc["dealer"], "seed": doc["seed"],
            "actions": [{"p": e["seat"], **e["action"]} for e in entries],
        }
        variants = doc["settings"].get("variants") or []
        if variants:  # FORMAT.md options.variants (RULES.md PV8)
            case["options"] = {"variants": list(variants)}
        return case

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
