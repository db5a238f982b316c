"""The operator's view of the store (issue 26), behind ``python -m store show|tables|end``.

* :func:`describe` — one table as the operator needs it: game, chat, version (the stored
  document's and the log's length), who sits where (person or computer, level, auto, strikes),
  the next deadline or computer move (the worker's schedule), whether it ended (and why),
  the processes whose sockets watch it and the people who have it open (presence).
* :func:`chat_summaries` — a chat's tables kept (live, or finished within 7 days), newest first.
* :func:`end_table` — ends a table nobody plays any more, **unrated**: its document is marked
  ``ended`` and ``abandoned`` (a new version, published to every process as a commit is, so
  open sockets see it), its deadlines and computer moves are dropped, and no move is applied
  to it again (``Rejected("game_over")``, :meth:`store.tables.Tables.apply`). The ledger and
  the leaderboards are untouched: a rating comes only from a game played to its end.
"""

from __future__ import annotations

import time
from typing import Any

from store.common import FINISHED_TTL, _dumps, _loads, _s
from store.live import pack
from store.models import StoreError


async def describe(store: Any, table_id: str) -> dict[str, Any]:
    """The operator's summary of ``table_id`` (shape in the module docstring); ``StoreError("not_found")``."""
    raw = await store.redis.hgetall(store.keys.table(table_id))
    if not raw or "doc" not in raw:
        raise StoreError("not_found", f"table {table_id}")
    doc = _loads(raw["doc"])
    shard = store._shard(table_id)
    due = await store.redis.zscore(store.keys.deadlines_of(shard), table_id)
    log_length = await store.redis.llen(store.keys.log(table_id)) if await store.redis.type(
        store.keys.log(table_id)) == "list" else None
    watchers = sorted(_s(w) for w in await store.redis.smembers(store.keys.watchers(table_id)))
    people = [s["user_id"] for s in doc.get("seats", []) if s.get("user_id") and not s.get("computer")]
    present = [u for u in people if await store.is_present(table_id, u)]
    ttl = await store.redis.ttl(store.keys.table(table_id))
    return {
        "id": doc["id"],
        "game": doc.get("game"),
        "chat_id": doc.get("chat_id"),
        "version": doc.get("version"),
        "stored_version": int(_s(raw.get("version"))) if raw.get("version") is not None else None,
        "log_entries": log_length,
        "rated": doc.get("rated"),
        "ended": doc.get("ended"),
        "abandoned": doc.get("abandoned"),
        "seats": [{"seat": s.get("seat"), "user_id": s.get("user_id"), "name": s.get("name"),
                   "computer": bool(s.get("computer")), "level": s.get("level"), "auto": bool(s.get("auto")),
                   "left": bool(s.get("left")),
                   "strikes": s.get("strikes", 0)} for s in doc.get("seats", [])],
        "deadline": doc.get("deadline"),
        "next_due": float(due) if due is not None else None,
        "watching_processes": watchers,
        "present": present,
        "expires_in": ttl if ttl and ttl > 0 else None,
    }


async def chat_summaries(store: Any, chat_id: int) -> list[dict[str, Any]]:
    """A chat's tables kept, newest first: ``{id, game, version, over, ended, rated, seats}``."""
    out = []
    for table in await store.chat_tables(chat_id):
        out.append({"id": table.id, "game": table.game, "version": table.version, "over": bool(table.state.over),
                    "seats": [s.name for s in table.seats]})
    return out


async def end_table(store: Any, table_id: str, reason: str = "abandoned", *, now: float | None = None) -> int:
    """End ``table_id`` unrated (module docstring); returns the new version.

    Raises ``StoreError``: ``not_found``; ``invalid`` when it has ended already; ``busy``
    when it kept moving under the call (five tries).
    """
    for _ in range(5):
        raw = await store.redis.hget(store.keys.table(table_id), "doc")
        if not raw:
            raise StoreError("not_found", f"table {table_id}")
        doc = _loads(raw)
        if "ended" in doc:
            raise StoreError("invalid", f"table {table_id} has ended already")
        at = time.time() if now is None else now
        version = int(doc["version"]) + 1
        new = dict(doc)
        state = dict(new["state"]) if isinstance(new.get("state"), dict) else new.get("state")
        if isinstance(state, dict) and "version" in state:
            state["version"] = version  # the engine's state keeps its version beside the document's
            new["state"] = state
        new.update(version=version, ended=at, ts=at, rated=False, deadline=None,
                   abandoned={"at": at, "reason": str(reason)[:200]},
                   move={"seat": None, "by": "operator", "events": []})
        text = _dumps(new)
        if not await store._cas(keys=[store.keys.table(table_id)], args=[str(doc["version"]), version, text,
                                                                         FINISHED_TTL]):
            continue  # it moved meanwhile: again on the newer one
        shard = store._shard(table_id)
        await store._forget_in(shard, table_id)  # no timer nor computer move any more
        head, tail = pack(version, text, None)
        command = "SPUBLISH" if store.live.publish == "SPUBLISH" else "PUBLISH"
        await store.redis.execute_command(command, store.keys.events(table_id), head + text + tail)
        return version
    raise StoreError("busy", f"table {table_id} kept moving")
