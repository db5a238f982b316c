"""Commits reported only once a replica has them (``WAIT``), so a failover loses no acknowledged move.

Redis replicates asynchronously: a primary that dies a moment after answering a write
can take that write with it, and its replica, promoted, never saw it. For a table's
commit that would be a move the player was told was made, gone. :class:`Replicated`
runs a script and ``WAIT <replicas> <ms>`` on the same connection (one round trip, a
pipeline; on a cluster both go to the node holding the script's slot): only when
enough replicas have the write is the answer handed on. Otherwise :class:`NotReplicated`
(a ``ConnectionError``, so one of :data:`store.UNAVAILABLE`: the web app answers 503
"try again"), and the retry with the same client_action_id is exactly-once: either the
first commit survived (the retry finds its id and answers it, after confirming that
answer is replicated too) or it was lost and the retry commits it afresh.

``WAIT`` cannot run inside a script (Redis refuses it there), hence the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

from store.connect import is_cluster

REPLICA_WAIT_MS = 1000  # how long a commit waits for a replica before the player is told to try again


class NotReplicated(RedisConnectionError):
    """The write reached the primary but no replica confirmed it in time: try again."""


class Replicated:
    """``await replicated(keys=[...], args=[...])``: the script's answer, once ``replicas`` replicas have its write.

    ``wrote(answer)``: the script wrote (the ``WAIT`` must confirm it); ``vouches(answer)``:
    the script wrote nothing now but its answer stands for an earlier write (a repeated
    client_action_id): a marker is written beside it in the same slot (``<KEYS[1]>:sync``,
    a few seconds' TTL) so that ``WAIT`` covers everything written there before.
    ``replicas`` 0: the script alone (a single Redis without replicas), on ``channel`` when
    given (a :class:`store.pipelined.Pipelined` to the same server: the live path's calls).
    """

    def __init__(self, redis: Any, script: AsyncScript, replicas: int, *, timeout_ms: int = REPLICA_WAIT_MS,
                 wrote: Callable[[Any], bool], vouches: Callable[[Any], bool] = lambda _: False,
                 channel: Any = None) -> None:
        self.redis = redis
        self.channel = channel
        self.inner = script
        self.replicas = int(replicas)
        self.timeout_ms = int(timeout_ms)
        self.wrote = wrote
        self.vouches = vouches

    @property
    def script(self) -> str:
        return self.inner.script

    @property
    def sha(self) -> str:
        return self.inner.sha

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        if self.replicas <= 0:
            if self.channel is not None:
                answer, self.inner.sha = await self.channel.evalsha(self.inner.sha, self.inner.script, keys, args)
                return answer
            return await self.inner(keys=list(keys), args=list(args))
        answer, acks = await self._run(list(keys), list(args))
        if self.vouches(answer):
            acks = await self._confirm(keys[0])
        elif not self.wrote(answer):
            return answer
        if acks < self.replicas:
            raise NotReplicated(f"no replica confirmed the write within {self.timeout_ms} ms: try again")
        return answer

    async def _pipe(self, first_key: str) -> tuple[Any, dict[str, Any]]:
        """A pipeline whose commands all go to the node of ``first_key``, and WAIT's routing for it."""
        if is_cluster(self.redis):
            if self.redis._initialize:
                await self.redis.initialize()
            return self.redis.pipeline(), {"target_nodes": self.redis.get_node_from_key(first_key)}
        return self.redis.pipeline(transaction=False), {}

    async def _run(self, keys: list[Any], args: list[Any]) -> tuple[Any, int]:
        for attempt in range(2):
            pipe, route = await self._pipe(keys[0])
            pipe.execute_command("EVALSHA", self.inner.sha, len(keys), *keys, *args)  # (cluster pipelines block .evalsha)
            pipe.execute_command("WAIT", self.replicas, self.timeout_ms, **route)
            answer, acks = await pipe.execute(raise_on_error=False)
            if isinstance(answer, NoScriptError) and attempt == 0:
                # A node that never saw the script (new, restarted or promoted): load it there.
                self.inner.sha = await self.redis.script_load(self.inner.script)
                continue
            if isinstance(answer, Exception):
                raise answer
            if isinstance(acks, Exception):
                raise acks
            return answer, int(acks)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _confirm(self, first_key: str) -> int:
        pipe, route = await self._pipe(first_key)
        pipe.set(f"{first_key}:sync", "1", px=max(5000, 2 * self.timeout_ms))
        pipe.execute_command("WAIT", self.replicas, self.timeout_ms, **route)
        _, acks = await pipe.execute()
        return int(acks)
