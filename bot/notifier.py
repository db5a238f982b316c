"""The notifier (S5): reads ``store.outbox_read`` and tells the chats and the players.

Entries (docs/CONTRACTS.md §2, ``store.outbox_read``), all with ``table``,
``chat_id``, ``thread_id``:

* ``start`` (``seats``, ``game``, ``lobby_id``, ``rated``) → "the game begins" in the
  chat (its forum topic) with the Open button;
* ``turn`` (``seat``, ``user_id``, ``version``, ``deadline``) → the player's one live
  "your turn" message (:mod:`bot.turns`), listing every table that waits for them, with
  buttons back to them — sent only when the player has no open Mini App
  (``store.is_present``), is reachable, the table still awaits that seat *at the moment
  of sending* (an entry handled late, after the move was made or the timer played,
  sends nothing), and only once per (table, seat, version). Every entry of a table
  also brings its other players' live messages up to date: a turn that passed leaves
  the list, and the message reads "done" once nothing waits;
* ``round`` (``round``, ``round_points``, ``points``, ``winner``, ``names``) → Prší round
  result in the chat;
* ``end`` (``places``, ``balances``, ``names``, ``rated``) → the final table in the chat,
  with "Play again" / "Not this time" (issue 15);
* ``lobby`` (``lobby_id``) → a "Play again" lobby changed: its lobby message is posted
  once into the chat, then edited (:class:`bot.lobbies.LobbyMessages`).

Chat posts go into the table's forum topic; when Telegram answers that the topic is
closed or deleted, the post goes to the chat's general thread with a note saying where
the table went, and the table's later posts go there directly (remembered per table).

The notifier runs apart from moves: a failed send never loses, blocks or repeats a
move. A chat entry redelivered after a crash (sent, not yet acknowledged) is not
posted twice: each ``(kind, table, version, round)`` is marked once it was sent (a
crash between sending and marking repeats a post rather than lose one; a "your
turn" is marked before sending, so it is never sent twice). Each entry is
acknowledged after it was handled (also when handling failed,
after logging — a poison entry must not stall the queue); while the storage is
unavailable (Redis down or restarting), the entry and its acknowledgement are tried
again until it answers, so an outage loses no notification. Entries of one chat (or,
for ``turn``, one user) are handled in order by that lane's task; lanes run
concurrently, so one slow chat delays no other. What a batch of entries needs from the store is read in one round trip
(``store.notice_hints``): for each ``turn`` whose lane is idle, whether the player
is looking at the table, and for them and the table's other players their live
turn message. A player without a live message listing a table needs no refresh, so
a move at a table whose people all have the Mini App open costs the notifier that
one read and its share of the next outbox read, which also acknowledges every entry
handled since (``XACK`` and ``XREADGROUP`` in one round trip on one Redis; on a
cluster's sharded outbox the acknowledgements are one call before the read; an entry is thus
acknowledged up to one read, about a second, after it was handled, and a crash in
between delivers it again, which sends nothing twice, as above); a user's language
is looked up only when a message is written. Chat texts use the language of the
chat's language when its admins set one (``/lang`` in the group), else that of the table's
first person (``store.User.language``); private ones the recipient's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from types import SimpleNamespace
from typing import Any

from aiogram import Bot
from aiogram.utils.i18n import I18n

from bot import keyboards, metrics, texts
from bot.i18n import DEFAULT, locale_scope
from bot.middlewares import SeenIds
from bot.sender import Sender
from bot.settings import BotSettings
from bot.turns import TurnNotices
from store import UNAVAILABLE

log = logging.getLogger(__name__)
MAX_QUEUED = 1000  # entries read but not yet handled, before reading pauses
MERGE_MAX = 6  # round results in one post of a busy chat
LANE_IDLE = 30.0  # seconds a lane's task waits for more before it ends
NOTICE_CHECK = 20.0  # seconds after which a live turn message is checked again


def _lists(notice: dict[str, Any] | None) -> bool:
    """Whether a live turn notice lists tables (one that does not, or "done", never changes on a refresh)."""
    return bool(notice and notice.get("tables"))


class Notifier:
    """Consumes the outbox as consumer ``consumer`` of the store's consumer group."""

    RETRY_FIRST = 0.5  # seconds before an entry is tried again while the storage is unavailable
    RETRY_MAX = 5.0  # the longest such pause

    def __init__(self, bot: Bot, store: Any, sender: Sender, i18n: I18n, settings: BotSettings,
                 *, consumer: str = "bot") -> None:
        self.bot = bot
        self.store = store
        self.sender = sender
        self.i18n = i18n
        self.settings = settings
        self.consumer = consumer
        self.turns = SeenIds(store, "turn", ttl=3 * 86400)
        self.posts = SeenIds(store, "post", ttl=3 * 86400)
        self.topics = SeenIds(store, "topic_lost", ttl=7 * 86400)  # tables/lobbies whose topic is gone
        self.notices = TurnNotices(bot, store, sender, i18n, settings)
        self._seated: dict[str, list[int]] = {}
        self._swept = 0.0
        self.handled = 0
        self.queued = 0
        self._lanes: dict[Any, asyncio.Queue[tuple[str, dict[str, Any]]]] = {}
        self._workers: dict[Any, asyncio.Task[None]] = {}
        self._busy: set[Any] = set()  # lanes handling an entry right now
        self._acks: list[str] = []  # handled entries not acknowledged yet (sent with the next read)
        self.lobbies: Any = None  # bot.lobbies.LobbyMessages, set by the runtime ("Play again" lobbies)
        self.clock = time.monotonic  # for the sweeps of live turn messages
        self.merged = 0  # round results posted inside another one's post (a busy chat)
        self.skipped = 0  # refreshes left to a later entry of the same player

    async def run(self, stop: asyncio.Event) -> None:
        """Loop until ``stop`` is set: read a batch, handle it, acknowledge each entry.

        A failing read (Redis down) is retried with a growing pause (1 s … 30 s); only
        the first failure in a row is logged with its traceback.
        """
        failures = 0
        while not stop.is_set():
            try:
                await self.poll(block_ms=1000, wait=False)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                pause = min(30.0, 0.5 * 2**failures)
                if failures == 1:
                    log.exception("outbox read failed; retrying in %.0f s", pause)
                else:
                    log.warning("outbox read failed again (%s: %s); retrying in %.0f s",
                                type(exc).__name__, exc, pause)
                await asyncio.sleep(pause)

    async def poll(self, block_ms: int = 0, count: int = 50, *, wait: bool = True) -> int:
        """Read one batch and queue each entry on its lane; returns how many were read.

        A lane is a chat (``start``/``round``/``end``) or a user (``turn``): entries of
        one lane are handled in order by the lane's own task, lanes run concurrently,
        so a chat that is waiting out a long ``retry_after`` holds up nobody else.
        ``wait``: return only once this batch is handled (tests); :meth:`run` doesn't
        wait, but pauses reading while more than ``MAX_QUEUED`` entries are queued.
        """
        while self.queued > MAX_QUEUED:
            await asyncio.sleep(0.1)
        acks, self._acks = self._acks, []  # handled since the last read: acknowledged with this one
        try:
            entries = await self.store.outbox_read(self.consumer, count=count, block_ms=block_ms, ack=acks)
        except BaseException:
            self._acks[:0] = acks  # not acknowledged: the next read (or close) tries again
            raise
        # What each entry's other players need (refreshes of their live messages), and what
        # the store says of those on idle lanes, read for the whole batch in one round trip.
        others = [await self._others(entry) for _, entry in entries]
        turns, users = [], []
        for (_, entry), people in zip(entries, others, strict=True):
            users += [u for u in people if self._idle(("u", u))]
            if entry.get("kind") == "turn" and entry.get("user_id") and entry.get("table") \
                    and self._idle(("u", entry["user_id"])):
                turns.append((entry["table"], entry["user_id"]))
                users.append(entry["user_id"])
        present: dict[tuple[str, int], bool] = {}
        notices: dict[int, Any] = {}
        if turns or users:
            try:
                present, notices = await self.store.notice_hints(turns, users)
            except Exception:  # each entry asks again when handled
                log.warning("outbox: the batch's presence and notices unreadable", exc_info=True)
        lanes = set()
        for (entry_id, entry), people in zip(entries, others, strict=True):
            key = ("u", entry.get("user_id")) if entry.get("kind") == "turn" else ("c", entry.get("chat_id"))
            if key[0] == "u" and (entry.get("table"), entry.get("user_id")) in present and self._idle(key):
                # (idle still: nothing of this batch queued before it that could change the notice)
                uid = entry["user_id"]
                if present[(entry["table"], uid)] and self.notices.settled(uid, notices.get(uid)):
                    # The player has the table open and no live message to edit: handling the
                    # entry (turn → refresh) would do nothing more than settled() just did.
                    self._ack(entry_id)
                    entry_id = None
                else:
                    entry = {**entry, "_hint": {"present": present[(entry["table"], uid)],
                                                "notice": notices.get(uid)}}
            if entry_id is not None:
                self._lane(key).put_nowait((entry_id, entry))
                self.queued += 1
                lanes.add(key)
            for user_id in people:
                if user_id in notices and not _lists(notices[user_id]):
                    continue  # an idle lane, and no live message listing a table: nothing to edit
                lanes.add(self._refresh(user_id))
        self._sweep_notices()
        if wait:
            await asyncio.gather(*(self._lanes[key].join() for key in lanes if key in self._lanes))
            await self._flush_acks()
        return len(entries)

    def _idle(self, key: Any) -> bool:
        """Nothing queued or running on lane ``key``: what is read now is what it will act on."""
        queue = self._lanes.get(key)
        return key not in self._busy and (queue is None or queue.empty())

    async def _others(self, entry: dict[str, Any]) -> list[int]:
        """The people whose live turn messages an entry may change: everyone seated at its
        table but the one a ``turn`` is for (none for entries that are not about a table)."""
        table_id = entry.get("table")
        if not table_id or entry.get("kind") not in ("turn", "start", "round", "end"):
            return []
        people = await self._people(entry)
        if entry.get("kind") == "turn":
            return [u for u in people if u != entry.get("user_id")]
        return people

    def _refresh(self, user_id: int) -> Any:
        key = ("u", user_id)
        self._lane(key).put_nowait((None, {"kind": "refresh", "user_id": user_id}))
        self.queued += 1
        return key

    async def _people(self, entry: dict[str, Any]) -> list[int]:
        """The people seated at the entry's table (from the entry, else the table, cached)."""
        table_id = entry["table"]
        known = self._seated.get(table_id)
        if known is None:
            ids = [s.get("user_id") for s in entry.get("seats") or () if not s.get("computer")]
            ids += list((entry.get("user_ids") or {}).values())
            if not ids:
                try:
                    table = await self.store.get_table(table_id)
                except Exception:
                    log.exception("get_table %s", table_id)
                    table = None
                ids = [s.user_id for s in table.seats if not s.computer] if table is not None else []
            known = self._seated[table_id] = sorted({int(i) for i in ids if i})
            if len(self._seated) > 10_000:
                self._seated.pop(next(iter(self._seated)))
        return known

    def _sweep_notices(self) -> None:
        """Live turn messages not checked for ``NOTICE_CHECK`` seconds are checked again (a turn
        can pass without an outbox entry: the computer moving for the next seat)."""
        now = self.clock()
        if now - self._swept < NOTICE_CHECK / 2:
            return
        self._swept = now
        for user_id, checked in list(self.notices.live.items()):
            if now - checked >= NOTICE_CHECK and ("u", user_id) not in self._lanes:
                self.notices.live[user_id] = now
                self._refresh(user_id)

    def _lane(self, key: Any) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        queue = self._lanes.get(key)
        if queue is None:
            queue = self._lanes[key] = asyncio.Queue()
            self._workers[key] = asyncio.create_task(self._work(key, queue), name=f"notify-{key}")
        return queue

    async def _work(self, key: Any, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        """Handle a lane's entries in order, acknowledging each; ends after 30 s idle."""
        while True:
            try:
                async with asyncio.timeout(LANE_IDLE):  # (wait_for would make a task per entry)
                    entry_id, entry = await queue.get()
            except TimeoutError:
                if queue.empty():  # no await between this check and the removal
                    self._lanes.pop(key, None)
                    self._workers.pop(key, None)
                    return
                continue
            if entry.get("kind") == "refresh" and not queue.empty():
                # a later entry of this player's lane brings their live message up to date anyway
                self.skipped += 1
                queue.task_done()
                self.queued -= 1
                continue
            merged = self._merge_rounds(entry, queue)
            self._busy.add(key)
            cancelled = False
            try:
                if merged:
                    await self._stored(self.round_posts, [entry, *(e for _, e in merged)],
                                       what=f"notification {entry_id} and {len(merged)} merged")
                else:
                    await self._stored(self.handle, entry if entry_id is None else {**entry, "_id": entry_id},
                                       what=f"notification {entry_id}")
                metrics.handled(entry)
                for _, other in merged or ():
                    metrics.handled(other)
            except asyncio.CancelledError:
                cancelled = True  # stopped before it was handled: not acknowledged, delivered again
                raise
            except Exception:
                log.exception("notification %s failed: %r", entry_id, {k: v for k, v in entry.items() if k != "_hint"})
            finally:
                self._busy.discard(key)
                for ident in (entry_id, *(i for i, _ in merged)):
                    if ident is not None and not cancelled:  # an outbox entry, not a refresh
                        self._ack(ident)
                for _ in range(1 + len(merged)):
                    queue.task_done()
                    self.queued -= 1

    def _merge_rounds(self, entry: dict[str, Any], queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> list[Any]:
        """A busy chat: the Prší round results queued right behind ``entry`` (a round result) for
        the same chat and topic, taken off the lane to go in one post with it (at most
        ``MERGE_MAX``); [] when nothing waits behind it, the usual case."""
        if entry.get("kind") != "round":
            return []
        merged: list[Any] = []
        waiting = queue._queue  # type: ignore[attr-defined]  (asyncio.Queue's deque, oldest first)
        while waiting and len(merged) < MERGE_MAX - 1:
            _, nxt = waiting[0]
            if nxt.get("kind") != "round" or nxt.get("chat_id") != entry.get("chat_id") \
                    or nxt.get("thread_id") != entry.get("thread_id"):
                break
            merged.append(queue.get_nowait())
        return merged

    def _ack(self, entry_id: str) -> None:
        """Acknowledge ``entry_id`` (handled) with the next outbox read: the entries handled
        meanwhile go in the same round trip as that read (:meth:`poll`)."""
        self._acks.append(entry_id)
        self.handled += 1

    async def _flush_acks(self) -> None:
        """Acknowledge every handled entry not acknowledged yet, tried again while the storage
        is unavailable (:meth:`_stored`); another failure is logged (those entries come again
        after a restart, as after a crash before the acknowledgement)."""
        while self._acks:
            ids, self._acks = self._acks, []
            try:
                await self._stored(lambda batch: self.store.outbox_ack(*batch), ids,
                                   what=f"outbox_ack of {len(ids)} entries")
            except asyncio.CancelledError:
                self._acks[:0] = ids
                raise
            except Exception:
                log.exception("outbox_ack of %d entries failed", len(ids))

    async def _stored(self, fn: Any, arg: Any, *, what: str) -> Any:
        """``await fn(arg)``, tried again while the storage is unavailable (``store.UNAVAILABLE``:
        Redis down, restarting or slow past its bound), after a growing pause
        (:attr:`RETRY_FIRST` s doubling up to :attr:`RETRY_MAX` s), so an outage neither loses an
        entry (acknowledged although it was never handled) nor leaves it pending until the
        next restart. Safe to repeat: the storage calls that can fail come before a chat post
        is sent (after it, :class:`SeenIds` marks in memory when Redis fails), and a "your turn"
        is marked before it is sent. Any other error is raised (the entry is given up)."""
        failures = 0
        while True:
            try:
                return await fn(arg)
            except UNAVAILABLE as exc:
                failures += 1
                pause = min(self.RETRY_MAX, self.RETRY_FIRST * 2 ** (failures - 1))
                if failures == 1:
                    log.warning("%s: the storage is unavailable (%s: %s); trying again until it answers",
                                what, type(exc).__name__, exc)
                await asyncio.sleep(pause)

    async def close(self) -> None:
        """Stop the lanes' tasks (unacknowledged entries are delivered again after a restart)."""
        workers = list(self._workers.values())
        self._workers.clear()
        self._lanes.clear()
        for task in workers:
            task.cancel()
        for task in workers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._busy.clear()
        with contextlib.suppress(Exception):
            await self._flush_acks()

    async def handle(self, entry: dict[str, Any]) -> None:
        kind = entry.get("kind")
        if kind == "turn":
            await self.turn(entry)
        elif kind == "refresh":
            user_id = entry["user_id"]
            await self.notices.refresh(user_id, self._locale(user_id))
        elif kind in ("start", "round", "end"):
            if entry.get("chat_id") is None:
                return
            await self.chat_event(kind, entry)
            if kind == "start" and entry.get("lobby_id") and self.lobbies is not None:
                self.lobbies.touch(entry["lobby_id"])  # its lobby message now says the game is on
        elif kind == "lobby":
            await self.lobby_event(entry)
        else:
            log.warning("unknown outbox entry %r", entry)

    def _locale(self, user_id: int | None) -> Any:
        """The user's language, looked up only when a message is actually written."""
        return lambda: self._language(user_id)

    async def _language(self, user_id: int | None) -> str:
        if user_id is None:
            return DEFAULT
        user = await self.store.get_user(user_id)
        return (user.language if user is not None else None) or DEFAULT

    async def turn(self, entry: dict[str, Any]) -> None:
        user_id = entry.get("user_id")
        table_id = entry.get("table")
        if not user_id or not table_id:
            return
        hint = entry.get("_hint")  # read with the batch, while this lane was idle
        present = hint["present"] if hint is not None else await self.store.is_present(table_id, user_id)
        if present:
            if hint is not None:
                await self.notices.refresh(user_id, self._locale(user_id), hint["notice"])
            else:
                await self.notices.refresh(user_id, self._locale(user_id))
            return
        if not await self.store.is_reachable(user_id):
            return
        if not await self._still_awaited(table_id, entry.get("seat")):
            await self.notices.refresh(user_id, self._locale(user_id))
            return
        if not await self.turns.first(f"{table_id}:{entry.get('seat')}:{entry.get('version')}"):
            return
        metrics.turn_notice(entry)
        await self.notices.turn(user_id, table_id, await self._language(user_id), entry.get("deadline"),
                                entry.get("game", ""))

    async def _still_awaited(self, table_id: str, seat: Any) -> bool:
        """False when the stored table is over or no longer waits for ``seat`` (a stale entry)."""
        try:
            table = await self.store.get_table(table_id)
        except Exception:
            log.exception("get_table %s", table_id)
            return True
        if table is None:
            return True  # nothing to check against; the entry is all there is
        try:
            import engine

            return not table.state.over and seat in engine.awaiting(table.state)
        except Exception:
            log.exception("awaiting() of table %s", table_id)
            return True

    async def chat_event(self, kind: str, entry: dict[str, Any]) -> None:
        chat_id = await self.store.chat_id_now(entry["chat_id"])  # a group upgraded to a supergroup
        post = self._post_id(kind, entry)
        if await self.posts.seen(post):
            return
        table = await self._table_like(entry)
        first_person = next((s.user_id for s in table.seats if s.user_id and not s.computer), None)
        locale = await self.store.chat_language(chat_id) or await self._language(first_person)
        markup = None
        with locale_scope(self.i18n, locale):
            if kind == "start":
                text = texts.start_text(table)
                markup = await keyboards.open_keyboard(self.bot, self.settings, entry["table"], chat_id=chat_id)
            elif kind == "round":
                text = texts.round_text(table, entry)
            else:
                info = dict(entry)
                if not info.get("points"):
                    info["points"] = await self._points(entry["table"])
                text = texts.end_text(table, info)
                markup = await keyboards.end_keyboard(self.bot, self.settings, entry["table"], chat_id=chat_id)
            note = texts.topic_moved_text()
        thread_id = await self._thread(entry)
        posted = await self.sender.post(chat_id, text, thread_id=thread_id, reply_markup=markup, moved_note=note,
                                        urgency="post")
        if posted.moved:
            await self.topics.mark(entry.get("table"))
        await self.posts.mark(post)  # after sending: a crash in between repeats the post rather than lose it

    async def round_posts(self, entries: list[dict[str, Any]]) -> None:
        """Round results of one chat and topic that queued up behind each other (a busy chat):
        one post with each of them in turn, marked each (a crash before marking repeats it)."""
        fresh = []
        for entry in entries:
            if entry.get("chat_id") is not None and not await self.posts.seen(self._post_id("round", entry)):
                fresh.append(entry)
        if len(fresh) <= 1:
            for entry in fresh:
                await self.chat_event("round", entry)
            return
        chat_id = await self.store.chat_id_now(fresh[0]["chat_id"])
        parts = []
        locale = await self.store.chat_language(chat_id)
        for entry in fresh:
            table = await self._table_like(entry)
            if locale is None:
                first = next((s.user_id for s in table.seats if s.user_id and not s.computer), None)
                locale = await self._language(first)
            with locale_scope(self.i18n, locale):
                parts.append(texts.round_text(table, entry))
        with locale_scope(self.i18n, locale):
            note = texts.topic_moved_text()
        thread_id = await self._thread(fresh[0])
        posted = await self.sender.post(chat_id, "\n\n".join(parts), thread_id=thread_id, moved_note=note,
                                        urgency="post")
        self.merged += len(fresh) - 1
        for entry in fresh:
            if posted.moved:
                await self.topics.mark(entry.get("table"))
            await self.posts.mark(self._post_id("round", entry))

    @staticmethod
    def _post_id(kind: str, entry: dict[str, Any]) -> str:
        return f"{kind}:{entry.get('table')}:{entry.get('version')}:{entry.get('round')}"

    async def lobby_event(self, entry: dict[str, Any]) -> None:
        """A "Play again" lobby changed: post its message once (the chat told once), else edit it."""
        if self.lobbies is None or entry.get("chat_id") is None:
            return
        lobby = await self.store.get_lobby(entry["lobby_id"])
        if lobby is None:
            return
        if lobby.message_id is None and not await self.posts.seen(f"lobby:{lobby.id}"):
            await self.lobbies.post(lobby)
            await self.posts.mark(f"lobby:{lobby.id}")
        else:
            self.lobbies.touch(lobby.id)

    async def _thread(self, entry: dict[str, Any]) -> int | None:
        """The table's forum topic, or None (the general thread) once the topic was found closed
        or deleted for this table (or for the lobby it was started from)."""
        thread_id = entry.get("thread_id")
        if not thread_id:
            return None
        for ident in (entry.get("table"), entry.get("lobby_id")):
            if ident and await self.topics.seen(ident):
                if ident != entry.get("table"):
                    await self.topics.mark(entry.get("table"))
                return None
        return thread_id

    async def _table_like(self, entry: dict[str, Any]) -> Any:
        """Seats and game for texts: from the entry (``seats``/``names``), else the stored table."""
        game = entry.get("game", "")
        if entry.get("seats"):
            seats = [SimpleNamespace(**{"computer": False, "user_id": None, **s}) for s in entry["seats"]]
            return SimpleNamespace(game=game, seats=seats, rated=entry.get("rated", True),
                                   variants=entry.get("variants", []))
        table = await self.store.get_table(entry["table"])
        if table is not None:
            return SimpleNamespace(game=table.game or game, seats=table.seats, rated=entry.get("rated", table.rated),
                                   variants=entry.get("variants", table.settings.variants))
        names = entry.get("names") or {}
        user_ids = entry.get("user_ids") or {}
        seats = [
            SimpleNamespace(seat=s, name=n, user_id=user_ids.get(s), computer=not user_ids.get(s))
            for s, n in names.items()
        ]
        return SimpleNamespace(game=game, seats=seats, rated=entry.get("rated", True),
                               variants=entry.get("variants", []))

    async def _points(self, table_id: str) -> dict[str, int]:
        """Prší match totals from the table's public view ({} for Penki or when gone)."""
        try:
            table = await self.store.get_table(table_id)
            if table is None or table.game != "prsi":
                return {}
            import engine

            view = engine.view(table.state, None)
            return dict(view.get("points") or {})
        except Exception:
            log.exception("points of table %s", table_id)
            return {}
