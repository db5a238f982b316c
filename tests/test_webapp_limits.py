"""Per-user limits across service processes: two web apps, each on its own Store of one Redis
(two processes behind a proxy). A user's actions and sockets alternate between them."""

from __future__ import annotations

import asyncio
import json

from store import LobbySettings, Seat

ANN, BOB = 111, 222


async def two_apps(aiohttp_client, store, store_factory, **overrides):
    from conftest import WEB_BOT_TOKEN

    from webapp.app import create_app
    from webapp.settings import WebSettings

    values = {"bot_token": WEB_BOT_TOKEN, "local_play": False, "run_worker": False,
              "ws_resync_seconds": 0.3, "ws_auth_timeout": 2.0, **overrides}
    other = await store_factory()
    return [await aiohttp_client(create_app(WebSettings(**values), st)) for st in (store, other)]


async def new_table(store):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in (ANN, BOB)]
    return await store.create_table(game="prsi", seats=seats, settings=LobbySettings(players=2, turn_seconds=None),
                                    seed=3)


async def test_a_held_down_button_is_limited_the_same_on_two_processes(aiohttp_client, store, store_factory,
                                                                     web_init_data):
    apps = await two_apps(aiohttp_client, store, store_factory, action_rate=0.01, action_burst=4)
    table = await new_table(store)
    url = f"/api/tables/{table.id}/actions"
    ann = {"Authorization": f"tma {web_init_data(ANN, 'Ann')}"}
    statuses = [(await apps[i % 2].post(url, json={"action": {"a": "fly"}}, headers=ann)).status for i in range(8)]
    assert statuses == [422] * 4 + [429] * 4  # 4 in all, not 4 per process
    bob = {"Authorization": f"tma {web_init_data(BOB, 'Bob')}"}
    assert (await apps[1].post(url, json={"action": {"a": "fly"}}, headers=bob)).status == 422


async def test_the_socket_cap_counts_sockets_on_every_process(aiohttp_client, store, store_factory, web_init_data):
    apps = await two_apps(aiohttp_client, store, store_factory, ws_per_user=2)
    table = await new_table(store)

    async def open_on(client, uid):
        ws = await client.ws_connect(f"/ws/tables/{table.id}")
        await ws.send_str(json.dumps({"type": "auth", "init_data": web_init_data(uid, f"P{uid}")}))
        return ws, json.loads((await ws.receive(timeout=10)).data)

    first, m1 = await open_on(apps[0], ANN)
    second, m2 = await open_on(apps[1], ANN)
    assert m1["type"] == m2["type"] == "state"
    third, m3 = await open_on(apps[0], ANN)
    assert m3["error"] == "too_many" and (await third.receive(timeout=10)).data == 4429
    await first.close()
    for _ in range(500):  # the closed socket's place is freed once its handler has finished
        if await store.open_sockets(ANN) < 2:
            break
        await asyncio.sleep(0.02)
    fourth, m4 = await open_on(apps[1], ANN)
    assert m4["type"] == "state"
    for ws in (second, fourth):
        await ws.close()
