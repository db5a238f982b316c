"""Karty's Telegram bot (aiogram 3): the only code that calls the Bot API.

Exports (docs/CONTRACTS.md §5): :class:`BotSettings` and :func:`setup_bot`
(:func:`bot.boot.setup_bot_soon` starts the same bot once the web app serves).
``python -m bot compile-locales`` recompiles the gettext catalogues
(``python -m bot extract`` / ``update`` refresh them from the code).

``BotRuntime``, ``create_bot`` and ``setup_bot`` are loaded from :mod:`bot.app` on
first use: importing ``bot`` (or ``bot.settings``, ``bot.boot``) imports no aiogram.
"""

from typing import Any

from bot.settings import BotSettings

__all__ = ["BotRuntime", "BotSettings", "create_bot", "setup_bot"]

_FROM_APP = frozenset({"BotRuntime", "create_bot", "setup_bot"})


def __getattr__(name: str) -> Any:  # PEP 562
    if name in _FROM_APP:
        from bot import app

        return getattr(app, name)
    raise AttributeError(f"module 'bot' has no attribute {name!r}")
