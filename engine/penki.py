"""Penki (R1–R19 of ../shared/rules/RULES.md): the ladder, then shedding.

The rules, short (the rule ids are the ones tests name):

* **R1/R2** 36 cards, 2–6 players. Two face-down stumps each (two passes from the
  dealer's left), the rest is the stock; the dealer's left starts phase 1.
* **Phase 1, the ladder (R3–R8).** A card *fits* a pile whose top is one rank
  lower (``6`` on ``A``; nothing fits an empty pile). On your turn: move your
  pile's top to the *first* opponent clockwise whose pile it fits, as long as it
  fits one (``move``); draw the stock's top (``draw``, allowed at any step of the
  turn with no card waiting) and ``place`` it — on the first fitting opponent, or
  your own pile. Own pile while the card or your top fits an opponent is a
  *blunder* (R5): accepted, it opens a «ЗЕВОК!» window (R6) any opponent may call
  (``zevok``) until the next player's first action; the penalty (R7) moves every
  opponent's top onto the blunderer's pile, clockwise, ``Ks`` last. The placer of
  the last stock card finishes with forced moves, then phase 1 ends (R8).
* **Phase 2, shedding (R9–R16).** Piles become hands; empty or ``Ks``-only hands
  take their stumps; ``9d`` (or the next diamond) leads (R11). ♦ is trump, ♠ only
  beaten by a higher ♠, ``Ks`` never beats (R10) and leads only alone (R15). Beat
  the top (``play``) or ``take`` the table's bottom card (R12). Бита at as many
  cards as players in the game (R13). Round end: stumps, players out (shared
  places), next leader (R14, R16).
* **Callouts (R17/R18).** After your play, give, or take with an empty hand you owe
  ``one_card`` when you hold one card; any other seat may ``how_many`` until the
  next play or take: every debtor is punished, nearest to the asker first, by one
  ``give`` from each other player in the game holding cards.

The state is a slots dataclass of immutable values (tuples, and dicts that are
never changed in place: a change copies the dict), so :func:`apply` copies only
what an action changes. Hidden: the stock order and the stumps (S3); nothing in
:func:`view` tells whether a blunder happened or a declaration is owed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from engine import Outcome, _outcome
from engine.actions import Action
from engine.cards import PENKI_PACK, RANK_INDEX, SUITS
from engine.errors import Rejected
from engine.ratings import penki_balances

__all__ = [
    "SCHEMA",
    "PenkiState",
    "apply",
    "awaiting",
    "computer_action",
    "dump",
    "legal_actions",
    "load",
    "new_game",
    "observer",
    "view",
]

SCHEMA = 1
KS = "Ks"
TRUMP = "d"
LAST_EVENTS = 20
STALL_AFTER = 400  # computer_action varies its leads from this version on
FIRST_LEADERS = ("9d", "10d", "Jd", "Qd", "Kd", "Ad", "6d", "7d", "8d")  # R11 and its ruling

_PACK = frozenset(PENKI_PACK)
_RANK = {c: RANK_INDEX[c[:-1]] for c in PENKI_PACK}
_SUIT = {c: c[-1] for c in PENKI_PACK}
# _UP[top] = rank index a card needs to fit on ``top`` (R3: one above, 6 on A).
_UP = {c: (_RANK[c] + 1) % 9 for c in PENKI_PACK}

TURN_ACTIONS = frozenset({"play", "draw", "move", "place", "take"})
PENKI_ACTIONS = frozenset({"move", "draw", "place", "zevok", "play", "take", "one_card", "how_many", "give"})
_NEEDS_CARD = frozenset({"play", "give"})
_NEEDS_TO = frozenset({"move", "place"})

_DISPLAY_SUIT = {"h": 0, "c": 1, "s": 2, "d": 3}  # hand order for display: trumps last


def _display_key(card: str) -> tuple[int, int]:
    return _DISPLAY_SUIT[_SUIT[card]], _RANK[card]


# The display order as one int per card: ``sorted(hand, key=_ORDER.__getitem__)`` sorts
# without a Python-level key function.
_ORDER = {c: i for i, c in enumerate(sorted(PENKI_PACK, key=_display_key))}
_order = _ORDER.__getitem__


def _fits(card: str, pile: tuple[str, ...]) -> bool:
    """R3: ``card`` fits ``pile`` when it is one rank above its top (``6`` on ``A``)."""
    return bool(pile) and _RANK[card] == _UP[pile[-1]]


def beats(card: str, top: str) -> bool:
    """R10: ``card`` beats ``top`` (same suit and higher, or ♦ on neither ♦ nor ♠; ``Ks`` never)."""
    if card == KS:
        return False
    cs, ts = _SUIT[card], _SUIT[top]
    if cs == ts:
        return _RANK[card] > _RANK[top]
    return cs == TRUMP and ts != "s"


_BEATEN_BY = {top: frozenset(c for c in PENKI_PACK if beats(c, top)) for top in PENKI_PACK}
_BEATS = {top: beaten.__contains__ for top, beaten in _BEATEN_BY.items()}  # _BEATS[top](card): beats(card, top)
_NOT_KS = KS.__ne__
# Read-only legal actions, the same objects every call (engine.actions).
_PLAY = {c: Action(a="play", card=c) for c in PENKI_PACK}
_GIVE = {c: Action(a="give", card=c) for c in PENKI_PACK}
_DRAW, _TAKE = Action(a="draw"), Action(a="take")
_play_of, _give_of = _PLAY.__getitem__, _GIVE.__getitem__


class _ToSeat(dict):
    """``{seat: Action(a=kind, to=seat)}``, each made at its first use and then shared."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def __missing__(self, seat: str) -> Action:
        if len(self) > 4096:  # seats of long-gone tables: start afresh
            self.clear()
        made = self[seat] = Action(a=self.kind, to=seat)
        return made


_MOVE, _PLACE = _ToSeat("move"), _ToSeat("place")


