"""Replays over HTTP (issue 15): ``GET /api/tables/{id}/replay``.

The frames of ``store.replay`` for the caller's seat at that table (a spectator's
when they had none): each as they saw it then, every hand only once the game is
over. Compressed: a Prší match is a few hundred frames. Someone not in the table's chat
gets 403 ``not_in_chat``, as from ``GET /api/tables/{id}``.
"""

from __future__ import annotations

from aiohttp import web

from webapp.api import identify, visible_or_404
from webapp.errors import dumps
from webapp.keys import STORE


async def get_replay(request: web.Request) -> web.Response:
    who = await identify(request)
    table = (await visible_or_404(request, who)).table  # 403 not_in_chat for an outsider
    replay = await request.app[STORE].replay(table.id, table.seat_of(who.id))
    resp = web.json_response(replay, dumps=dumps)
    resp.enable_compression()
    return resp


def add_routes(app: web.Application) -> None:
    app.router.add_get("/api/tables/{id}/replay", get_replay, name="replay")
