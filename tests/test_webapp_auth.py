"""initData checks (webapp/auth.py) through the API, as Telegram signs it."""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from conftest import WEB_BOT_TOKEN

from webapp.auth import local_user_id, verify_init_data
from webapp.errors import ApiError

DAY = 24 * 3600


def telegram_sign(pairs: list[tuple[str, str]], token: str) -> str:
    """Sign raw ``pairs`` independently of webapp.auth, straight from Telegram's docs."""
    check = "\n".join(f"{k}={v}" for k, v in sorted(pairs))
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    digest = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode([*pairs, ("hash", digest)], quote_via=quote)


def tma(init_data: str) -> dict[str, str]:
    return {"Authorization": f"tma {init_data}"}


async def test_valid_init_data_signs_in_and_saves_the_user(web_client, web_init_data, store):
    client = await web_client()
    resp = await client.get("/api/me", headers=tma(web_init_data(111, "Ann")))
    assert resp.status == 200
    assert (await resp.json())["user"] == {"id": 111, "name": "Ann", "username": None, "language": "en"}
    saved = await store.get_user(111)
    assert saved is not None and saved.name == "Ann"


async def test_reuse_within_a_day_is_normal(web_client, web_init_data):
    client = await web_client()
    init = web_init_data(111, auth_date=int(time.time()) - DAY + 120)
    for _ in range(3):
        assert (await client.get("/api/me", headers=tma(init))).status == 200


async def test_direct_link_init_data_with_escaped_photo_url(web_client):
    """A direct link (t.me/bot/app?startapp=…) gives chat_type/chat_instance, no query_id;
    the user JSON keeps Telegram's escaped slashes and is signed in that form."""
    client = await web_client()
    user = (
        '{"id":279058397,"first_name":"Vladislav","last_name":"Kibenko","username":"vdkfrost",'
        '"language_code":"ru","is_premium":true,"allows_write_to_pm":true,'
        '"photo_url":"https:\\/\\/t.me\\/i\\/userpic\\/320\\/x.jpg"}'
    )
    assert "\\/" in user
    pairs = [
        ("user", user),
        ("chat_instance", "-3788475317572404878"),
        ("chat_type", "private"),
        ("start_param", "AbCd123"),
        ("auth_date", str(int(time.time()))),
        ("signature", "6fbdaab833d39f54518bd5c3eb3f511d035e68cb"),
    ]
    resp = await client.get("/api/me", headers=tma(telegram_sign(pairs, WEB_BOT_TOKEN)))
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    assert body["user"]["id"] == 279058397
    assert body["user"]["name"] == "Vladislav Kibenko"
    assert body["start_param"] == "AbCd123"


async def test_unescaping_the_photo_url_breaks_the_signature(web_client):
    client = await web_client()
    escaped = '{"id":5,"first_name":"A","photo_url":"https:\\/\\/t.me\\/i\\/userpic\\/320\\/x.jpg"}'
    signed = telegram_sign([("user", escaped), ("auth_date", str(int(time.time())))], WEB_BOT_TOKEN)
    tampered = urlencode([(k, v.replace("\\/", "/")) for k, v in parse_qsl(signed)], quote_via=quote)
    assert (await client.get("/api/me", headers=tma(signed))).status == 200
    assert (await client.get("/api/me", headers=tma(tampered))).status == 401


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": ""},
        {"Authorization": "tma "},
        {"Authorization": "Bearer abc"},
        {"Authorization": "tma not-a-query-string"},
        {"Authorization": "tma user=%7B%7D&auth_date=1"},
    ],
    ids=["missing", "empty", "tma-empty", "bearer", "junk", "no-hash"],
)
async def test_missing_or_malformed_is_401_json(web_client, headers):
    client = await web_client()
    resp = await client.get("/api/me", headers=headers)
    assert resp.status == 401
    body = await resp.json()
    assert body["error"] == "unauthorized" and isinstance(body["detail"], str)


async def test_forged_hash(web_client, web_init_data):
    client = await web_client()
    init = web_init_data(111)
    pairs = parse_qsl(init)
    forged = urlencode([(k, ("0" * 64 if k == "hash" else v)) for k, v in pairs])
    assert (await client.get("/api/me", headers=tma(forged))).status == 401
    # a changed user id under the original hash
    changed = init.replace("111", "112")
    assert (await client.get("/api/me", headers=tma(changed))).status == 401


async def test_expired_auth_date(web_client, web_init_data):
    client = await web_client()
    old = web_init_data(111, auth_date=int(time.time()) - DAY - 60)
    resp = await client.get("/api/me", headers=tma(old))
    assert resp.status == 401
    assert (await resp.json())["error"] == "auth_expired"


async def test_auth_date_far_in_the_future(web_client, web_init_data):
    client = await web_client()
    future = web_init_data(111, auth_date=int(time.time()) + 3600)
    assert (await client.get("/api/me", headers=tma(future))).status == 401


async def test_foreign_bot_signature(web_client, web_init_data):
    client = await web_client()
    foreign = web_init_data(111, token="987654321:AAForeignBotTokenxxxxxxxxxxxxxxxxxxx")
    resp = await client.get("/api/me", headers=tma(foreign))
    assert resp.status == 401
    assert (await resp.json())["error"] == "unauthorized"


async def test_init_data_without_user(web_client):
    client = await web_client()
    init = telegram_sign([("auth_date", str(int(time.time()))), ("query_id", "x")], WEB_BOT_TOKEN)
    assert (await client.get("/api/me", headers=tma(init))).status == 401


