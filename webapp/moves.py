"""A move, however it reaches the server: ``POST /api/tables/{id}/actions`` (:mod:`webapp.api`)
or an ``act`` frame on the table's open WebSocket (:mod:`webapp.ws`).

Both take the same checks in the same order and give the same answers (status and
``error`` code), so the Mini App treats a refused frame exactly as a refused POST:

1. the body's shape (400 ``bad_request``), then the table (404 ``not_found``), then the
   seat (403 ``not_seated`` / ``not_your_seat``); a move refused here still costs a token of
   the user's action bucket (429 ``too_fast`` first when it is empty), as a held-down
   button must; someone not seated who may not see the table at all (not in its chat,
   :mod:`webapp.privacy`) gets 403 ``not_in_chat``, as on every route naming a table;
2. the move itself, on the document this process already holds (``store.apply``'s
   ``known``): the action bucket's token, the compare-and-set and its follow-up in one Redis
   call on one Redis; 409 ``stale``, 422 with the engine's reason, 429 ``too_fast``.

A retried ``client_action_id`` is applied once: the answer then says ``duplicate``.
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from store.models import TooFast
from webapp.errors import ApiError
from webapp.keys import DRAIN, LIMITER, STORE
from webapp.privacy import check_table


def too_fast(wait: float) -> ApiError:
    """429 ``too_fast`` for an empty action bucket: ``Retry-After`` whole seconds, ``retry_after`` exact."""
    return ApiError(429, "too_fast", "too many actions, slow down",
                    headers={"Retry-After": str(max(1, math.ceil(wait)))}, retry_after=round(wait, 3))


async def pay_refusal(app: web.Application, user_id: int) -> None:
    """A move refused before it reached the store still takes a token of ``user_id``'s action
    bucket (one Redis call); raises 429 :func:`too_fast` when the bucket is empty (that answer
    comes first), else returns and the caller raises its own refusal."""
    wait = await app[LIMITER].take(user_id)
    if wait > 0:
        raise too_fast(wait)


async def apply_move(app: web.Application, user_id: int, known: Any, body: Any) -> tuple[Any, str]:
    """Apply ``body`` (a :class:`webapp.api.ActionRequest`) for ``user_id`` on the table
    ``known`` (a :class:`store.live.Known`, as this process holds it) → ``(ApplyResult, seat)``.

    Raises :class:`ApiError` 403 (``not_in_chat``, ``not_seated``, ``not_your_seat``) and 429 ``too_fast``;
    ``store.StoreError`` (``stale`` 409, ``not_found`` 404, ``busy`` 503) and
    ``engine.Rejected`` (422) as the store raises them (``webapp.errors.as_api_error`` maps them).
    """
    seat = known.seat_of(user_id)
    if seat is None or (body.seat is not None and body.seat != seat):
        await pay_refusal(app, user_id)
        if seat is None:
            await check_table(app[STORE], known.table, user_id)  # an outsider: not_in_chat, as every table route
            raise ApiError(403, "not_seated", "you have no seat at this table")
        raise ApiError(403, "not_your_seat", "you may act only for your own seat")
    limiter = app[LIMITER]
    try:  # the token is taken in the move's own round trip (store.apply's limit)
        with app[DRAIN].holding():  # a draining process answers it before it stops (webapp.drain)
            result = await app[STORE].apply(
                known.doc["id"],
                seat,
                body.action.as_engine(),
                client_action_id=body.client_action_id,
                expected_version=body.version,
                by="player",
                known=known,
                limit=limiter.spec(user_id),
            )
    except TooFast as e:
        raise too_fast(e.wait) from None
    return result, seat
