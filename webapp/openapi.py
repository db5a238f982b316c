"""The OpenAPI 3.1 document of the API, served at ``GET /api/openapi.json``.

Request bodies come from the pydantic models (``model_json_schema``); answers are
described by hand, briefly. The WebSocket is listed as a ``GET`` answering 101, its
messages described in the text (OpenAPI has no WebSocket object).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel

from webapp.api import Action, ActionRequest, LanguageRequest
from webapp.errors import dumps
from webapp.local import LocalTableRequest, LoginRequest

REF = "#/components/schemas/{model}"


def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    models: list[type[BaseModel]] = [Action, ActionRequest, LanguageRequest, LoginRequest, LocalTableRequest]
    for model in models:
        schema = model.model_json_schema(ref_template=REF)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    obj = {"type": "object"}
    schemas.update(
        {
            "Error": {
                "type": "object",
                "required": ["error", "detail"],
                "properties": {
                    "error": {"type": "string", "description": "a code: unauthorized, not_seated, stale, …"},
                    "detail": {"type": "string"},
                },
            },
            "Seat": {
                "type": "object",
                "properties": {
                    "seat": {"type": "string"},
                    "user_id": {"type": ["integer", "null"]},
                    "name": {"type": "string"},
                    "computer": {"type": "boolean"},
                    "level": {"enum": ["beginner", "regular", "expert", None],
                              "description": "a computer's level (null: regular)"},
                    "auto": {"type": "boolean"},
                    "strikes": {"type": "integer"},
                },
            },
            "TableSummary": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "game": {"enum": ["prsi", "penki"]},
                    "chat_id": {"type": ["integer", "null"]},
                    "thread_id": {"type": ["integer", "null"]},
                    "lobby_id": {"type": ["string", "null"]},
                    "seats": {"type": "array", "items": {"$ref": REF.format(model="Seat")}},
                    "settings": {
                        "type": "object",
                        "properties": {
                            "players": {"type": "integer"},
                            "turn_seconds": {"type": ["integer", "null"]},
                        },
                    },
                    "version": {"type": "integer"},
                    "deadline": {"type": ["number", "null"]},
                    "rated": {"type": "boolean"},
                    "created": {"type": "number"},
                    "over": {"type": "boolean"},
                },
            },
            "View": {**obj, "description": "engine.view(state, seat): see CONTRACTS §1"},
            "Rematch": {
                "type": "object",
                "required": ["lobby", "table_id"],
                "properties": {
                    "lobby": {"type": ["object", "null"],
                              "description": "id, seats [{seat, name, computer}], players, held, seated, table_id"},
                    "table_id": {"type": ["string", "null"], "description": "the next match once it runs"},
                },
            },
            "TableAnswer": {
                "type": "object",
                "required": ["table", "seat", "version", "deadline", "view"],
                "properties": {
                    "table": {"$ref": REF.format(model="TableSummary")},
                    "seat": {"type": ["string", "null"], "description": "the caller's seat; null: spectator"},
                    "version": {"type": "integer"},
                    "deadline": {"type": ["number", "null"], "description": "epoch seconds of the turn timer"},
                    "view": {"$ref": REF.format(model="View")},
                },
            },
            "ActionAnswer": {
                "type": "object",
                "properties": {
                    "version": {"type": "integer"},
                    "events": {"type": "array", "items": obj},
                    "view": {"$ref": REF.format(model="View")},
                    "deadline": {"type": ["number", "null"]},
                    "duplicate": {"type": "boolean"},
                },
            },
            "Tables": {
                "type": "object",
                "properties": {"tables": {"type": "array", "items": {"$ref": REF.format(model="TableSummary")}}},
            },
            "LeaderboardRow": {
                "type": "object",
                "properties": {
                    "user_id": {"type": "integer"},
                    "name": {"type": "string"},
                    "score": {"type": "integer"},
                    "matches": {"type": "integer"},
                    "rank": {"type": "integer"},
                },
            },
        }
    )
    return schemas


def _json(schema: dict[str, Any] | str, description: str = "OK") -> dict[str, Any]:
    if isinstance(schema, str):
        schema = {"$ref": REF.format(model=schema)}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _body(model: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": REF.format(model=model)}}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "bad request (junk JSON, wrong types, bad query)",
        401: "initData missing, invalid, foreign or expired (error: unauthorized | auth_expired)",
        403: "not seated here, or another seat (not_seated | not_your_seat)",
        404: "not found (or local play off)",
        409: "stale version",
        413: "body too large",
        422: "the engine refused the action; error is its reason",
        429: "too many requests or actions, per user or per address (too_fast; Retry-After)",
    }
    return {str(s): _json("Error", text[s]) for s in statuses}


AUTH = [{"tma": []}]
TABLE_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
GAME_Q = {"name": "game", "in": "query", "required": True, "schema": {"enum": ["prsi", "penki"]}}
CHAT_Q = {"name": "chat_id", "in": "query", "required": False, "schema": {"type": "integer"}}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document (a plain dict). Every operation may answer 429 ``too_fast``
    (the request limits of :mod:`webapp.ratelimit` hold for every route); every one naming a
    table or a chat 403 ``not_in_chat`` (:mod:`webapp.privacy`)."""
    doc = _document()
    for path, ops in doc["paths"].items():
        for op in ops.values():
            op["responses"].setdefault("429", _errors(429)["429"])
            if _private(path, op):
                op["responses"]["403"] = _forbidden(op["responses"].get("403"))
    return doc


