"""Ratings (S6): the durable ledger of rated matches and the leaderboards derived from it (P15, R19).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from engine import ratings
from store.common import (
    RESULTS_KEPT,
    StoreBase,
    _dumps,
    _iso,
    _s,
    _utc,
)
from store.models import (
    StoreError,
)


class Ratings(StoreBase):
    """The ratings part of :class:`store.Store`."""

    async def _record_table(self, doc: dict[str, Any]) -> bool:
        st = doc["state"]
        seats = {s["seat"]: s for s in doc["seats"]}
        balances, places = st.get("balances") or {}, st.get("places") or {}
        return await self.record_match(
            table_id=doc["id"], game=doc["game"], chat_id=await self.chat_id_now(doc["chat_id"]),
            ended=datetime.fromtimestamp(doc["ended"], tz=UTC),
            balances={seats[sid]["user_id"]: b for sid, b in balances.items()},
            places={seats[sid]["user_id"]: p for sid, p in places.items()},
            names={seats[sid]["user_id"]: seats[sid]["name"] for sid in balances},
        )

    def _match_writes(self, match: dict[str, Any]) -> tuple[list[str], list[str], list[Any]]:
        """Board keys, results keys and per-user ARGV of one ledger entry."""
        game, chat_id = match["game"], match["chat_id"]
        ended = datetime.fromisoformat(match["ended"].replace("Z", "+00:00"))
        week, month = ratings.period_keys(game, ended)
        boards = [self.keys.board(game, None, week), self.keys.board(game, None, month)]
        if chat_id is not None:
            boards += [self.keys.board(game, chat_id, week), self.keys.board(game, chat_id, month)]
        results: list[str] = []
        argv: list[Any] = []
        for uid, balance in match["balances"].items():
            results.append(self.keys.results(game, int(uid)))
            result = {"table": match["table"], "ended": match["ended"], "balance": balance,
                      "place": match["places"].get(uid), "chat_id": chat_id}
            argv += [uid, balance, match["names"].get(uid, ""), _dumps(result)]
        return boards, results, argv

    async def record_match(
        self,
        *,
        table_id: str,
        game: str,
        chat_id: int | None,
        ended: datetime | float,
        balances: Mapping[int, int],
        places: Mapping[int, int] | None = None,
        names: Mapping[int, str] | None = None,
    ) -> bool:
        """Append a rated match to the durable ledger once and fold it into the boards (S6).

        Ledger entry: ``{table, game, chat_id, ended (ISO UTC), balances, places, names}``
        keyed by user id. Boards: ``game`` × (everyone, the chat) × (ISO week, month in
        the game's time zone, P15/R19), each a hash ``"<user>|<table>" → balance``;
        scores come from ``engine.ratings.board`` when read. Called for every finished
        rated game (P16); public for imports and tests. Returns False (and changes
        nothing) when ``table_id`` is already in the ledger.
        """
        when = _utc(ended, self.clock)
        match = {
            "table": table_id, "game": game, "chat_id": chat_id, "ended": _iso(when),
            "balances": {str(u): int(b) for u, b in balances.items()},
            "places": {str(u): int(p) for u, p in (places or {}).items()},
            "names": {str(u): n for u, n in (names or {}).items()},
        }
        boards, results, argv = self._match_writes(match)
        done = await self._record(
            keys=[self.keys.ledger, self.keys.names, *boards, *results],
            args=[table_id, _dumps(match), len(boards), len(results), *argv],
        )
        return bool(int(done))

    async def ledger(self) -> list[dict[str, Any]]:
        """Every rated match in the ledger, oldest first."""
        raw = await self.redis.hgetall(self.keys.ledger)
        return sorted((json.loads(_s(v)) for v in raw.values()), key=lambda m: (m["ended"], m["table"]))

    async def _board_rows(self, game: str, period: str, chat_id: int | None, when: datetime) -> tuple[str, list]:
        if period not in ("week", "month"):
            raise StoreError("invalid", "period is 'week' or 'month'")
        week, month = ratings.period_keys(game, when)
        period_key = week if period == "week" else month
        raw = await self.redis.hgetall(self.keys.board(game, chat_id, period_key))
        rows: dict[str, list[int]] = {}
        for field, balance in raw.items():
            user = _s(field).split("|", 1)[0]
            rows.setdefault(user, []).append(int(_s(balance)))
        return period_key, ratings.board(rows, period)

    async def _named(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        names = await self.redis.hmget(self.keys.names, [r["player"] for r in rows]) if rows else []
        return [
            {"user_id": int(r["player"]), "name": _s(n) or "", "score": r["score"], "matches": r["matches"],
             "rank": r["rank"]}
            for r, n in zip(rows, names, strict=True)
        ]

    async def leaderboard(self, game: str, period: str, chat_id: int | None = None,
                          at: datetime | float | None = None, limit: int | None = 20) -> list[dict[str, Any]]:
        """P15/R19 board for the period holding ``at`` (default now): ``[{user_id, name, score, matches, rank}]``.

        ``period``: ``"week"`` (best 3 balances) or ``"month"`` (best 5); ``chat_id``
        None for everyone. Ranks: score, then matches; ties share (1, 1, 3).
        """
        _, rows = await self._board_rows(game, period, chat_id, _utc(at, self.clock))
        return await self._named(rows[:limit] if limit is not None else rows)

    async def leaderboard_key(self, game: str, period: str, at: datetime | float | None = None) -> str:
        """The period key (``"2026-W49"`` / ``"2026-11"``) of ``at`` in the game's time zone."""
        week, month = ratings.period_keys(game, _utc(at, self.clock))
        return week if period == "week" else month

    async def user_rating(self, game: str, user_id: int, chat_id: int | None = None,
                          at: datetime | float | None = None, last: int = 10) -> dict[str, Any]:
        """``{week: row|None, month: row|None, week_key, month_key, last: [{table, ended, balance, place, chat_id}],
        history: {matches: [{table, ended, balance, place}] oldest first, weeks, months}}`` (``engine.ratings.series``).

        Rows as in :meth:`leaderboard` (rank among everyone, or in ``chat_id``).
        ``last``: newest first, only that chat's matches when ``chat_id`` is given.
        """
        when = _utc(at, self.clock)
        out: dict[str, Any] = {}
        for period in ("week", "month"):
            key, rows = await self._board_rows(game, period, chat_id, when)
            mine = [r for r in rows if r["player"] == str(user_id)]
            out[period] = (await self._named(mine))[0] if mine else None
            out[f"{period}_key"] = key
        raw = await self.redis.lrange(self.keys.results(game, user_id), 0, RESULTS_KEPT - 1)
        results = sorted((json.loads(_s(r)) for r in raw), key=lambda r: (r["ended"], r["table"]), reverse=True)
        if chat_id is not None:
            results = [r for r in results if r.get("chat_id") == chat_id]
        out["last"] = results[:last]
        # issue 15: the rating page's chart — every kept match (oldest first) and P15 per period
        out["history"] = {
            "matches": [{k: r.get(k) for k in ("table", "ended", "balance", "place")} for r in reversed(results)],
            **ratings.series(game, results),
        }
        return out

    async def rebuild_leaderboards(self) -> int:
        """Recompute every board, results list and name from the ledger; returns the matches folded.

        One MULTI/EXEC replaces the old boards, so readers never see them half built.
        A maintenance command (``python -m store rebuild-leaderboards``).
        """
        matches = await self.ledger()
        boards: dict[str, dict[str, int]] = {}
        results: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for m in matches:  # oldest first: later names win, results end newest first
            board_keys, result_keys, argv = self._match_writes(m)
            for i, key in enumerate(result_keys):  # newest ended first, as user_rating sorts
                uid, balance, name, result = argv[4 * i: 4 * i + 4]
                names[uid] = name
                results.setdefault(key, []).insert(0, result)
                for b in board_keys:
                    boards.setdefault(b, {})[f"{uid}|{m['table']}"] = balance
        old = [k async for k in self.redis.scan_iter(match=self.keys.board_pattern, count=500)]
        old += [k async for k in self.redis.scan_iter(match=self.keys.results_pattern, count=500)]
        pipe = self.redis.pipeline(transaction=True)
        if old:
            pipe.delete(*old)
        for key, fields in boards.items():
            pipe.hset(key, mapping=fields)
        for key, items in results.items():
            pipe.rpush(key, *items[:RESULTS_KEPT])
        if names:
            pipe.hset(self.keys.names, mapping=names)
        await pipe.execute()
        return len(matches)