@dataclass(slots=True, eq=True)
class PenkiState:
    """A game of Penki; never changed in place (:func:`apply` returns a new one).

    Fields (all JSON-ready through :func:`dump`):
    ``players`` seat ids clockwise; ``dealer``; ``seed`` (or ``None`` for given decks);
    ``version`` (+1 per accepted action); ``over``; ``phase`` 1|2; ``turn`` whose turn
    it is (``to_move`` is ``None`` during a penalty hand-over and once over);
    ``stock`` top first; ``piles`` ``{seat: cards bottom first}`` (phase 1);
    ``drawn`` the card waiting to be placed; ``zevok`` the blunderer whose window is
    open (R6); ``stumps`` and ``hands`` ``{seat: cards}``; ``table`` bottom first;
    ``discarded`` cards put out by Бита; ``last_beater`` (R13); ``owes`` seats owing
    «ОДНА КАРТА!» and ``declared`` seats that declared (seat order); the penalty
    hand-over ``penalty_to``/``penalty_from`` and ``penalty_queue`` (R18);
    ``places`` seats out so far (every seat once over); ``balances`` (R19, once over);
    ``last`` the most recent public events (at most 20).
    """

    players: tuple[str, ...]
    dealer: str
    seed: int | None
    version: int
    over: bool
    phase: int
    turn: str | None
    stock: tuple[str, ...]
    piles: dict[str, tuple[str, ...]]
    drawn: str | None
    zevok: str | None
    stumps: dict[str, tuple[str, ...]]
    hands: dict[str, tuple[str, ...]]
    table: tuple[str, ...]
    discarded: int
    last_beater: str | None
    owes: tuple[str, ...]
    declared: tuple[str, ...]
    penalty_to: str | None
    penalty_from: tuple[str, ...]
    penalty_queue: tuple[str, ...]
    places: dict[str, int]
    balances: dict[str, int] | None
    last: tuple[dict[str, Any], ...]
    game: ClassVar[str] = "penki"

    @property
    def to_move(self) -> str | None:
        """The seat to make a turn action, ``None`` when over or during a penalty hand-over."""
        if self.over or self.penalty_to is not None:
            return None
        return self.turn

    @property
    def penalty(self) -> dict[str, Any] | None:
        """The hand-over in progress: ``{"to": seat, "from": [seats still to give]}`` or ``None``."""
        if self.penalty_to is None:
            return None
        return {"to": self.penalty_to, "from": list(self.penalty_from)}


_FIELDS = tuple(f.name for f in fields(PenkiState))


def _make_clone(*but: str) -> Any:
    """A straight-line shallow copy of a :class:`PenkiState` (the hot path of :func:`apply`);
    ``but``: fields the caller sets on the copy itself (left unset here)."""
    assert set(but) <= set(_FIELDS)
    body = "".join(f"\n    n.{f} = s.{f}" for f in _FIELDS if f not in but)
    namespace: dict[str, Any] = {"_new": object.__new__, "PenkiState": PenkiState}
    exec(f"def _clone(s):\n    n = _new(PenkiState){body}\n    return n\n", namespace)
    return namespace["_clone"]


_clone = _make_clone()
_clone_for_apply = _make_clone("version", "last")  # apply sets both once the handler is done


# ---------------------------------------------------------------- set-up (R1, R2)


