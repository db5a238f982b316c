"""store ratings (P15, P16, R19, S6): the ledger, boards per game × chat × period, rebuild.

Worked examples go through ``Store.record_match`` and ``Store.leaderboard``; every
test runs on fakeredis and the real Redis.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

import engine
from store import LobbySettings, Seat

MON = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # Monday of 2026-W49


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def record(store, table: str, balances: dict[int, int], ended: datetime = MON, chat: int | None = 7,
                 game: str = "prsi") -> bool:
    return await store.record_match(
        table_id=table, game=game, chat_id=chat, ended=ended, balances=balances,
        places={u: 1 + sum(1 for b in balances.values() if b > v) for u, v in balances.items()},
        names={u: f"N{u}" for u in balances},
    )


def scores(rows: list[dict]) -> dict[int, tuple[int, int, int]]:
    return {r["user_id"]: (r["score"], r["matches"], r["rank"]) for r in rows}


async def test_p15_one_match_of_minus_50_scores_minus_50(store):
    await record(store, "m1", {1: 50, 2: -50})
    rows = await store.leaderboard("prsi", "week", at=MON)
    assert rows == [
        {"user_id": 1, "name": "N1", "score": 50, "matches": 1, "rank": 1},
        {"user_id": 2, "name": "N2", "score": -50, "matches": 1, "rank": 2},
    ]


async def test_p15_week_is_the_best_three_balances(store):
    # the worked example: +120 → 120; −40 → 80; −10 → 70; +5 → 115 (missing matches count as zero)
    balances = [120, -40, -10, 5]
    expected = [120, 80, 70, 115]
    for i, (balance, want) in enumerate(zip(balances, expected, strict=True)):
        await record(store, f"w{i}", {1: balance, 2: -balance})
        assert scores(await store.leaderboard("prsi", "week", at=MON))[1][0] == want
    assert scores(await store.leaderboard("prsi", "month", at=MON))[1][:2] == (75, 4)  # best 5 = all four


async def test_p15_equal_scores_rank_by_matches_then_share(store):
    await record(store, "a1", {1: 10, 9: -10})
    await record(store, "b1", {2: 10, 9: -10})
    await record(store, "b2", {2: 0, 8: 0})
    await record(store, "c1", {3: 10, 8: -10})
    rows = scores(await store.leaderboard("prsi", "week", at=MON))
    assert rows[2] == (10, 2, 1)  # more matches ranks higher
    assert rows[1] == (10, 1, 2) and rows[3] == (10, 1, 2)  # still equal: shared rank
    assert rows[8] == (-10, 2, 4) and rows[9] == (-20, 2, 5)


async def test_p15_boards_per_chat_and_for_everyone(store):
    await record(store, "x1", {1: 30, 2: -30}, chat=7)
    await record(store, "x2", {1: -5, 3: 5}, chat=8)
    assert scores(await store.leaderboard("prsi", "week", chat_id=7, at=MON)) == {1: (30, 1, 1), 2: (-30, 1, 2)}
    assert scores(await store.leaderboard("prsi", "week", chat_id=8, at=MON)) == {3: (5, 1, 1), 1: (-5, 1, 2)}
    everyone = scores(await store.leaderboard("prsi", "week", at=MON))
    assert everyone == {1: (25, 2, 1), 3: (5, 1, 2), 2: (-30, 1, 3)}
    assert await store.leaderboard("penki", "week", at=MON) == []  # each game its own boards


async def test_p15_week_and_month_edges_in_prague_time_across_the_dst_change(store):
    # 2026-10-25: CEST → CET. Monday 2026-10-26 00:00 in Prague is 2026-10-25 23:00 UTC;
    # the week before, Monday 00:00 was 22:00 UTC; November starts 2026-10-31 23:00 UTC.
    await record(store, "d1", {1: 10, 2: -10}, ended=at("2026-10-18T21:59:59"))  # Sun W42
    await record(store, "d2", {1: 20, 2: -20}, ended=at("2026-10-18T22:00:00"))  # Mon W43
    await record(store, "d3", {1: 40, 2: -40}, ended=at("2026-10-25T22:59:59"))  # Sun W43 (CET)
    await record(store, "d4", {1: 80, 2: -80}, ended=at("2026-10-25T23:00:00"))  # Mon W44
    await record(store, "d5", {1: 160, 2: -160}, ended=at("2026-10-31T22:59:59"))  # Oct 31, 23:59
    await record(store, "d6", {1: 320, 2: -320}, ended=at("2026-10-31T23:00:00"))  # Nov 1, 00:00
    week = {k: scores(await store.leaderboard("prsi", "week", at=at(t)))[1][0]
            for k, t in (("W42", "2026-10-15T12:00:00"), ("W43", "2026-10-21T12:00:00"),
                         ("W44", "2026-10-28T12:00:00"))}
    assert week == {"W42": 10, "W43": 60, "W44": 80 + 160 + 320}
    october = scores(await store.leaderboard("prsi", "month", at=at("2026-10-10T00:00:00")))[1]
    november = scores(await store.leaderboard("prsi", "month", at=at("2026-11-10T00:00:00")))[1]
    assert october[:2] == (10 + 20 + 40 + 80 + 160, 5) and november[:2] == (320, 1)
    assert await store.leaderboard_key("prsi", "week", at("2026-10-25T23:00:00")) == "2026-W44"
    # R19: Penki counts in Moscow time (UTC+3, no DST): 22:59:59 UTC is already Monday
    await record(store, "k1", {1: 1, 2: -1}, ended=at("2026-10-25T22:59:59"), game="penki")
    assert scores(await store.leaderboard("penki", "week", at=at("2026-10-28T12:00:00")))[1][0] == 1


async def test_s6_the_ledger_is_appended_once_per_table(store):
    assert await record(store, "once", {1: 10, 2: -10})
    assert not await record(store, "once", {1: 999, 2: -999})
    assert scores(await store.leaderboard("prsi", "week", at=MON))[1] == (10, 1, 1)
    ledger = await store.ledger()
    assert len(ledger) == 1
    assert ledger[0] == {
        "table": "once", "game": "prsi", "chat_id": 7, "ended": "2026-11-30T09:00:00Z",
        "balances": {"1": 10, "2": -10}, "places": {"1": 1, "2": 2}, "names": {"1": "N1", "2": "N2"},
    }
    assert await store.redis.ttl(store.keys.ledger) == -1  # durable
    # S7: the leaderboards, results and names never expire either
    boards = [k async for k in store.redis.scan_iter(match=store.keys.board_pattern)]
    results = [k async for k in store.redis.scan_iter(match=store.keys.results_pattern)]
    assert len(boards) == 4 and len(results) == 2  # everyone and chat 7 × week and month
    for key in [*boards, *results, store.keys.names]:
        assert await store.redis.ttl(key) == -1, key
    # the names hash holds each player's name and nothing else (no board entry strays into it)
    assert await store.redis.hgetall(store.keys.names) == {"1": "N1", "2": "N2"}


async def test_s6_user_rating_has_week_month_rank_and_last_results(store):
    await record(store, "r1", {1: 30, 2: -30}, ended=at("2026-11-29T10:00:00"), chat=7)  # W48, November
    await record(store, "r2", {1: -10, 2: 10}, ended=MON, chat=8)
    mine = await store.user_rating("prsi", 1, at=MON)
    assert mine["week_key"] == "2026-W49" and mine["month_key"] == "2026-11"
    assert mine["week"] == {"user_id": 1, "name": "N1", "score": -10, "matches": 1, "rank": 2}
    assert mine["month"]["score"] == 20 and mine["month"]["rank"] == 1
    assert [(r["table"], r["balance"], r["place"]) for r in mine["last"]] == [("r2", -10, 2), ("r1", 30, 1)]
    in_chat = await store.user_rating("prsi", 1, chat_id=7, at=MON)
    assert in_chat["week"] is None and in_chat["month"]["score"] == 30
    assert [r["table"] for r in in_chat["last"]] == ["r1"]
    assert (await store.user_rating("prsi", 99, at=MON))["week"] is None


async def test_rebuild_reproduces_the_boards_from_the_ledger(store):
    await record(store, "b1", {1: 30, 2: -30}, chat=7)
    await record(store, "b2", {1: -5, 3: 5}, chat=8)
    await record(store, "b3", {2: 7, 3: -7}, ended=at("2026-10-25T23:00:00"), chat=7)
    await record(store, "b4", {1: 1, 2: -1}, game="penki")
    queries = [(g, p, c, w) for g in ("prsi", "penki") for p in ("week", "month") for c in (None, 7, 8)
               for w in (MON, at("2026-10-28T00:00:00"))]
    before = [await store.leaderboard(*q) for q in queries]
    ratings_before = [await store.user_rating("prsi", u, at=MON) for u in (1, 2, 3)]
    # wreck the derived data
    async for key in store.redis.scan_iter(match=store.keys.board_pattern):
        await store.redis.hset(key, "1|junk", 1000)
    await store.redis.delete(store.keys.results("prsi", 1))
    assert await store.rebuild_leaderboards() == 4
    assert [await store.leaderboard(*q) for q in queries] == before
    assert [await store.user_rating("prsi", u, at=MON) for u in (1, 2, 3)] == ratings_before


@pytest.mark.redis
async def test_rebuild_leaderboards_command_line(real_store, redis_url):
    await record(real_store, "cli", {1: 12, 2: -12})
    await real_store.redis.delete(*[k async for k in real_store.redis.scan_iter(match=real_store.keys.board_pattern)])
    assert await real_store.leaderboard("prsi", "week", at=MON) == []
    done = subprocess.run(
        [sys.executable, "-m", "store", "--redis-url", redis_url, "--prefix", real_store.keys.prefix,
         "rebuild-leaderboards"], capture_output=True, text=True, timeout=60, check=True,
    )
    assert "1 rated matches" in done.stdout
    assert scores(await real_store.leaderboard("prsi", "week", at=MON)) == {1: (12, 1, 1), 2: (-12, 1, 2)}


async def test_a_finished_game_without_computers_is_rated_once_through_the_store(store):
    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in (11, 12, 13)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=-3, seed=17)
    while not table.state.over:
        seat = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat))).table
    ledger = await store.ledger()
    assert [m["table"] for m in ledger] == [table.id]
    entry = ledger[0]
    assert entry["balances"] == {s[1:]: b for s, b in table.state.balances.items()}
    assert entry["places"] == {s[1:]: p for s, p in table.state.places.items()} and entry["chat_id"] == -3
    assert sum(entry["balances"].values()) == 0  # P14
    rows = await store.leaderboard("prsi", "week", chat_id=-3)
    assert {r["user_id"]: r["score"] for r in rows} == {int(u): b for u, b in entry["balances"].items()}
    assert (await store.user_rating("prsi", 11))["last"][0]["table"] == table.id


async def test_p16_games_with_computer_seats_are_not_rated(store):
    seats = [Seat(seat="u11", user_id=11, name="P"), Seat(seat="c1", name="C", computer=True)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=-3, seed=2)
    while not table.state.over:
        seat = engine.awaiting(table.state)[0]
        table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat))).table
    assert not table.rated and await store.ledger() == []
    assert await store.leaderboard("prsi", "week", chat_id=-3) == []


async def test_p16_a_seat_handed_to_the_computer_after_timeouts_is_still_rated(store):
    """S4 + P16: u12 makes one move, then three timeouts hand their seat to the computer; the
    seat stays u12's and the match is rated for both people (P16 as amended: one move of
    one's own is enough; tests/test_store_unplayed.py has the seat that never moved)."""
    seats = [Seat(seat=f"u{u}", user_id=u, name=f"P{u}") for u in (11, 12)]
    table = await store.create_table(game="prsi", seats=seats, chat_id=-3, seed=5,
                                     settings=LobbySettings(players=2, turn_seconds=30))
    now = store.clock()
    moved = False
    for _ in range(2000):
        if table.state.over:
            break
        seat = engine.awaiting(table.state)[0]
        if seat == "u12" and not moved:  # one move of their own
            table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)).table
            moved = True
        elif seat == "u12":  # then u12 is away: the timer (then the computer, in auto) plays for them
            now = max(now, await store.next_due(table.id)) + 0.01
            assert await store.tick(now=now) == 1
            table = await store.get_table(table.id)
        else:
            table = (await store.apply(table.id, seat, engine.computer_action(table.state, seat), now=now)).table
    assert table.state.over and table.rated
    assert table.seat("u12").auto and not table.seat("u12").computer
    bys = {e["by"] for e in await store.log(table.id) if e["seat"] == "u12"}
    assert bys == {"player", "timer", "computer"}
    ledger = await store.ledger()
    assert [m["table"] for m in ledger] == [table.id]
    assert set(ledger[0]["balances"]) == {"11", "12"}
    rows = await store.leaderboard("prsi", "week", chat_id=-3, at=now)
    assert {r["user_id"] for r in rows} == {11, 12}


