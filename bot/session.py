"""The bot's HTTP session to the Bot API: aiogram's aiohttp session, minus two wastes.

aiogram parses every answer of the Bot API with ``Response[T]``, a pydantic generic model
parametrised by the method's return type (``Response[Message]`` for ``sendMessage``).
pydantic keeps parametrisations in a *weak* cache, and nothing else holds them, so
each full garbage collection frees them and the next call builds the model again:
about 5 ms of CPU each time (its whole validation schema), 2–3 % of a service process's
CPU under play (py-spy, BENCHMARKS.md). :class:`Session` holds each one it has used.

And aiogram sends every request as a form: ``application/x-www-form-urlencoded``,
percent-encoded by ``urllib.parse.quote_plus`` one byte at a time in Python, which for
a round's result in Czech or Russian HTML with its keyboard took most of a post's CPU
(2.6 % of a service process's samples under play). A request without a file goes as
a JSON object of the very same fields instead (one ``orjson.dumps``). The Bot API takes
both alike: it reads a JSON body's string values as the form's values (its HTTP
reader, ``td::HttpReader::parse_json_parameters``), and aiogram makes every top-level
value a string (nested objects as JSON text, as in the form). Uploads stay multipart.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.methods.base import Response
from aiohttp import BytesPayload, FormData

#: ``Response[T]`` by return type ``T``, held for the life of the process (a few dozen at most).
_KEPT: dict[Any, Any] = {}


def keep_response_model(returning: Any) -> Any:
    """``Response[returning]``, built once per process and held (see the module docstring)."""
    model = _KEPT.get(returning)
    if model is None:
        model = _KEPT[returning] = Response[returning]
    return model


class Session(AiohttpSession):
    """``AiohttpSession`` whose answer models stay built (:func:`keep_response_model`) and
    whose requests without a file are JSON bodies (see the module docstring)."""

    def build_form_data(self, bot: Any, method: Any) -> Any:  # type: ignore[override]
        """The request body of ``method``: a JSON ``BytesPayload`` of aiogram's own prepared
        fields, or aiogram's multipart ``FormData`` when it attaches a file."""
        files: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        for key, value in method.model_dump(warnings=False).items():
            prepared = self.prepare_value(value, bot=bot, files=files)
            if prepared:  # what aiogram's form leaves out, left out here too
                fields[key] = prepared
        if files:
            form: FormData = super().build_form_data(bot=bot, method=method)
            return form
        return BytesPayload(orjson.dumps(fields), content_type="application/json")

    def check_response(self, bot: Any, method: Any, status_code: int, content: str) -> Any:
        keep_response_model(method.__returning__)
        return super().check_response(bot, method, status_code, content)
