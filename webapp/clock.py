"""The server's clock in every answer (issue 12, point 5).

Every JSON answer of the API (errors included) and every WebSocket message carries
``server_time``: epoch seconds (float, ms precision) when it was sent. The Mini App keeps
the offset between that and the phone's clock (``static/clock.js``), so a turn's
``deadline`` (server epoch seconds) counts down right on a phone whose clock is off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Clock = Callable[[], float]


def server_time(clock: Clock = time.time) -> float:
    return round(clock(), 3)


def stamp(obj: Any, clock: Clock = time.time) -> Any:
    """``obj`` with ``server_time`` added when it is a dict (other JSON is left alone)."""
    if isinstance(obj, dict):
        return {**obj, "server_time": server_time(clock)}
    return obj


def stamp_text(text: str, clock: Clock = time.time) -> str:
    """A serialized JSON object with ``"server_time"`` put first — at the moment of sending,
    without parsing it again (messages fanned out to many sockets are serialized once)."""
    if not text.startswith("{"):
        return text
    head = f'{{"server_time":{server_time(clock)}'
    empty = len(text) < 8 and text[1:].strip() == "}"  # (a state message is kilobytes: not copied to strip it)
    return head + ("}" if empty else "," + text[1:])
