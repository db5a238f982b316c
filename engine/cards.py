"""Cards and their notation (RULES.md, conformance/FORMAT.md).

A card is a plain ``str``: rank then suit, ranks ``6 7 8 9 10 J Q K A``,
suits ``h d c s`` (``"10h"``, ``"Ks"``). Strings keep states small, hashable and
identical to the wire and replay formats; helpers here parse and describe them.
"""

from __future__ import annotations

from typing import Final

RANKS: Final = ("6", "7", "8", "9", "10", "J", "Q", "K", "A")
SUITS: Final = ("h", "d", "c", "s")
RANK_INDEX: Final = {r: i for i, r in enumerate(RANKS)}

PRSI_PACK: Final = tuple(r + s for s in SUITS for r in RANKS[1:])  # 32 cards, 7..A
PENKI_PACK: Final = tuple(r + s for s in SUITS for r in RANKS)  # 36 cards, 6..A

SUIT_NAMES: Final = {
    # Czech German-suited pack (Prší): červené, kule, žaludy, zelené.
    "german": {"h": "červené", "d": "kule", "c": "žaludy", "s": "zelené"},
    "french": {"h": "hearts", "d": "diamonds", "c": "clubs", "s": "spades"},
}
SUIT_SYMBOLS: Final = {"h": "♥", "d": "♦", "c": "♣", "s": "♠"}
RANK_NAMES: Final = {
    "german": {"J": "spodek", "Q": "svršek", "K": "král", "A": "eso"},
    "french": {"J": "jack", "Q": "queen", "K": "king", "A": "ace"},
}


def rank(card: str) -> str:
    """Rank part of ``card`` (``"10h"`` → ``"10"``)."""
    return card[:-1]


def suit(card: str) -> str:
    """Suit letter of ``card`` (``"10h"`` → ``"h"``)."""
    return card[-1]


def rank_index(card: str) -> int:
    """Rank order 0 (``6``) … 8 (``A``); the order of R1 and of Prší alike."""
    return RANK_INDEX[card[:-1]]


def is_card(value: object, pack: tuple[str, ...] | frozenset[str]) -> bool:
    """True when ``value`` is a card string of ``pack`` (e.g. :data:`PRSI_PACK`)."""
    return isinstance(value, str) and value in pack


def display_name(card: str, pack: str = "german") -> str:
    """Human name of ``card`` in the ``german`` (Czech) or ``french`` pack.

    ``display_name("Qh")`` → ``"červené svršek"``; ``display_name("Qh", "french")``
    → ``"queen of hearts"``. Raises ``KeyError`` for a string that is not a card.
    """
    r, s = rank(card), suit(card)
    if r not in RANK_INDEX or s not in SUITS:
        raise KeyError(card)
    rank_name = RANK_NAMES[pack].get(r, r)
    if pack == "german":
        return f"{SUIT_NAMES['german'][s]} {rank_name}"
    return f"{rank_name} of {SUIT_NAMES['french'][s]}"
