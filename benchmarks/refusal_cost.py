"""What a refused request costs beside a served one (issue 27.1): ``python -m benchmarks.refusal_cost``.

One process, the app on a fakeredis store, a raw HTTP/1.1 client on ``CONNECTIONS`` kept-alive
loopback connections (requests written back to back, answers read: the client's own cost is
small and the same for every kind). Measured by ``time.process_time`` around each batch,
alternating kinds in rounds (same run, like with like):

* ``served`` — ``GET /api/tables/{id}`` by a player within every limit;
* ``refused_signed`` — the same by a user whose buckets are empty (429);
* ``refused_unsigned`` — ``GET /api/tables/{id}`` without auth from an address whose bucket is empty (429);
* ``forged`` — a forged initData from an address within its limit (401; its verdict cached).

Reported: µs of CPU per request (client included, the same for all), and the ratios to ``served``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

CONNECTIONS = 64
PER_CONN = 40
ROUNDS = 5


async def _batch(port: int, raw: bytes, n_conn: int, per_conn: int) -> float:
    async def one() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(raw * per_conn)
        await writer.drain()
        got = 0
        buf = b""
        while got < per_conn:
            chunk = await reader.read(65536)
            if not chunk:
                break
            buf += chunk
            got = buf.count(b"HTTP/1.1 ")
        writer.close()

    t0 = time.process_time()
    await asyncio.gather(*(one() for _ in range(n_conn)))
    return (time.process_time() - t0) / (n_conn * per_conn) * 1e6


async def measure(rounds: int = ROUNDS, connections: int = CONNECTIONS, per_conn: int = PER_CONN) -> dict:
    import fakeredis
    from aiohttp import web

    from store import LobbySettings, Seat, Store
    from webapp.app import create_app
    from webapp.auth import sign_init_data
    from webapp.settings import WebSettings

    token = "123456789:AAbench-refusal-token_0123456789abcd"
    store = Store(fakeredis.aioredis.FakeRedis(decode_responses=True), prefix="bench")
    settings = WebSettings(bot_token=token, local_play=False, run_worker=False, limit_delay=0.25,
                           read_rate=1e9, read_burst=10**9, address_rate=1e9, address_burst=10**9)
    app = create_app(settings, store)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    seats = [Seat(seat="u111", user_id=111, name="A"), Seat(seat="u222", user_id=222, name="B")]
    table = await store.create_table(game="prsi", seats=seats, seed=1, settings=LobbySettings(players=2, turn_seconds=None))
    init = sign_init_data({"auth_date": int(time.time()), "user": {"id": 111, "first_name": "A"}}, token)
    flooder = sign_init_data({"auth_date": int(time.time()), "user": {"id": 999, "first_name": "F"}}, token)
    path = f"/api/tables/{table.id}"

    def req(auth: str | None) -> bytes:
        head = f"GET {path} HTTP/1.1\r\nHost: x\r\n"
        if auth:
            head += f"Authorization: tma {auth}\r\n"
        return (head + "\r\n").encode()

    limits = app[__import__("webapp.keys", fromlist=["LIMITS"]).LIMITS]
    # the flooder's user bucket and an address bucket emptied (their rates near zero)
    from webapp.ratelimit import TokenBuckets

    limits.reads = TokenBuckets(1e9, 10**9, clock=limits._now)
    results: dict[str, list[float]] = {"served": [], "refused_signed": [], "refused_unsigned": [], "forged": []}
    kinds = {"served": req(init), "refused_signed": req(flooder), "refused_unsigned": req(None),
             "forged": req(init[:-4] + "0000")}
    for _ in range(rounds):
        for kind, raw in kinds.items():
            if kind == "refused_signed":
                limits.reads = _Refusing(limits.reads, 999)
                limits.address = TokenBuckets(1e9, 10**9, clock=limits._now)
            elif kind == "refused_unsigned":
                limits.reads = TokenBuckets(1e9, 10**9, clock=limits._now)
                limits.address = _Refusing(limits.address, "127.0.0.1")
            else:
                limits.reads = TokenBuckets(1e9, 10**9, clock=limits._now)
                limits.address = TokenBuckets(1e9, 10**9, clock=limits._now)
            results[kind].append(await _batch(port, raw, connections, per_conn))
    await runner.cleanup()
    med = {k: statistics.median(v) for k, v in results.items()}
    return {"us_per_request": {k: round(v, 1) for k, v in med.items()},
            "ratio_to_served": {k: round(v / med["served"], 3) for k, v in med.items()},
            "rounds": rounds, "connections": connections, "per_connection": per_conn,
            "load": os.getloadavg()}


class _Refusing:
    """A bucket set that refuses ``key`` (one second to wait) and lets the rest through."""

    def __init__(self, inner, key) -> None:
        self.inner, self.key = inner, key

    def take(self, key) -> float:
        return 1.0 if key == self.key else self.inner.take(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--connections", type=int, default=CONNECTIONS)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.rounds, args.connections)), indent=1))


if __name__ == "__main__":
    main()
