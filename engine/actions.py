"""Read-only action dicts, shared by the games' :func:`legal_actions`.

Building fresh dicts on every call was a large share of a playout's time, so a
game lists the same :class:`Action` objects every time; changing one raises
``TypeError``, copies (``dict(a)``, ``copy``, ``pickle``) are plain dicts, JSON
sees a plain dict.
"""

from __future__ import annotations

from typing import Any


class Action(dict):
    """A read-only action dict in the replay notation without ``p`` (``{"a": "play", "card": "Qh"}``)."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("legal actions are read-only: copy one with dict(action)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)
