"""One ``Router`` per feature; :func:`routers` lists them in the order they are included.

* :mod:`.start` — ``/start`` (welcome, deep links to a table), ``/help``, ``/rules``
* :mod:`.lobby` — ``/new``, the lobby buttons (``LobbyCb``, ``NewCb``)
* :mod:`.rating` — ``/rating``, ``/top``
* :mod:`.lang` — ``/lang`` and ``LangCb``
* :mod:`.chats` — a group upgraded to a supergroup (service messages)
* :mod:`.errors` — ``StoreError`` and anything unexpected, answered in the user's language;
  also the catch-all that answers unknown callback queries.
"""

from __future__ import annotations

from aiogram import Router


def routers() -> list[Router]:
    """Fresh routers (a router can be attached to one dispatcher only)."""
    from bot.handlers import chats, errors, lang, lobby, rating, start

    return [chats.make_router(), start.make_router(), lobby.make_router(), rating.make_router(),
            lang.make_router(), errors.make_router()]
