"""Moves sent on the table's WebSocket (``act`` frames, webapp/ws.py and webapp/moves.py):
the same checks, limits and answers as ``POST /api/tables/{id}/actions``, answered on the
socket (``acted`` / ``refused`` with the frame's ``ref``), the socket kept open."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from test_webapp_ws import ANN, BOB, EVE, connect, new_table, recv, recv_state

import engine
from store import LobbySettings, Seat
from webapp.keys import ADMISSION


@pytest.fixture
def init(web_init_data):
    return lambda uid: web_init_data(uid, f"P{uid}")


async def send_act(ws, ref: Any, action: dict | None = None, **fields) -> None:
    frame = {"type": "act", "ref": ref, **fields}
    if action is not None:
        frame["action"] = action
    await ws.send_str(json.dumps(frame))


async def answer(ws, ref: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``acted``/``refused`` frame for ``ref`` and the state frames that came before it."""
    states = []
    while True:
        msg = await recv(ws)
        if msg["type"] == "state":
            states.append(msg)
        elif msg["type"] in ("acted", "refused") and msg["ref"] == ref:
            return msg, states
        else:
            raise AssertionError(f"unexpected frame {msg}")


def mover_and_action(table) -> tuple[str, dict]:
    mover = engine.awaiting(table.state)[0]
    return mover, engine.computer_action(table.state, mover)


async def test_a_move_on_the_socket_commits_once_and_every_seat_gets_the_version(web_client, store, init):
    client = await web_client()
    table = await new_table(store, seed=7)
    sockets = {f"u{ANN}": await connect(client, table.id, init(ANN)), f"u{BOB}": await connect(client, table.id, init(BOB))}
    for ws in sockets.values():
        assert (await recv_state(ws))["version"] == table.version
    mover, action = mover_and_action(table)
    ws = sockets[mover]
    await send_act(ws, "r1", action, version=table.version, client_action_id="cid-1")
    done, states = await answer(ws, "r1")
    after = await store.get_table(table.id)
    assert done == {"type": "acted", "ref": "r1", "version": table.version + 1, "duplicate": False,
                    "deadline": after.deadline}
    assert after.version == table.version + 1
    # the new version's state frame comes before the answer, with the mover's own view
    assert [s["version"] for s in states] == [table.version + 1]
    assert states[0]["view"] == engine.view(after.state, mover) and states[0]["by"] == "player"
    other = next(w for seat, w in sockets.items() if seat != mover)
    assert (await recv_state(other))["version"] == table.version + 1

    # the same client_action_id again (a retry after a lost answer): applied once
    await send_act(ws, 7, action, version=table.version, client_action_id="cid-1")
    again, states = await answer(ws, 7)
    assert again["type"] == "acted" and again["duplicate"] is True and again["version"] == table.version + 1
    assert states == [] and (await store.get_table(table.id)).version == table.version + 1
    for w in sockets.values():
        await w.close()


async def test_refused_moves_are_answered_on_the_socket_and_change_nothing(web_client, store, init):
    client = await web_client()
    table = await new_table(store, seed=7)
    mover, action = mover_and_action(table)
    waiter = next(s for s in (f"u{ANN}", f"u{BOB}") if s != mover)
    ws = await connect(client, table.id, init(int(waiter[1:])))
    await recv_state(ws)
    spectator = await connect(client, table.id, init(EVE))
    await recv_state(spectator)
    cases = [
        (ws, {"action": action}, 422, "not_your_turn"),  # the waiting seat tries the mover's move
        (ws, {"action": {"a": "draw"}, "version": table.version + 5}, 409, "stale"),
        (ws, {"action": {"a": "PLAY!"}}, 400, "bad_request"),
        (ws, {}, 400, "bad_request"),  # no action at all
        (ws, {"action": {"a": "draw"}, "seat": mover}, 403, "not_your_seat"),
        (ws, {"action": {"a": "draw"}, "extra": 1}, 400, "bad_request"),
        (spectator, {"action": action}, 403, "not_seated"),
    ]
    for i, (sock, fields, status, error) in enumerate(cases):
        await send_act(sock, f"x{i}", **fields)
        got, states = await answer(sock, f"x{i}")
        assert (got["type"], got["status"], got["error"]) == ("refused", status, error), (fields, got)
        assert got["detail"] and states == []
    await send_act(ws, ["not", "a", "ref"], {"a": "draw"})
    got = await recv(ws)
    assert (got["type"], got["ref"], got["status"], got["error"]) == ("refused", None, 400, "bad_request")
    assert (await store.get_table(table.id)).version == table.version  # nothing moved
    # the socket is still open and still serves the table: the mover's move reaches it
    mover_ws = await connect(client, table.id, init(int(mover[1:])))
    await recv_state(mover_ws)
    await send_act(mover_ws, "go", action, version=table.version)
    assert (await answer(mover_ws, "go"))[0]["type"] == "acted"
    assert (await recv_state(ws))["version"] == table.version + 1
    for w in (ws, spectator, mover_ws):
        await w.close()