async def test_s6_each_players_last_results_keep_the_newest_fifty(store):
    """S6: ``/rating``'s last results: every player's list holds the newest RESULTS_KEPT
    matches and never grows past them (the ledger keeps everything)."""
    from store.common import RESULTS_KEPT

    for i in range(RESULTS_KEPT + 2):
        await record(store, f"t{i:03d}", {1: i, 2: -i}, ended=at(f"2026-11-30T09:{i // 60:02d}:{i % 60:02d}"))
    key = store.keys.results("prsi", 1)
    assert await store.redis.llen(key) == RESULTS_KEPT
    mine = await store.user_rating("prsi", 1, at=MON, last=RESULTS_KEPT + 2)
    assert [r["table"] for r in mine["last"]] == [f"t{i:03d}" for i in range(RESULTS_KEPT + 1, 1, -1)]
    assert len(await store.ledger()) == RESULTS_KEPT + 2


async def test_p15_a_board_shows_its_top_twenty_unless_asked_for_more(store):
    """S6/P15: the leaderboard pages show the best 20 by default (``limit`` asks for other lengths)."""
    await record(store, "many", {u: 100 - u for u in range(1, 24)})
    rows = await store.leaderboard("prsi", "week", at=MON)
    assert [r["user_id"] for r in rows] == list(range(1, 21))
    assert len(await store.leaderboard("prsi", "week", at=MON, limit=None)) == 23
    assert len(await store.leaderboard("prsi", "week", at=MON, limit=5)) == 5