def new_game(
    players: list[str],
    *,
    dealer: str | None = None,
    seed: int | None = None,
    decks: list[list[str]] | None = None,
) -> PenkiState:
    """R1/R2: deal a game. ``players`` 2–6 distinct seat ids clockwise; ``dealer``
    (default the last seat); ``decks`` one 36-card pack top first, or ``seed`` (an
    int; ``random.Random(seed)`` shuffles the pack). One of them is required: the
    engine never picks a deal of its own.

    Two passes of one face-down stump each from the dealer's left, the rest is the
    stock; the dealer's left starts. Raises ``ValueError`` on a bad player count,
    dealer, seed or deck, or when neither ``seed`` nor ``decks`` is given.
    """
    seats = tuple(players)
    if not 2 <= len(seats) <= 6:
        raise ValueError("Penki needs 2–6 players")
    if len(set(seats)) != len(seats) or not all(isinstance(p, str) and p for p in seats):
        raise ValueError("seat ids must be distinct non-empty strings")
    if dealer is None:
        dealer = seats[-1]
    if dealer not in seats:
        raise ValueError(f"unknown dealer {dealer!r}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError("seed must be an int")
    if decks is not None:
        if not isinstance(decks, (list, tuple)) or len(decks) != 1 or not isinstance(decks[0], (list, tuple)):
            raise ValueError("Penki is played with one deck: a list of 36 cards")
        deck = list(decks[0])
        if len(deck) != 36 or set(deck) != _PACK:
            raise ValueError("a Penki deck is the 36 cards 6–A, each once")
    elif seed is None:
        raise ValueError("give a seed or decks")
    else:
        deck = list(PENKI_PACK)
        random.Random(seed).shuffle(deck)
    n = len(seats)
    d = seats.index(dealer)
    order = [seats[(d + 1 + k) % n] for k in range(n)]
    stumps = {p: (deck[k], deck[n + k]) for k, p in enumerate(order)}
    empty: tuple[str, ...] = ()
    return PenkiState(
        players=seats, dealer=dealer, seed=None if decks is not None else seed,
        version=0, over=False, phase=1, turn=order[0], stock=tuple(deck[2 * n:]),
        piles={p: empty for p in seats}, drawn=None, zevok=None,
        stumps={p: stumps[p] for p in seats}, hands={p: empty for p in seats}, table=empty,
        discarded=0, last_beater=None, owes=empty, declared=empty, penalty_to=None,
        penalty_from=empty, penalty_queue=empty, places={}, balances=None, last=empty,
    )


# ---------------------------------------------------------------- helpers


class _Clockwise(dict):
    """``{players: {seat: every other seat, clockwise from seat's left}}``, each table's map
    made at its first use and then shared (tables keep their players): one look-up per use."""

    def __missing__(self, players: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        if len(self) > 4096:  # players of long-gone tables: start afresh
            self.clear()
        made = self[players] = {p: players[i + 1:] + players[:i] for i, p in enumerate(players)}
        return made


_CLOCKWISE = _Clockwise()


def _first_fit(s: PenkiState, seat: str, card: str) -> str | None:
    """R4 ruling: the first opponent clockwise from ``seat``'s left whose pile ``card`` fits."""
    piles = s.piles
    need = _RANK[card]
    for o in _CLOCKWISE[s.players][seat]:
        p = piles[o]
        if p and _UP[p[-1]] == need:
            return o
    return None


def _in_game(s: PenkiState, seat: str) -> bool:
    return seat not in s.places


def _next_in_game(s: PenkiState, seat: str) -> str:
    """The next seat clockwise after ``seat`` that is still in the game."""
    after = _CLOCKWISE[s.players][seat]
    places = s.places
    if not places:  # nobody out yet: simply the next seat
        return after[0]
    for o in after:
        if o not in places:
            return o
    return seat


def _seat_order(s: PenkiState, seats: set[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in s.players if p in seats)


def _balances(players: tuple[str, ...], places: dict[str, int]) -> dict[str, int]:
    """R19 (the arithmetic of :func:`engine.ratings.penki_balances`), in seat order."""
    balances = penki_balances({p: places[p] for p in players})
    return {p: balances[p] for p in players}


def _reject(code: str, detail: str) -> Rejected:
    return Rejected(code, detail)  # type: ignore[arg-type]


# ---------------------------------------------------------------- phase 1 (R3–R8)


def _after_step(s: PenkiState, seat: str, ev: list[dict[str, Any]]) -> None:
    """R4 back at step (1); R8: with the stock empty and nothing left to move, phase 1 ends."""
    if s.stock or s.drawn is not None or s.phase != 1:
        return
    pile = s.piles[seat]
    if pile and _first_fit(s, seat, pile[-1]) is not None:
        return
    _start_phase2(s, ev)


def _close_window(s: PenkiState, seat: str) -> None:
    """R6: the window closes at the next player's first accepted action."""
    if s.zevok is not None and s.zevok != seat:
        s.zevok = None


def _draw(s: PenkiState, seat: str, _arg: Any, ev: list[dict[str, Any]]) -> None:
    """R4 step (2): turn up the stock's top card (face up, public); never a blunder (R5)."""
    if s.phase != 1:
        raise _reject("illegal", "draw belongs to phase 1")
    if s.drawn is not None:
        raise _reject("illegal", "the drawn card must be placed first")
    if not s.stock:
        raise _reject("illegal", "the stock is empty")
    s.drawn = s.stock[0]
    s.stock = s.stock[1:]
    _close_window(s, seat)
    ev.append({"a": "draw", "seat": seat, "card": s.drawn})


def _move(s: PenkiState, seat: str, to: str, ev: list[dict[str, Any]]) -> None:
    """R4 step (1), R8: own pile's top onto ``to``, which must be the first fitting opponent."""
    if s.phase != 1:
        raise _reject("illegal", "move belongs to phase 1")
    if s.drawn is not None:
        raise _reject("illegal", "the drawn card must be placed first")
    pile = s.piles[seat]
    if not pile:
        raise _reject("illegal", "your pile is empty")
    if to == seat:
        raise _reject("illegal", "a move goes to an opponent's pile")
    card = pile[-1]
    target = _first_fit(s, seat, card)
    if target is None:
        raise _reject("illegal", f"{card} fits no opponent's pile")
    if target != to:
        raise _reject("illegal", f"{card} must go to {target}, the first fitting opponent")
    piles = dict(s.piles)
    piles[seat] = pile[:-1]
    piles[to] = piles[to] + (card,)
    s.piles = piles
    _close_window(s, seat)
    ev.append({"a": "move", "seat": seat, "card": card, "to": to})
    _after_step(s, seat, ev)


def _place(s: PenkiState, seat: str, to: str, ev: list[dict[str, Any]]) -> None:
    """R4 step (3), R5, R6: the drawn card onto the first fitting opponent or the own pile.

    The own pile while the card or the own top fits an opponent is a blunder: accepted,
    it opens (or extends) the seat's «ЗЕВОК!» window. The turn goes on when the card
    went to an opponent or fits the own pile's previous top; R8 once the stock is empty.
    """
    if s.phase != 1:
        raise _reject("illegal", "place belongs to phase 1")
    card = s.drawn
    if card is None:
        raise _reject("illegal", "no drawn card to place")
    piles = s.piles
    if to != seat:
        target = _first_fit(s, seat, card)
        if target is None or not _fits(card, piles[to]):
            raise _reject("illegal", f"{card} does not fit {to}'s pile")
        if target != to:
            raise _reject("illegal", f"{card} must go to {target}, the first fitting opponent")
        piles = dict(piles)
        piles[to] = piles[to] + (card,)
        s.piles = piles
        s.drawn = None
        _close_window(s, seat)
        ev.append({"a": "place", "seat": seat, "card": card, "to": to})
        _after_step(s, seat, ev)
        return
    own = piles[seat]
    blunder = _first_fit(s, seat, card) is not None or (
        bool(own) and _first_fit(s, seat, own[-1]) is not None)  # R5
    goes_on = _fits(card, own)
    piles = dict(piles)
    piles[seat] = (*own, card)
    s.piles = piles
    s.drawn = None
    _close_window(s, seat)
    if blunder:
        s.zevok = seat  # R6: a window of its own, or the same one
    ev.append({"a": "place", "seat": seat, "card": card, "to": seat})
    if goes_on or not s.stock:
        _after_step(s, seat, ev)  # R4 back to (1); R8 the last card's placer finishes
    else:
        s.turn = s.players[(s.players.index(seat) + 1) % len(s.players)]


def _zevok(s: PenkiState, seat: str, _arg: Any, ev: list[dict[str, Any]]) -> None:
    """R6/R7: punish the open window: every opponent's top onto the blunderer, Ks last."""
    if s.phase != 1:
        raise _reject("illegal", "«ЗЕВОК!» belongs to phase 1")
    x = s.zevok
    if x is None:
        raise _reject("illegal", "no blunder to call")
    if x == seat:
        raise _reject("illegal", "the blunderer cannot call")
    piles = dict(s.piles)
    moves = [(o, piles[o][-1]) for o in _CLOCKWISE[s.players][x] if piles[o]]
    moves.sort(key=lambda m: m[1] == KS)  # stable: clockwise order, Ks last
    ev.append({"a": "zevok", "seat": seat, "against": x})
    got = piles[x]
    for o, card in moves:
        piles[o] = piles[o][:-1]
        got = (*got, card)
        ev.append({"a": "penalty_move", "from": o, "to": x, "card": card})
    piles[x] = got
    s.piles = piles
    s.zevok = None
    if s.turn is not None:
        _after_step(s, s.turn, ev)  # the turn goes on; R8 may now be over


def _start_phase2(s: PenkiState, ev: list[dict[str, Any]]) -> None:
    """R9 then R11: piles become hands, empty or Ks-only hands take stumps, first leader."""
    s.phase = 2
    s.zevok = None
    empty: tuple[str, ...] = ()
    hands = dict(s.piles)
    stumps = dict(s.stumps)
    for p in s.players:
        if (not hands[p] or hands[p] == (KS,)) and stumps[p]:
            hands[p] = hands[p] + stumps[p]
            stumps[p] = empty
            ev.append({"a": "stumps", "seat": p})
    s.hands = hands
    s.stumps = stumps
    s.piles = {p: empty for p in s.players}
    leader = None
    for c in FIRST_LEADERS:
        for p in s.players:
            if c in hands[p]:
                leader = p
                break
        if leader is not None:
            break
    if leader is None:
        leader = s.players[(s.players.index(s.dealer) + 1) % len(s.players)]
    s.turn = leader
    ev.append({"a": "phase2", "leader": leader})


# ---------------------------------------------------------------- phase 2 (R9–R18)


def _round_end(s: PenkiState, base: str, base_leads: bool, ev: list[dict[str, Any]]) -> str | None:
    """R14 steps: (1) stumps, (2) R16 players out / game end, (3) the next leader (R13).

    The leader is ``base`` when ``base_leads`` and ``base`` is still in, else the next
    seat in the game after ``base``. Returns the leader, ``None`` when the game ended.
    """
    hands, stumps, places = s.hands, s.stumps, s.places
    changed = False
    outs = []
    for p in s.players:
        if p in places:
            continue
        h = hands[p]
        if h and h != (KS,):  # cards left, not only Ks: no stumps (R14 step 1), not out
            continue
        if stumps[p]:
            if not changed:
                hands, stumps, changed = dict(hands), dict(stumps), True
            h = hands[p] = h + stumps[p]
            stumps[p] = ()
            ev.append({"a": "stumps", "seat": p})
        if not h:
            outs.append(p)
    if changed:
        s.hands, s.stumps = hands, stumps
    if outs:
        places = dict(s.places)
        place = len(places) + 1
        for p in outs:
            places[p] = place
        s.places = places
        ev.append({"a": "out", "seats": outs, "place": place})
    if len(s.players) - len(s.places) <= 1:
        left = [p for p in s.players if p not in s.places]
        places = dict(s.places)
        if left:
            places[left[0]] = len(places) + 1
        s.places = {p: places[p] for p in s.players}
        s.balances = _balances(s.players, s.places)
        s.over = True
        s.turn = None
        s.owes = s.declared = s.penalty_from = s.penalty_queue = ()
        s.penalty_to = None
        ev.append({"a": "game_end", "places": dict(s.places), "balances": dict(s.balances)})
        return None
    leader = base if base_leads and base not in s.places else _next_in_game(s, base)
    s.turn = leader
    return leader


def _owe_check(s: PenkiState, seat: str) -> None:
    """R17: after the actor's play, give or take (and the round-end steps it triggered),
    exactly one card in hand means a declaration is owed."""
    if not s.over and len(s.hands[seat]) == 1 and seat not in s.owes and seat not in s.places:
        s.owes = _seat_order(s, (*s.owes, seat))


def _lapse(s: PenkiState) -> None:
    """R17: debts and declarations lapse when a hand stops being exactly one card or the game ends."""
    if s.over:
        s.owes = s.declared = ()
        return
    hands = s.hands
    if s.owes:
        s.owes = tuple(p for p in s.owes if len(hands[p]) == 1)
    if s.declared:
        s.declared = tuple(p for p in s.declared if len(hands[p]) == 1)


def _remove(hand: tuple[str, ...], card: str) -> tuple[str, ...]:
    i = hand.index(card)
    return hand[:i] + hand[i + 1:]


def _play(s: PenkiState, seat: str, card: str, ev: list[dict[str, Any]]) -> None:
    """R12 lead or beat (R10, R15); Бита and the round-end steps (R13, R14, R16); R17 debt."""
    if s.phase != 2:
        raise _reject("illegal", "play belongs to phase 2")
    hand = s.hands[seat]
    table = s.table
    if not table:
        if card == KS and (len(hand) > 1 or s.stumps[seat]):
            raise _reject("illegal", "Ks leads only as the last card with no stumps (R15)")
    elif card not in _BEATEN_BY[table[-1]]:
        raise _reject("illegal", f"{card} does not beat {table[-1]}")
    s.owes = ()  # R18: an ordinary action closes the asking window
    hands = dict(s.hands)
    j = hand.index(card)
    hands[seat] = hand = hand[:j] + hand[j + 1:]
    s.hands = hands
    if table:
        s.last_beater = seat
    table = (*table, card)
    ev.append({"a": "play", "seat": seat, "card": card})
    if len(table) >= len(s.players) - len(s.places):  # R13 Бита
        s.discarded += len(table)
        s.table = ()
        sub: list[dict[str, Any]] = []
        leader = _round_end(s, s.last_beater or seat, True, sub)
        ev.append({"a": "bita", "leader": leader})
        ev.extend(sub)
        hand = s.hands[seat]  # R14: stumps may have come in
    else:
        s.table = table
        s.turn = _next_in_game(s, seat)
    if len(hand) == 1:
        _owe_check(s, seat)


def _take(s: PenkiState, seat: str, _arg: Any, ev: list[dict[str, Any]]) -> None:
    """R12: the table's bottom card into hand; a take that empties the table ends the round (R13)."""
    if s.phase != 2:
        raise _reject("illegal", "take belongs to phase 2")
    if not s.table:
        raise _reject("illegal", "the table is empty: lead a card")
    s.owes = ()  # R18: an ordinary action closes the asking window
    table = s.table
    card = table[0]
    s.table = table = table[1:]
    hands = dict(s.hands)
    hands[seat] = (*hands[seat], card)
    s.hands = hands
    ev.append({"a": "take", "seat": seat, "card": card})
    if table:
        s.turn = _next_in_game(s, seat)
    else:
        _round_end(s, seat, False, ev)  # R13 ruling: the next player after the taker leads
    if len(s.hands[seat]) == 1:
        _owe_check(s, seat)


def _one_card(s: PenkiState, seat: str, _arg: Any, ev: list[dict[str, Any]]) -> None:
    """R17: settle the seat's owed declaration; ``illegal`` when none is owed (R18)."""
    if s.phase != 2 or seat not in s.owes:
        raise _reject("illegal", "no declaration owed")
    s.owes = tuple(p for p in s.owes if p != seat)
    s.declared = _seat_order(s, (*s.declared, seat))
    ev.append({"a": "one_card", "seat": seat})


def _how_many(s: PenkiState, seat: str, _arg: Any, ev: list[dict[str, Any]]) -> None:
    """R18: catch every debtor but the asker, nearest clockwise first; queue their penalties."""
    if s.phase != 2:
        raise _reject("illegal", "«СКОЛЬКО КАРТ?» belongs to phase 2")
    caught = [p for p in _CLOCKWISE[s.players][seat] if p in s.owes]
    if not caught:
        raise _reject("illegal", "nobody owes a declaration")
    s.owes = tuple(p for p in s.owes if p not in caught)
    s.penalty_queue = (*s.penalty_queue, *caught)
    ev.append({"a": "how_many", "seat": seat, "caught": caught})
    if s.penalty_to is None:
        _next_penalty(s, ev)


def _next_penalty(s: PenkiState, ev: list[dict[str, Any]]) -> None:
    """Start the next queued hand-over (R18); hand-overs with no giver finish at once."""
    while s.penalty_queue and not s.over:
        to = s.penalty_queue[0]
        s.penalty_queue = s.penalty_queue[1:]
        if to in s.places:
            continue  # went out in the meantime (R14 re-run): nothing to punish
        givers = tuple(p for p in s.players if p != to and p not in s.places and s.hands[p])
        if givers:
            s.penalty_to, s.penalty_from = to, givers
            return
        if not s.table:
            _round_end(s, s.turn or to, True, ev)
    s.penalty_to, s.penalty_from = None, ()
    if s.over:
        s.penalty_queue = ()


def _give(s: PenkiState, seat: str, card: str, ev: list[dict[str, Any]]) -> None:
    """R18: one penalty card to the punished player (the event names no card). When the
    hand-over ends on an empty table the round-end steps run again (R14); R17 for the giver."""
    if s.penalty_to is None or seat not in s.penalty_from:
        raise _reject("illegal", "you owe no penalty card")
    to = s.penalty_to
    hands = dict(s.hands)
    hands[seat] = _remove(hands[seat], card)
    hands[to] = (*hands[to], card)
    s.hands = hands
    s.penalty_from = tuple(p for p in s.penalty_from if p != seat)
    ev.append({"a": "give", "seat": seat, "to": to})
    if not s.penalty_from:
        s.penalty_to = None
        if not s.table:  # R14 ruling: the round-end steps run again
            _round_end(s, s.turn or to, True, ev)
        _next_penalty(s, ev)
    _owe_check(s, seat)


_HANDLERS = {
    "draw": _draw, "move": _move, "place": _place, "zevok": _zevok,
    "play": _play, "take": _take, "one_card": _one_card, "how_many": _how_many, "give": _give,
}
_CARD, _TO = "card", "to"
# apply's one look-up per action: (handler, the field it needs or None, whether it is a turn action).
_SPECS = {kind: (handler, _CARD if kind in _NEEDS_CARD else _TO if kind in _NEEDS_TO else None, kind in TURN_ACTIONS)
          for kind, handler in _HANDLERS.items()}


# ---------------------------------------------------------------- apply's common cases
#
# Most actions of a game are a phase-2 play, a take, a draw, or a place while the stock
# lasts. Each of these has a path of its own: it checks, in one pass, everything that
# makes the action accepted and ordinary, builds the new state from a copy that leaves
# out the fields it sets, and returns ``(new state without version and last, events)``.
# Any other case (a refusal, a round end with stumps or players out, R8, ...) returns
# ``None`` and goes the general way (:func:`_apply_checked`), which decides refusals and
# their order. Each path does exactly what the general one does for its case.

_KS_ONLY = (KS,)
_clone_for_turn = _make_clone("version", "last", "hands", "table", "turn", "owes", "last_beater")
_clone_for_draw = _make_clone("version", "last", "drawn", "stock")
_clone_for_place = _make_clone("version", "last", "drawn", "piles")


def _quiet_round_end(players: tuple[str, ...], places: dict[str, int], hands: dict[str, tuple[str, ...]]) -> bool:
    """Whether the round-end steps (R14) would only pick the next leader: every hand in
    the game holds a card that is not only ``Ks`` (no stumps come in, nobody goes out),
    and at least two players are in the game (it goes on)."""
    if len(players) - len(places) < 2:
        return False
    for p in players:
        if p not in places:
            h = hands[p]
            if not h or h == _KS_ONLY:
                return False
    return True


def _common_play(state: PenkiState, seat: str, action: dict[str, Any]) -> tuple[PenkiState, list[dict[str, Any]]] | None:
    """:func:`_play` (R10, R12, R15, R17), also a beat that makes a Бита (R13) when the
    round-end steps have nothing to do but name the last beater the leader."""
    if state.phase != 2 or seat != state.turn or state.penalty_to is not None or state.over:
        return None
    card = action.get("card")
    hand = state.hands[seat]
    if not isinstance(card, str) or card not in hand:
        return None
    table = state.table
    if table:
        if card not in _BEATEN_BY[table[-1]]:
            return None
    elif card == KS and (len(hand) > 1 or state.stumps[seat]):
        return None
    j = hand.index(card)
    hand = hand[:j] + hand[j + 1:]
    hands = dict(state.hands)
    hands[seat] = hand
    places = state.places
    event = {"a": "play", "seat": seat, "card": card}
    if len(table) + 1 < len(state.players) - len(places):
        s = _clone_for_turn(state)
        s.table = (*table, card)
        s.last_beater = seat if table else state.last_beater
        # the next seat in the game (_next_in_game): simply the next one while nobody is out
        s.turn = _CLOCKWISE[state.players][seat][0] if not places else _next_in_game(state, seat)
        events = [event]
    else:  # R13 Бита: the last beater leads, unless R14 has more to do (the general way)
        if not table or not _quiet_round_end(state.players, places, hands):
            return None
        s = _clone_for_turn(state)
        s.discarded = state.discarded + len(table) + 1
        s.table = ()
        s.last_beater = s.turn = seat
        events = [event, {"a": "bita", "leader": seat}]
    s.hands = hands
    s.owes = (seat,) if len(hand) == 1 and seat not in places else ()  # R18 window closed; R17
    if state.declared:  # R17: a declaration lapses with the hand's one card
        s.declared = tuple(p for p in state.declared if len(hands[p]) == 1)
    return s, events


def _common_take(state: PenkiState, seat: str, action: dict[str, Any]) -> tuple[PenkiState, list[dict[str, Any]]] | None:
    """:func:`_take` (R12, R17): a card stays on the table, or the take ends the round
    (R13 ruling) and the round-end steps have nothing to do but pick the next leader."""
    if state.phase != 2 or seat != state.turn or state.penalty_to is not None or state.over:
        return None
    table = state.table
    if not table:  # illegal: the general way
        return None
    card = table[0]
    hands = dict(state.hands)
    hand = hands[seat] = (*hands[seat], card)
    places = state.places
    if len(table) == 1 and not _quiet_round_end(state.players, places, hands):
        return None
    s = _clone_for_turn(state)
    s.table = table[1:]
    s.hands = hands
    # the next seat in the game (_next_in_game; also R14's next leader after the taker)
    s.turn = _CLOCKWISE[state.players][seat][0] if not places else _next_in_game(state, seat)
    s.last_beater = state.last_beater
    s.owes = (seat,) if len(hand) == 1 and seat not in places else ()  # R18 window closed; R17
    if state.declared:  # R17: a declaration lapses with the hand's one card
        s.declared = tuple(p for p in state.declared if len(hands[p]) == 1)
    return s, [{"a": "take", "seat": seat, "card": card}]


def _common_draw(state: PenkiState, seat: str, action: dict[str, Any]) -> tuple[PenkiState, list[dict[str, Any]]] | None:
    """:func:`_draw` (R4 step 2)."""
    stock = state.stock
    if state.phase != 1 or seat != state.turn or state.drawn is not None or not stock \
            or state.penalty_to is not None or state.over:
        return None
    s = _clone_for_draw(state)
    s.drawn = card = stock[0]
    s.stock = stock[1:]
    if state.zevok is not None and state.zevok != seat:  # R6: the window closes
        s.zevok = None
    return s, [{"a": "draw", "seat": seat, "card": card}]


def _common_place(state: PenkiState, seat: str, action: dict[str, Any]) -> tuple[PenkiState, list[dict[str, Any]]] | None:
    """:func:`_place` (R4 step 3, R5, R6) while the stock still has a card (R8 not near)."""
    card = state.drawn
    if state.phase != 1 or seat != state.turn or card is None or not state.stock \
            or state.penalty_to is not None or state.over:
        return None
    to = action.get("to")
    if not isinstance(to, str):
        return None
    zevok = state.zevok
    if to == seat:
        own = state.piles[seat]
        blunder = _first_fit(state, seat, card) is not None or (
            bool(own) and _first_fit(state, seat, own[-1]) is not None)  # R5
        s = _clone_for_place(state)
        piles = dict(state.piles)
        piles[seat] = (*own, card)
        if blunder:
            s.zevok = seat  # R6: a window of its own, or the same one
        elif zevok is not None and zevok != seat:  # R6: the window closes
            s.zevok = None
        if not _fits(card, own):  # R4: the turn ends
            s.turn = _CLOCKWISE[state.players][seat][0]  # phase 1: nobody is out
        to = seat
    else:
        if to != _first_fit(state, seat, card):  # not the first fitting opponent: refused
            return None
        s = _clone_for_place(state)
        piles = dict(state.piles)
        piles[to] = (*piles[to], card)
        if zevok is not None and zevok != seat:  # R6: the window closes
            s.zevok = None
    s.piles = piles
    s.drawn = None
    return s, [{"a": "place", "seat": seat, "card": card, "to": to}]


_COMMON = {"play": _common_play, "take": _common_take, "draw": _common_draw, "place": _common_place}


# ---------------------------------------------------------------- the API


def apply(state: PenkiState, seat: str, action: Mapping[str, Any]) -> Outcome:
    """Apply ``action`` (replay notation, FORMAT.md) by ``seat``; returns ``Outcome(state, events)``.

    Phase 1: ``move``/``draw``/``place`` (R4–R5, R8), ``zevok`` (R6, R7); phase 2:
    ``play``/``take`` (R10–R16), ``one_card`` (R17), ``how_many``/``give`` (R18).

    Raises :class:`Rejected` with the first reason that applies, in FORMAT.md's
    order: ``bad_action``, ``game_over``, ``not_your_turn`` (turn actions ``play
    draw move place take`` by a seat not to move; nobody during a penalty
    hand-over), ``not_in_hand`` (``play``/``give`` of a card not held), ``illegal``.
    ``state`` is never changed. The event dicts are also kept in the new state's
    ``last``: read them, do not change them.
    """
    if isinstance(action, dict):
        try:
            common = _COMMON.get(action.get("a"))
        except TypeError:  # an unhashable "a": refused the general way
            common = None
        if common is not None:
            done = common(state, seat, action)
            if done is not None:
                s, events = done
                s.version = state.version + 1
                last = state.last
                if len(events) == 1:
                    s.last = (last[1 - LAST_EVENTS:] if len(last) >= LAST_EVENTS else last) + (events[0],)
                else:
                    last = (*last, *events)
                    s.last = last[-LAST_EVENTS:] if len(last) > LAST_EVENTS else last
                return _outcome(Outcome, (s, events))
    return _apply_checked(state, seat, action)


def _apply_checked(state: PenkiState, seat: str, action: Mapping[str, Any]) -> Outcome:
    """:func:`apply`, every case: the checks in FORMAT.md's order, then the action's handler."""
    # bad_action: unknown action, missing or malformed field, other game's action.
    if not isinstance(action, dict) and not isinstance(action, Mapping):  # the ABC check is slow
        raise _reject("bad_action", "an action is a dict")
    kind = action.get("a")
    try:
        spec = _SPECS[kind]
    except (KeyError, TypeError):  # a list or dict off the wire is unhashable
        raise _reject("bad_action", f"unknown Penki action {kind!r}") from None
    handler, needs, turn_action = spec
    players = state.players
    if seat not in players:
        raise _reject("bad_action", f"{seat!r} is not a seat")
    arg = None
    if needs is _CARD:
        arg = action.get("card")
        if not isinstance(arg, str) or arg not in _PACK:
            raise _reject("bad_action", f"{arg!r} is not a card of the pack")
    elif needs is _TO:
        arg = action.get("to")
        if not isinstance(arg, str) or arg not in players:
            raise _reject("bad_action", f"{arg!r} is not a seat")
    if state.over:
        raise _reject("game_over", "the game has ended")
    if turn_action and (seat != state.turn or state.penalty_to is not None):
        raise _reject("not_your_turn", f"{state.to_move} is to move")
    if needs is _CARD and arg not in state.hands[seat]:
        raise _reject("not_in_hand", f"{arg} is not in your hand")
    s = _clone_for_apply(state)
    events: list[dict[str, Any]] = []
    handler(s, seat, arg, events)
    if s.phase == 2 and (s.owes or s.declared or s.over):
        _lapse(s)
    s.version = state.version + 1
    last = state.last
    if len(events) == 1:
        if len(last) >= LAST_EVENTS:
            last = last[1 - LAST_EVENTS:]
        s.last = last + (events[0],)  # noqa: RUF005 (concatenation: faster here)
    else:
        last = (*last, *events)
        s.last = last[-LAST_EVENTS:] if len(last) > LAST_EVENTS else last
    return _outcome(Outcome, (s, events))


def legal_actions(state: PenkiState, seat: str) -> list[dict[str, Any]]:
    """The turn actions and ``give`` ``seat`` may take now, as read-only action dicts
    (:class:`~engine.actions.Action`, the same objects every call: copy one to change it).

    Callouts (``zevok``, ``one_card``, ``how_many``) are never listed (S3). Phase 1
    lists accepted blunders too (they are legal, R5): ``draw`` whenever no card waits
    and the stock has one, the forced ``move``, ``place`` on the first fitting
    opponent and on the own pile. Phase 2: ``play`` of each card that may lead
    (R15) or beat (R10), ``take`` when the table holds a card; ``give`` of each card
    during the seat's penalty hand-over (R18).
    """
    s = state
    if s.over:
        return []
    if s.penalty_to is not None:  # phase 2 only
        if seat in s.penalty_from:
            return list(map(_give_of, sorted(s.hands[seat], key=_order)))
        return []
    if seat != s.turn or seat is None:  # the turn is a seat's while the game is on
        return []
    if s.phase == 1:
        out: list[dict[str, Any]] = []
        if s.drawn is not None:
            target = _first_fit(s, seat, s.drawn)
            if target is not None:
                out.append(_PLACE[target])
            out.append(_PLACE[seat])
            return out
        pile = s.piles[seat]
        if pile:
            target = _first_fit(s, seat, pile[-1])
            if target is not None:
                out.append(_MOVE[target])
        if s.stock:
            out.append(_DRAW)
        return out
    hand = s.hands[seat]
    table = s.table
    if not table:
        if KS in hand and (len(hand) > 1 or s.stumps[seat]):  # R15: Ks leads only alone
            return list(map(_play_of, sorted(filter(_NOT_KS, hand), key=_order)))
        return list(map(_play_of, sorted(hand, key=_order)))
    return [*map(_play_of, sorted(filter(_BEATS[table[-1]], hand), key=_order)), _TAKE]


def awaiting(state: PenkiState) -> list[str]:
    """Seats the game waits for: the player to move, or during a hand-over the seats still to give."""
    if state.over:
        return []
    if state.penalty_to is not None:
        return list(state.penalty_from)
    return [state.turn] if state.turn is not None else []


def view(state: PenkiState, seat: str | None) -> dict[str, Any]:
    """What ``seat`` (``None``: a spectator) may see, JSON-ready (CONTRACTS.md §1, S3).

    Own hand, everyone's counts, piles' tops and sizes, the drawn card, the table,
    whose turn, who declared, the penalty in progress, places so far, the last
    events. Never the stock order, a stump card, a blunder or an open «ЗЕВОК!»
    window, or who owes a declaration. ``last`` holds the state's own event dicts (never
    changed once made): read-only.
    """
    s = state
    me = seat if seat in s.players else None
    declared = set(s.declared)
    players = []
    for p in s.players:
        pile = s.piles[p]
        players.append({
            "id": p, "cards": len(s.hands[p]), "pile": len(pile), "pile_top": pile[-1] if pile else None,
            "stumps": len(s.stumps[p]), "declared": p in declared, "out": p in s.places,
        })
    return {
        "game": "penki", "version": s.version, "seat": me, "players": players,
        "hand": sorted(s.hands[me], key=_order) if me is not None else None,
        "to_move": s.to_move, "dealer": s.dealer, "over": s.over, "places": dict(s.places),
        "balances": dict(s.balances) if s.balances is not None else None,
        "legal": [dict(x) for x in legal_actions(s, me)] if me is not None else [],
        "last": list(s.last),  # events are never changed once made: shared, read-only
        "phase": s.phase, "stock": len(s.stock), "drawn": s.drawn, "table": list(s.table),
        "discarded": s.discarded, "penalty": s.penalty, "penalty_queue": list(s.penalty_queue),
    }


def own_view(state: PenkiState, seat: str, out: dict[str, Any]) -> None:
    """Turn a copy of the spectator's view into ``seat``'s (``engine.views``): what is
    ``seat``'s own, ``seat``, ``hand`` and ``legal``; the rest is alike (S3)."""
    out["seat"] = seat
    out["hand"] = sorted(state.hands[seat], key=_order)
    out["legal"] = [dict(x) for x in legal_actions(state, seat)]


def observer(state: PenkiState) -> dict[str, Any]:
    """The all-seeing state of conformance/FORMAT.md (its Penki keys, nothing else)."""
    s = state
    return {
        "to_move": s.to_move,
        "hands": {p: list(s.hands[p]) for p in s.players},
        "stock": list(s.stock),
        "over": s.over,
        "places": dict(s.places),
        "balances": dict(s.balances) if s.balances is not None else None,
        "phase": s.phase,
        "piles": {p: list(s.piles[p]) for p in s.players},
        "drawn": s.drawn,
        "zevok": s.zevok,
        "stumps": {p: list(s.stumps[p]) for p in s.players},
        "table": list(s.table),
        "discarded": s.discarded,
        "owes_declaration": list(s.owes),
        "penalty": s.penalty,
        "penalty_queue": list(s.penalty_queue),
    }


# ---------------------------------------------------------------- computer player


def _worst(hand: tuple[str, ...]) -> str:
    """The card a player is gladdest to be rid of: Ks, else the lowest non-trump, else the lowest trump."""
    if KS in hand:
        return KS
    return min(hand, key=lambda c: (_SUIT[c] == TRUMP, _RANK[c], SUITS.index(_SUIT[c])))


def _owes_for_a_give(s: PenkiState, seat: str) -> bool:
    """Whether ``seat``'s owed declaration (R17) comes from handing over a penalty card (R18):
    its latest play, take or give in the public ``last`` events is a give."""
    for e in reversed(s.last):
        if e.get("seat") == seat and e.get("a") in ("play", "take", "give"):
            return e["a"] == "give"
    return False


def _stall_pick(version: int, n: int) -> int:
    """A deterministic, well-spread choice of 0..n-1 from the state's version."""
    return random.Random(version).randrange(n)


def computer_action(state: PenkiState, seat: str) -> dict[str, Any] | None:
    """The computer player's action for ``seat`` now (any seat, any moment), or ``None``.

    Deterministic. Callouts first: «ЗЕВОК!» against an opponent's open window (R6),
    its own «ОДНА КАРТА!» when owed (R17), «СКОЛЬКО КАРТ?» when another seat owes
    for a play or a take (R18), not when that seat is out itself (its place is fixed,
    R16, R19: it has nothing to gain) nor on a giver left with one card by its penalty
    card: a giver declares at once, and asking it first would let two givers hand one
    card to and fro for ever, each one's give making it the next ask's debtor (a driver
    that lets an asker act before the debtor looped so for thousands of actions). From
    :data:`STALL_AFTER` on it also asks only on every other version or so (a hash of the
    version), so that a debtor who always comes after the asker does get to declare. Then its penalty card (the worst one), then its turn: phase 1 never
    blunders (forced move, else draw, a drawn card to the first fitting opponent,
    else its own pile); phase 2 leads its cheapest card, beats with the cheapest
    card that beats keeping trumps, and takes when it cannot beat. From action
    :data:`STALL_AFTER` on it varies its leads, beats and takes by a hash of the
    version, so that a cycle of leads, beats and takes that can never make a Бита
    (the rules allow one forever) ends.
    """
    s = state
    if s.over or seat not in s.players:
        return None
    if s.phase == 1:
        if s.zevok is not None and s.zevok != seat:
            return {"a": "zevok"}
        if s.turn != seat:
            return None
        if s.drawn is not None:
            return {"a": "place", "to": _first_fit(s, seat, s.drawn) or seat}
        pile = s.piles[seat]
        if pile:
            target = _first_fit(s, seat, pile[-1])
            if target is not None:
                return {"a": "move", "to": target}
        return {"a": "draw"} if s.stock else None
    if seat in s.owes:
        return {"a": "one_card"}
    if seat not in s.places and any(p != seat and not _owes_for_a_give(s, p) for p in s.owes) \
            and (s.version < STALL_AFTER or _stall_pick(s.version, 2)):
        return {"a": "how_many"}
    hand = s.hands[seat]
    if s.penalty_to is not None:
        if seat in s.penalty_from:
            return {"a": "give", "card": _worst(hand)}
        return None
    if s.turn != seat:
        return None
    if not s.table:
        lone = len(hand) == 1 and not s.stumps[seat]
        options = sorted((c for c in hand if c != KS or lone),
                         key=lambda c: (_SUIT[c] == TRUMP, _RANK[c], SUITS.index(_SUIT[c])))
        if s.version >= STALL_AFTER and len(options) > 1:
            # A long game: vary the lead (a hash of the version, still deterministic) so that
            # a cycle of leads and takes that can never make a Бита does not go on forever.
            return {"a": "play", "card": options[_stall_pick(s.version, len(options))]}
        return {"a": "play", "card": options[0]}
    top = s.table[-1]
    options = sorted((c for c in hand if beats(c, top)), key=lambda c: (_SUIT[c] == TRUMP, _RANK[c]))
    if not options:
        return {"a": "take"}
    if s.version >= STALL_AFTER:
        k = _stall_pick(s.version, len(options) + 1)
        return {"a": "play", "card": options[k]} if k < len(options) else {"a": "take"}
    return {"a": "play", "card": options[0]}


# ---------------------------------------------------------------- persistence


def dump(state: PenkiState) -> dict[str, Any]:
    """JSON-ready dict with ``schema`` and ``game``; :func:`load` rebuilds an equal state."""
    s = state
    return {
        "schema": SCHEMA, "game": "penki", "players": list(s.players), "dealer": s.dealer,
        "seed": s.seed, "version": s.version, "over": s.over, "phase": s.phase, "turn": s.turn,
        "stock": list(s.stock), "piles": {p: list(v) for p, v in s.piles.items()}, "drawn": s.drawn,
        "zevok": s.zevok, "stumps": {p: list(v) for p, v in s.stumps.items()},
        "hands": {p: list(v) for p, v in s.hands.items()}, "table": list(s.table),
        "discarded": s.discarded, "last_beater": s.last_beater, "owes": list(s.owes),
        "declared": list(s.declared), "penalty_to": s.penalty_to, "penalty_from": list(s.penalty_from),
        "penalty_queue": list(s.penalty_queue), "places": dict(s.places),
        "balances": dict(s.balances) if s.balances is not None else None,
        "last": list(s.last),  # events are never changed once made: shared, read-only
    }


def load(data: Mapping[str, Any]) -> PenkiState:
    """Rebuild a state from :func:`dump`'s output; ``ValueError`` on another schema or game."""
    if data.get("game") != "penki" or data.get("schema") != SCHEMA:
        raise ValueError(f"not a Penki state of schema {SCHEMA}")
    players = tuple(data["players"])

    def seats(key: str) -> dict[str, tuple[str, ...]]:
        return {p: tuple(data[key][p]) for p in players}

    return PenkiState(
        players=players, dealer=data["dealer"], seed=data["seed"], version=data["version"],
        over=data["over"], phase=data["phase"], turn=data["turn"], stock=tuple(data["stock"]),
        piles=seats("piles"), drawn=data["drawn"], zevok=data["zevok"], stumps=seats("stumps"),
        hands=seats("hands"), table=tuple(data["table"]), discarded=data["discarded"],
        last_beater=data["last_beater"], owes=tuple(data["owes"]), declared=tuple(data["declared"]),
        penalty_to=data["penalty_to"], penalty_from=tuple(data["penalty_from"]),
        penalty_queue=tuple(data["penalty_queue"]), places=dict(data["places"]),
        balances=dict(data["balances"]) if data["balances"] is not None else None,
        last=tuple(data["last"]),
    )
