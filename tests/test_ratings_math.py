"""Ratings math (RULES.md P13–P16, R19; CONTRACTS.md §4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import ratings


def test_p13_equal_totals_share_a_place_and_the_next_is_skipped() -> None:
    assert ratings.shared_places({"a": 30, "b": 30, "c": 55}, lower_is_better=True) == {"a": 1, "b": 1, "c": 3}
    assert ratings.shared_places({"a": 10, "b": 20, "c": 20}, lower_is_better=True) == {"a": 1, "b": 2, "c": 2}
    assert ratings.shared_places({"a": 5, "b": 9, "c": 9, "d": 1}, lower_is_better=False) == {
        "a": 3, "b": 1, "c": 1, "d": 4}


def test_p14_prsi_balances_are_the_differences_to_each_opponent() -> None:
    assert ratings.prsi_balances({"a": 20, "b": 50, "c": 90}) == {"a": 100, "b": 10, "c": -110}
    assert ratings.prsi_balances({"a": 60, "b": 25, "c": 25}) == {"a": -70, "b": 35, "c": 35}


@settings(max_examples=50)
@given(st.dictionaries(st.text(min_size=1, max_size=3), st.integers(0, 500), min_size=2, max_size=5))
def test_p14_prsi_balances_sum_to_zero_and_follow_the_definition(totals: dict[str, int]) -> None:
    b = ratings.prsi_balances(totals)
    assert sum(b.values()) == 0
    for p, t in totals.items():
        assert b[p] == sum(u - t for q, u in totals.items() if q != p)


def test_r19_penki_balances_count_opponents_placed_below_and_above() -> None:
    assert ratings.penki_balances({"a": 1, "b": 2, "c": 3}) == {"a": 2, "b": 0, "c": -2}
    assert ratings.penki_balances({"a": 1, "b": 1, "c": 3}) == {"a": 1, "b": 1, "c": -2}
    assert sum(ratings.penki_balances({"a": 3, "b": 1, "c": 1, "d": 4}).values()) == 0


def test_p15_best_three_a_week_and_best_five_a_month_missing_count_as_zero() -> None:
    assert ratings.period_score([-50], "week") == -50
    assert ratings.period_score([120, -40], "week") == 80
    assert ratings.period_score([120, -40, -10], "week") == 70
    assert ratings.period_score([120, -40, -10, 5], "week") == 115
    assert ratings.period_score([1, 2, 3, 4, 5, 6, -7], "month") == 20
    assert ratings.period_score([], "month") == 0


def test_p15_periods_are_iso_weeks_and_months_in_prague_time() -> None:
    # Sunday 29 Nov 2026 23:30 UTC is Monday 00:30 in Prague.
    assert ratings.period_keys("prsi", datetime(2026, 11, 29, 23, 30, tzinfo=UTC)) == ("2026-W49", "2026-11")
    assert ratings.period_keys("prsi", datetime(2026, 11, 29, 22, 59, tzinfo=UTC)) == ("2026-W48", "2026-11")
    assert ratings.period_keys("prsi", datetime(2026, 11, 30, 23, 30, tzinfo=UTC)) == ("2026-W49", "2026-12")
    # Summer time: Prague is UTC+2.
    assert ratings.period_keys("prsi", datetime(2026, 6, 30, 22, 30, tzinfo=UTC)) == ("2026-W27", "2026-07")
    # ISO week-year: 1 Jan 2027 is in week 53 of 2026.
    assert ratings.period_keys("prsi", datetime(2027, 1, 1, 12, tzinfo=UTC)) == ("2026-W53", "2027-01")
    other = timezone(timedelta(hours=-5))
    assert ratings.period_keys("prsi", datetime(2026, 11, 29, 18, 30, tzinfo=other))[0] == "2026-W49"
    with pytest.raises(ValueError):
        ratings.period_keys("prsi", datetime(2026, 11, 29, 23, 30))


def test_r19_penki_periods_are_in_moscow_time() -> None:
    assert ratings.TIMEZONES == {"prsi": "Europe/Prague", "penki": "Europe/Moscow"}
    assert ratings.period_keys("penki", datetime(2026, 11, 30, 20, 59, tzinfo=UTC)) == ("2026-W49", "2026-11")
    assert ratings.period_keys("penki", datetime(2026, 11, 30, 21, 0, tzinfo=UTC)) == ("2026-W49", "2026-12")
    assert ratings.period_keys("penki", datetime(2026, 11, 29, 21, 30, tzinfo=UTC)) == ("2026-W49", "2026-11")


def test_p15_board_ranks_by_score_then_matches_then_shares() -> None:
    rows = {"u1": [100, 50, 5, -20], "u2": [10, 30, -5], "u4": [-10, 45], "u6": [20, 15], "u9": []}
    assert ratings.board(rows, "week") == [
        {"player": "u1", "score": 155, "matches": 4, "rank": 1},
        {"player": "u2", "score": 35, "matches": 3, "rank": 2},
        {"player": "u4", "score": 35, "matches": 2, "rank": 3},
        {"player": "u6", "score": 35, "matches": 2, "rank": 3},
    ]
    assert ratings.board({"b": [1], "a": [1]}, "month") == [
        {"player": "a", "score": 1, "matches": 1, "rank": 1},
        {"player": "b", "score": 1, "matches": 1, "rank": 1},
    ]


def test_p16_only_rated_matches_count_in_replay() -> None:
    case = {
        "game": "ratings", "ruleset": "prsi",
        "matches": [
            {"id": "m1", "ended": "2026-11-30T09:00:00Z", "chat": 7, "rated": True,
             "balances": {"u1": 100, "u2": 10, "u3": -110}},
            {"id": "m2", "ended": "2026-11-30T10:00:00Z", "chat": 7, "rated": False,
             "balances": {"u1": -500, "u4": 500}},
            {"id": "m3", "ended": "2026-12-30T10:00:00Z", "chat": 7, "rated": False,
             "balances": {"u1": -500, "u4": 500}},
        ],
    }
    boards = ratings.replay(case)["boards"]
    assert set(boards) == {"week 2026-W49", "month 2026-11"}
    assert [r["player"] for r in boards["week 2026-W49"]] == ["u1", "u2", "u3"]
    assert boards["month 2026-11"][0] == {"player": "u1", "score": 100, "matches": 1, "rank": 1}


def test_replay_refuses_malformed_cases() -> None:
    with pytest.raises(ValueError):
        ratings.replay({"ruleset": "chess", "matches": []})
    with pytest.raises(KeyError):
        ratings.replay({"ruleset": "prsi"})
    with pytest.raises(ValueError):
        ratings.replay({"ruleset": "prsi", "matches": [{"ended": "yesterday", "rated": True, "balances": {}}]})


def test_series_counts_each_period_as_the_leaderboards_do():
    from engine.ratings import series

    results = [
        {"ended": "2026-11-02T08:00:00Z", "balance": 120},
        {"ended": "2026-11-03T08:00:00Z", "balance": -40},
        {"ended": "2026-11-04T08:00:00Z", "balance": -10},
        {"ended": "2026-11-05T08:00:00Z", "balance": 5},
        {"ended": "2026-11-30T23:30:00Z", "balance": 7},  # Prague: 00:30 on Tuesday 1 Dec: week 49, December
    ]
    out = series("prsi", results)
    assert out["weeks"] == [{"key": "2026-W45", "score": 115, "matches": 4}, {"key": "2026-W49", "score": 7, "matches": 1}]
    assert out["months"] == [{"key": "2026-11", "score": 75, "matches": 4}, {"key": "2026-12", "score": 7, "matches": 1}]
    assert series("penki", [])["weeks"] == []
