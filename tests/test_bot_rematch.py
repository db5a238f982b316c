"""Play again (issue 15) in the chat: the final table's "Play again" / "Not this time",
the "Play again" lobby posted once and edited, a declined seat filled by Join, the new
match starting by itself with the same seats and its start told once with a link."""

from __future__ import annotations

from fake_bot_api import callback_update, tg_chat
from test_bot import ANN, BOB, CID, DAN, GROUP, alerts, users

import engine
from store import Seat, User


async def finished_table(store, people):
    seats = [Seat(seat=f"u{uid}", user_id=uid, name=name) for uid, name in people]
    table = await store.create_table(game="prsi", seats=seats, chat_id=GROUP, seed=4)
    for _ in range(5000):
        st = (await store.get_table(table.id)).state
        if st.over:
            return table
        await store.apply(table.id, st.to_move, engine.computer_action(st, st.to_move))
    raise AssertionError("the match did not end")


def buttons(call):
    return [b.get("callback_data") or b.get("url") for b in call.buttons()]


async def test_play_again_from_the_final_post(store, bot_runtime, fake_bot_api):
    api = fake_bot_api
    rt = await bot_runtime(store)
    u = users()
    for uid in (ANN, BOB, CID, DAN):
        await store.save_user(User(id=uid, name=u[uid]["first_name"], language="en"))
    table = await finished_table(store, [(ANN, "Ann"), (BOB, "Bob"), (CID, "Cid")])
    while await rt.notifier.poll():
        pass
    final = [c for c in api.sent_messages(GROUP) if "final table" in c.text]
    assert len(final) == 1
    assert buttons(final[0])[:2] == [f"rm:{table.id}:y", f"rm:{table.id}:n"]
    assert [b["text"] for b in final[0].buttons()] == ["🔁 Play again", "✖️ Not this time", "▶️ Replay"]

    chat = tg_chat(GROUP)
    await rt.feed(callback_update(f"rm:{table.id}:y", user=u[ANN], chat=chat, message_id=final[0].params.get("message_id", 1)))
    await rt.feed(callback_update(f"rm:{table.id}:y", user=u[ANN], chat=chat))  # a second tap: still one lobby
    while await rt.notifier.poll():
        pass
    posted = [c for c in api.sent_messages(GROUP) if "play again" in c.text]
    assert len(posted) == 1, [c.text for c in posted]  # the chat told once
    lobby = await store.rematch_of(table.id)
    assert lobby.message_id is not None and [s.seat for s in lobby.seats] == [f"u{ANN}"]
    assert any(b.startswith(f"lb:{lobby.id}:join") for b in buttons(posted[0]) if b)

    await rt.feed(callback_update(f"rm:{table.id}:n", user=u[BOB], chat=chat))
    await rt.feed(callback_update(f"rm:{table.id}:y", user=u[DAN], chat=chat))  # not at that table
    assert alerts(api)[-1] == "You are not at this table."
    await rt.feed(callback_update(f"lb:{lobby.id}:join", user=u[DAN], chat=chat))  # Bob's seat is open
    await rt.feed(callback_update(f"rm:{table.id}:y", user=u[CID], chat=chat))
    lobby = await store.rematch_of(table.id)
    assert lobby.table_id is not None
    new = await store.get_table(lobby.table_id)
    assert [s.user_id for s in new.seats] == [ANN, DAN, CID]  # Dan in Bob's place
    while await rt.notifier.poll():
        pass
    await rt.lobbies.drain()
    begins = [c for c in api.sent_messages(GROUP) if "begins" in c.text]
    assert len(begins) == 2  # the first match and this one, each told once
    assert "Open" in begins[-1].buttons()[0]["text"]
    edits = api.calls_of("editMessageText", chat_id=GROUP)
    assert edits and "the game is on" in edits[-1].text


async def test_replay_links_in_the_final_post_start_and_rating(store, bot_runtime, fake_bot_api):
    from fake_bot_api import message_update

    api = fake_bot_api
    rt = await bot_runtime(store)
    u = users()
    table = await finished_table(store, [(ANN, "Ann"), (BOB, "Bob")])
    while await rt.notifier.poll():
        pass
    final = next(c for c in api.sent_messages(GROUP) if "final table" in c.text)
    link = f"https://t.me/{api.username}?start=replay_{table.id}"
    assert link in buttons(final)  # a URL button in the group (S2: no web_app there)
    await rt.feed(message_update(f"/start replay_{table.id}", user=u[ANN], chat=tg_chat(ANN)))
    dm = api.sent_messages(ANN)[-1]
    assert dm.buttons()[0]["web_app"]["url"] == f"https://karty.example/?replay={table.id}"
    await rt.feed(message_update("/rating", user=u[BOB], chat=tg_chat(BOB)))
    rating = api.sent_messages(BOB)[-1]
    assert f'<a href="{link}">' in rating.text, rating.text
