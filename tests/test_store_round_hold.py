"""The end of a Prší round holds (issue 17 point 3): after the commit that ends a round
of a match still going, the next round's computers and turn timers start
``ROUND_HOLD`` seconds later, so the table sees the last card, what everyone had left
and who drew for a last 7. Time is driven with ``now=``/``tick(now=...)``; runs on
fakeredis and the real Redis.
"""

from __future__ import annotations

import engine
from store import LobbySettings, Seat
from store.common import COMPUTER_DELAY, ROUND_HOLD

ALICE = Seat(seat="u100", user_id=100, name="Alice")
KAREL = Seat(seat="c1", name="Karel", computer=True)
T30 = LobbySettings(players=2, turn_seconds=30)


def _action(state, seat):
    legal = engine.legal_actions(state, seat)
    plays = [a for a in legal if a["a"] == "play"]
    action = plays[0] if plays else legal[0]
    if action["a"] == "play" and action["card"].startswith("Q") and len(state.hands[state.players.index(seat)]) > 1:
        action = {**action, "suit": action["card"][-1]}
    return action


async def test_next_round_waits_for_the_hold_then_goes_on(store):
    table = await store.create_table(game="prsi", seats=[ALICE, KAREL], settings=T30, seed=5)
    now = 1_000_000.0
    ends = 0
    for _ in range(2000):
        st = (await store.get_table(table.id)).state
        if st.over or ends >= 2:
            break
        seat = engine.awaiting(st)[0]
        now += 1.0
        res = await store.apply(table.id, seat, _action(st, seat), now=now)
        ended = any(e["a"] == "round_end" for e in res.events) and not res.table.state.over
        nxt = engine.awaiting(res.table.state)[0]
        due = await store.next_due(table.id)
        if nxt == KAREL.seat:
            # The computer waits the hold and its usual delay after a round end, else only the delay.
            held = ROUND_HOLD if ended else 0.0
            lo, hi = COMPUTER_DELAY  # the regular computer's reaction times (engine.players)
            assert held + lo - 1e-6 <= due - now <= held + hi + 1e-6, (ended, due - now)
            if ended:
                assert await store.tick(now=now + hi + 0.1) == 0  # nothing moves during the hold
                assert await store.tick(now=due + 0.001) == 1
                now = due + 0.001
        else:
            held = ROUND_HOLD if ended else 0.0
            assert res.table.deadline == now + held + 30
        ends += ended
    assert ends >= 1

