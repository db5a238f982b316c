"""The JSON API (webapp/api.py, errors.py, openapi.py, static files) with aiohttp_client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

import engine
from engine.cards import PENKI_PACK, PRSI_PACK
from store import LobbySettings, Seat
from store.common import ROUND_HOLD
from webapp.keys import STORE
from webapp.openapi import document
from webapp.ratelimit import TokenBuckets

ANN, BOB, EVE = 111, 222, 333


def tma(init_data: str) -> dict[str, str]:
    return {"Authorization": f"tma {init_data}"}


async def new_table(store, game: str = "prsi", humans=(ANN, BOB), computers: int = 0, seed: int = 7):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in humans]
    seats += [Seat(seat=f"c{i}", name=f"C{i}", computer=True) for i in range(1, computers + 1)]
    settings = LobbySettings(players=len(seats), turn_seconds=None)
    return await store.create_table(game=game, seats=seats, settings=settings, seed=seed)


def uid_of(seat: str) -> int:
    return int(seat[1:])


@pytest.fixture
def auth(web_init_data):
    """``auth(uid)`` → the headers of that user."""
    return lambda uid: tma(web_init_data(uid, f"P{uid}"))


async def test_config_needs_no_auth(web_client):
    client = await web_client(bot_username="karty_bot", webapp_short_name="play")
    body = await (await client.get("/api/config")).json()
    assert abs(body.pop("server_time") - __import__("time").time()) < 60  # every answer carries it
    assert body == {"local": False, "bot_username": "karty_bot", "app_short_name": "play", "round_hold": ROUND_HOLD}


async def test_table_view_for_a_player_and_a_spectator(web_client, store, auth):
    client = await web_client()
    table = await new_table(store)
    resp = await client.get(f"/api/tables/{table.id}", headers=auth(ANN))
    assert resp.status == 200
    body = await resp.json()
    assert body["seat"] == f"u{ANN}" and body["version"] == table.version
    assert body["table"]["id"] == table.id and len(body["table"]["seats"]) == 2
    assert "deadline" in body and body["view"]["hand"] is not None
    assert sorted(body["view"]["hand"]) == sorted(engine.observer(table.state)["hands"][f"u{ANN}"])

    spectator = await (await client.get(f"/api/tables/{table.id}", headers=auth(EVE))).json()
    assert spectator["seat"] is None and spectator["view"]["hand"] is None
    assert spectator["view"]["legal"] == []

    resp = await client.get("/api/tables/nope", headers=auth(ANN))
    assert resp.status == 404 and (await resp.json())["error"] == "not_found"
    assert (await client.get(f"/api/tables/{table.id}")).status == 401


async def test_post_actions_and_the_error_statuses(web_client, store, auth):
    client = await web_client()
    table = await new_table(store)
    mover = table.state.to_move
    other = next(s for s in table.state.players if s != mover)
    url = f"/api/tables/{table.id}/actions"
    legal = engine.legal_actions(table.state, mover)

    # out of turn: 422 with the engine's reason
    resp = await client.post(url, json={"action": {"a": "draw"}}, headers=auth(uid_of(other)))
    assert resp.status == 422
    assert (await resp.json())["error"] == "not_your_turn"
    # another seat's move: 403
    resp = await client.post(url, json={"action": legal[0], "seat": mover}, headers=auth(uid_of(other)))
    assert resp.status == 403 and (await resp.json())["error"] == "not_your_seat"
    # not seated: 403
    resp = await client.post(url, json={"action": {"a": "draw"}}, headers=auth(EVE))
    assert resp.status == 403 and (await resp.json())["error"] == "not_seated"
    # stale version: 409
    resp = await client.post(url, json={"action": legal[0], "version": table.version + 5}, headers=auth(uid_of(mover)))
    assert resp.status == 409 and (await resp.json())["error"] == "stale"
    # an unknown action: 422 bad_action
    resp = await client.post(url, json={"action": {"a": "fly"}}, headers=auth(uid_of(mover)))
    assert resp.status == 422 and (await resp.json())["error"] == "bad_action"

    # a legal move at the right version
    body = {"action": legal[0], "version": table.version, "client_action_id": "act-1", "seat": mover}
    resp = await client.post(url, json=body, headers=auth(uid_of(mover)))
    assert resp.status == 200, await resp.text()
    done = await resp.json()
    assert done["version"] == table.version + 1 and done["events"] and done["duplicate"] is False
    assert done["view"]["seat"] == mover
    # the same client_action_id again: applied once
    again = await (await client.post(url, json=body, headers=auth(uid_of(mover)))).json()
    assert again["duplicate"] is True and again["version"] == done["version"]
    assert (await store.get_table(table.id)).version == table.version + 1


async def test_a_whole_version_written_as_a_float_is_that_version(web_client, store, auth):
    """Issue 27.5: ``version: 3.0`` is the integer 3 (JSON Schema's integer, as the OpenAPI
    document says), on POST and on the socket; ``3.5`` and ``true`` stay 400."""
    client = await web_client()
    table = await new_table(store)
    mover = table.state.to_move
    url = f"/api/tables/{table.id}/actions"
    move = engine.legal_actions(table.state, mover)[0]
    for bad in (b"%d.5" % table.version, b"true"):
        raw = b'{"action": %s, "version": %s}' % (json.dumps(move).encode(), bad)
        assert (await client.post(url, data=raw, headers=auth(uid_of(mover)))).status == 400, bad
    stale = b'{"action": {"a": "draw"}, "version": %d.0}' % (table.version + 5)
    resp = await client.post(url, data=stale, headers=auth(uid_of(mover)))
    assert resp.status == 409 and (await resp.json())["error"] == "stale"
    raw = b'{"action": %s, "version": %d.0}' % (json.dumps(move).encode(), table.version)
    resp = await client.post(url, data=raw, headers=auth(uid_of(mover)))
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["version"] == table.version + 1


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"junk",
        b"{",
        b"[]",
        b'"draw"',
        b'{"action": "draw"}',
        b'{"action": {"a": 5}}',
        b'{"action": {"a": "play", "card": 10}}',
        b'{"action": {"a": "draw"}, "version": "3"}',
        b'{"action": {"a": "draw"}, "version": -1}',
        b'{"action": {"a": "draw"}, "client_action_id": 12}',
        b'{"action": {"a": "draw"}, "extra": 1}',
        b'{"action": {"a": "draw", "p": "u111"}}',
        b'{"action": {"a": "DRAW"}}',
        b'{"action": {"a": "draw", "card": "' + b"x" * 100 + b'"}}',
        b"\xff\xfe",
    ],
)
async def test_junk_and_wrong_types_are_400(web_client, store, auth, raw):
    client = await web_client()
    table = await new_table(store)
    resp = await client.post(f"/api/tables/{table.id}/actions", data=raw, headers=auth(ANN))
    assert resp.status == 400, raw
    body = await resp.json()
    assert body["error"] == "bad_request" and body["detail"]


async def test_huge_body_is_413(web_client, store, auth):
    client = await web_client()
    table = await new_table(store)
    huge = json.dumps({"action": {"a": "draw"}, "client_action_id": "x" * 40_000})
    resp = await client.post(f"/api/tables/{table.id}/actions", data=huge, headers=auth(ANN))
    assert resp.status == 413
    assert (await resp.json())["error"] == "too_large"

    async def chunks():  # no Content-Length: the limit holds for a streamed body too
        for _ in range(40):
            yield b"x" * 1024

    resp = await client.post(f"/api/tables/{table.id}/actions", data=chunks(), headers=auth(ANN))
    assert resp.status == 413
    resp = await client.post("/api/local/login", data=huge)
    assert resp.status in (404, 413)  # local play off: 404 comes first


async def test_the_webhook_may_take_bodies_over_the_api_limit(aiohttp_client, store):
    from webapp.app import create_app
    from webapp.settings import WebSettings

    async def echo(request):
        return web.json_response({"n": len(await request.read())})

    app = create_app(WebSettings(bot_token="1:x", run_worker=False), store)
    app.router.add_post("/telegram/webhook", echo)  # a stand-in for the bot's webhook route
    client = await aiohttp_client(app)
    resp = await client.post("/telegram/webhook", data=b"{" + b" " * 100_000 + b"}")
    assert resp.status == 200 and (await resp.json())["n"] == 100_002


async def test_rate_limit_429(web_client, store, auth):
    client = await web_client(action_rate=0.5, action_burst=3)
    now = [1000.0]  # the store's clock (the buckets' time) stands still unless the test moves it
    client.app[STORE].clock = lambda: now[0]
    table = await new_table(store)
    url = f"/api/tables/{table.id}/actions"
    statuses = []
    for _ in range(5):
        resp = await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))
        statuses.append(resp.status)
    assert statuses[:3] == [422, 422, 422]
    assert statuses[3:] == [429, 429]
    resp = await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))
    body = await resp.json()
    assert body["error"] == "too_fast" and body["retry_after"] > 0
    assert int(resp.headers["Retry-After"]) >= 1
    # another user has a bucket of their own
    assert (await client.post(url, json={"action": {"a": "fly"}}, headers=auth(BOB))).status == 422
    now[0] += 1.9  # not yet a whole token back at 0.5/s
    assert (await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))).status == 429
    now[0] += 0.2  # now one is
    assert (await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))).status == 422
    assert (await client.post(url, json={"action": {"a": "fly"}}, headers=auth(ANN))).status == 429


def test_token_bucket_allows_the_default_burst_then_refills():
    now = [0.0]
    buckets = TokenBuckets(10, 20, clock=lambda: now[0])
    assert all(buckets.take(1) == 0.0 for _ in range(20))
    assert buckets.take(1) > 0
    now[0] += 0.1  # one token back after 0.1 s at 10/s
    assert buckets.take(1) == 0.0
    assert buckets.take(1) > 0
    now[0] += 10
    assert all(buckets.take(1) == 0.0 for _ in range(20))


def cards_in(obj: Any, pack: frozenset[str]) -> set[str]:
    """Every card string anywhere in ``obj`` (keys and values)."""
    found: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            found |= cards_in(k, pack) | cards_in(v, pack)
    elif isinstance(obj, list):
        for v in obj:
            found |= cards_in(v, pack)
    elif isinstance(obj, str) and obj in pack:
        found.add(obj)
    return found


def hidden_from(state: Any, seat: str | None) -> tuple[set[str], set[str]]:
    """(cards never to show ``seat`` outside history, cards never to show anyone anywhere)."""
    obs = engine.observer(state)
    others = {c for s, hand in obs["hands"].items() if s != seat for c in hand}
    stock = set(obs.get("stock") or [])
    stumps = {c for cards in (obs.get("stumps") or {}).values() for c in cards}
    if state.game == "penki":
        return others | stock | stumps, stock | stumps
    return others | stock, set()


@pytest.mark.parametrize("game", ["prsi", "penki"])
async def test_views_never_hold_another_hand_the_stock_or_stumps(web_client, store, auth, game):
    client = await web_client(action_rate=1000, action_burst=1000)  # a script plays faster than people
    humans = (ANN, BOB, EVE)
    table = await new_table(store, game=game, humans=humans, seed=11)
    pack = frozenset(PRSI_PACK if game == "prsi" else PENKI_PACK)
    url = f"/api/tables/{table.id}"
    for _ in range(60):
        table = await store.get_table(table.id)
        if table.state.over:
            break
        for viewer in (*humans, 999):
            body = await (await client.get(url, headers=auth(viewer))).json()
            view = body["view"]
            seat = body["seat"]
            own = set(view["hand"] or [])
            assert own == set(engine.observer(table.state)["hands"].get(seat, [])) if seat else not own
            secret, never = hidden_from(table.state, seat)
            current = {k: v for k, v in view.items() if k != "last"}
            assert not cards_in(current, pack) & secret, (seat, cards_in(current, pack) & secret)
            assert not cards_in(body, pack) & never
            assert "stock_order" not in view and "stumps" not in json.dumps(view).replace('"stumps":', "")
        movers = engine.awaiting(table.state)
        seat = movers[0]
        action = engine.computer_action(table.state, seat)
        resp = await client.post(f"{url}/actions", json={"action": action}, headers=auth(uid_of(seat)))
        assert resp.status == 200, await resp.text()


async def test_chat_tables_and_my_tables(web_client, store, auth):
    client = await web_client()
    seats = [Seat(seat=f"u{ANN}", user_id=ANN, name="Ann"), Seat(seat=f"u{BOB}", user_id=BOB, name="Bob")]
    table = await store.create_table(game="penki", seats=seats, chat_id=-100123, seed=3)
    body = await (await client.get("/api/chats/-100123/tables", headers=auth(ANN))).json()  # seated there
    assert [t["id"] for t in body["tables"]] == [table.id]
    assert (await client.get("/api/chats/-100123/tables", headers=auth(EVE))).status == 403  # not in the chat
    assert (await client.get("/api/chats/abc/tables", headers=auth(EVE))).status == 400
    mine = await (await client.get("/api/tables", headers=auth(ANN))).json()
    assert table.id in [t["id"] for t in mine["tables"]]
    none = await (await client.get("/api/tables", headers=auth(EVE))).json()
    assert none["tables"] == []


async def test_my_tables_say_where_each_game_stands(web_client, store, auth):
    """Issue 17 point 9: each listed table names the caller's seat, whose turn it is and
    the round (Prší) or phase (Penki), so two tables of one game are told apart."""
    client = await web_client()
    seats = [Seat(seat=f"u{ANN}", user_id=ANN, name="Ann"), Seat(seat=f"u{BOB}", user_id=BOB, name="Bob")]
    prsi = await store.create_table(game="prsi", seats=seats, chat_id=-100123, seed=3)
    penki = await store.create_table(game="penki", seats=seats, chat_id=-100123, seed=4)
    listed = {t["id"]: t for t in (await (await client.get("/api/tables", headers=auth(BOB))).json())["tables"]}
    assert listed[prsi.id]["seat"] == f"u{BOB}" and listed[prsi.id]["round"] == 1 and listed[prsi.id]["rounds"] == 5
    assert listed[prsi.id]["to_move"] == prsi.state.to_move
    assert listed[penki.id]["phase"] == 1 and listed[penki.id]["to_move"] == penki.state.to_move
    assert listed[prsi.id]["chat_title"] is None  # the bot has not seen the group's title yet
    await store.set_chat_title(-100123, "Friday cards")
    listed = {t["id"]: t for t in (await (await client.get("/api/tables", headers=auth(BOB))).json())["tables"]}
    assert listed[prsi.id]["chat_title"] == listed[penki.id]["chat_title"] == "Friday cards"


async def test_leaderboard_and_rating(web_client, store, auth):
    client = await web_client()
    await store.seen_in_chat(-1001, ANN)  # the bot saw Ann in that chat (webapp.privacy)
    for chat in ("", "&chat_id=-1001"):
        for period in ("week", "month"):
            resp = await client.get(f"/api/leaderboard?game=prsi&period={period}{chat}", headers=auth(ANN))
            assert resp.status == 200, await resp.text()
            body = await resp.json()
            assert body["rows"] == [] and body["period"] == period
            assert body["period_key"].startswith("20")
    for bad in ("game=uno", "game=prsi&period=year", "game=prsi&chat_id=x", "game=prsi&limit=0"):
        assert (await client.get(f"/api/leaderboard?{bad}", headers=auth(ANN))).status == 400
    rating = await (await client.get("/api/rating?game=penki", headers=auth(ANN))).json()
    assert {"week", "month", "week_key", "month_key", "last"} <= set(rating)
    assert (await client.get("/api/rating", headers=auth(ANN))).status == 400
    assert (await client.get("/api/leaderboard?game=prsi")).status == 401


async def test_method_not_allowed_and_unknown_api_are_json(web_client, auth):
    client = await web_client()
    resp = await client.post("/api/me", headers=auth(ANN))
    assert resp.status == 405 and (await resp.json())["error"] == "method_not_allowed"
    resp = await client.get("/api/nothing-here", headers=auth(ANN))
    assert resp.status == 404 and (await resp.json())["error"] == "not_found"


async def test_openapi_lists_every_route(web_client):
    client = await web_client()
    resp = await client.get("/api/openapi.json")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["openapi"].startswith("3.1") and doc == json.loads(json.dumps(document()))
    routes = {
        (r.resource.canonical, r.method.lower())
        for r in client.app.router.routes()
        if r.resource is not None and r.resource.canonical.startswith(("/api/", "/ws/")) and r.method != "HEAD"
    }
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert routes == documented
    refs = {m for m in json.dumps(doc).split('"$ref": "#/components/schemas/')[1:]}
    for ref in refs:
        assert ref.split('"')[0] in doc["components"]["schemas"]


GROUP = -100555


async def test_every_route_naming_a_table_keeps_an_outsider_out(web_client, store, auth, web_init_data):
    """Issue 27.2: every route of the OpenAPI document naming a table answers 403 ``not_in_chat``
    to someone not in the table's chat, as ``GET /api/tables/{id}`` does (a finished game's
    replay shows every hand; a live one's can be followed by polling), and says so in the document;
    a player and someone the bot saw in the chat still get in."""
    import aiohttp

    seats = [Seat(seat=f"u{ANN}", user_id=ANN, name="Ann"), Seat(seat="c1", name="C1", computer=True)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=GROUP, seed=3,
                                     settings=LobbySettings(players=2, turn_seconds=None))
    await store.seen_in_chat(GROUP, BOB)
    client = await web_client()
    doc = document()
    named = [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()
             if "{id}" in path]
    assert len(named) >= 7  # the table, its actions, replay, rematch (get, post, decline), the socket
    body = {"action": {"a": "draw"}}
    for path, method, op in named:
        url = path.replace("{id}", table.id)
        kwargs = {"json": body} if "requestBody" in op else {}
        resp = await client.request(method.upper(), url, headers=auth(EVE), **kwargs)
        assert resp.status == 403, (method, path, resp.status, await resp.text())
        assert (await resp.json())["error"] == "not_in_chat", (method, path)
        assert "not_in_chat" in op["responses"]["403"]["description"], (method, path)
    # the replay and the rematch state are there for the player and the chat's people
    for uid in (ANN, BOB):
        assert (await client.get(f"/api/tables/{table.id}/replay", headers=auth(uid))).status == 200
        assert (await client.get(f"/api/tables/{table.id}/rematch", headers=auth(uid))).status == 200
    # signed in by the socket's first frame instead: the close says it
    async with client.ws_connect(f"/ws/tables/{table.id}") as ws:
        await ws.send_json({"type": "auth", "init_data": web_init_data(EVE, "Eve")})
        msg = await ws.receive_json()
        assert msg["error"] == "not_in_chat"
        assert (await ws.receive()).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert ws.close_code == 4403
    # nothing changed for the outsider's tries
    assert (await store.get_table(table.id)).version == table.version
    assert await store.rematch_of(table.id) is None


async def test_static_files_and_cache_headers(web_client):
    client = await web_client()
    resp = await client.get("/")
    assert resp.status == 200
    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.content_type == "text/html"
    assert "<html" in (await resp.text()).lower()
    for path in ("/i18n.js", "/static/i18n.js"):
        resp = await client.get(path)
        assert resp.status == 200, path
        assert resp.headers["Cache-Control"] == "no-cache" and "javascript" in resp.content_type
        etag = resp.headers["ETag"]
        assert (await client.get(path, headers={"If-None-Match": etag})).status == 304
    for bad in ("/static/../app.py", "/static/%2e%2e/app.py", "/../app.py", "/.hidden", "/nope.js", "/static/"):
        assert (await client.get(bad)).status == 404, bad
    assert (await client.get("/api/config")).headers["X-Content-Type-Options"] == "nosniff"


async def test_store_unavailable_is_503(web_client, auth, store):
    client = await web_client()

    async def down(*args, **kwargs):
        import redis.exceptions

        raise redis.exceptions.ConnectionError("down")

    client.app[STORE].current = down
    try:
        resp = await client.get("/api/tables/x", headers=auth(ANN))
    finally:
        del client.app[STORE].current
    assert resp.status == 503 and (await resp.json())["error"] == "unavailable"
    assert resp.headers["Retry-After"] == "1"


async def test_healthz_answers_while_redis_does(web_client, monkeypatch):
    client = await web_client()
    resp = await client.get("/healthz")
    assert resp.status == 200 and (await resp.json()) == {"ok": True}

    async def down() -> None:
        raise ConnectionError("redis is gone")

    monkeypatch.setattr(client.app[STORE], "ping", down)
    resp = await client.get("/healthz")
    assert resp.status == 503 and (await resp.json()) == {"ok": False}


async def test_every_answer_carries_the_server_time(web_client, auth):
    """Issue 12 point 5: answers and errors carry ``server_time`` (the app keeps the offset)."""
    import time

    client = await web_client()
    for path, headers, status in (("/api/me", auth(ANN), 200), ("/api/tables/nope", auth(ANN), 404),
                                  ("/api/me", {}, 401), ("/api/leaderboard?game=uno", auth(ANN), 400)):
        resp = await client.get(path, headers=headers)
        assert resp.status == status, path
        assert abs((await resp.json())["server_time"] - time.time()) < 60, path


async def test_a_body_cut_off_by_the_client_going_away_changes_nothing_and_logs_no_traceback(
        web_client, store, auth, caplog):
    """A player's app closing its connection in the middle of a move's body: nothing is
    applied, and the log has no "unhandled error" traceback (a client that went away)."""
    import logging

    client = await web_client()
    table = await new_table(store)
    headers = auth(ANN)
    body = b'{"action": {"a": "draw"}, "client_action_id": "cut-off"}'
    head = (f"POST /api/tables/{table.id}/actions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {headers['Authorization']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body) + 100}\r\n\r\n").encode()
    caplog.set_level(logging.INFO)
    _reader, writer = await asyncio.open_connection(client.server.host, client.server.port)
    writer.write(head + body[:20])
    await writer.drain()
    writer.close()  # gone before the rest of the body
    await writer.wait_closed()
    # wait until the server has handled it (its access-log line), a hang guard only
    line = f"POST /api/tables/{table.id}/actions"
    for _ in range(6000):
        if any(r.name == "aiohttp.access" and line in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the cut-off request was never handled")
    assert (await store.get_table(table.id)).version == table.version
    server_errors = [r for r in caplog.records if r.levelno >= logging.ERROR
                     and r.name.split(".")[0] in ("aiohttp", "webapp", "store", "asyncio")]
    assert not server_errors, caplog.text


async def test_leave_a_table_hands_the_seat_to_the_computer(web_client, store, auth):
    """Issue 25 item 6: ``POST /api/tables/{id}/leave`` — only a seated person, on their turn,
    idempotent; the seat is the computer's from then on (their own moves are 409 ``left``)."""
    from store.operate import end_table

    client = await web_client()
    table = await new_table(store, humans=(ANN,), computers=1)
    now = store.clock()
    while f"u{ANN}" not in engine.awaiting(table.state):  # the computer may deal the first card
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
        table = await store.get_table(table.id)
    url = f"/api/tables/{table.id}/leave"
    assert (await client.post(url)).status == 401
    resp = await client.post(url, headers=auth(EVE))
    assert resp.status == 403 and (await resp.json())["error"] == "not_seated"
    resp = await client.post("/api/tables/nope/leave", headers=auth(ANN))
    assert resp.status == 404 and (await resp.json())["error"] == "not_found"
    resp = await client.post(url, headers=auth(ANN))
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    mine = next(s for s in body["table"]["seats"] if s["seat"] == f"u{ANN}")
    assert mine["left"] and mine["auto"] and body["seat"] == f"u{ANN}" and body["version"] == table.version + 1
    again = await (await client.post(url, headers=auth(ANN))).json()  # idempotent
    assert again["version"] == body["version"] == await store.table_version(table.id)
    listed = next(t for t in (await (await client.get("/api/tables", headers=auth(ANN))).json())["tables"]
                  if t["id"] == table.id)
    assert next(s for s in listed["seats"] if s["seat"] == f"u{ANN}")["left"]
    table = await store.get_table(table.id)
    while f"u{ANN}" not in engine.awaiting(table.state):  # the computer moves, then the seat is awaited again
        now = max(now, await store.next_due(table.id)) + 0.01
        await store.tick(now=now)
        table = await store.get_table(table.id)
    legal = engine.legal_actions(table.state, f"u{ANN}")[0]
    resp = await client.post(f"/api/tables/{table.id}/actions", json={"action": legal}, headers=auth(ANN))
    assert resp.status == 409 and (await resp.json())["error"] == "left"

    people = await new_table(store)  # two people: the one not to move may not leave yet
    waiting = next(s for s in people.state.players if s not in engine.awaiting(people.state))
    resp = await client.post(f"/api/tables/{people.id}/leave", headers=auth(uid_of(waiting)))
    assert resp.status == 409 and (await resp.json())["error"] == "not_your_turn"
    await end_table(store, people.id)
    resp = await client.post(f"/api/tables/{people.id}/leave", headers=auth(uid_of(people.state.to_move)))
    assert resp.status == 409 and (await resp.json())["error"] == "over"
