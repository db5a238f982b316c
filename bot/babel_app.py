"""A Babel extractor for the Mini App's texts (``webapp/app_texts.json``), so the one set of
gettext catalogues (``bot/locales``) holds the bot's texts and the Mini App's: a term both
use is one msgid, translated once. Keys listed in ``own_context`` get ``msgctxt`` = the key
(the same English, translated differently there)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def extract(fileobj: Any, keywords: Any, comment_tags: Any, options: Any) -> Iterator[tuple]:
    """Babel's extractor interface: ``(lineno, funcname, message, comments)`` per text."""
    doc = json.loads(fileobj.read().decode("utf-8"))
    own = set(doc.get("own_context") or ())
    for n, (key, text) in enumerate(doc["texts"].items(), 1):
        if key in own:
            yield n, "pgettext", (key, text), [f"Mini App: {key}"]
        else:
            yield n, "gettext", text, [f"Mini App: {key}"]