@pytest.mark.parametrize(
    "body",
    [
        {"action": {"a": "draw"}, "version": 99},  # stale
        {"action": {"a": "play", "card": "ZZ"}},
        {"action": {"a": 5}},
        {"action": {"a": "draw"}, "client_action_id": ""},
        {"action": {"a": "draw"}, "version": -1},
        {"action": {"a": "draw"}, "version": "3"},  # strict: no coercion, as the POST
        {"action": {"a": "draw"}, "seat": "u999"},
    ],
)
async def test_a_refused_frame_says_what_the_refused_post_says(web_client, store, init, body):
    client = await web_client()
    table = await new_table(store, seed=7)
    mover = engine.awaiting(table.state)[0]
    uid = int(mover[1:])
    resp = await client.post(f"/api/tables/{table.id}/actions", json=body,
                             headers={"Authorization": f"tma {init(uid)}"})
    posted = await resp.json()
    ws = await connect(client, table.id, init(uid))
    await recv_state(ws)
    await send_act(ws, "same", **body)
    got, _ = await answer(ws, "same")
    assert resp.status != 200 and (got["status"], got["error"]) == (resp.status, posted["error"])
    assert (await store.get_table(table.id)).version == table.version
    await ws.close()


async def test_the_action_bucket_and_a_flood_of_frames_are_limited(web_client, store, init):
    """The user's action bucket (shared with POSTs) answers 429 with retry_after; a flood the
    write bucket refuses also spends the socket's frame bucket, which then closes it."""
    client = await web_client(action_rate=0.01, action_burst=1, write_rate=0.01, write_burst=3,
                              ws_frame_rate=0.01, ws_frame_burst=3)
    table = await new_table(store, seed=7)
    mover, action = mover_and_action(table)
    ws = await connect(client, table.id, init(int(mover[1:])))
    await recv_state(ws)
    await send_act(ws, 1, action, version=table.version)
    assert (await answer(ws, 1))[0]["type"] == "acted"  # the one token
    await send_act(ws, 2, {"a": "draw"})
    got, _ = await answer(ws, 2)
    assert (got["status"], got["error"]) == (429, "too_fast") and got["retry_after"] > 1
    version = (await store.get_table(table.id)).version
    await send_act(ws, 3, {"a": "draw"})  # the write bucket's third and last token: the action bucket refuses
    assert (await answer(ws, 3))[0]["status"] == 429
    for ref in (4, 5, 6):  # the write bucket refuses in memory; each such frame spends a frame token
        await send_act(ws, ref, {"a": "draw"})
        got, _ = await answer(ws, ref)
        assert (got["status"], got["error"]) == (429, "too_fast")
    await send_act(ws, 7, {"a": "draw"})  # the frame bucket is empty: told, then closed
    last = await recv(ws)
    assert (last["type"], last["error"]) == ("error", "too_fast")
    assert (await ws.receive(timeout=30)).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ws.close_code == 4429
    assert (await store.get_table(table.id)).version == version


async def test_a_move_on_the_socket_is_refused_503_when_the_process_is_full(web_client, store, init):
    client = await web_client(admit_limit=1, admit_wait=0)
    table = await new_table(store, seed=7)
    mover, action = mover_and_action(table)
    ws = await connect(client, table.id, init(int(mover[1:])))
    await recv_state(ws)
    admission = client.app[ADMISSION]
    assert await admission.acquire()  # the one slot, held by "another request"
    try:
        await send_act(ws, "busy", action, version=table.version)
        got, _ = await answer(ws, "busy")
        assert (got["status"], got["error"]) == (503, "overloaded") and got["retry_after"] > 0
        assert (await store.get_table(table.id)).version == table.version
    finally:
        admission.release()
    await send_act(ws, "now", action, version=table.version)
    assert (await answer(ws, "now"))[0]["type"] == "acted"
    assert admission.running == 0  # the move gave its slot back
    await ws.close()


@pytest.mark.parametrize("variants", [[], ["PV1"], ["PV5", "PV6"]])
async def test_stray_fields_of_variants_that_are_off_reach_the_engine_and_are_ignored(web_client, store, init, variants):
    """RULES.md PV9.8: at a table without PV4 a play's ``cards`` is no field, nor a stray
    ``suit``, nor a ``rank`` where no PV5 Jack names one. Neither the POST nor an ``act``
    frame refuses them before the engine (even junk values of the right JSON type), and
    the move is judged and committed as the same move without them."""
    client = await web_client()
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=f"P{uid}") for uid in (ANN, BOB)]
    settings = LobbySettings(players=2, turn_seconds=None, variants=variants)
    table = await store.create_table(game="prsi", seats=seats, settings=settings, seed=11)
    stray = [{"cards": [], "rank": "xyz", "suit": "bogus"}, {"cards": ["Ah", "Kd", "Zz"], "rank": "A"}]
    for k, junk in enumerate(stray):
        mover = table.state.to_move
        uid = int(mover[1:])
        plain = [a for a in engine.legal_actions(table.state, mover) if a["a"] == "play" and set(a) == {"a", "card"}]
        action = dict(plain[0] if plain else engine.legal_actions(table.state, mover)[-1])
        want = engine.apply(table.state, mover, action)
        sent = {**action, **junk}
        if k == 0:
            resp = await client.post(f"/api/tables/{table.id}/actions", json={"action": sent, "version": table.version},
                                     headers={"Authorization": f"tma {init(uid)}"})
            assert resp.status == 200, await resp.text()
            events = (await resp.json())["events"]
        else:
            ws = await connect(client, table.id, init(uid))
            await recv_state(ws)
            await send_act(ws, "stray", sent, version=table.version)
            got, _ = await answer(ws, "stray")
            assert got["type"] == "acted", got
            await ws.close()
            events = None
        after = await store.get_table(table.id)
        assert after.version == table.version + 1
        assert engine.dump(after.state) == engine.dump(want.state)
        if events is not None:
            assert events == want.events and all("cards" not in e for e in events)
        table = after
