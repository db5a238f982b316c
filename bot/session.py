"""The bot's HTTP session to the Bot API: aiogram's aiohttp session, minus one waste.

aiogram parses every answer of the Bot API with ``Response[T]``, a pydantic generic model
parametrised by the method's return type (``Response[Message]`` for ``sendMessage``).
pydantic keeps parametrisations in a *weak* cache, and nothing else holds them, so
each full garbage collection frees them and the next call builds the model again:
about 5 ms of CPU each time (its whole validation schema), 2–3 % of a service process's
CPU under play (py-spy, BENCHMARKS.md). :class:`Session` holds each one it has used.
"""

from __future__ import annotations

from typing import Any

from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.methods.base import Response

#: ``Response[T]`` by return type ``T``, held for the life of the process (a few dozen at most).
_KEPT: dict[Any, Any] = {}


def keep_response_model(returning: Any) -> Any:
    """``Response[returning]``, built once per process and held (see the module docstring)."""
    model = _KEPT.get(returning)
    if model is None:
        model = _KEPT[returning] = Response[returning]
    return model


class Session(AiohttpSession):
    """``AiohttpSession`` whose answer models stay built (:func:`keep_response_model`)."""

    def check_response(self, bot: Any, method: Any, status_code: int, content: str) -> Any:
        keep_response_model(method.__returning__)
        return super().check_response(bot, method, status_code, content)
