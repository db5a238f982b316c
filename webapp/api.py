"""The Mini App's JSON API (CONTRACTS §3). Thin views: check, call the store, answer.

Every handler but ``/api/config`` (and the local sign-in, :mod:`webapp.local`)
authenticates first with ``Authorization: tma <initData>`` (401 otherwise). Errors
are raised, never answered here: :func:`webapp.errors.error_middleware` maps them to
``{"error": code, "detail": text}`` with the right status.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Annotated, Any

from aiohttp import web
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

import engine
from engine.ratings import period_keys
from store.common import ROUND_HOLD
from store.models import language_of
from webapp import logs, metrics
from webapp.auth import Identity
from webapp.clock import stamp
from webapp.errors import ApiError, dumps
from webapp.keys import AUTH, DRAIN, HUB, SETTINGS, STORE
from webapp.moves import apply_move, pay_refusal
from webapp.privacy import check_chat, check_table

PERIODS = ("week", "month")


# --- request bodies (validated strictly: wrong types are 400, not coerced) ------------
class Action(BaseModel):
    """One action in the replay notation without ``p`` (CONTRACTS §1): ``{"a": "play", "card": "Qh", "suit": "s"}``.

    Shape only; whether it is legal is the engine's call (422 with its reason). The fields
    of the Prší variants (``suit``, ``cards``, ``rank``) are only typed and bounded here, their
    values left to the engine: a field of a variant that is off is no field (RULES.md
    PV9.8), so ``{"card": "9h", "cards": []}`` at a table without PV4 is the play of 9h,
    and an empty group at a PV4 table is the engine's ``bad_action`` (PV9.6).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    a: str = Field(min_length=1, max_length=16, pattern=r"^[a-z_]+$", description="action name")
    card: str | None = Field(None, min_length=2, max_length=3, description="a card, e.g. 10h")
    suit: str | None = Field(None, max_length=16, description="h d c s (Prší queen)")
    to: str | None = Field(None, min_length=1, max_length=24, description="a seat id or a pile (Penki)")
    cards: list[Annotated[str, StringConstraints(max_length=16)]] | None = Field(
        None, max_length=32, description="Prší PV4: a group of one rank, in order (the last on top)")
    rank: str | None = Field(None, max_length=16, description="7 8 9 10 J Q K A (Prší PV5 jack)")

    def as_engine(self) -> dict[str, Any]:
        """The dict the engine and store take (``None`` fields left out)."""
        return self.model_dump(exclude_none=True)


def _whole(value: Any) -> Any:
    """An integral float (``3.0``: JSON Schema's integer, as some clients' encoders write a
    number) as the int it is; anything else as given, for the strict check (``3.5``, ``true``
    and ``"3"`` stay 400)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


class ActionRequest(BaseModel):
    """Body of ``POST /api/tables/{id}/actions``.

    ``client_action_id``: an id the client picks per action so a retried POST is applied
    once (the answer then has ``duplicate: true``). ``version``: the version the client
    saw; a different current version answers 409 ``stale`` (a whole number: ``3`` or ``3.0``). ``seat``: optional, the
    seat the client acts for; anything but the caller's own seat is 403.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    action: Action
    client_action_id: str | None = Field(None, min_length=1, max_length=64)
    version: Annotated[int | None, BeforeValidator(_whole)] = Field(None, ge=0)
    seat: str | None = Field(None, max_length=24)


# --- helpers ---------------------------------------------------------------------------
def ok(data: Any, status: int = 200) -> web.Response:
    """A JSON answer, with the server's ``server_time`` (webapp.clock)."""
    return web.json_response(stamp(data), status=status, dumps=dumps)


async def identify(request: web.Request) -> Identity:
    """The caller (401 unless ``Authorization: tma <initData>`` checks out); saves the user."""
    who = await request.app[AUTH].request(request)
    logs.bind_user(who.id)  # the request's log records name the user (webapp.logs)
    return who


async def read_body(request: web.Request) -> bytes:
    """The request body, at most ``CLIENT_MAX_SIZE`` (16 KiB) bytes: 413 ``too_large`` beyond.

    (The application's own limit stays aiohttp's 1 MiB, for the bot's webhook updates.)
    A body cut off by the client closing its connection is 400 ``bad_request`` (no traceback).
    """
    limit = request.app[SETTINGS].client_max_size
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(413, "too_large", f"body over {limit} bytes")
    buf = bytearray()
    try:
        while chunk := await request.content.read(limit + 1 - len(buf)):
            buf += chunk
            if len(buf) > limit:
                raise ApiError(413, "too_large", f"body over {limit} bytes")
    except ConnectionResetError:  # the client went away mid-body: nothing was read, nothing done
        raise ApiError(400, "bad_request", "the body was cut off") from None
    return bytes(buf)


