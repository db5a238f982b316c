"""Bad input, fuzzed: the HTTP API from its own OpenAPI document, the WebSocket and the webhook.

Through the real app on a real loopback socket (``fuzz_support.LiveService``: aiohttp's
own HTTP parser, the bot on its webhook). Requests come from schemathesis (every
operation of ``GET /api/openapi.json``, valid and invalid by the schema) and from
hypothesis strategies for what a schema does not say: other seats, out-of-turn moves,
cards not held, replayed ``client_action_id``s, stale versions, forged / foreign-bot /
expired / tampered initData, junk and 10 MB bodies, deep nesting, odd paths (``%00``,
``%0a``), junk socket frames (``"since": Infinity``) and junk webhook bodies.

Every answer: no 5xx; an error is ``{"error", "detail"}`` JSON; no text carries a
traceback, a key, a token or a path; a rejected request (4xx, or a duplicate) leaves
every key of the store as it was; nothing is logged at ERROR and no log message spans
lines. ``KARTY_FUZZ_SCALE`` multiplies the example counts (``make soak``: 20, over
100,000 requests; ``make test``: 1, over 5,000).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests
from fuzz_support import WEBHOOK_SECRET, LiveService, LogTrap, check_answer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import engine
from engine.cards import PENKI_PACK, PRSI_PACK

SCALE = float(os.environ.get("KARTY_FUZZ_SCALE", "1"))
ANN, BOB, CYRIL, EVE = 1001, 1002, 1003, 1999  # EVE sits at no table
AUTH_KINDS = ["valid", "valid", "valid", "forged", "foreign_bot", "expired", "future", "tampered",
              "unsigned", "no_user", "bad_scheme", "garbage", "none"]
SENT: Counter[str] = Counter()  # requests (and socket frames) sent, per test
# A guard against a hung service only (a loaded machine runs the schema test for minutes).
pytestmark = pytest.mark.timeout(int(1800 * max(1.0, SCALE)))


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


def fuzz_settings(n: int):
    # No shrinking: the service's state moves on between examples (moves commit, tables
    # finish), so a replay is not the same request; each failure's message names it in full.
    return settings(max_examples=examples(n), deadline=None, database=None, derandomize=False,
                    phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))


class World:
    """The service, a few tables to aim at, and the checks."""

    def __init__(self, svc: LiveService) -> None:
        self.svc = svc
        self.http = requests.Session()
        self.tables: dict[str, str] = {}
        self.used_cids: list[tuple[str, int, str, dict]] = []
        self.make_tables()
        for user in (ANN, BOB, CYRIL, EVE):  # signed in once: the store knows their names from then on
            assert self.http.get(svc.url + "/api/me", headers=svc.auth_header("valid", user), timeout=60).ok

    def make_tables(self) -> None:
        from store import LobbySettings, Seat

        async def make() -> dict[str, str]:
            out = {}
            for game, humans, computers in (("prsi", (ANN, BOB), 0), ("penki", (ANN, BOB, CYRIL), 1)):
                seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in humans]
                seats += [Seat(seat=f"c{i}", name=f"C{i}", computer=True) for i in range(1, computers + 1)]
                t = await self.svc.store.create_table(
                    game=game, seats=seats, seed=len(self.tables) + 11,
                    settings=LobbySettings(players=len(seats), turn_seconds=None))
                out[game] = t.id
            return out

        self.tables.update(self.svc.call(make()))

    def table(self, table_id: str):
        return self.svc.call(self.svc.store.get_table(table_id))

    def refresh_finished(self) -> None:
        if any(self.table(t).state.over for t in self.tables.values()):
            self.make_tables()

    def send(self, test: str, method: str, path: str, *, check_unchanged: bool = True, **kw: Any):
        """One request with every check; returns the answer."""
        before = self.svc.snapshot() if check_unchanged else None
        kw.setdefault("timeout", 60)
        kw.setdefault("allow_redirects", False)
        resp = self.http.request(method, self.svc.url + path, **kw)
        SENT[test] += 1
        problems = check_answer(resp.status_code, resp.headers.get("Content-Type", ""), resp.text, method, path)
        assert not problems, (method, path, kw.get("headers"), problems)
        rejected = resp.status_code >= 400 or (resp.status_code == 200 and _duplicate(resp))
        if before is not None and rejected:
            after = self.svc.snapshot()
            assert after == before, (method, path, resp.status_code, resp.text[:200], _diff(before, after))
        return resp


def _header_ok(name: str, value: str) -> bool:
    """Whether ``requests`` can send this header at all (latin-1, no line breaks)."""
    try:
        name.encode("latin-1"), value.encode("latin-1")
        requests.utils.check_header_validity((name, value))
    except (UnicodeEncodeError, ValueError, requests.exceptions.InvalidHeader):
        return False
    return bool(name)


def _duplicate(resp) -> bool:
    try:
        body = resp.json()
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("duplicate") is True


def _diff(before: dict, after: dict) -> list[str]:
    keys = set(before) | set(after)
    return [f"{k}: {str(before.get(k))[:120]} -> {str(after.get(k))[:120]}" for k in sorted(keys)
            if before.get(k) != after.get(k)][:5]


@pytest.fixture(scope="module")
def trap():
    handler = LogTrap()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)


@pytest.fixture(scope="module")
def world(trap):
    svc = LiveService().start()
    try:
        yield World(svc)
    finally:
        svc.stop()
        out = Path(__file__).resolve().parents[1] / "test-output"
        out.mkdir(exist_ok=True)
        (out / "fuzz-counts.json").write_text(json.dumps({"scale": SCALE, **SENT, "total": sum(SENT.values())}))
    assert not trap.problems(), trap.problems()[:10]


@pytest.fixture(autouse=True)
def _no_log_problems(trap):
    with trap._lock2:
        trap.records.clear()  # each test answers for its own log
    yield
    assert not trap.problems(), trap.problems()[:10]


# ------------------------------------------------------------------ schemathesis: every operation
def _operations() -> list:
    import schemathesis

    from webapp.openapi import document

    schema = schemathesis.openapi.from_dict(document())
    return [r.ok() for r in schema.get_all_operations() if r.ok().path != "/ws/tables/{id}"]


def _case_strategy():
    from schemathesis import GenerationMode

    strategies = []
    for op in _operations():
        strategies.append(op.as_strategy(generation_mode=GenerationMode.POSITIVE))
        strategies.append(op.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    return st.one_of(strategies)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    CASES = _case_strategy()


def test_every_operation_of_the_openapi_document_survives_schema_fuzzing(world):
    @fuzz_settings(1500)
    @given(case=CASES, auth=st.sampled_from(AUTH_KINDS), who=st.sampled_from([ANN, BOB, EVE]),
           aim=st.sampled_from(["prsi", "penki", "generated", "unknown"]), data=st.data())
    def run(case, auth, who, aim, data):
        params = dict(case.path_parameters or {})
        if "id" in params and aim != "generated":
            params["id"] = world.tables.get(aim, "tUnknownTab")
        path = case.path
        for name, value in params.items():
            path = path.replace("{" + name + "}", requests.utils.quote(str(value), safe=""))
        headers = {str(k): str(v) for k, v in (case.headers or {}).items() if _header_ok(str(k), str(v))}
        generated = next((headers.pop(k) for k in list(headers) if k.lower() == "authorization"), None)
        if auth == "none" and generated is not None:
            headers["Authorization"] = generated  # schemathesis's own junk Authorization
        else:
            headers.update(world.svc.auth_header(auth, who))
        kw: dict[str, Any] = {"headers": headers, "params": case.query or None}
        body = case.body
        if case.method.upper() == "POST" and type(body).__name__ != "NotSet":
            if isinstance(body, (bytes, str)):
                kw["data"] = body.encode() if isinstance(body, str) else body
            elif data.draw(st.booleans()):
                kw["data"] = json.dumps(body, ensure_ascii=data.draw(st.booleans())).encode()
                headers.setdefault("Content-Type", "application/json")
            else:
                kw["json"] = body
        world.send("schema", case.method.upper(), path, **kw)
        if data.draw(st.integers(0, 50)) == 0:
            world.refresh_finished()

    run()
    assert SENT["schema"] >= 0.9 * examples(1500)


# ------------------------------------------------------------------ moves a schema cannot describe
def _hand(world: World, table_id: str, seat: str) -> list[str]:
    state = world.table(table_id).state
    hands = state.hands if isinstance(state.hands, dict) else dict(zip(state.players, state.hands, strict=True))
    return list(hands.get(seat, ()))


JUNK_ACTIONS = st.one_of(
    st.fixed_dictionaries({"a": st.sampled_from(["fly", "play", "give", "zevok", "take", "move", "place"])},
                          optional={"card": st.text(max_size=4), "to": st.text(max_size=30),
                                    "suit": st.text(max_size=2)}),
    st.none(), st.integers(), st.lists(st.integers(), max_size=3), st.text(max_size=20))
PICK = st.integers(0, 10**6)  # an index into whatever the state offers: draws never depend on the state


def test_moves_by_other_seats_out_of_turn_with_cards_not_held_replays_and_stale_versions(world):
    @fuzz_settings(2300)
    @given(game=st.sampled_from(["prsi", "penki"]), auth=st.sampled_from(AUTH_KINDS),
           kind=st.sampled_from(["mover", "other_seat", "not_held", "junk", "replay", "stale", "seat_field",
                                 "spectator"]),
           picks=st.lists(PICK, min_size=4, max_size=4), junk=JUNK_ACTIONS, with_cid=st.booleans(),
           stale=st.sampled_from([-1, 1, 10**9]))
    def run(game, auth, kind, picks, junk, with_cid, stale):
        def pick(options: list, i: int):
            return options[picks[i] % len(options)]

        table_id = world.tables[game]
        table = world.table(table_id)
        state = table.state
        people = [s.seat for s in table.seats if s.user_id is not None]
        uid_of = {s.seat: s.user_id for s in table.seats}
        waiting = [p for p in engine.awaiting(state) if p in people]
        seat = pick(waiting or people, 0)
        user = uid_of[seat]
        own = engine.legal_actions(state, seat) or [{"a": "draw"}]
        body: dict[str, Any] = {"action": pick(own, 1)}
        if kind == "other_seat":
            other = pick([p for p in state.players if p != seat], 2)
            body["action"] = pick(engine.legal_actions(state, other) or [{"a": "draw"}], 3)
        elif kind == "not_held":
            pack = PRSI_PACK if game == "prsi" else PENKI_PACK
            card = pick(sorted(set(pack) - set(_hand(world, table_id, seat))), 2)
            body["action"] = {"a": "play", "card": card, **({"suit": "h"} if card.startswith("Q") else {})}
        elif kind == "junk":
            body["action"] = junk
        elif kind == "replay":
            mine = [c for c in world.used_cids if c[0] == table_id]
            if mine:
                _, user, cid, action = pick(mine, 2)
                body = {"action": action, "client_action_id": cid}
        elif kind == "stale":
            body["version"] = max(0, table.version + stale)
            if body["version"] == table.version:
                body["version"] += 1
        elif kind == "seat_field":
            body["seat"] = pick([p for p in state.players if p != seat] + ["u1", "x" * 24], 2)
        elif kind == "spectator":  # seated nowhere, tries the mover's move
            user = EVE
        if with_cid and kind != "replay":
            body["client_action_id"] = f"cid-{picks[3]}"
        cid = body.get("client_action_id")
        used_before = any(c[:3] == (table_id, user, cid) for c in world.used_cids)
        resp = world.send("moves", "POST", f"/api/tables/{table_id}/actions", json=body,
                          headers=world.svc.auth_header(auth, user))
        if resp.status_code == 200 and body.get("client_action_id") and not _duplicate(resp):
            world.used_cids.append((table_id, user, body["client_action_id"], body["action"]))
        if auth != "valid":
            assert resp.status_code == (400 if auth == "garbage" else 401), (auth, resp.status_code, resp.text)
        elif kind in ("not_held", "spectator", "seat_field", "stale"):
            if resp.status_code == 200:
                # An id this seat's committed move already carried is answered with that
                # commit (exactly-once retries come first); nothing new is applied.
                assert used_before and _duplicate(resp), (kind, body, resp.status_code, resp.text)
            else:
                assert resp.status_code in (403, 409, 422), (kind, body, resp.status_code, resp.text)
        if resp.status_code == 200 and world.table(table_id).state.over:
            world.make_tables()

    run()
    assert SENT["moves"] >= examples(2300)


# ------------------------------------------------------------------ raw bodies and odd paths
def _nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


RAW_BODIES = st.one_of(
    st.binary(max_size=2000),
    st.text(max_size=500).map(str.encode),
    st.integers(1, 200_000).map(lambda n: _nested(n).encode()),
    st.integers(1, 5000).map(lambda n: ('{"action":' + '{"a":' * n + '"draw"' + "}" * n + "}").encode()),
    st.sampled_from([b"NaN", b"Infinity", b'{"action":{"a":"draw"},"version":Infinity}', b'{"action":{"a":"draw"},'
                     b'"version":1e999}', b'{"action":{"a":"draw"},"version":-1}', b'{"action":{"a":"draw"}}' * 2,
                     b'{"action":{"a":"draw","card":null,"__proto__":{}}}', b"\xff\xfe{}", b"null", b"[]",
                     b'{"name":"' + b"A" * 20000 + b'"}', b'{"game":"chess"}', b'{"name":"\\u0000"}']),
)


def test_junk_bodies_deep_nesting_and_wrong_content_types(world):
    posts = ["/api/tables/{prsi}/actions", "/api/tables/{penki}/actions", "/api/local/login", "/api/local/tables",
             "/api/tables/tUnknownTab/actions"]

    @fuzz_settings(600)
    @given(body=RAW_BODIES, route=st.sampled_from(posts), auth=st.sampled_from(AUTH_KINDS),
           ctype=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded",
                                  "multipart/form-data; boundary=x", "", "application/json; charset=latin-1"]),
           gzip=st.booleans())
    def run(body, route, auth, ctype, gzip):
        path = route.format(**world.tables)
        headers = world.svc.auth_header(auth, ANN)
        if ctype:
            headers["Content-Type"] = ctype
        if gzip:
            headers["Content-Encoding"] = "gzip"  # a lie: the body is not gzip
        world.send("raw", "POST", path, data=body, headers=headers)

    run()
    # 10 MB bodies: refused as too large, whatever they say they are.
    big = b'{"action":{"a":"draw"},"pad":"' + b"x" * (10 * 1024 * 1024) + b'"}'
    for path in (f"/api/tables/{world.tables['prsi']}/actions", "/api/local/login", "/telegram/webhook"):
        resp = world.send("raw", "POST", path, data=big, headers={
            **world.svc.auth_header("valid", ANN), "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET})
        # (local sign-in is off here: its route is a 404 before any body is read)
        assert resp.status_code == (404 if "local" in path else 413), (path, resp.status_code)
    assert SENT["raw"] >= examples(600) + 3


ODD_SEGMENTS = st.one_of(
    st.sampled_from(["%00", "%0a", "%0d%0aSet-Cookie:%20x=1", "%0aINFO%20webapp:%20forged", "..", "%2e%2e",
                     "%2f", "%5c", "%ff", "%c0%af", "%", "%%", "~", "static", "api", "ws", "..%2f..%2fetc%2fpasswd",
                     ".env", "index.html", "x" * 5000, "%e2%80%ae", "healthz", "telegram"]),
    st.text(min_size=1, max_size=30).map(lambda s: requests.utils.quote(s, safe="")),
)


def test_odd_paths_answer_without_5xx_or_forged_log_lines(world):
    @fuzz_settings(600)
    @given(prefix=st.sampled_from(["", "api/", "api/tables/", "ws/tables/", "static/", "api/chats/",
                                   "api/tables/{prsi}/"]),
           segments=st.lists(ODD_SEGMENTS, min_size=1, max_size=3),
           method=st.sampled_from(["GET", "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"]),
           auth=st.sampled_from(["valid", "none", "garbage"]))
    def run(prefix, segments, method, auth):
        path = "/" + prefix.format(**world.tables) + "/".join(segments)
        world.send("paths", method, path, headers=world.svc.auth_header(auth, ANN))

    run()
    resp = world.send("paths", "GET", "/%00")
    assert resp.status_code == 404
    assert SENT["paths"] >= examples(600)


# ------------------------------------------------------------------ the webhook
def _update_strategy():
    user = st.fixed_dictionaries({"id": st.one_of(st.integers(-10, 10**12), st.text(max_size=5)),
                                  "is_bot": st.booleans(), "first_name": st.text(max_size=20)})
    chat = st.fixed_dictionaries({"id": st.integers(-10**13, 10**12), "type": st.sampled_from(
        ["private", "group", "supergroup", "channel", "weird"])})
    message = st.fixed_dictionaries({"message_id": st.integers(-5, 10**6), "date": st.integers(-5, 2**40),
                                     "chat": chat}, optional={"from": user, "text": st.sampled_from(
                                         ["/start", "/new", "/new penki", "/rating", "/help", "/lang ru", "hi",
                                          "/start " + "x" * 70, "/top"])})
    callback = st.fixed_dictionaries({"id": st.text(max_size=10), "from": user, "chat_instance": st.text(max_size=5)},
                                     optional={"data": st.text(max_size=70), "message": message})
    update = st.fixed_dictionaries({"update_id": st.one_of(st.integers(-5, 2**40), st.text(max_size=5))},
                                   optional={"message": message, "callback_query": callback,
                                             "edited_message": message, "unknown": st.integers()})
    junk = st.one_of(st.binary(max_size=300), st.integers(1, 50_000).map(lambda n: _nested(n).encode()),
                     st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                                  lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                       max_size=4),
                                  max_leaves=20).map(lambda v: json.dumps(v).encode()))
    return st.one_of(update.map(lambda u: json.dumps(u).encode()), junk)


def test_webhook_with_junk_bodies_and_wrong_secrets(world):
    @fuzz_settings(400)
    @given(body=_update_strategy(), secret=st.sampled_from([WEBHOOK_SECRET, WEBHOOK_SECRET, "", "wrong", None]))
    def run(body, secret):
        headers = {"Content-Type": "application/json"}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = secret
        # A well-formed update with the right secret may change things (a /new opens a lobby).
        resp = world.send("webhook", "POST", "/telegram/webhook", data=body, headers=headers,
                          check_unchanged=secret != WEBHOOK_SECRET)
        if secret != WEBHOOK_SECRET:
            assert resp.status_code == 401
        else:  # what it accepted is handled in the background: let it finish before the next check
            world.svc.settle_bot()

    run()
    assert SENT["webhook"] >= examples(400)


# ------------------------------------------------------------------ the WebSocket
FRAME_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=15)


def _frames(svc: LiveService) -> st.SearchStrategy:
    init = svc.init_data(ANN)
    since = st.one_of(st.sampled_from(["Infinity", "-Infinity", "NaN", "1e999", "-1", "1.5", '"7"', '"x"', "true",
                                       "null", "[]", "{}", "99999999999999999999999", str(2**63)]),
                      st.integers(-10**20, 10**20).map(str))
    auth_since = since.map(lambda s: f'{{"type":"auth","init_data":{json.dumps(init)},"since":{s}}}')
    bad_auth = st.sampled_from(AUTH_KINDS).map(
        lambda k: json.dumps({"type": "auth", "init_data": svc.auth_header(k, ANN).get("Authorization", "")[4:]}))
    return st.one_of(
        auth_since, bad_auth,
        FRAME_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
        st.integers(1, 100_000).map(_nested),
        st.integers(1, 4000).map(lambda n: '{"type":"auth","init_data":' + _nested(n) + "}"),
        st.text(max_size=200),
        st.binary(max_size=200),
    )


async def _socket_session(svc: LiveService, table_id: str, first: str | bytes, later: list[str | bytes]) -> list:
    """Open the table's socket and send ``first``; once it answered with the state, each of
    ``later`` followed by a ping, reading up to its pong. Returns ``(type, data, extra)`` of
    everything that came back."""
    import aiohttp

    closed = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
    got: list = []

    async def send(ws, frame: str | bytes) -> None:
        await (ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_str(frame))

    async with aiohttp.ClientSession() as session, session.ws_connect(
            f"{svc.url}/ws/tables/{table_id}", max_msg_size=0) as ws:
        await send(ws, first)
        msg = await ws.receive(timeout=60)
        got.append((msg.type, msg.data, msg.extra))
        if msg.type in closed:
            return got
        if json.loads(msg.data).get("type") != "state":  # refused: an error, then the close
            msg = await ws.receive(timeout=60)
            got.append((msg.type, msg.data, msg.extra))
            return got
        for frame in later:
            await send(ws, frame)
            await ws.send_str('{"type":"ping"}')
            while True:
                msg = await ws.receive(timeout=60)
                got.append((msg.type, msg.data, msg.extra))
                if msg.type in closed:
                    return got
                if msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data).get("type") == "pong":
                    break
    return got


def test_socket_frames_never_crash_the_socket_or_leak_internals(world):
    import aiohttp

    svc = world.svc
    frames = _frames(svc)
    valid_auth = json.dumps({"type": "auth", "init_data": svc.init_data(ANN)})

    @fuzz_settings(300)
    @given(first=frames, later=st.lists(frames, max_size=3), authed=st.booleans())
    def run(first, later, authed):
        table_id = world.tables["prsi"]
        before = svc.snapshot()
        opening = valid_auth if authed else first
        rest = [first, *later] if authed else later
        got = asyncio.run(_socket_session(svc, table_id, opening, rest))
        SENT["socket"] += 1 + len(rest)
        for kind, data, extra in got:
            if kind == aiohttp.WSMsgType.CLOSE:
                assert data not in (1011, 1006), (opening[:80], rest, got)  # never an internal error
                assert data in (1000, 1001, 1009, 4400, 4401, 4404, 4408, 4429), (data, extra)
            elif kind == aiohttp.WSMsgType.TEXT:
                msg = json.loads(data)
                if msg.get("type") == "error":  # {type, error, detail}: the API's error shape plus its type
                    rest = json.dumps({k: v for k, v in msg.items() if k != "type"})
                    assert not check_answer(400, "application/json", rest, "GET", "/ws/"), msg
                else:
                    assert not check_answer(200, "application/json", data, "GET", "/ws/"), data[:300]
                assert msg.get("error") != "internal", (opening[:80], got)
        after = svc.snapshot()
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        assert not changed, changed  # a socket changes nothing but presence and its lease (not compared)

    run()
    # The service still serves a plain client after all that.
    got = asyncio.run(_socket_session(svc, world.tables["prsi"], valid_auth, ['{"type":"ping"}']))
    assert [json.loads(d)["type"] for _, d, _ in got] == ["state", "pong"]
    assert SENT["socket"] >= examples(300)


def test_known_bad_socket_frames_are_refused_with_4400_and_nested_junk_closes_it_too(world):
    """The frames that crashed the socket with 1011 and a traceback before (issue 16); junk after
    the auth is ``bad_message`` and the close 4400 as well (issue 27.5, CONTRACTS §3)."""
    import aiohttp

    svc = world.svc
    init = json.dumps(svc.init_data(ANN))
    for since in ("Infinity", "-Infinity", "NaN", "1e999", '"x"', "1.5", "true", "-1", str(10**30)):
        got = asyncio.run(_socket_session(svc, world.tables["prsi"], f'{{"type":"auth","init_data":{init},'
                                                                     f'"since":{since}}}', []))
        assert json.loads(got[0][1])["error"] == "bad_message", (since, got)
        assert got[1][0] == aiohttp.WSMsgType.CLOSE and got[1][1] == 4400, (since, got)
    nested = '{"type":"auth","init_data":' + _nested(3000) + "}"  # under the 8 KiB frame limit
    got = asyncio.run(_socket_session(svc, world.tables["prsi"], nested, []))
    assert got[1][1] == 4400, got
    valid = json.dumps({"type": "auth", "init_data": svc.init_data(ANN)})
    got = asyncio.run(_socket_session(svc, world.tables["prsi"], valid, [_nested(3000), "NaN"]))
    kinds = [json.loads(d)["type"] for t, d, _ in got if t == aiohttp.WSMsgType.TEXT]
    assert kinds == ["state", "error"], got
    assert got[-1][0] == aiohttp.WSMsgType.CLOSE and got[-1][1] == 4400, got
