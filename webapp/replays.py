"""Replays over HTTP (issue 15): ``GET /api/tables/{id}/replay``.

The frames of ``store.replay`` for the caller's seat at that table (a spectator's
when they had none): each as they saw it then, every hand only once the game is
over. Compressed: a Prší match is a few hundred frames.
"""

from __future__ import annotations

from aiohttp import web

from webapp.api import get_table_or_404, identify
from webapp.errors import dumps
from webapp.keys import STORE


async def get_replay(request: web.Request) -> web.Response:
    who = await identify(request)
    table = await get_table_or_404(request)
    replay = await request.app[STORE].replay(table.id, table.seat_of(who.id))
    resp = web.json_response(replay, dumps=dumps)
    resp.enable_compression()
    return resp


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/tables/{id}/replay", get_replay, name="replay")