async def read_model(request: web.Request, model: type[BaseModel]) -> Any:
    """Parse the body as JSON into ``model``: 400 junk/wrong types, 413 over ``CLIENT_MAX_SIZE``."""
    raw = await read_body(request)
    if not raw:
        raise ApiError(400, "bad_request", "JSON body required")
    return model.model_validate_json(raw)


def table_payload(table: Any, seat: str | None) -> dict[str, Any]:
    """``{table, seat, version, deadline, view}`` of ``GET /api/tables/{id}`` for ``seat``."""
    return {
        "table": table.summary(),
        "seat": seat,
        "version": table.version,
        "deadline": table.deadline,
        "view": engine.view(table.state, seat),
    }


def query_game(request: web.Request) -> str:
    game = request.query.get("game", "")
    if game not in engine.GAMES:
        raise ApiError(400, "bad_request", f"game must be one of {', '.join(engine.GAMES)}")
    return game


def query_int(request: web.Request, name: str, default: int | None = None) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, "bad_request", f"{name} must be an integer") from None


def path_chat_id(request: web.Request) -> int:
    try:
        return int(request.match_info["chat_id"])
    except ValueError:
        raise ApiError(400, "bad_request", "chat_id must be an integer") from None


async def get_table_or_404(request: web.Request) -> Any:
    """The table (a :class:`store.Table`) as this process knows it, or 404 ``not_found``."""
    return (await known_or_404(request)).table


async def known_or_404(request: web.Request) -> Any:
    """The table as this process knows it (``store.current``: no Redis read once known), or 404."""
    known = await request.app[STORE].current(request.match_info["id"])
    if known is None:
        raise ApiError(404, "not_found", "no such table (or it expired)")
    return known


async def visible_or_404(request: web.Request, who: Identity) -> Any:
    """The table of the path's ``{id}`` as this process knows it, if ``who`` may see it: 404
    ``not_found``, 403 ``not_in_chat`` (:func:`webapp.privacy.check_table`: a player always,
    anyone else only when in the table's chat). Every route naming a table checks this first."""
    known = await known_or_404(request)
    if known.seat_of(who.id) is None:
        await check_table(request.app[STORE], known.table, who.id)
    return known


# --- handlers ----------------------------------------------------------------------------
async def config(request: web.Request) -> web.Response:
    """``GET /api/config`` → ``{local, bot_username, app_short_name, round_hold}``. No auth.

    ``round_hold``: seconds the next Prší round waits after one ends (the countdown shown).
    """
    settings = request.app[SETTINGS]
    return ok(
        {
            "local": settings.local,
            "round_hold": ROUND_HOLD,
            "bot_username": settings.bot_username or await _bot_username(request.app),
            "app_short_name": settings.webapp_short_name,
        }
    )


async def healthz(request: web.Request) -> web.Response:
    """``GET /healthz`` → 200 ``{"ok": true}`` while this process serves and its Redis answers,
    else 503 ``{"ok": false}``; 503 ``{"ok": false, "status": "draining"}`` once it drains
    (SIGTERM, :mod:`webapp.drain`). No auth; for container health checks and the proxy."""
    if request.app[DRAIN].draining:
        return web.json_response({"ok": False, "status": "draining"}, status=503)
    try:
        await asyncio.wait_for(request.app[STORE].ping(), 2.0)
    except Exception:
        return web.json_response({"ok": False}, status=503)
    return web.json_response({"ok": True})


async def _bot_username(app: web.Application) -> str | None:
    """The mounted bot's @username (``getMe``, cached by aiogram), or None without a bot."""
    if not app[SETTINGS].token:
        return None
    try:
        from bot.boot import runtime_ready

        runtime = await runtime_ready(app, 10.0)  # the bot may still be starting (bot.boot)
        if runtime is None:
            return None
        return (await asyncio.wait_for(runtime.bot.me(), 3.0)).username
    except Exception:  # the bot being unreachable must not break the Mini App's start
        return None


