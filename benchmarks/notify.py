"""``python -m benchmarks --only notify``: where Karty's notifications fall behind Telegram's budget.

N tables of three people play Prší through the real store (on an in-process fakeredis) while
the real notifier, turn notices, lobby messages and sender tell them, against
:class:`benchmarks.telegram.FakeTelegram`, which limits like Telegram (30 messages/s in
all, 1/s a chat, 20/min a group, edits counted, 429 with ``retry_after`` beyond). It all runs
on :class:`benchmarks.telegram.VirtualLoop`, whose clock jumps to the next timer whenever
nothing is ready: a minute of play costs only the CPU it takes, whatever N, and the delays
measured are Telegram's budget alone (the bot assumed to keep up on CPU; what it spends is
reported as ``cpu_ms_per_turn``).

The players: a share ``absent`` of them have the Mini App closed (no presence), the others
have it open. A player with it open moves 1.5–4.5 s into their turn; one with it closed moves
2–6 s after the "your turn" reaches Telegram, or when the turn timer (60 s) plays for them.
A match over, its people start the next one at once (a new table: a "game begins" post).
Each chat also has a "Play again" lobby that someone joins or leaves every 30 s on average (a
debounced lobby edit). ``spread``: ``chat`` (one table a group chat) or ``group`` (20 tables
in one group).

Measured, from virtual time (seconds):

* ``turn_delay_p50/p95/p99``: from a turn's start to the Bot API call that tells an absent
  player (a new message or an edit listing that table);
* ``stale``: calls that listed a table which no longer awaited the player (must be 0);
* ``untold``: absent players' turns that ended (or the run did) without a notice, by why:
  ``timer`` (the timer played first), ``cut_off`` (still waiting when the run ended);
  ``present``: turns of players with the Mini App open (no notice wanted);
* ``post_delay_p50/p95`` (the chat's start/round/end posts, from the outbox entry's
  writing), ``lobby_delay_p50/p95`` (from the lobby's change to its edit);
* ``limited_calls_per_s`` (what Telegram counted), ``retry_after_429``, ``backlog``: entries
  written and not yet handled, sampled every 5 s, and its maximum.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any

ABSENT = (0.1, 0.5, 1.0)
SPREADS = ("chat", "group")
SECONDS = 60.0
TIMER = 60.0
PER_GROUP = 20
LOBBY_EVERY = 30.0
EPOCH = 1_800_000_000.0
LOBBY_MESSAGE = 1  # the lobby messages' id in every chat
_TABLE_IN_URL = re.compile(r"(?:[?&]table=|[?&]start=|startapp=)([A-Za-z0-9_-]+)")


@dataclass
class Turn:
    table: str
    user: int
    start: float
    present: bool
    told: float | None = None
    end: float | None = None
    moving: bool = False
    event: asyncio.Event = field(default_factory=asyncio.Event)


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _listed(call: Any) -> list[str]:
    markup = call.params.get("reply_markup") or {}
    out = []
    for row in markup.get("inline_keyboard", []) if isinstance(markup, dict) else []:
        for button in row:
            url = (button.get("web_app") or {}).get("url") or button.get("url") or ""
            found = _TABLE_IN_URL.search(url)
            if found:
                out.append(found.group(1))
    return out


async def _scene(tables: int, absent: float, spread: str, seconds: float, seed: int,
                 latency: float) -> dict[str, Any]:
    import fakeredis

    import engine
    from benchmarks.telegram import TAG, FakeTelegram
    from bot.i18n import make_i18n
    from bot.lobbies import LobbyMessages
    from bot.notifier import Notifier
    from bot.sender import Sender
    from bot.settings import BotSettings
    from store import Store
    from store.models import Seat, User

    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    store = Store(fakeredis.aioredis.FakeRedis(decode_responses=True, max_connections=1_000_000), prefix="notify",
                  clock=lambda: EPOCH + loop.time())
    api = FakeTelegram(loop.time, latency=latency)
    bot = api.make_bot()
    settings = BotSettings(bot_token="123456:BENCH-token", public_url="https://karty.example")
    i18n = make_i18n()
    sender = Sender(bot, store, clock=loop.time)
    lobbies = LobbyMessages(bot, store, sender, i18n, settings, delay=1.0, max_delay=5.0, clock=loop.time)
    notifier = Notifier(bot, store, sender, i18n, settings, consumer="bench")
    notifier.lobbies = lobbies
    if hasattr(notifier, "clock"):
        notifier.clock = loop.time
        notifier.notices.clock = loop.time
        notifier.notices.wall = lambda: EPOCH + loop.time()

    written = 0
    outbox, schedule_version, commit_entries = store._outbox, store._schedule_version, store._commit_entries

    def stamp(entries: list[dict[str, Any]] | None) -> None:
        nonlocal written
        for entry in entries or ():
            if "_at" not in entry:
                entry["_at"] = loop.time()
                written += 1

    def stamped_entries(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        entries = commit_entries(*args, **kwargs)
        stamp(entries)
        return entries

    async def stamped_outbox(entries: list[dict[str, Any]]) -> None:
        stamp(entries)
        await outbox(entries)

    async def stamped_schedule(table_id: str, version: int, dues: Any, flag: str,
                               entries: list[dict[str, Any]] | None = None) -> None:
        stamp(entries)
        await schedule_version(table_id, version, dues, flag, entries)

    # every outbox entry stamped with the (virtual) time it was written
    store._outbox, store._schedule_version, store._commit_entries = stamped_outbox, stamped_schedule, stamped_entries
    handle = notifier.handle

    async def tagged(entry: dict[str, Any]) -> None:
        token = TAG.set((entry.get("kind"), entry.get("_at")))
        try:
            await handle(entry)
        finally:
            TAG.reset(token)

    notifier.handle = tagged  # type: ignore[method-assign]

    # -- the truth: which turn each table waits for -----------------------------------------
    waiting: dict[tuple[str, int], Turn] = {}
    turns: list[Turn] = []
    stale: list[dict[str, Any]] = []
    posts: list[tuple[str, float]] = []
    lobby_changed: dict[int, float] = {}
    lobby_delays: list[float] = []

    def on_call(call: Any) -> None:
        chat = call.chat_id
        if isinstance(chat, int) and chat > 0 and call.method in ("sendMessage", "editMessageText"):
            for table_id in _listed(call):
                turn = waiting.get((table_id, chat))
                if turn is None:
                    stale.append({"table": table_id, "user": chat, "at": round(call.ts, 3), "method": call.method})
                elif turn.told is None and not turn.moving:
                    turn.told = call.ts
                    turn.event.set()
        elif isinstance(chat, int) and chat < 0:
            if call.method == "editMessageText" and call.params.get("message_id") == LOBBY_MESSAGE:
                since = lobby_changed.pop(chat, None)
                if since is not None:
                    lobby_delays.append(call.ts - since)
            elif call.method == "sendMessage" and isinstance(call.tag, tuple) and call.tag[1] is not None:
                posts.append((str(call.tag[0]), call.ts - call.tag[1]))

    api.on_call = on_call

    # -- the people, chats and lobbies -----------------------------------------------------
    def chat_of(i: int) -> int:
        return -(1_000_000_000_000 + (i if spread == "chat" else i // PER_GROUP))

    people = [[10_000_001 + 3 * i + k for k in range(3)] for i in range(tables)]
    present = {uid for trio in people for uid in trio if rng.random() >= absent}
    chats = sorted({chat_of(i) for i in range(tables)})
    chat_lobby: dict[int, str] = {}
    for chat in chats:
        lobby = await store.create_lobby(chat_id=chat, game="prsi", creator=User(id=9_000_000 + abs(chat) % 10**6,
                                                                                  name="Host"))
        await store.set_lobby_message(lobby.id, LOBBY_MESSAGE)
        chat_lobby[chat] = lobby.id
    stop = asyncio.Event()

    async def table_life(i: int) -> None:
        trio = people[i]
        match = 0
        while not stop.is_set():
            seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid % 1000}") for uid in trio]
            table = await store.create_table(game="prsi", seats=seats, chat_id=chat_of(i),
                                             seed=seed * 1_000_003 + i * 101 + match)
            match += 1
            marks = [(table.id, uid) for uid in trio if uid in present]
            if marks:
                await store.heartbeats(marks, ttl=10**7)
            state = table.state
            while not state.over and not stop.is_set():
                seat = engine.awaiting(state)[0]
                uid = int(seat[1:])
                turn = Turn(table.id, uid, loop.time(), uid in present)
                turns.append(turn)
                waiting[(table.id, uid)] = turn
                if turn.present:
                    await _sleep_or_stop(stop, rng.uniform(1.5, 4.5))
                else:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(TIMER):
                            await turn.event.wait()
                            await asyncio.sleep(rng.uniform(2.0, 6.0))
                if stop.is_set():
                    break
                turn.moving = True
                result = await store.apply(table.id, seat, engine.computer_action(state, seat),
                                           by="player" if turn.told is not None or turn.present else "timer")
                waiting.pop((table.id, uid), None)
                turn.end = loop.time()
                state = result.table.state

    async def lobby_life(chat: int) -> None:
        joined = False
        filler = User(id=8_000_000 + abs(chat) % 10**6, name="Guest")
        while not stop.is_set():
            await _sleep_or_stop(stop, rng.expovariate(1 / LOBBY_EVERY))
            if stop.is_set():
                return
            lobby_id = chat_lobby[chat]
            if joined:
                await store.leave(lobby_id, filler.id)
            else:
                await store.join(lobby_id, filler)
            joined = not joined
            lobby_changed.setdefault(chat, loop.time())
            await lobbies.changed(lobby_id)

    samples: list[dict[str, Any]] = []

    async def sampler() -> None:
        while not stop.is_set():
            await _sleep_or_stop(stop, 5.0)
            samples.append({"t": round(loop.time()), "backlog": written - notifier.handled,
                            "queued": notifier.queued,
                            "limited": len([c for c in api.calls if c.status == 200]),
                            "waiting_sends": _waiters(sender)})

    async def reader() -> None:
        while not stop.is_set():
            got = await notifier.poll(block_ms=0, count=200, wait=False)
            if got == 0:
                await _sleep_or_stop(stop, 0.05)

    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    tasks = [asyncio.create_task(table_life(i)) for i in range(tables)]
    tasks += [asyncio.create_task(lobby_life(chat)) for chat in chats]
    tasks += [asyncio.create_task(sampler()), asyncio.create_task(reader())]
    await asyncio.sleep(seconds)
    stop.set()
    stopped_at = loop.time()
    for task in tasks:
        task.cancel()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise outcome
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    logging.getLogger("bot").setLevel(logging.CRITICAL)  # what shutting down cuts short is not news
    await notifier.close()
    await lobbies.close()
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
    await store.close()

    from benchmarks.telegram import LIMITED

    absent_turns = [t for t in turns if not t.present]
    delays = [t.told - t.start for t in absent_turns if t.told is not None]
    untold = {"timer": sum(1 for t in absent_turns if t.told is None and t.end is not None),
              "cut_off": sum(1 for t in absent_turns if t.told is None and t.end is None)}
    accepted = [c for c in api.calls if c.status == 200 and c.method in LIMITED and c.ts <= stopped_at]
    post_delays = [d for _, d in posts]
    methods: dict[str, int] = {}
    for c in api.calls:
        if c.status == 200:
            methods[c.method] = methods.get(c.method, 0) + 1
    return {
        "tables": tables, "absent": absent, "spread": spread, "chats": len(chats), "seconds": seconds,
        "latency_s": latency, "turns": len(turns), "absent_turns": len(absent_turns),
        "turns_per_s": round(len(turns) / stopped_at, 1),
        "told": len(delays),
        "turn_delay_p50": _pct(delays, 0.50), "turn_delay_p95": _pct(delays, 0.95),
        "turn_delay_p99": _pct(delays, 0.99),
        "stale": len(stale), "stale_examples": stale[:5],
        "untold": untold, "present": len(turns) - len(absent_turns),
        "posts": len(posts), "post_delay_p50": _pct(post_delays, 0.5), "post_delay_p95": _pct(post_delays, 0.95),
        "posts_by_kind": {k: sum(1 for kind, _ in posts if kind == k) for k in sorted({k for k, _ in posts})},
        "lobby_edits": len(lobby_delays), "lobby_delay_p50": _pct(lobby_delays, 0.5),
        "lobby_delay_p95": _pct(lobby_delays, 0.95), "lobby_changes_unshown": len(lobby_changed),
        "limited_calls_per_s": round(len(accepted) / stopped_at, 1), "calls": methods,
        "busiest_second": _busiest([c.ts for c in accepted]),
        "retry_after_429": sum(1 for c in api.calls if c.status == 429),
        "backlog_max": max((s["backlog"] for s in samples), default=0),
        "backlog_end": samples[-1]["backlog"] if samples else 0, "backlog": samples,
        "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
        "cpu_ms_per_turn": round(cpu / max(1, len(turns)) * 1000, 2),
    }


def _busiest(times: list[float]) -> int:
    """The most calls in any one-second window (a microsecond's tolerance, as the fake's)."""
    times = sorted(times)
    return max((bisect.bisect_left(times, t + 1.0 - 1e-6) - i for i, t in enumerate(times)), default=0)


def _waiters(sender: Any) -> int:
    return int(getattr(sender._global, "waiting", 0))


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()


def run_one(tables: int, absent: float, spread: str, *, seconds: float = SECONDS, seed: int = 1,
            latency: float = 0.0) -> dict[str, Any]:
    """One scene on its own :class:`VirtualLoop`; its figures (see the module docstring)."""
    from benchmarks.telegram import VirtualLoop

    logging.getLogger("bot").setLevel(logging.ERROR)
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(_scene(tables, absent, spread, seconds, seed, latency))
    finally:
        loop.close()


#: The default matrix: 100 tables every way, 1,000 at the two ends (one table a chat).
DEFAULT_RUNS = (*((100, a, s) for s in SPREADS for a in ABSENT), (1000, 0.1, "chat"), (1000, 1.0, "chat"))


def measure(tables: tuple[int, ...] | None = None, absent: tuple[float, ...] = ABSENT,
            spreads: tuple[str, ...] = SPREADS, *, seconds: float = SECONDS, latency: float = 0.0,
            progress: Any = None) -> dict[str, Any]:
    """Each (tables, absent, spread) of the matrix (``tables`` None: :data:`DEFAULT_RUNS`), a scene each."""
    combos = DEFAULT_RUNS if tables is None else tuple((n, a, s) for n in tables for s in spreads for a in absent)
    runs = []
    for n, share, spread in combos:
        run = run_one(n, share, spread, seconds=seconds, latency=latency)
        runs.append(run)
        if progress is not None:
            progress(run)
    return {"runs": runs, "seconds": seconds, "latency_s": latency}


ROW_KEYS = ("turns_per_s", "turn_delay_p50", "turn_delay_p95", "turn_delay_p99", "stale", "untold",
            "post_delay_p50", "post_delay_p95", "lobby_delay_p50", "lobby_delay_p95", "limited_calls_per_s",
            "retry_after_429", "backlog_max", "backlog_end", "cpu_ms_per_turn")


def summary_rows(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for run in data["runs"]:
        name = f"{run['tables']:,} tables, {run['absent']:.0%} absent, {run['spread']}"
        rows.append(("notify", name, ", ".join(f"{k} {run.get(k)}" for k in ROW_KEYS)))
    return rows


def markdown(data: dict[str, Any]) -> str:
    head = ("| tables | spread | absent | turns/s | your turn p50 / p95 / p99 s | stale | untold (timer, cut off) "
            "| posts p50 / p95 s | lobby edits p50 / p95 s | calls/s | 429s | backlog max / end | CPU ms/turn |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in data["runs"]:
        u = r["untold"]
        lines.append(
            f"| {r['tables']:,} | {r['spread']} ({r['chats']} chats) | {r['absent']:.0%} | {r['turns_per_s']} "
            f"| {r['turn_delay_p50']} / {r['turn_delay_p95']} / {r['turn_delay_p99']} | {r['stale']} "
            f"| {u['timer']}, {u['cut_off']} of {r['absent_turns']} | {r['post_delay_p50']} / {r['post_delay_p95']} "
            f"| {r['lobby_delay_p50']} / {r['lobby_delay_p95']} | {r['limited_calls_per_s']} | {r['retry_after_429']} "
            f"| {r['backlog_max']} / {r['backlog_end']} | {r['cpu_ms_per_turn']} |")
    return "\n".join(lines) + "\n"
