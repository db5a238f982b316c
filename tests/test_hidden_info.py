"""Hidden information through the real app: random full games of both games, every payload checked.

Each game is played to its end through the service (``fuzz_support.LiveService``: the real
app on a loopback socket) by scripted players who POST their moves (mostly legal, some
refused: out of turn, a card not held, a junk action), while a WebSocket of every seat and
of a spectator stays open, and now and then a seat reads ``GET /api/tables/{id}`` or opens
a socket with ``since`` (the catch-up from the log). Every socket message, API answer and
error text, and every log message of the process, is checked against the game as it
stood at that version: no card but the recipient's own hand and the cards face up for
everyone (Prší: the top card and the last events' cards; Penki: the pile tops, the drawn
card, the table and the last events' cards; R2: no stump, not even the owner's), never the
stock order, another seat's hand or a stump.

``KARTY_HIDDEN_GAMES`` games of each game through the service (``make test``: 2, ``make soak``:
40; a socket-driven game takes 10-40 s here) and ``KARTY_HIDDEN_BUILDER_GAMES`` through the
app's payload builders without the transport (``make test``: 6, ``make soak``: 1000).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
from typing import Any

import aiohttp
import pytest
from fuzz_support import LiveService

import engine
from engine.cards import PENKI_PACK, PRSI_PACK

GAMES = int(os.environ.get("KARTY_HIDDEN_GAMES", "2"))
CARD = re.compile(r"""["']((?:10|[6-9JQKA])[hdcs])["']""")  # a quoted card, as JSON or repr writes it
LAST_CARD_EVENTS = {"prsi": frozenset({"play"}), "penki": frozenset({"draw", "move", "place", "penalty_move",
                                                                      "play", "take"})}


def cards_in(value: Any, pack: frozenset[str]) -> set[str]:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return set(CARD.findall(text)) & pack


def hands_of(state) -> dict[str, tuple[str, ...]]:
    if isinstance(state.hands, dict):
        return dict(state.hands)
    return dict(zip(state.players, state.hands, strict=True))


def public_cards(game: str, state, pack: frozenset[str]) -> set[str]:
    last = cards_in(list(state.last), pack)
    if game == "prsi":
        return {state.top} | last
    tops = {pile[-1] for pile in state.piles.values() if pile}
    return tops | ({state.drawn} if state.drawn else set()) | set(state.table) | last


def hidden_from(game: str, state, seat: str | None, pack: frozenset[str]) -> set[str]:
    """Cards ``seat`` must not see in this state: the stock, the other hands, every stump, less
    what is face up for everyone."""
    hands = hands_of(state)
    hidden = set(state.stock) | {c for p, h in hands.items() if p != seat for c in h}
    if game == "penki":
        hidden |= {c for stump in state.stumps.values() for c in stump}
    return hidden - public_cards(game, state, pack)


class LogCards(logging.Handler):
    """Every log record of the process (all levels), for quoted card names."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage() + (self.format(record) if record.exc_info else "")
        if CARD.search(text):
            self.found.append(text[:300])


@pytest.fixture(scope="module")
def service():
    handler = LogCards()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    svc = LiveService().start()
    svc.log_cards = handler
    try:
        yield svc
    finally:
        svc.stop()
        root.removeHandler(handler)
        root.setLevel(old)


class Game:
    """One table, its players' sockets and every payload each recipient got."""

    def __init__(self, svc: LiveService, game: str, seed: int) -> None:
        self.svc, self.game, self.rng = svc, game, random.Random(seed)
        self.pack = frozenset(PRSI_PACK if game == "prsi" else PENKI_PACK)
        n = self.rng.randint(2, 5 if game == "prsi" else 6)
        self.users = [5000 + seed * 10 + i for i in range(n)]
        self.seed = seed
        self.states: dict[int, Any] = {}
        self.got: list[tuple[str | None, int, Any, str]] = []  # (recipient seat, version, payload, what)
        self.checked = 0

    async def create(self) -> None:
        from store import LobbySettings, Seat

        seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in self.users]
        t = await self.svc.store.create_table(game=self.game, seats=seats, seed=self.seed,
                                             settings=LobbySettings(players=len(seats), turn_seconds=None))
        self.table_id = t.id
        self.states[t.version] = t.state

    def headers(self, user: int) -> dict[str, str]:
        return {"Authorization": f"tma {self.svc.init_data(user)}"}

    async def listen(self, session: aiohttp.ClientSession, user: int | None, seat: str | None,
                     since: int | None = None, until_version: int | None = None) -> None:
        """A socket of ``user`` (a spectator when not seated) kept open until the game is over."""
        viewer = user if user is not None else 4999
        auth = {"type": "auth", "init_data": self.svc.init_data(viewer)}
        if since is not None:
            auth["since"] = since
        async with session.ws_connect(f"{self.svc.url}/ws/tables/{self.table_id}") as ws:
            await ws.send_str(json.dumps(auth))
            ping = 0
            while True:
                try:
                    msg = await ws.receive(timeout=1.0)
                except TimeoutError:
                    ping += 1
                    await ws.send_str('{"type":"ping"}')
                    continue
                if msg.type != aiohttp.WSMsgType.TEXT:
                    return
                data = json.loads(msg.data)
                if data.get("type") == "state":
                    self.got.append((seat, data["version"], data, "socket"))
                    if data["view"].get("over") or (until_version is not None and data["version"] >= until_version):
                        return
                elif data.get("type") == "error":
                    self.got.append((seat, -1, data, "socket error"))

    def choose(self, state, seat: str) -> dict[str, Any]:
        roll = self.rng.random()
        if roll < 0.06:
            return self.rng.choice([{"a": "fly"}, {"a": "play", "card": self.rng.choice(sorted(self.pack))},
                                    {"a": "give", "card": self.rng.choice(sorted(self.pack))}])
        legal = engine.legal_actions(state, seat)
        if not legal:
            return {"a": "draw"}
        if self.game == "penki" and roll < 0.15:
            calls = [a for a in legal if a["a"] in ("zevok", "one_card", "how_many")]
            if calls:
                return self.rng.choice(calls)
        choice = engine.computer_action(state, seat) if roll < 0.7 else None
        return choice or self.rng.choice(legal)

    async def play(self) -> None:
        await self.create()
        seats = [f"u{u}" for u in self.users]
        async with aiohttp.ClientSession() as session:
            listeners = [asyncio.create_task(self.listen(session, u, f"u{u}")) for u in self.users]
            listeners.append(asyncio.create_task(self.listen(session, None, None)))
            for _ in range(5000):
                table = await self._table()
                state = table.state
                self.states[table.version] = state
                if state.over:
                    break
                waiting = engine.awaiting(state)
                actor = self.rng.choice(waiting) if waiting and self.rng.random() < 0.9 else self.rng.choice(seats)
                action = self.choose(state, actor)
                user = int(actor[1:])
                async with session.post(f"{self.svc.url}/api/tables/{self.table_id}/actions",
                                        json={"action": action}, headers=self.headers(user)) as r:
                    body = await r.json()
                    assert r.status < 500, body
                    if r.status == 200:
                        self.got.append((actor, body["version"], body, "answer"))
                    else:
                        self.got.append((actor, table.version, {"error": body, "asked": action}, "error"))
                if self.rng.random() < 0.05:
                    reader = self.rng.choice([*seats, None])
                    viewer = int(reader[1:]) if reader else 4999
                    async with session.get(f"{self.svc.url}/api/tables/{self.table_id}",
                                           headers=self.headers(viewer)) as r:
                        body = await r.json()
                        self.got.append((reader, body.get("version", -1), body, "get"))
                if self.rng.random() < 0.02:  # a reconnect with catch-up from the log
                    reader = self.rng.choice(seats)
                    v = table.version
                    await self.listen(session, int(reader[1:]), reader, since=max(0, v - self.rng.randint(1, 30)),
                                      until_version=v)
            else:
                raise AssertionError("the game did not end")
            await asyncio.wait_for(asyncio.gather(*listeners), 120)

    async def _table(self):
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
            self.svc.store.get_table(self.table_id), self.svc.loop))

    async def fill_states(self) -> None:
        """The state of every version, replayed from the store's log (the answers do not carry it)."""
        log = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
            self.svc.store.log(self.table_id), self.svc.loop))
        state = self.states[0]
        for entry in log:
            state = engine.apply(state, entry["seat"], entry["action"]).state
            self.states[entry["version"]] = state

    def check(self) -> None:
        """The view against the game at the message's version; ``events`` (a socket message's
        merged events, an answer's) only name cards that were face up at their own moment."""
        versions = sorted(self.states)
        ever_public: dict[int, set[str]] = {}
        seen: set[str] = set()
        for v in versions:
            seen |= public_cards(self.game, self.states[v], self.pack)
            ever_public[v] = set(seen)
        for seat, version, payload, what in self.got:
            if version < 0:  # an error frame: nothing of the game at all
                assert not cards_in(payload, self.pack), (what, payload)
                continue
            state = self.states[version]
            hidden = hidden_from(self.game, state, seat, self.pack)
            own = set(hands_of(state).get(seat, ()))
            if what == "error":
                asked = cards_in(payload["asked"], self.pack)
                extra = cards_in(payload["error"], self.pack) - asked - own - public_cards(self.game, state, self.pack)
                assert not extra, (self.game, payload, sorted(extra))
                continue
            rest = {k: v for k, v in payload.items() if k != "events"}
            leaked = cards_in(rest, self.pack) & hidden
            assert not leaked, (self.game, what, seat, version, sorted(leaked))
            for event in payload.get("events") or []:
                named = cards_in(event, self.pack)
                assert not named or event.get("a") in LAST_CARD_EVENTS[self.game], (what, event)
                assert named <= ever_public[version], (self.game, what, seat, version, event)
            self.checked += 1