async def me(request: web.Request) -> web.Response:
    """``GET /api/me`` → ``{user: {id, name, username, language}, start_param}``."""
    who = await identify(request)
    stored = await request.app[STORE].get_user(who.id)
    language = stored.language if stored is not None and stored.language else language_of(who.language)
    user = {"id": who.id, "name": who.name, "username": who.username, "language": language}
    return ok({"user": user, "start_param": who.start_param})


class LanguageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    language: str = Field(pattern="^(en|cs|ru)$")


async def set_language(request: web.Request) -> web.Response:
    """``POST /api/me/language`` with ``{"language": "en"|"cs"|"ru"}`` → ``{user}``: the caller's
    explicit choice (the Mini App's switch), the same preference as ``/lang`` in the bot."""
    who = await identify(request)
    body: LanguageRequest = await read_model(request, LanguageRequest)
    user = await request.app[STORE].set_language(who.id, body.language, name=who.name, username=who.username)
    return ok({"user": {"id": who.id, "name": who.name, "username": who.username, "language": user.language}})


async def session(request: web.Request) -> web.Response:
    """``POST /api/session`` → ``{session, expires_at}``: a server-issued session for the caller
    (signed in with valid initData or a session not yet expired), sent back as
    ``Authorization: session <token>`` (and ``session`` in the socket's auth message). 401
    ``auth_expired`` / ``session_expired`` when neither is valid any more: reopen the app."""
    who = await identify(request)
    token, expires = request.app[AUTH].issue(who)
    return ok({"session": token, "expires_at": expires})


async def my_tables(request: web.Request) -> web.Response:
    """``GET /api/tables`` → ``{tables: [summary…]}``: the caller's live tables, newest first.

    Each summary also says where the game stands, so a list tells tables apart (all
    public, S3): ``seat`` (the caller's), ``to_move``, ``round`` (Prší) or ``phase`` (Penki),
    and ``chat_title``: the group's title as the bot last saw it (null for a private chat, local
    play or a group the bot has not seen since; the caller is seated there, so may know it).
    """
    who = await identify(request)
    store = request.app[STORE]
    tables = await store.user_tables(who.id)
    titles = await store.chat_titles(t.chat_id for t in tables if t.chat_id is not None and t.chat_id < 0)
    return ok({"tables": [_listed(t, who.id, titles.get(t.chat_id)) for t in tables]})


def _listed(table: Any, user_id: int, chat_title: str | None = None) -> dict[str, Any]:
    state = table.state
    return {
        **table.summary(),
        "chat_title": chat_title,
        "seat": table.seat_of(user_id),
        "to_move": getattr(state, "to_move", None),
        "round": getattr(state, "round", None),
        "rounds": getattr(state, "rounds", None) or getattr(engine.rules(table.game), "ROUNDS", None),
        "phase": getattr(state, "phase", None),
    }


async def get_table(request: web.Request) -> web.Response:
    """``GET /api/tables/{id}`` → ``{table, seat, version, deadline, view}``.

    ``seat`` is the caller's seat or null (a spectator gets the public view). 404 ``not_found``.
    """
    who = await identify(request)
    known = await visible_or_404(request, who)
    return ok(table_payload(known.table, known.seat_of(who.id)))


async def post_action(request: web.Request) -> web.Response:
    """``POST /api/tables/{id}/actions`` with :class:`ActionRequest` → ``{version, events, view, deadline, duplicate}``.

    Errors: 400 ``bad_request`` (junk JSON, wrong types), 413 ``too_large``, 403
    ``not_seated`` / ``not_your_seat``, 404 ``not_found``, 409 ``stale``, 422 with the
    engine's reason (``not_your_turn``, ``not_in_hand``, ``illegal``, ``bad_action``,
    ``game_over``), 429 ``too_fast`` (with ``Retry-After`` and ``retry_after``).
    """
    started = time.perf_counter()
    known = None
    try:
        who = await identify(request)
        try:
            body: ActionRequest = await read_model(request, ActionRequest)
            known = await known_or_404(request)  # the same document the move is applied on
        except (ApiError, ValidationError):
            await pay_refusal(request.app, who.id)  # every POST costs a token (429 first when it is empty)
            raise
        result, seat = await apply_move(request.app, who.id, known, body)
    except Exception as e:
        metrics.move_done(metrics.game_of(known), "post", metrics.outcome_of(e))
        raise
    metrics.move_done(metrics.game_of(known), "post", "duplicate" if result.duplicate else "committed", started)
    feed = request.app[HUB].feeds.get(known.doc["id"])  # the sockets' view of it, if made here
    view = feed.view(result.version, seat) if feed is not None else None
    return ok(
        {
            "version": result.version,
            "events": result.events,
            "view": engine.view(result.table.state, seat) if view is None else view,
            "deadline": result.table.deadline,
            "duplicate": result.duplicate,
        }
    )