def test_verify_unit_max_age_boundary(web_init_data):
    now = float(int(time.time()))
    init = web_init_data(7, auth_date=int(now) - 100)
    assert verify_init_data(init, WEB_BOT_TOKEN, max_age=100, now=now).id == 7
    with pytest.raises(ApiError) as e:
        verify_init_data(init, WEB_BOT_TOKEN, max_age=99, now=now)
    assert e.value.code == "auth_expired"


# --- local sign-in -------------------------------------------------------------------------
async def test_local_login_refused_when_a_token_is_configured(web_client):
    for local_play in (False, True):
        client = await web_client(local_play=local_play)
        resp = await client.post("/api/local/login", json={"name": "Ann"})
        assert resp.status == 404
        assert (await resp.json())["error"] == "not_found"
        cfg = await (await client.get("/api/config")).json()
        assert cfg["local"] is False


async def test_local_login_and_tables(web_client, store):
    client = await web_client(bot_token=None, local_play=True)
    assert (await (await client.get("/api/config")).json())["local"] is True
    resp = await client.post("/api/local/login", json={"name": "  Alice "})
    assert resp.status == 200
    body = await resp.json()
    assert body["user"] == {"id": local_user_id("alice"), "name": "Alice"}
    again = await (await client.post("/api/local/login", json={"name": "Alice"})).json()
    assert again["user"]["id"] == body["user"]["id"]  # stable id per name
    headers = tma(body["init_data"])
    me = await (await client.get("/api/me", headers=headers)).json()
    assert me["user"]["id"] == body["user"]["id"]

    resp = await client.post("/api/local/tables", json={"game": "penki", "players": 4}, headers=headers)
    assert resp.status == 201, await resp.text()
    made = await resp.json()
    seats = made["table"]["seats"]
    assert [s["computer"] for s in seats] == [False, True, True, True]
    assert made["seat"] == f"u{body['user']['id']}"
    assert made["table"]["settings"]["turn_seconds"] is None
    assert made["view"]["hand"] is not None
    table = await store.get_table(made["table"]["id"])
    assert table is not None and table.seat_of(body["user"]["id"]) == made["seat"]

    for bad in ({"game": "prsi", "players": 6}, {"game": "uno", "players": 2}, {"game": "prsi", "players": "3"}):
        resp = await client.post("/api/local/tables", json=bad, headers=headers)
        assert resp.status == 400, bad
    for bad in ({"name": ""}, {"name": "x" * 40}, {"nom": "A"}, ["A"]):
        assert (await client.post("/api/local/login", json=bad)).status == 400


async def test_local_init_data_is_not_accepted_with_a_real_token(web_client):
    local = await web_client(bot_token=None, local_play=True)
    init = (await (await local.post("/api/local/login", json={"name": "Eve"})).json())["init_data"]
    real = await web_client()
    assert (await real.get("/api/me", headers=tma(init))).status == 401


async def test_no_token_and_no_local_play_nobody_signs_in(web_client, web_init_data):
    client = await web_client(bot_token=None, local_play=False)
    assert (await client.post("/api/local/login", json={"name": "Ann"})).status == 404
    assert (await client.get("/api/me", headers=tma(web_init_data(1)))).status == 401


# -- long sessions (issue 12 point 6) --------------------------------------------------------------
async def test_a_server_issued_session_outlives_initdata_and_is_renewed_while_in_use(web_client, store,
                                                                                     web_init_data):
    import time

    from webapp.keys import AUTH

    client = await web_client()
    auth = client.app[AUTH]
    now = [time.time()]
    auth.clock = lambda: now[0]
    init = web_init_data(4242, "Long")
    issued = await client.post("/api/session", headers={"Authorization": f"tma {init}"})
    assert issued.status == 200
    body = await issued.json()
    token, expires = body["session"], body["expires_at"]
    assert abs(expires - now[0] - auth.session_ttl) < 1
    me = await client.get("/api/me", headers={"Authorization": f"session {token}"})
    assert (await me.json())["user"]["id"] == 4242
    # a day and more later the initData is refused, but the session (renewed meanwhile) works
    for _ in range(4):
        now[0] += auth.session_ttl * 0.6
        renewed = await (await client.post("/api/session", headers={"Authorization": f"session {token}"})).json()
        assert renewed["expires_at"] > expires
        token, expires = renewed["session"], renewed["expires_at"]
    old_init = await client.get("/api/me", headers={"Authorization": f"tma {init}"})
    assert old_init.status == 401 and (await old_init.json())["error"] == "auth_expired"
    assert (await client.get("/api/me", headers={"Authorization": f"session {token}"})).status == 200
    # the socket takes the session too
    from store import LobbySettings, Seat

    seats = [Seat(seat="u4242", user_id=4242, name="Long"), Seat(seat="c1", name="C", computer=True)]
    table = await store.create_table(game="prsi", seats=seats, seed=1,
                                     settings=LobbySettings(players=2, turn_seconds=None))
    ws = await client.ws_connect(f"/ws/tables/{table.id}")
    await ws.send_json({"type": "auth", "session": token})
    msg = await ws.receive_json(timeout=5)
    assert msg["type"] == "state" and msg["seat"] == "u4242", msg
    await ws.close()
    # unused past its life: refused, with a code the app shows as "reopen Karty"
    now[0] = expires + 1
    late = await client.get("/api/me", headers={"Authorization": f"session {token}"})
    assert late.status == 401 and (await late.json())["error"] == "session_expired"
    # forged or another server's: refused
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    now[0] = expires - 10
    assert (await client.get("/api/me", headers={"Authorization": f"session {forged}"})).status == 401
    assert (await client.get("/api/me", headers={"Authorization": "session garbage"})).status == 401
