"""Play again over HTTP (issue 15): the final sheet's button and its waiting state.

* ``POST /api/tables/{id}/rematch`` — the caller, who played at finished table ``id``,
  takes their seat in its "Play again" lobby (``store.rematch``; made by the first
  tap) → :func:`lobby_payload`. Once every seat is taken the new table starts by itself
  and ``table_id`` names it.
* ``POST /api/tables/{id}/rematch/decline`` — the caller will not play again.
* ``GET /api/tables/{id}/rematch`` — the lobby as it stands (``{"lobby": null}`` when
  nobody asked yet), for the others' final sheets and the waiting one.

Each first checks the table as ``GET /api/tables/{id}`` does: 404 ``not_found``, 403
``not_in_chat`` for someone not in its chat.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from store import User
from webapp.api import identify, ok, visible_or_404
from webapp.keys import STORE


def lobby_payload(lobby: Any, user_id: int, now: float) -> dict[str, Any]:
    """``{lobby: {id, seats, players, held, seated, table_id} | null, table_id}`` (names only, no user ids)."""
    if lobby is None:
        return {"lobby": None, "table_id": None}
    return {
        "lobby": {
            "id": lobby.id,
            "seats": [{"seat": s.seat, "name": s.name, "computer": s.computer} for s in lobby.seats],
            "players": lobby.settings.players,
            "held": len(lobby.held(now)),
            "seated": lobby.seat_of(user_id) is not None,
            "table_id": lobby.table_id,
        },
        "table_id": lobby.table_id,
    }


async def post_rematch(request: web.Request) -> web.Response:
    who = await identify(request)
    await visible_or_404(request, who)
    store = request.app[STORE]
    user = User(id=who.id, name=who.name, username=getattr(who, "username", None), language=getattr(who, "language", None))
    lobby = await store.rematch(request.match_info["id"], user)
    return ok(lobby_payload(lobby, who.id, store.clock()))


async def decline_rematch(request: web.Request) -> web.Response:
    who = await identify(request)
    await visible_or_404(request, who)
    store = request.app[STORE]
    lobby = await store.decline_rematch(request.match_info["id"], who.id)
    return ok(lobby_payload(lobby, who.id, store.clock()))


async def get_rematch(request: web.Request) -> web.Response:
    who = await identify(request)
    await visible_or_404(request, who)
    store = request.app[STORE]
    lobby = await store.rematch_of(request.match_info["id"])
    return ok(lobby_payload(lobby, who.id, store.clock()))


def add_routes(app: web.Application) -> None:
    app.router.add_post("/api/tables/{id}/rematch", post_rematch, name="rematch")
    app.router.add_post("/api/tables/{id}/rematch/decline", decline_rematch, name="rematch_decline")
    app.router.add_get("/api/tables/{id}/rematch", get_rematch, name="rematch_state")
