"""The bot's inbox: work the bot accepted and must not lose in a crash.

* Updates answered 200 on the webhook: kept here *before* the answer, handled, then
  marked done (for a day, so a redelivery of the same ``update_id`` is dropped). An
  update whose handler died with its process is handled again by the next process
  once its claim lapses (claims are renewed while the handler runs).
* Lobby messages whose last change was not shown yet (the edit is debounced): marked
  pending with the change, cleared once the edit went out, re-rendered after a restart.
"""

from __future__ import annotations

import json
from typing import Any

from store.common import (
    StoreBase,
    _dumps,
    _s,
)

DONE_TTL = 86400  # a handled update id is remembered this long (Telegram redelivers for ~a day)

# KEYS[1] pending hash, KEYS[2] done marker, KEYS[3] claim   ARGV[1] update id, ARGV[2] entry, ARGV[3] claim TTL
_ADD = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('SET', KEYS[3], '1', 'EX', tonumber(ARGV[3]))
return 1
"""


class Inbox(StoreBase):
    """The inbox part of :class:`store.Store`."""

    async def inbox_add(self, update_id: int, update: dict[str, Any], claim_ttl: int = 15) -> bool:
        """Keep ``update`` (a raw Telegram update) and claim it for ``claim_ttl`` seconds; False
        (nothing changes) when this ``update_id`` is pending or was handled already."""
        script = getattr(self, "_inbox_add", None)
        if script is None:
            script = self._inbox_add = self.redis.register_script(_ADD)
        entry = _dumps({"update": update, "at": self.clock()})
        done = await script(keys=[self.keys.inbox, self.keys.inbox_done(update_id), self.keys.inbox_claim(update_id)],
                            args=[str(update_id), entry, int(claim_ttl)])
        return bool(int(done))

    async def inbox_claim(self, update_id: int, claim_ttl: int = 15) -> bool:
        """Claim a pending update whose claim lapsed (its handler died): True for one caller."""
        if not await self.redis.hexists(self.keys.inbox, str(update_id)):
            return False
        return bool(await self.redis.set(self.keys.inbox_claim(update_id), "1", nx=True, ex=int(claim_ttl)))

    async def inbox_renew(self, update_ids: list[int], claim_ttl: int = 15) -> None:
        """Keep the claims of updates still being handled."""
        if not update_ids:
            return
        pipe = self.redis.pipeline(transaction=False)
        for update_id in update_ids:
            pipe.expire(self.keys.inbox_claim(update_id), int(claim_ttl))
        await pipe.execute()

    async def inbox_done(self, update_id: int) -> None:
        """The update was handled: drop it and remember its id for a day."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(self.keys.inbox_done(update_id), "1", ex=DONE_TTL)
        pipe.hdel(self.keys.inbox, str(update_id))
        pipe.delete(self.keys.inbox_claim(update_id))
        await pipe.execute()

    async def inbox_pending(self) -> list[tuple[int, dict[str, Any]]]:
        """Updates kept and not yet done, oldest first: ``[(update_id, raw update)]``."""
        raw = await self.redis.hgetall(self.keys.inbox)
        entries = sorted(((int(_s(k)), json.loads(_s(v))) for k, v in raw.items()), key=lambda e: e[1]["at"])
        return [(uid, e["update"]) for uid, e in entries]

    # -- lobby edits not yet shown ----------------------------------------------------------------
    async def lobby_edit_pending(self, lobby_id: str) -> None:
        """A change of ``lobby_id`` waits for its (debounced) edit."""
        await self.redis.zadd(self.keys.lobby_edits, {lobby_id: self.clock()})

    async def lobby_edit_shown(self, lobby_id: str, since: float | None = None) -> None:
        """The lobby's message shows its latest change (pending since ``since`` or earlier)."""
        if since is None:
            await self.redis.zrem(self.keys.lobby_edits, lobby_id)
        else:  # a change that came after the render stays pending
            score = await self.redis.zscore(self.keys.lobby_edits, lobby_id)
            if score is not None and score <= since:
                await self.redis.zrem(self.keys.lobby_edits, lobby_id)

    async def lobby_edits_pending(self) -> list[str]:
        """Lobbies whose last change was not shown yet, oldest first."""
        return [_s(i) for i in await self.redis.zrange(self.keys.lobby_edits, 0, 999)]
