"""Karty's Telegram bot (aiogram 3): the only code that calls the Bot API.

Exports (docs/CONTRACTS.md §5): :class:`BotSettings` and :func:`setup_bot`.
``python -m bot compile-locales`` recompiles the gettext catalogues
(``python -m bot extract`` / ``update`` refresh them from the code).
"""

from bot.app import BotRuntime, create_bot, setup_bot
from bot.settings import BotSettings

__all__ = ["BotRuntime", "BotSettings", "create_bot", "setup_bot"]
