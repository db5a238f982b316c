"""Karty's rules engine: Prší (P1–P16), Penki (R1–R19) and the ratings math.

Pure: no I/O, no clock, randomness only from a seed kept in the state. The same
API serves both games; every function dispatches on ``state.game``:

* :func:`new_game` — a fresh game (match) from players, dealer and a seed or decks.
* :func:`apply` — ``(state, seat, action)`` → :class:`Outcome` (new state + public
  events) or raises :class:`~engine.errors.Rejected`; the input state is never changed.
* :func:`legal_actions` — the turn actions ``seat`` may take now (callouts excluded:
  offering them would hint at a blunder or an owed declaration, S3).
* :func:`view` — what one seat (or a spectator, ``None``) may see, JSON-ready.
* :func:`observer` — the all-seeing state of conformance/FORMAT.md.
* :func:`computer_action` — the turn timer's move for an absent ``seat`` (S4), or ``None``;
  the computer opponents at three levels are :mod:`engine.players` (from a seat's
  view and the public log only), :mod:`engine.arena` plays them against each other.
* :func:`awaiting` — seats the game is waiting for (turn timer, notifications).
* :func:`dump` / :func:`load` — exact JSON round trip with a ``schema`` version.

Actions are dicts in the replay notation without ``p``: ``{"a": "play", "card":
"Qh", "suit": "s"}``, ``{"a": "draw"}``, ``{"a": "place", "to": "b"}`` …
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from operator import itemgetter
from types import ModuleType
from typing import Any

from engine.errors import REASONS, Rejected

__all__ = [
    "GAMES",
    "REASONS",
    "Outcome",
    "Rejected",
    "apply",
    "awaiting",
    "computer_action",
    "dump",
    "legal_actions",
    "load",
    "new_game",
    "observer",
    "view",
    "views",
]

GAMES: tuple[str, ...] = ("prsi", "penki")


_RULES: dict[str, ModuleType] = {}


def rules(game: str) -> ModuleType:
    """The rules module of ``game`` (``"prsi"`` or ``"penki"``); ``KeyError`` otherwise."""
    mod = _RULES.get(game)
    if mod is None:
        if game not in GAMES:
            raise KeyError(game)
        mod = _RULES[game] = importlib.import_module(f"engine.{game}")
    return mod


def _mod(state: Any) -> ModuleType:
    # Cached: dispatch sits on the hot path of every apply/legal_actions call.
    mod = _RULES.get(state.game)
    return mod if mod is not None else rules(state.game)


# The hot calls (apply, legal_actions, awaiting, view) look their game's function up in
# one dict each: a subscript and a call, no helper frame in between.
_APPLY: dict[str, Any] = {}
_LEGAL: dict[str, Any] = {}
_AWAITING: dict[str, Any] = {}
_VIEW: dict[str, Any] = {}


def _bind(table: dict[str, Any], name: str, state: Any) -> Any:
    fn = table[state.game] = getattr(_mod(state), name)
    return fn


def new_game(
    game: str,
    players: list[str],
    *,
    dealer: str | None = None,
    seed: int | None = None,
    decks: list[list[str]] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """Start a match of Prší or a game of Penki.

    ``players``: seat ids clockwise (Prší 2–5, Penki 2–6). ``dealer``: who deals
    first (default the last seat). Give ``seed`` (int, the deal is the engine's) or
    ``decks`` (full packs, top card first: one per Prší round, one for Penki); one
    of them is required, the engine invents no randomness of its own.
    ``options``: table options, FORMAT.md; Prší takes ``{"variants": ["PV1", …]}``
    (RULES.md PV1–PV8), Penki none.
    Raises ``ValueError`` for a bad player count, an unknown dealer, a bad seed or
    deck, or neither a seed nor decks, or bad ``options``; ``KeyError`` for an unknown ``game``.
    """
    if options:
        if not isinstance(options, Mapping) or set(options) - {"variants"} or game != "prsi":
            raise ValueError(f"unknown options {options!r}: only Prší takes variants")
        return rules(game).new_game(players, dealer=dealer, seed=seed, decks=decks,
                                    variants=options.get("variants"))
    return rules(game).new_game(players, dealer=dealer, seed=seed, decks=decks)


def apply(state: Any, seat: str, action: Mapping[str, Any]) -> Any:
    """Apply ``action`` by ``seat``; returns an ``Outcome(state, events)``.

    Raises :class:`Rejected` (reason codes of FORMAT.md) and leaves ``state`` as it was.
    """
    try:
        fn = _APPLY[state.game]
    except KeyError:
        fn = _bind(_APPLY, "apply", state)
    return fn(state, seat, action)


def legal_actions(state: Any, seat: str) -> list[dict[str, Any]]:
    """Turn actions ``seat`` may take now, as action dicts (callouts not listed)."""
    try:
        fn = _LEGAL[state.game]
    except KeyError:
        fn = _bind(_LEGAL, "legal_actions", state)
    return fn(state, seat)


def view(state: Any, seat: str | None) -> dict[str, Any]:
    """What ``seat`` may see (``None``: a spectator). Never the stock order or stumps (S3)."""
    try:
        fn = _VIEW[state.game]
    except KeyError:
        fn = _bind(_VIEW, "view", state)
    return fn(state, seat)


def views(state: Any, seats: Iterable[str | None]) -> dict[str | None, dict[str, Any]]:
    """``{seat: view(state, seat)}`` for each of ``seats`` at once, equal to one :func:`view`
    call each but cheaper: the parts every seat sees alike are built once and shared by
    the views (read-only). Never the stock order, another hand or stumps (S3).

    Each game's ``own_view`` fills in what only its seat sees on a copy of the spectator's view.
    """
    mod = _mod(state)
    public = mod.view(state, None)
    out: dict[str | None, dict[str, Any]] = {}
    for seat in seats:
        v = dict(public)
        if seat in state.players:
            mod.own_view(state, seat, v)
        out[seat] = v
    return out


def observer(state: Any) -> dict[str, Any]:
    """The whole state as FORMAT.md's all-seeing observer sees it."""
    return _mod(state).observer(state)


def computer_action(state: Any, seat: str) -> dict[str, Any] | None:
    """The computer player's action for ``seat`` now, or ``None`` when it has nothing to do."""
    return _mod(state).computer_action(state, seat)


def awaiting(state: Any) -> list[str]:
    """Seats whose action the game waits for now (the player to move, penalty givers)."""
    try:
        fn = _AWAITING[state.game]
    except KeyError:
        fn = _bind(_AWAITING, "awaiting", state)
    return fn(state)


def dump(state: Any) -> dict[str, Any]:
    """JSON-ready dict of ``state`` (with ``schema`` and ``game``); :func:`load` inverts it."""
    return _mod(state).dump(state)


def load(data: Mapping[str, Any]) -> Any:
    """Rebuild a state from :func:`dump`'s output.

    Raises ``ValueError`` when ``data`` is not a dump of a known game and schema,
    ``KeyError`` when a dump of a known game lacks a field.
    """
    game = data.get("game") if isinstance(data, Mapping) else None
    if game not in GAMES:
        raise ValueError(f"not a dump of a game of {GAMES}")
    return rules(game).load(data)


class Outcome(tuple):
    """What :func:`apply` returns: ``state`` (the new state) and ``events``.

    ``events`` is a list of public dicts (safe for every seat to see), e.g.
    ``{"seat": "a", "a": "play", "card": "7h"}``, ``{"seat": "b", "a": "draw", "n": 2}``,
    ``{"a": "round_end", "round": 1, "round_points": {...}}``.

    A pair, so ``state, events = apply(...)`` unpacks it; the rules modules make it with
    :data:`_outcome` (``_outcome(Outcome, (state, events))``), without a Python frame.
    """

    __slots__ = ()

    def __new__(cls, state: Any, events: list[dict[str, Any]]) -> Outcome:
        return tuple.__new__(cls, (state, events))

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    state = property(itemgetter(0), doc="the new state")
    events = property(itemgetter(1), doc="the action's public events, oldest first")

    def __repr__(self) -> str:
        return f"Outcome(state={self[0]!r}, events={self[1]!r})"


_outcome = tuple.__new__
