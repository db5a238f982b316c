"""Prší table variants through the HTTP API (local play): a table made with variants, the
PV4 ``cards`` and PV5 ``rank`` fields accepted as shapes and judged by the engine."""

from __future__ import annotations

import socket

from webapp.__main__ import build
from webapp.settings import WebSettings


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_local_table_with_variants_and_group_actions(aiohttp_client):
    settings = WebSettings(redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=True, bot_token=None,
                           run_worker=False)
    client = await aiohttp_client(await build(settings))
    login = await (await client.post("/api/local/login", json={"name": "Tester"})).json()
    headers = {"Authorization": f"tma {login['init_data']}"}
    bad = await client.post("/api/local/tables", json={"game": "penki", "players": 3, "variants": ["PV1"]},
                            headers=headers)
    assert bad.status == 400
    bad = await client.post("/api/local/tables", json={"game": "prsi", "players": 3, "variants": ["PV8"]},
                            headers=headers)
    assert bad.status == 400
    resp = await client.post("/api/local/tables", json={"game": "prsi", "players": 2, "variants": ["PV5", "PV4"]},
                             headers=headers)
    assert resp.status == 201, await resp.text()
    made = await resp.json()
    table_id = made["table"]["id"]
    assert made["table"]["settings"]["variants"] == ["PV4", "PV5"] and made["table"]["rated"] is False
    view = made["view"]
    assert view["variants"] == ["PV4", "PV5"] and len(view["hand"]) == 6
    url = f"/api/tables/{table_id}/actions"
    # A group of the wrong JSON type is a 400 of the API; a list of strings is for the engine
    # to judge (PV9.6: an empty group is bad_action, PV9.8: at a table without PV4 no field).
    assert (await client.post(url, json={"action": {"a": "play", "cards": "9h"}}, headers=headers)).status == 400
    resp = await client.post(url, json={"action": {"a": "play", "cards": []}}, headers=headers)
    assert resp.status == 422 and (await resp.json())["error"] == "bad_action"
    not_held = [c for c in ("7h", "8h", "9h", "10h", "Jh", "Qh", "Kh", "Ah") if c not in view["hand"]][:2]
    resp = await client.post(url, json={"action": {"a": "play", "cards": not_held}}, headers=headers)
    assert resp.status == 422 and (await resp.json())["error"] in ("not_in_hand", "not_your_turn")
    if view["to_move"] == made["seat"]:
        jack = next((a for a in view["legal"] if a.get("card", "").startswith("J") and "rank" in a), None)
        action = jack or next((a for a in view["legal"] if "cards" in a), view["legal"][0])
        resp = await client.post(url, json={"action": action, "version": made["version"]}, headers=headers)
        assert resp.status == 200, await resp.text()
        events = (await resp.json())["events"]
        assert events[0]["a"] == action["a"]
        if "cards" in action:
            assert events[0]["cards"] == action["cards"]
        if jack:
            assert events[0]["rank"] == jack["rank"]


async def test_play_again_needs_a_finished_table_and_a_seat(aiohttp_client):
    settings = WebSettings(redis_url=f"redis://127.0.0.1:{closed_port()}/0", local_play=True, bot_token=None,
                           run_worker=False)
    client = await aiohttp_client(await build(settings))
    logins = [await (await client.post("/api/local/login", json={"name": n})).json() for n in ("Ann", "Bob")]
    ann, bob = ({"Authorization": f"tma {x['init_data']}"} for x in logins)
    made = await (await client.post("/api/local/tables", json={"game": "prsi", "players": 2}, headers=ann)).json()
    url = f"/api/tables/{made['table']['id']}/rematch"
    resp = await client.post(url, headers=ann)
    assert resp.status == 400 and (await resp.json())["error"] == "invalid"  # the match is still on
    state = await (await client.get(url, headers=ann)).json()
    assert state["lobby"] is None and state["table_id"] is None
    assert (await client.post(url, headers={})).status == 401
    assert (await client.post(url.replace(made["table"]["id"], "nosuchtable"), headers=bob)).status == 404
