"""Replays (issue 15) from the store: a table's game again from its log, one frame per
action, each as its viewer saw it then; every hand only once the game is over; and
``export_case`` (``python -m store export``) replays exactly, variants included."""

from __future__ import annotations

import json
import random
import re

import engine
from engine.__main__ import replay_case
from store import LobbySettings, Seat

CARD_RE = re.compile(r'"((?:10|[6-9JQKA])[hdcs])"')


def people(n):
    return [Seat(seat=f"u{i}", user_id=i, name=f"P{i}") for i in range(1, n + 1)]


async def play(store, table_id, steps=None):
    rng = random.Random(1)
    n = 0
    while steps is None or n < steps:
        st = (await store.get_table(table_id)).state
        if st.over:
            return st
        waiting = engine.awaiting(st)
        seat = st.to_move or waiting[0]
        action = engine.computer_action(st, seat) or rng.choice(engine.legal_actions(st, seat))
        await store.apply(table_id, seat, action)
        n += 1
    return (await store.get_table(table_id)).state


async def test_finished_variant_match_replays_to_its_end_and_shows_every_hand(store):
    table = await store.create_table(game="prsi", seats=people(3), seed=77,
                                     settings=LobbySettings(variants=["PV4", "PV5", "PV7"]))
    final = await play(store, table.id)
    case = await store.export_case(table.id)
    assert case["options"] == {"variants": ["PV4", "PV5", "PV7"]}
    out = replay_case(json.loads(json.dumps(case)))
    assert set(out["results"]) == {"ok"} and out["state"] == engine.observer(final)

    r = await store.replay(table.id, "u2")
    log = await store.log(table.id)
    assert len(r["frames"]) == len(log) + 1 and r["over"] and r["seat"] == "u2"
    assert [x["round"] for x in r["rounds"]] == [1, 2, 3, 4, 5] and r["rounds"][0]["frame"] == 0
    last = r["frames"][-1]
    assert last["view"]["over"] and last["view"]["balances"] == final.balances
    assert last["hands"]["hands"] == {p: list(h) for p, h in zip(final.players, final.hands, strict=True)}
    for k in (1, len(log) // 2):
        assert r["frames"][k]["action"] == log[k - 1]["action"] and r["frames"][k]["seat"] == log[k - 1]["seat"]
    # each round's first frame is that round's deal
    for mark in r["rounds"][1:]:
        frame = r["frames"][mark["frame"]]
        assert frame["view"]["round"] == mark["round"] and any(e["a"] == "deal" for e in frame["events"])


async def test_a_running_table_replays_only_what_the_viewer_saw(store):
    table = await store.create_table(game="penki", seats=people(3), seed=5)
    st = await play(store, table.id, steps=60)
    assert not st.over
    r = await store.replay(table.id, "u1")
    assert not r["over"] and all("hands" not in f for f in r["frames"])
    assert r["frames"][-1]["view"] == {k: v for k, v in engine.view(st, "u1").items() if k not in ("legal", "last")}
    spectator = await store.replay(table.id, "u9")  # not at the table: a spectator's frames
    assert spectator["seat"] is None and spectator["frames"][-1]["view"]["hand"] is None
    # Never a face-down stump in any frame (S3): deal the states again and compare.
    case = await store.export_case(table.id)
    state = engine.new_game("penki", case["players"], dealer=case["dealer"], seed=case["seed"])
    states = [state]
    for a in case["actions"]:
        state = engine.apply(state, a["p"], {k: v for k, v in a.items() if k != "p"}).state
        states.append(state)
    for frame, st in zip(r["frames"], states, strict=True):
        assert frame["view"]["seat"] == "u1"
        shown = set(CARD_RE.findall(json.dumps(frame)))
        face_down = {c for seat, cards in st.stumps.items() for c in cards}
        assert not shown & face_down, shown & face_down