async def test_s6_a_rebuild_keeps_the_names_and_each_players_newest_fifty_results(store):
    """S6: ``rebuild-leaderboards`` brings back the players' names and every player's last
    results as recording left them: the newest RESULTS_KEPT, newest first."""
    from store.common import RESULTS_KEPT

    for i in range(RESULTS_KEPT + 2):
        await record(store, f"t{i:03d}", {1: i, 2: -i}, ended=at(f"2026-11-30T09:{i // 60:02d}:{i % 60:02d}"))
    before = await store.user_rating("prsi", 1, at=MON, last=RESULTS_KEPT + 2)
    key = store.keys.results("prsi", 1)
    recorded = await store.redis.lrange(key, 0, -1)
    await store.redis.delete(store.keys.names, key)
    assert (await store.leaderboard("prsi", "week", at=MON))[0]["name"] == ""
    await store.rebuild_leaderboards()
    assert await store.redis.lrange(key, 0, -1) == recorded
    assert await store.user_rating("prsi", 1, at=MON, last=RESULTS_KEPT + 2) == before
    assert [r["table"] for r in before["last"]] == [f"t{i:03d}" for i in range(RESULTS_KEPT + 1, 1, -1)]
    assert {r["user_id"]: r["name"] for r in await store.leaderboard("prsi", "week", at=MON)} == {1: "N1", 2: "N2"}