async def leave_table(request: web.Request) -> web.Response:
    """``POST /api/tables/{id}/leave`` (no body) → ``{table, seat, version, deadline, view}``: the
    caller leaves the table for good and the computer plays their seat to the end (``store.leave_table``;
    a rated table's result still counts for the seat, as S4's auto). Idempotent: leaving again
    answers the table as it is.

    Errors: 403 ``not_in_chat`` (an outsider), ``not_seated``, 404 ``not_found``, 409 ``over`` (the game has ended),
    ``not_your_turn`` (it waits for another player: leave on your turn).
    """
    who = await identify(request)
    known = await known_or_404(request)
    seat = known.seat_of(who.id)
    if seat is None or not any(s["seat"] == seat and not s["computer"] for s in known.doc["seats"]):
        await check_table(request.app[STORE], known.table, who.id)  # an outsider: 403 not_in_chat, as every route
        raise ApiError(403, "not_seated", "you have no seat at this table")
    with request.app[DRAIN].holding():  # a draining process answers it before it stops (webapp.drain)
        table = await request.app[STORE].leave_table(known.doc["id"], who.id)
    return ok(table_payload(table, seat))


async def chat_tables(request: web.Request) -> web.Response:
    """``GET /api/chats/{chat_id}/tables`` → ``{tables: [summary…]}`` (the chat's live tables)."""
    who = await identify(request)
    chat_id = path_chat_id(request)
    await check_chat(request.app[STORE], chat_id, who.id)  # 403 not_in_chat
    tables = await request.app[STORE].chat_tables(chat_id)
    return ok({"tables": [t.summary() for t in tables]})


async def leaderboard(request: web.Request) -> web.Response:
    """``GET /api/leaderboard?game=&period=week|month&chat_id=&limit=`` → ``{rows, period, period_key, game, chat_id}``.

    ``rows``: ``[{user_id, name, score, matches, rank}]``; no ``chat_id`` means everyone.
    """
    who = await identify(request)
    game = query_game(request)
    period = request.query.get("period", "week")
    if period not in PERIODS:
        raise ApiError(400, "bad_request", "period must be week or month")
    chat_id = query_int(request, "chat_id")
    limit = query_int(request, "limit", 20)
    if not 1 <= limit <= 100:
        raise ApiError(400, "bad_request", "limit must be 1..100")
    await check_chat(request.app[STORE], chat_id, who.id)  # a chat's board: 403 not_in_chat for outsiders
    now = datetime.now(UTC)
    rows = await request.app[STORE].leaderboard(game, period, chat_id=chat_id, at=now, limit=limit)
    week_key, month_key = period_keys(game, now)
    return ok(
        {
            "game": game,
            "period": period,
            "period_key": week_key if period == "week" else month_key,
            "chat_id": chat_id,
            "rows": rows,
        }
    )


async def rating(request: web.Request) -> web.Response:
    """``GET /api/rating?game=&chat_id=`` → ``store.user_rating`` of the caller.

    ``{week: row|null, month: row|null, week_key, month_key, last: [{table, ended, balance, place}]}``.
    """
    who = await identify(request)
    game = query_game(request)
    chat_id = query_int(request, "chat_id")
    await check_chat(request.app[STORE], chat_id, who.id)
    data = await request.app[STORE].user_rating(game, who.id, chat_id=chat_id)
    return ok(data)


def add_routes(app: web.Application) -> None:
    """Register the API routes on ``app``."""
    app.router.add_get("/healthz", healthz, name="healthz")
    app.router.add_get("/api/config", config, name="config")
    app.router.add_get("/api/me", me, name="me")
    app.router.add_post("/api/session", session, name="session")
    app.router.add_post("/api/me/language", set_language, name="language")
    app.router.add_get("/api/tables", my_tables, name="my_tables")
    app.router.add_get("/api/tables/{id}", get_table, name="table")
    app.router.add_post("/api/tables/{id}/actions", post_action, name="actions")
    app.router.add_post("/api/tables/{id}/leave", leave_table, name="leave")
    app.router.add_get("/api/chats/{chat_id}/tables", chat_tables, name="chat_tables")
    app.router.add_get("/api/leaderboard", leaderboard, name="leaderboard")
    app.router.add_get("/api/rating", rating, name="rating")