def _private(path: str, op: dict[str, Any]) -> bool:
    """Whether the operation names a table or a chat, so answers 403 ``not_in_chat`` to outsiders."""
    return "{id}" in path or "{chat_id}" in path or any(p.get("name") == "chat_id" for p in op.get("parameters", []))


def _forbidden(existing: dict[str, Any] | None) -> dict[str, Any]:
    """The 403 answer of a route naming a table or a chat (``not_in_chat``, webapp.privacy),
    with the route's own 403 reasons when it has some."""
    text = "not in the table's (or the board's) chat: only its players and people the bot saw there (not_in_chat)"
    if existing is not None:
        text = f"{text}; or {existing['description']}"
    return _json("Error", text)


def _document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Karty Mini App API",
            "version": "1.0",
            "description": "Prší and Penki tables for the Telegram Mini App. Errors are "
            '`{"error": code, "detail": text}`. Authenticate with `Authorization: tma <initData>`. '
            "Every JSON answer (errors too) and every WebSocket message also carries `server_time`: "
            "the server's epoch seconds when it was sent, so a client whose clock is off can count "
            "down to a `deadline` (server epoch seconds) rightly.",
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "tma": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`tma <initData>`: Telegram's signed initData, at most 24 h old; "
                    "or `session <token>`: a session from `POST /api/session`, renewed while in use",
                }
            },
        },
        "security": AUTH,
        "paths": {
            "/api/openapi.json": {
                "get": {"summary": "This document", "security": [], "responses": {"200": _json({"type": "object"})}}
            },
            "/api/config": {
                "get": {
                    "summary": "Front-end configuration",
                    "security": [],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "local": {"type": "boolean"},
                                    "bot_username": {"type": ["string", "null"]},
                                    "app_short_name": {"type": ["string", "null"]},
                                },
                            }
                        )
                    },
                }
            },
            "/api/me": {
                "get": {
                    "summary": "The signed-in user",
                    "responses": {"200": _json({"type": "object"}), **_errors(401)},
                }
            },
            "/api/me/language": {
                "post": {
                    "summary": "The caller's language (cs, ru, en), chosen explicitly: it beats Telegram's "
                    "language code in the Mini App and in the bot, like /lang there",
                    "requestBody": _body("LanguageRequest"),
                    "responses": {"200": _json({"type": "object"}), **_errors(400, 401)},
                }
            },
            "/api/session": {
                "post": {
                    "summary": "A server-issued session for valid initData (or a session still valid): "
                    "send it as `Authorization: session <token>` and renew it while in use",
                    "responses": {"200": _json({"type": "object", "required": ["session", "expires_at"],
                                                "properties": {"session": {"type": "string"},
                                                               "expires_at": {"type": "number"}}}),
                                  **_errors(401)},
                }
            },
            "/api/local/login": {
                "post": {
                    "summary": "Local sign-in (local play only): signed initData for a name",
                    "security": [],
                    "requestBody": _body("LoginRequest"),
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {"init_data": {"type": "string"}, "user": {"type": "object"}},
                            }
                        ),
                        **_errors(400, 404, 413),
                    },
                }
            },
            "/api/local/tables": {
                "post": {
                    "summary": "A new table with you and computer players (local play only)",
                    "requestBody": _body("LocalTableRequest"),
                    "responses": {"201": _json("TableAnswer", "Created"), **_errors(400, 401, 404, 413)},
                }
            },
            "/api/tables": {
                "get": {
                    "summary": "The caller's live tables",
                    "responses": {"200": _json("Tables"), **_errors(401)},
                }
            },
            "/api/tables/{id}": {
                "get": {
                    "summary": "A table: its seats, your seat, version, turn deadline and your view",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json("TableAnswer"), **_errors(401, 404)},
                }
            },
            "/api/tables/{id}/actions": {
                "post": {
                    "summary": "Play an action at your seat",
                    "parameters": [TABLE_ID],
                    "requestBody": _body("ActionRequest"),
                    "responses": {
                        "200": _json("ActionAnswer"),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 429),
                    },
                }
            },
            "/api/tables/{id}/leave": {
                "post": {
                    "summary": "Leave the table for good: the computer plays your seat to the end (a rated "
                    "table's result still counts for it, as after three timeouts). Idempotent. 409 over "
                    "(the game has ended) or not_your_turn (leave on your turn)",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json("TableAnswer"), **_errors(401, 403, 404, 409)},
                }
            },
            "/api/tables/{id}/rematch": {
                "get": {
                    "summary": "The finished table's Play again lobby, or null when nobody asked yet",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json("Rematch"), **_errors(401)},
                },
                "post": {
                    "summary": "Play again: your seat in the finished table's next match (it starts when full)",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json("Rematch"), **_errors(400, 401, 403, 404, 409)},
                },
            },
            "/api/tables/{id}/replay": {
                "get": {
                    "summary": "The game again, frame by frame, as you saw it (every hand once it is over)",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json({"type": "object", "description": "store.replay: table, game, "
                                                "players, names, seat, over, variants, rounds, frames"}),
                                  **_errors(401, 404)},
                }
            },
            "/api/tables/{id}/rematch/decline": {
                "post": {
                    "summary": "Not this time: give up your kept seat in the next match",
                    "parameters": [TABLE_ID],
                    "responses": {"200": _json("Rematch"), **_errors(401)},
                }
            },
            "/api/chats/{chat_id}/tables": {
                "get": {
                    "summary": "A chat's live tables",
                    "parameters": [{"name": "chat_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                    "responses": {"200": _json("Tables"), **_errors(400, 401)},
                }
            },
            "/api/leaderboard": {
                "get": {
                    "summary": "A leaderboard: a chat's or everyone's, this week or month",
                    "parameters": [
                        GAME_Q,
                        {"name": "period", "in": "query", "schema": {"enum": ["week", "month"], "default": "week"}},
                        CHAT_Q,
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "rows": {"type": "array", "items": {"$ref": REF.format(model="LeaderboardRow")}},
                                    "period": {"enum": ["week", "month"]},
                                    "period_key": {"type": "string", "examples": ["2026-W49", "2026-11"]},
                                    "game": {"type": "string"},
                                    "chat_id": {"type": ["integer", "null"]},
                                },
                            }
                        ),
                        **_errors(400, 401),
                    },
                }
            },
            "/api/rating": {
                "get": {
                    "summary": "The caller's weekly and monthly rating, rank and last results",
                    "parameters": [GAME_Q, CHAT_Q],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "week": {"oneOf": [{"$ref": REF.format(model="LeaderboardRow")}, {"type": "null"}]},
                                    "month": {"oneOf": [{"$ref": REF.format(model="LeaderboardRow")}, {"type": "null"}]},
                                    "week_key": {"type": "string"},
                                    "month_key": {"type": "string"},
                                    "last": {"type": "array", "items": {"type": "object"}},
                                },
                            }
                        ),
                        **_errors(400, 401),
                    },
                }
            },
            "/ws/tables/{id}": {
                "get": {
                    "summary": "The table's live feed (WebSocket)",
                    "description": (
                        'Upgrade to a WebSocket, then send `{"type": "auth", "init_data": "…", "since": n?}` '
                        'within 10 s. The server sends `{"type": "state", "table", "version", "seat", "view", '
                        '"events", "deadline", "seats", "by"}` at once and on every new version (your own view; '
                        'spectators the public one). Send `{"type": "ping"}` every 10–20 s; the answer is '
                        '`{"type": "pong"}`. Errors: `{"type": "error", "error", "detail"}` then a close '
                        "(4401 unauthorized, 4400 bad message, 4403 not_in_chat, 4404 table gone, 4408 idle, 4429 too_many sockets or "
                        "too_fast: more frames than the socket's rate, 1001 shutdown)."
                    ),
                    "security": [],
                    "parameters": [TABLE_ID],
                    "responses": {"101": {"description": "Switching Protocols"}, **_errors(400, 401, 404)},
                }
            },
        },
    }


async def openapi_json(request: web.Request) -> web.Response:
    """``GET /api/openapi.json``: the OpenAPI 3.1 document (as is: no ``server_time``). No auth."""
    return web.json_response(document(), dumps=dumps)


def add_routes(app: web.Application) -> None:
    """Register ``/api/openapi.json``."""
    app.router.add_get("/api/openapi.json", openapi_json, name="openapi")
