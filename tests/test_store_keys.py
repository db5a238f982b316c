"""store key names (DESIGN.md "Redis keys"): one module, hash-tagged so each script stays in one cluster slot."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from store import Keys


def slot(key: str) -> int:
    return key_slot(key.encode())


def test_every_key_of_one_game_shares_one_cluster_slot():
    k = Keys("karty")
    keys = [k.table("T1"), k.log("T1"), k.cids("T1"), k.events("T1"), k.presence("T1", 5)]
    assert all(key.startswith("karty:{g:T1}:") for key in keys)
    assert len({slot(key) for key in keys}) == 1


def test_scheduler_and_ratings_keys_each_share_a_slot():
    k = Keys("karty")
    assert slot(k.deadlines) == slot(k.deadline_versions) == slot(k.outbox)  # schedule.lua touches all three
    for shard in range(1, 8):  # … of one shard; the shards in slots of their own
        assert slot(k.deadlines_of(shard)) == slot(k.deadline_versions_of(shard)) == slot(k.outbox_of(shard))
    assert len({slot(k.deadlines_of(shard)) for shard in range(8)}) == 8
    ratings = [k.ledger, k.names, k.board("prsi", None, "2026-W49"), k.board("penki", -100, "2026-11"),
               k.results("prsi", 42)]
    assert len({slot(key) for key in ratings}) == 1


def test_lobby_keys_are_tagged_per_lobby_and_prefixes_are_checked():
    assert Keys("x").lobby("L1") == "x:{l:L1}:lobby"
    for bad in ("", "a{b", "a*", "a b"):
        with pytest.raises(ValueError):
            Keys(bad)


def test_a_table_stays_in_one_shard_and_tables_spread_over_all():
    from store.keys import shard_of

    assert shard_of("T1", 1) == 0
    assert shard_of("T1", 8) == shard_of("T1", 8)
    assert {shard_of(f"T{i}", 8) for i in range(200)} == set(range(8))
