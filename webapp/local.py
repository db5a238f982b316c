"""Local play (S9): a sign-in without Telegram, tables with computer opponents, and an
embedded Redis substitute when no Redis answers.

Only active when :attr:`WebSettings.local` is true (``--local``/``LOCAL_PLAY`` and no
``BOT_TOKEN``); otherwise both routes answer 404 ``not_found``. The local sign-in
signs initData exactly as Telegram would, with a random key made at start, so the
rest of the app checks it like any other initData.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from store import LobbySettings, Seat, User
from store.models import PLAYER_LIMITS
from webapp.api import identify, ok, read_model, table_payload
from webapp.auth import local_user_id, sign_init_data
from webapp.errors import ApiError
from webapp.keys import AUTH, SETTINGS, STORE

log = logging.getLogger(__name__)

COMPUTER_NAMES: dict[str, tuple[str, ...]] = {
    "prsi": ("Karel", "Jana", "Petr", "Eva", "Honza"),
    "penki": ("Ваня", "Маша", "Петя", "Оля", "Саша"),
}


Level = Literal["beginner", "regular", "expert"]  # engine.players.LEVEL_NAMES (issue 14)


class LoginRequest(BaseModel):
    """``POST /api/local/login`` body: ``{name}`` (1–32 characters after trimming)."""

    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=32)
    language: str | None = Field(None, max_length=35, pattern=r"^[A-Za-z0-9-]+$")


class LocalTableRequest(BaseModel):
    """``POST /api/local/tables`` body: ``{game, players, turn_seconds?, variants?, level?, levels?}``.

    ``players`` counts you too (Prší 2–5, Penki 2–6); the others are computers.
    ``turn_seconds``: None (off, the default for local play), 30, 60 or 120.
    ``variants``: Prší table variants (RULES.md PV1–PV7, PV3q), none by default.
    ``level``: the computers' level, ``beginner`` | ``regular`` (default) | ``expert``;
    ``levels``: one per computer seat in order (those not listed play at ``level``).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    game: Literal["prsi", "penki"]
    players: int = Field(3, ge=2, le=6)
    turn_seconds: Literal[30, 60, 120] | None = None
    variants: list[Literal["PV1", "PV2", "PV3", "PV3q", "PV4", "PV5", "PV6", "PV7"]] = Field(default_factory=list, max_length=8)
    level: Level = "regular"
    levels: list[Level] = Field(default_factory=list, max_length=5)


def _require_local(request: web.Request) -> None:
    if not request.app[SETTINGS].local:
        raise ApiError(404, "not_found", "local play is off")


async def login(request: web.Request) -> web.Response:
    """``POST /api/local/login`` ``{name}`` → ``{init_data, user: {id, name}}``.

    The user id is derived from the name (same name, same player). 404 unless local play.
    """
    _require_local(request)
    body: LoginRequest = await read_model(request, LoginRequest)
    uid = local_user_id(body.name)
    user = {"id": uid, "first_name": body.name, "language_code": body.language or "en"}
    init_data = sign_init_data(
        {"user": user, "auth_date": int(time.time()), "chat_type": "sender", "chat_instance": "local"},
        request.app[AUTH].token,
    )
    await request.app[STORE].save_user(User(id=uid, name=body.name, language=body.language))
    return ok({"init_data": init_data, "user": {"id": uid, "name": body.name}})


async def create_table(request: web.Request) -> web.Response:
    """``POST /api/local/tables`` → ``{table, seat, version, deadline, view}`` (as ``GET /api/tables/{id}``).

    A new table with the caller in the first seat and computers in the others. 404
    unless local play; 400 for a player count the game does not take.
    """
    _require_local(request)
    who = await identify(request)
    body: LocalTableRequest = await read_model(request, LocalTableRequest)
    lo, hi = PLAYER_LIMITS[body.game]
    if not lo <= body.players <= hi:
        raise ApiError(400, "bad_request", f"{body.game} takes {lo}-{hi} players")
    names = COMPUTER_NAMES[body.game]
    seats = [Seat(seat=f"u{who.id}", user_id=who.id, name=who.name)]
    seats += [
        Seat(seat=f"c{i}", user_id=None, name=f"🤖 {names[(i - 1) % len(names)]}", computer=True,
             level=body.levels[i - 1] if i - 1 < len(body.levels) else body.level)
        for i in range(1, body.players)
    ]
    if body.variants and body.game != "prsi":
        raise ApiError(400, "bad_request", "only Prší has table variants")
    settings = LobbySettings(players=body.players, turn_seconds=body.turn_seconds, variants=body.variants)
    table = await request.app[STORE].create_table(game=body.game, seats=seats, settings=settings)
    return ok(table_payload(table, table.seat_of(who.id)), status=201)


def add_routes(app: web.Application) -> None:
    """Register the local-play routes (they answer 404 unless local play is on)."""
    app.router.add_post("/api/local/login", login, name="local_login")
    app.router.add_post("/api/local/tables", create_table, name="local_tables")