@pytest.mark.parametrize("game", ["prsi", "penki"])
def test_no_payload_of_random_full_games_carries_a_hidden_card(service, game):
    checked = 0
    for seed in range(1, GAMES + 1):
        g = Game(service, game, seed * 7919 + (game == "penki"))

        async def run(g=g):
            await g.play()
            await g.fill_states()

        asyncio.run(run())
        g.check()
        assert any(what == "socket" and seat is None for seat, _, _, what in g.got)  # the spectator heard
        checked += g.checked
    assert checked >= GAMES * 20
    assert not service.log_cards.found, service.log_cards.found[:5]


BUILDER_GAMES = int(os.environ.get("KARTY_HIDDEN_BUILDER_GAMES", "6"))


@pytest.mark.parametrize("game", ["prsi", "penki"])
def test_the_apps_own_payload_builders_over_many_random_full_games(game):
    """What the app sends, built by its own code (``webapp.ws.state_message`` for the socket,
    ``webapp.api.table_payload`` for the API), for every seat and a spectator after every
    move of ``KARTY_HIDDEN_BUILDER_GAMES`` random full games (``make soak``: 1000), without the
    transport: the same checks as above, for many more games than a socket can play."""
    from store.models import LobbySettings, Seat, Table
    from webapp.api import table_payload
    from webapp.ws import state_message

    pack = frozenset(PRSI_PACK if game == "prsi" else PENKI_PACK)
    payloads = 0
    for n in range(BUILDER_GAMES):
        rng = random.Random(f"{game}-{n}")
        players = [f"u{i}" for i in range(1, rng.randint(2, 5 if game == "prsi" else 6) + 1)]
        state = engine.new_game(game, players, seed=rng.randrange(2**32))
        seats = [Seat(seat=p, user_id=int(p[1:]), name=p) for p in players]
        ever: set[str] = set(public_cards(game, state, pack))
        for step in range(5000):
            if state.over:
                break
            waiting = engine.awaiting(state) or list(players)
            seat = rng.choice(waiting)
            legal = engine.legal_actions(state, seat) or [{"a": "draw"}]
            action = (engine.computer_action(state, seat) if rng.random() < 0.7 else None) or rng.choice(legal)
            try:
                out = engine.apply(state, seat, action)
            except engine.Rejected:
                continue
            state = out.state
            ever |= public_cards(game, state, pack)
            if rng.random() > 0.3:  # payloads of every third position or so: views are the slow part
                continue
            table = Table(id="t", game=game, seats=seats, settings=LobbySettings(players=len(players)),
                          state=state, version=state.version, rated=False, created=0.0)
            for viewer in (*players, None):
                hidden = hidden_from(game, state, viewer, pack)
                for payload in (state_message(table, viewer, out.events, "player"), table_payload(table, viewer)):
                    rest = {k: v for k, v in payload.items() if k != "events"}
                    leaked = cards_in(rest, pack) & hidden
                    assert not leaked, (game, n, step, viewer, sorted(leaked))
                    payloads += 1
            for event in out.events:
                named = cards_in(event, pack)
                assert not named or event.get("a") in LAST_CARD_EVENTS[game], event
                assert named <= ever, (game, n, event)
        else:
            raise AssertionError(f"{game} game {n} did not end")
    assert payloads > BUILDER_GAMES * 20
