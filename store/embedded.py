"""Connecting to Redis: a probe, the errors that mean "Redis is unavailable", and an
embedded Redis substitute (fakeredis's TCP server) for local play (S9).

Part of ``store/``, the only package that talks to Redis.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions

#: Exceptions of the Redis client that mean "the storage is unavailable right now"
#: (callers map them to 503 and retry later).
UNAVAILABLE: tuple[type[BaseException], ...] = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


async def redis_answers(url: str, timeout: float = 1.0) -> bool:
    """True when a Redis at ``url`` answers PING within ``timeout`` seconds.

    A cluster URL (:mod:`store.connect`) is asked at its first node: a cluster node
    answers PING like any server.
    """
    from store.connect import split_cluster_url

    try:
        url = split_cluster_url(url)[0]
    except ValueError:
        return False
    client = aioredis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(await asyncio.wait_for(client.ping(), timeout))
    except Exception:
        return False
    finally:
        await client.aclose()


class EmbeddedRedis:
    """fakeredis's TCP server in a background thread, on ``host`` and a free port.

    ``url`` is what to connect to; :meth:`stop` shuts it down. Lua (lupa) and pub/sub
    work, so the store runs on it unchanged. Data lives in this process only.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        from fakeredis import TcpFakeServer

        if port == 0:
            with socket.socket() as s:
                s.bind((host, 0))
                port = s.getsockname()[1]
        self.server: Any = TcpFakeServer((host, port), server_type="redis")
        self.url = f"redis://{host}:{port}/0"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fakeredis", daemon=True)

    def start(self) -> EmbeddedRedis:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
