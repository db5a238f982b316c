"""Karty's store: the only package that talks to Redis (DESIGN.md, docs/CONTRACTS.md §2).

Live games and lobbies with TTLs, the action log, turn deadlines and computer
moves, presence, the bot's outbox, the results ledger and leaderboards.
"""

from store.keys import Keys
from store.models import (
    ERROR_CODES,
    ApplyResult,
    Lobby,
    LobbySettings,
    Seat,
    StoreError,
    Table,
    User,
)
from store.settings import StoreSettings
from store.store import Store

__all__ = [
    "ERROR_CODES",
    "ApplyResult",
    "Keys",
    "Lobby",
    "LobbySettings",
    "Seat",
    "Store",
    "StoreError",
    "StoreSettings",
    "Table",
    "User",
]
