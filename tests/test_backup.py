"""Backups that restore (issue 26; README "Operating Karty": back up and restore Redis).

On a ``redis-server`` of the test's own (a free loopback port, a temporary directory, RDB
and AOF on; the shared Redis is never touched): a rated match is played to its end (a
ledger entry, leaderboards), a second match is left mid-game with a turn timer running.
Then, as the README says: ``BGSAVE``, wait for it, copy ``dump.rdb`` (and, for the AOF
path, ``BGREWRITEAOF`` and a copy of the ``appendonlydir``) into a fresh directory and start
a second ``redis-server`` from the copy on another free port. On the restored server:
the match is where it was (document, version, log, deadline), ratings and leaderboards
are intact, the match continues (moves commit at the next versions), the timer fires (the
worker moves for the absent player once its deadline has passed: an injected clock) and
``python -m store end`` / ``show`` work on it. Every server is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clocks import StepClock
from ops_support import ROOT, free_port

import engine
from store import LobbySettings, Seat, Store

REDIS_SERVER = shutil.which("redis-server")
pytestmark = [pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed"),
              pytest.mark.timeout(600)]
CALLOUTS = {"zevok", "one_card", "how_many"}
PREFIX = "karty-backup"


class Server:
    def __init__(self, directory: Path, aof: bool = True) -> None:
        self.dir = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        directory.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(directory),
             "--dbfilename", "dump.rdb", "--appendonly", "yes" if aof else "no", "--appendfsync", "everysec",
             "--save", "3600 1", "--daemonize", "no", "--logfile", str(directory / "redis.log")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    async def ready(self) -> None:
        import redis.asyncio as aredis

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (self.dir / "redis.log").read_text()[-2000:]
            client = aredis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)
            try:
                if await client.ping():
                    return
            except Exception:  # refused, or still loading its data
                pass
            finally:
                await client.aclose()
            await asyncio.sleep(0.05)
        raise AssertionError("redis-server did not answer")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


async def play(store: Store, table_id: str, moves: int | None, by: str = "player") -> int:
    """Play up to ``moves`` moves (None: to the end) by the awaited seats; returns how many."""
    n = 0
    while moves is None or n < moves:
        table = await store.get_table(table_id)
        if table.state.over:
            break
        seat = engine.awaiting(table.state)[0]
        action = engine.computer_action(table.state, seat)
        if action is None or action["a"] in CALLOUTS:
            action = next(a for a in engine.legal_actions(table.state, seat) if a["a"] not in CALLOUTS)
        await store.apply(table_id, seat, action, expected_version=table.version, by=by,
                          client_action_id=f"m{table.version}")
        n += 1
    return n


async def wait_bgsave(r, before: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        info = await r.info("persistence")
        if not info["rdb_bgsave_in_progress"] and int((await r.lastsave()).timestamp()) >= before:
            assert info["rdb_last_bgsave_status"] == "ok", info
            return
        assert time.monotonic() < deadline, info
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("kind", ["rdb", "aof"])
async def test_a_snapshot_taken_mid_match_restores_the_match_ratings_and_timers(tmp_path, kind) -> None:
    clock = StepClock(time.time())
    source = Server(tmp_path / "source")
    restored: Server | None = None
    stores: list[Store] = []
    try:
        await source.ready()
        store = Store.from_url(source.url, prefix=PREFIX, clock=clock)
        stores.append(store)
        chat = -100_777
        people = [Seat(seat="a", user_id=501, name="Anna"), Seat(seat="b", user_id=502, name="Boris")]
        done = await store.create_table(game="prsi", seats=people, chat_id=chat, seed=7,
                                        settings=LobbySettings(players=2, turn_seconds=None))
        await play(store, done.id, None)
        live = await store.create_table(game="prsi", seats=people, chat_id=chat, seed=11,
                                        settings=LobbySettings(players=2, turn_seconds=30))
        await play(store, live.id, 6)
        await asyncio.sleep(0.2)  # the follow-ups (batched) have run
        before = {
            "doc": (await store.current(live.id)).doc,
            "log": await store.log(live.id),
            "due": await store.next_due(live.id),
            "ledger": await store.ledger(),
            "week": await store.leaderboard("prsi", "week", chat_id=chat, at=clock()),
            "month_all": await store.leaderboard("prsi", "month", at=clock()),
            "rating": await store.user_rating("prsi", 501, chat_id=chat),
            "done": (await store.current(done.id)).doc,
        }
        assert before["ledger"] and before["week"] and before["due"] is not None
        assert not before["doc"]["state"].get("over")

        # ------------------------------------------------------------ the backup, as the README says
        import redis.asyncio as aredis

        r = aredis.Redis.from_url(source.url)
        copy = tmp_path / "restored"
        copy.mkdir()
        if kind == "rdb":
            started = int(time.time())
            await r.bgsave()
            await wait_bgsave(r, started)
            shutil.copy2(source.dir / "dump.rdb", copy / "dump.rdb")
        else:
            await r.bgrewriteaof()
            deadline = time.monotonic() + 60
            while (await r.info("persistence"))["aof_rewrite_in_progress"] or \
                    (await r.info("persistence"))["aof_rewrite_scheduled"]:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            await r.execute_command("CONFIG", "SET", "appendfsync", "always")
            shutil.copytree(source.dir / "appendonlydir", copy / "appendonlydir")
        await r.aclose()
        # the source moves on after the snapshot: none of that is in the copy
        await play(store, live.id, 2)

        # ------------------------------------------------------------ the restore
        restored = Server(copy, aof=(kind == "aof"))
        await restored.ready()
        back = Store.from_url(restored.url, prefix=PREFIX, clock=clock)
        stores.append(back)
        assert (await back.current(live.id)).doc == before["doc"]
        assert await back.log(live.id) == before["log"]
        assert await back.next_due(live.id) == before["due"]
        assert await back.ledger() == before["ledger"]
        assert await back.leaderboard("prsi", "week", chat_id=chat, at=clock()) == before["week"]
        assert await back.leaderboard("prsi", "month", at=clock()) == before["month_all"]
        assert await back.user_rating("prsi", 501, chat_id=chat) == before["rating"]
        assert (await back.current(done.id)).doc == before["done"]
        # the TTLs came along: the live table still expires in its 48 h, not never
        ttl = await back.redis.ttl(back.keys.table(live.id))
        assert 0 < ttl <= 48 * 3600

        # the match continues where it was …
        version = before["doc"]["version"]
        assert await play(back, live.id, 2) == 2
        assert (await back.current(live.id)).version == version + 2
        # … and its timer fires: the worker moves for the absent player once the deadline passed
        due = await back.next_due(live.id)
        assert due is not None
        clock.now = due + 1
        moved = 0
        for _ in range(20):
            moved += await back.tick(now=clock())
            if moved:
                break
            await asyncio.sleep(0.05)
        assert moved == 1
        log = await back.log(live.id)
        assert log[-1]["by"] == "timer" and log[-1]["version"] == version + 3

        # the operator's CLI on the restored data: show, then end it unrated
        env = {"REDIS_URL": restored.url, "KARTY_PREFIX": PREFIX, "PATH": "/usr/bin:/bin"}
        shown = subprocess.run([sys.executable, "-m", "store", "show", "--json", "--", live.id], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        info = json.loads(shown.stdout)
        assert info["version"] == version + 3 and [s["user_id"] for s in info["seats"]] == [501, 502]
        assert info["next_due"] is not None and info["ended"] is None
        listed = subprocess.run([sys.executable, "-m", "store", "tables", str(chat)], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0 and live.id in listed.stdout and done.id in listed.stdout, listed
        ended = subprocess.run([sys.executable, "-m", "store", "end", "--reason", "players left", "--", live.id],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert ended.returncode == 0, ended.stderr
        again = subprocess.run([sys.executable, "-m", "store", "end", "--", live.id], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 1 and "ended already" in again.stderr
        doc = json.loads(await back.redis.hget(back.keys.table(live.id), "doc"))
        assert doc["abandoned"]["reason"] == "players left" and doc["rated"] is False
        assert await back.next_due(live.id) is None  # no timer any more
        assert await back.ledger() == before["ledger"]  # not rated
        table = await back.get_table(live.id)
        seat = engine.awaiting(table.state)[0]
        with pytest.raises(engine.Rejected):
            await back.apply(live.id, seat, engine.legal_actions(table.state, seat)[0])
    finally:
        for s in stores:
            await s.close()
        source.stop()
        if restored is not None:
            restored.stop()
