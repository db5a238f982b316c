"""store: the small service state the bot and the web app keep through the store
(flags, "done once" markers, ping), and the rule that only store/ talks to Redis (DESIGN.md).

Store tests run on fakeredis and the real Redis.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def test_flags_are_durable_membership(store):
    assert not await store.has_flag("lang_explicit", 42)
    await store.set_flag("lang_explicit", 42)
    assert await store.has_flag("lang_explicit", 42)
    assert await store.has_flag("lang_explicit", "42")
    assert not await store.has_flag("lang_explicit", 43)
    assert await store.redis.ttl(store.keys.flags("lang_explicit")) == -1  # no TTL


async def test_once_is_true_only_the_first_time_and_expires(store):
    assert not await store.done_once("bot:upd", "1:100")
    assert await store.once("bot:upd", "1:100", ttl=60)
    assert not await store.once("bot:upd", "1:100", ttl=60)
    assert await store.done_once("bot:upd", "1:100")
    assert 0 < await store.redis.ttl(store.keys.once("bot:upd", "1:100")) <= 60
    await store.mark_once("bot:post", "T1:3", ttl=30)
    assert await store.done_once("bot:post", "T1:3")
    assert not await store.once("bot:post", "T1:3", ttl=30)


async def test_ping(store):
    assert await store.ping() is True


def test_only_store_talks_to_redis():
    """DESIGN.md: everything that touches Redis lives in store/ (engine/, bot/, webapp/ never)."""
    pattern = re.compile(r"^\s*(import|from) (redis|fakeredis)\b|\.redis\.", re.M)
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("engine", "bot", "webapp")
        for path in (ROOT / package).rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
