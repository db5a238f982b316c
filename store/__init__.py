"""Karty's store: the only package that talks to Redis (DESIGN.md, docs/CONTRACTS.md §2).

Live games and lobbies with TTLs, the action log, turn deadlines and computer
moves, presence, the bot's outbox, the results ledger and leaderboards.
"""

from store.embedded import UNAVAILABLE, EmbeddedRedis, redis_answers
from store.keys import Keys
from store.models import (
    ERROR_CODES,
    ApplyResult,
    Lobby,
    LobbySettings,
    Seat,
    StoreError,
    Table,
    TooFast,
    User,
)
from store.settings import StoreSettings
from store.store import Store

__all__ = [
    "ERROR_CODES",
    "UNAVAILABLE",
    "ApplyResult",
    "EmbeddedRedis",
    "Keys",
    "Lobby",
    "LobbySettings",
    "Seat",
    "Store",
    "StoreError",
    "StoreSettings",
    "Table",
    "TooFast",
    "User",
    "redis_answers",
]
