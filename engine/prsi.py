"""Prší, the Czech shedding game (RULES.md P1–P16).

A match is 5 rounds (P2) of 2–5 players (P1) with the 32-card pack. Each round:
deal 4 cards each, one at a time clockwise from the dealer's left; turn the next
card up as the first discard; the rest is the stock (P3). The player to the
dealer's left starts, and the first discard acts on them as if just played (P4).
On a turn (P5): play a card of the suit in play or of the top card's rank, or a
Queen naming a suit (P8), or draw one card. A 7 makes the next player answer
with a 7 or draw 2 for every 7 of the chain (P6); an Ace makes them answer with
an Ace or stand (P7). The stock is renewed from the discard pile, turned over
without shuffling, as soon as it empties and whenever a card is to be drawn from
it empty (P9); a debt that cannot be drawn is forgiven, and a player who can
neither draw nor play passes (P10). The round ends when a player plays their
last card; a last 7's debt is drawn at once by the next player (P11); everyone
else scores the points of the cards left in hand (P12). After round 5 the lowest
total wins, ties share a place (P13), and each player's balance is the sum of
the differences to every opponent (P14; the ratings math is in
:mod:`engine.ratings`).

The state is a slotted dataclass treated as immutable: :func:`apply` copies it
shallowly and replaces only the tuples and dicts that change, so it is cheap.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from engine import Outcome, _outcome  # _outcome: an Outcome without a Python frame
from engine.cards import PRSI_PACK, RANK_INDEX, SUITS
from engine.errors import Rejected
from engine.ratings import prsi_balances, shared_places

SCHEMA = 1
ROUNDS = 5  # P2
HAND_SIZE = 4  # P3
MIN_PLAYERS, MAX_PLAYERS = 2, 5  # P1
LAST_EVENTS = 20  # CONTRACTS.md §1: ``last`` holds at most 20 events
POINTS: dict[str, int] = {"7": 7, "8": 8, "9": 9, "10": 10, "J": 2, "Q": 20, "K": 4, "A": 11}  # P12

PACK = frozenset(PRSI_PACK)


class Action(dict):
    """A read-only action dict, as :func:`legal_actions` lists them.

    The same objects are handed out every time (building fresh dicts was a large
    share of a playout's time), so changing one raises ``TypeError``; copies
    (``dict(a)``, ``copy``, ``pickle``) are plain dicts. JSON sees a plain dict.
    """

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("legal actions are read-only: copy one with dict(action)")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _read_only  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


_PLAY = {c: Action(a="play", card=c) for c in PRSI_PACK}
_PLAY_Q = {c: tuple(Action(a="play", card=c, suit=s) for s in SUITS) for c in PRSI_PACK if c[0] == "Q"}
_DRAW, _STAND, _PASS = Action(a="draw"), Action(a="stand"), Action(a="pass")
ACTIONS = ("play", "draw", "stand", "pass")  # tuples: membership never raises on junk


def _plays_of(follows: Any, last: bool) -> dict[str, tuple[Action, ...]]:
    """Each card's legal plays (P5–P8) when ``follows(card)`` says it may go on the pile:
    a Queen once per suit it may name, or once alone when it is the ``last`` card (P8)."""
    return {c: (((_PLAY[c],) if last or c[0] != "Q" else _PLAY_Q[c]) if follows(c) else ())
            for c in PRSI_PACK}


# legal_actions reads a card's plays from a table instead of testing the card: one table
# per (suit in play, top card's rank) for a hand of several cards and one for a last card
# (P5, P8), and one for an active 7 and one for an active Ace (P6, P7).
_FOLLOW = {suit: {r[0]: _plays_of(lambda c, s=suit, t=r[0]: c[0] in ("Q", t) or c[-1] == s, False)
                  for r in ("7", "8", "9", "10", "J", "Q", "K", "A")} for suit in SUITS}
_FOLLOW_LAST = {suit: {r[0]: _plays_of(lambda c, s=suit, t=r[0]: c[0] in ("Q", t) or c[-1] == s, True)
                       for r in ("7", "8", "9", "10", "J", "Q", "K", "A")} for suit in SUITS}
_ANSWER_7 = _plays_of(lambda c: c[0] == "7", True)
_ANSWER_A = _plays_of(lambda c: c[0] == "A", True)
_SUIT_ORDER = {s: i for i, s in enumerate(SUITS)}


@dataclass(slots=True)
class PrsiState:
    """A Prší match. Never changed in place once returned by this module.

    Fields (seats are indices into ``players`` where noted):

    * ``version`` — +1 per accepted action, 0 at the start.
    * ``players`` — seat ids, clockwise. ``seed`` / ``decks`` — the deal source:
      ``decks[k-1]`` (top card first) deals round k; rounds beyond the given decks,
      and every round of a seeded match, use ``random.Random(f"{seed}:{k}")``.
    * ``round`` (1–5), ``dealer`` (seat id).
    * ``hands`` — one tuple per seat index, cards in the order received.
    * ``stock`` — top card first; ``discard`` — bottom first, its last card is the top.
    * ``suit`` — the suit in play; ``pending_draw`` — the 7 debt owed by ``to_move``
      (P6); ``pending_skip`` — an active Ace faces ``to_move`` (P7).
    * ``to_move`` — seat id, ``None`` once over.
    * ``points`` — totals over finished rounds; ``round_points`` — the last finished
      round's points or ``None``; ``history`` — ``({"round", "points"}, ...)``.
    * ``over``, ``places``, ``balances`` — set when round 5 ends (P13, P14).
    * ``last`` — the most recent public events, oldest first, at most 20.
    * ``vx`` — the table variants (:class:`engine.prsi_variants.Variants`), ``None``
      for the house rules (a ``Variants`` with nothing on, from ``variants=[]``, plays them
      too and only shows ``"variants": []``); every rule of a variant lives in
      :mod:`engine.prsi_variants`.
    """

    game: ClassVar[str] = "prsi"

    version: int
    players: tuple[str, ...]
    seed: int | None
    decks: tuple[tuple[str, ...], ...] | None
    round: int
    dealer: str
    hands: tuple[tuple[str, ...], ...]
    stock: tuple[str, ...]
    discard: tuple[str, ...]
    suit: str
    pending_draw: int
    pending_skip: bool
    to_move: str | None
    points: dict[str, int]
    round_points: dict[str, int] | None
    history: tuple[dict[str, Any], ...]
    over: bool
    places: dict[str, int] | None
    balances: dict[str, int] | None
    last: tuple[dict[str, Any], ...]
    vx: Any = None  # PV1–PV9: engine.prsi_variants.Variants, or None (house rules)

    @property
    def top(self) -> str:
        """The top card of the discard pile."""
        return self.discard[-1]

    def hand(self, seat: str) -> tuple[str, ...]:
        """The cards ``seat`` holds."""
        return self.hands[self.players.index(seat)]


def _make_copy(*but: str) -> Any:
    """A straight-line shallow copy of a :class:`PrsiState` (twice as fast as calling the
    dataclass's ``__init__`` with every field: this runs on every move). ``but``: fields
    the caller sets itself on the copy at once (left unset here: the hot paths of
    :func:`apply` would only overwrite them)."""
    names = [f.name for f in fields(PrsiState)]
    assert set(but) <= set(names)
    body = "".join(f"\n    n.{f} = s.{f}" for f in names if f not in but)
    namespace: dict[str, Any] = {"_new": object.__new__, "PrsiState": PrsiState}
    exec(f"def _copy(s):\n    n = _new(PrsiState){body}\n    return n\n", namespace)
    return namespace["_copy"]


_copy = _make_copy()
# apply's play of a card that does not end the round, and its draw that empties no stock,
# set these fields themselves (every one of them, on every such path).
_copy_for_play = _make_copy("version", "hands", "discard", "suit", "to_move", "last")
_copy_for_draw = _make_copy("version", "hands", "stock", "pending_draw", "to_move", "last")


# ---------------------------------------------------------------- setting up


def _check_deck(deck: Any) -> tuple[str, ...]:
    if not isinstance(deck, (list, tuple)) or len(deck) != len(PRSI_PACK) or set(deck) != PACK:
        raise ValueError("a Prší deck is the 32 cards 7–A of h d c s, each once, top card first")
    return tuple(deck)


def _deck(s: PrsiState, rnd: int) -> tuple[str, ...]:
    if s.decks is not None and rnd <= len(s.decks):
        return s.decks[rnd - 1]
    deck = list(PRSI_PACK)
    random.Random(f"{s.seed}:{rnd}").shuffle(deck)
    return tuple(deck)


def new_game(
    players: list[str],
    *,
    dealer: str | None = None,
    seed: int | None = None,
    decks: list[list[str]] | None = None,
    variants: list[str] | None = None,
) -> PrsiState:
    """A new match, round 1 dealt (P1–P4).

    ``players``: 2–5 distinct seat ids, clockwise (P1). ``dealer``: who deals
    round 1 (default the last seat). ``decks``: up to 5 full packs, top card first,
    one per round; ``seed``: an int from which every round's deck not given is
    shuffled (``random.Random(f"{seed}:{round}")``). One of them is required.
    ``variants``: table variants (PV8 names, e.g. ``["PV1", "PV6"]``); none: house rules.
    Raises ``ValueError`` on a bad player count, dealer, seed, deck or variant.
    """
    players_t = tuple(players)
    if not MIN_PLAYERS <= len(players_t) <= MAX_PLAYERS:
        raise ValueError(f"Prší takes {MIN_PLAYERS}–{MAX_PLAYERS} players (P1)")
    if len(set(players_t)) != len(players_t) or not all(isinstance(p, str) and p for p in players_t):
        raise ValueError("players must be distinct non-empty seat ids")
    if dealer is None:
        dealer = players_t[-1]
    if dealer not in players_t:
        raise ValueError(f"dealer {dealer!r} is not a seat")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError("seed must be an int")
    decks_t = None
    if decks is not None:
        if not isinstance(decks, (list, tuple)) or not 1 <= len(decks) <= ROUNDS:
            raise ValueError(f"give 1–{ROUNDS} decks, one per round")
        decks_t = tuple(_check_deck(d) for d in decks)
    elif seed is None:
        raise ValueError("give a seed or decks")
    zero = dict.fromkeys(players_t, 0)
    s = PrsiState(0, players_t, seed, decks_t, 0, dealer, (), (), (), "h", 0, False, None, zero, None,
                  (), False, None, None, ())
    if variants is not None:  # PV1–PV7
        s.vx = _pv.parse(variants)
    events: list[dict[str, Any]] = []
    _deal(s, 1, dealer, events)
    s.last = tuple(events)
    return s


def _deal(n: PrsiState, rnd: int, dealer: str, events: list[dict[str, Any]]) -> None:
    """Deal round ``rnd`` into ``n`` (a fresh copy): P2, P3, and the opening card of P4."""
    deck = _deck(n, rnd)
    players = n.players
    k = len(players)
    d = players.index(dealer)
    hands: list[list[str]] = [[] for _ in players]
    dealt = (HAND_SIZE if n.vx is None else _pv.hand_size(n.vx)) * k  # PV4: 6 each
    for j in range(dealt):
        hands[(d + 1 + j) % k].append(deck[j])
    top = deck[dealt]
    n.round = rnd
    n.dealer = dealer
    n.hands = tuple(tuple(h) for h in hands)
    n.discard = (top,)
    n.stock = deck[dealt + 1:]
    n.suit = top[-1]  # P4: an opening Q names nothing, its own suit is in play
    r = top[:-1]
    n.pending_draw = 2 if r == "7" else 0  # P4 + P6
    n.pending_skip = r == "A"  # P4 + P7
    n.to_move = players[(d + 1) % k]
    if n.vx is not None:
        _pv.opening(n)  # PV5, PV6: the opening card with variants
    events.append({"a": "deal", "round": rnd, "dealer": dealer})


# ---------------------------------------------------------------- rules


def _playable(s: PrsiState, card: str) -> bool:
    """P5–P8: may ``card`` go on the discard pile now?"""
    r = card[0]  # a rank's first character tells it apart ("1" is the 10)
    if s.pending_draw:
        return r == "7"  # P6: only a 7 answers a 7
    if s.pending_skip:
        return r == "A"  # P7: only an A answers an A
    return r == "Q" or card[-1] == s.suit or r == s.discard[-1][0]  # P5, P8


def _can_draw(s: PrsiState) -> bool:
    """P10: is there a card to draw (the stock, or a discard pile to turn over)?"""
    return bool(s.stock) or len(s.discard) > 1


def _draw(n: PrsiState, i: int, count: int) -> list[dict[str, Any]]:
    """Seat ``i`` draws ``count`` cards card by card into the copy ``n`` (P9, P10).

    The discard pile under its top is turned over, unshuffled (oldest card on top
    of the new stock), when a card is to be drawn from an empty stock and as soon
    as a draw empties the stock. Whatever cannot be drawn is forgiven. Returns the
    events: a ``draw`` for each run of cards between turnovers, ``turnover``, ``forgiven``.
    """
    seat = n.players[i]
    stock, discard = n.stock, n.discard
    hand = n.hands[i]
    events: list[dict[str, Any]] = []
    drawn = chunk = 0
    while drawn < count:
        if not stock:
            if len(discard) <= 1:
                break
            stock, discard = discard[:-1], discard[-1:]
            events.append({"a": "turnover", "n": len(stock)})
        take = min(count - drawn, len(stock))
        hand += stock[:take]
        stock = stock[take:]
        drawn += take
        chunk += take
        if not stock and len(discard) > 1:  # P9: the draw emptied the stock
            events.append({"a": "draw", "seat": seat, "n": chunk})
            chunk = 0
            stock, discard = discard[:-1], discard[-1:]
            events.append({"a": "turnover", "n": len(stock)})
    if chunk:
        events.append({"a": "draw", "seat": seat, "n": chunk})
    if drawn < count:
        events.append({"a": "forgiven", "seat": seat, "n": count - drawn})
    hands = n.hands
    n.hands = (*hands[:i], hand, *hands[i + 1:])
    n.stock, n.discard = stock, discard
    return events


def _end_round(n: PrsiState, winner: str, events: list[dict[str, Any]]) -> None:
    """P11–P14: score the round into ``n``; deal the next one or end the match."""
    rp = {p: sum(POINTS[c[:-1]] for c in h) for p, h in zip(n.players, n.hands, strict=True)}
    totals = {p: n.points[p] + rp[p] for p in n.players}
    n.round_points = rp
    n.points = totals
    n.history = (*n.history, {"round": n.round, "points": dict(rp)})
    n.pending_draw = 0
    n.pending_skip = False
    events.append({"a": "round_end", "round": n.round, "round_points": dict(rp), "points": dict(totals),
                   "winner": winner})
    if n.round < ROUNDS:
        players = n.players
        _deal(n, n.round + 1, players[(players.index(n.dealer) + 1) % len(players)], events)  # P2
        return
    n.over = True
    n.to_move = None
    n.places = shared_places(totals, lower_is_better=True)  # P13
    n.balances = prsi_balances(totals)  # P14
    events.append({"a": "match_end", "places": dict(n.places), "balances": dict(n.balances),
                   "points": dict(totals)})


def apply(state: PrsiState, seat: str, action: Mapping[str, Any]) -> Outcome:
    """Apply ``action`` (``play{card,suit?}``, ``draw``, ``stand``, ``pass``) by ``seat``.

    ``play``: P5, P6 (7), P7 (A), P8 (Q names ``suit``), P11 (a last card ends the
    round, a last 7's debt is drawn at once); ``draw``: one card or the whole 7 debt,
    turnover and forgiveness (P9, P10); ``stand``: P7; ``pass``: P10. Other fields
    (a variant's ``cards`` or ``rank``, ``suit`` on a card that is no Queen) are no
    fields (PV9.8).

    Returns ``Outcome(new_state, events)``; raises :class:`Rejected` with the first
    FORMAT.md reason that applies (``bad_action``, ``game_over``, ``not_your_turn``,
    ``not_in_hand``, ``illegal``). ``state`` is never changed. The event dicts are
    also kept in the new state's ``last``: read them, do not change them.
    """
    vx = state.vx
    if vx is not None and vx.on:
        return _pv.apply(state, seat, action)  # PV1–PV9 (a table of no variants plays the house rules)
    # 1. bad_action: cheap checks of the raw dict (it may come straight off the wire).
    if not isinstance(action, dict) and not isinstance(action, Mapping):  # the ABC check is slow
        raise Rejected("bad_action", "an action is a dict")
    a = action.get("a")
    players = state.players
    try:
        i = players.index(seat)
    except ValueError:
        if a not in ACTIONS:
            raise Rejected("bad_action", f"unknown Prší action {a!r}") from None
        raise Rejected("bad_action", f"unknown seat {seat!r}") from None
    hands = state.hands
    hand = hands[i]
    nxt = i + 1 - len(players)  # the next seat's index (negative but the last seat's: 0)
    if a == "play":
        card = action.get("card")
        if type(card) is not str or card not in PACK:
            raise Rejected("bad_action", f"{card!r} is not a card of the Prší pack")
        r = card[0]  # a rank's first character tells it apart ("1" is the 10)
        suit = None
        if r == "Q" and hand != (card,):  # P8: a last Queen names nothing
            suit = action.get("suit")
            if suit not in SUITS:
                raise Rejected("bad_action", "a Queen that is not the last card needs a suit: h, d, c or s")
        # 2.–5. game_over, not_your_turn, not_in_hand, illegal.
        if state.over:
            raise Rejected("game_over", "the match has ended")
        if seat != state.to_move:
            raise Rejected("not_your_turn", f"it is {state.to_move}'s turn")
        if card not in hand:
            raise Rejected("not_in_hand", f"{seat} does not hold {card}")
        if not (r == "7" if state.pending_draw else r == "A" if state.pending_skip else  # P5–P8
                r == "Q" or card[-1] == state.suit or r == state.discard[-1][0]):
            raise Rejected("illegal", _why_not(state, card))
        if len(hand) == 1:  # P11: the round ends at once
            n = _copy(state)
            events = _play(n, i, card, suit)
        else:
            n = _copy_for_play(state)
            j = hand.index(card)
            new = list(hands)
            new[i] = hand[:j] + hand[j + 1:]
            n.hands = tuple(new)
            n.discard = state.discard + (card,)  # noqa: RUF005 (concatenation: faster here)
            if suit is None:
                n.suit = card[-1]
                event = {"a": "play", "seat": seat, "card": card}
            else:
                n.suit = suit  # P8: the Queen's named suit
                event = {"a": "play", "seat": seat, "card": card, "suit": suit}
            if r == "7":
                n.pending_draw += 2  # P6
            elif r == "A":
                n.pending_skip = True  # P7 (an answering Ace keeps it active)
            n.to_move = players[nxt]
            n.version = state.version + 1
            last = state.last
            if len(last) >= LAST_EVENTS:
                last = last[1 - LAST_EVENTS:]
            n.last = last + (event,)  # noqa: RUF005 (concatenation: faster here)
            return _outcome(Outcome, (n, [event]))
    elif a == "draw":
        if state.over:
            raise Rejected("game_over", "the match has ended")
        if seat != state.to_move:
            raise Rejected("not_your_turn", f"it is {state.to_move}'s turn")
        if state.pending_skip:
            raise Rejected("illegal", "an Ace is pending: answer with an Ace or stand (P7)")
        count = state.pending_draw or 1  # P6: the whole debt, the chain is spent; else P5
        stock = state.stock
        if len(stock) > count:  # the draw leaves cards in the stock: no turnover (P9)
            n = _copy_for_draw(state)
            new = list(hands)
            new[i] = hand + stock[:count]
            n.hands = tuple(new)
            n.stock = stock[count:]
            n.pending_draw = 0
            n.to_move = players[nxt]
            n.version = state.version + 1
            event = {"a": "draw", "seat": seat, "n": count}
            last = state.last
            if len(last) >= LAST_EVENTS:
                last = last[1 - LAST_EVENTS:]
            n.last = last + (event,)  # noqa: RUF005 (concatenation: faster here)
            return _outcome(Outcome, (n, [event]))
        if not stock and len(state.discard) <= 1 and not state.pending_draw:
            raise Rejected("illegal", "nothing can be drawn: play or pass (P10)")
        n = _copy(state)
        events = _draw(n, i, count)
        n.pending_draw = 0
        n.to_move = players[nxt]
    elif a == "stand":
        if state.over:
            raise Rejected("game_over", "the match has ended")
        if seat != state.to_move:
            raise Rejected("not_your_turn", f"it is {state.to_move}'s turn")
        if not state.pending_skip:
            raise Rejected("illegal", "no Ace is pending (P7)")
        n = _copy(state)
        n.pending_skip = False  # P7: standing spends the Ace
        events = [{"a": "stand", "seat": seat}]
        n.to_move = players[nxt]
    elif a == "pass":
        if state.over:
            raise Rejected("game_over", "the match has ended")
        if seat != state.to_move:
            raise Rejected("not_your_turn", f"it is {state.to_move}'s turn")
        if state.pending_skip or state.pending_draw or _can_draw(state):
            raise Rejected("illegal", "pass only when nothing can be drawn (P10)")
        if any(_playable(state, c) for c in hand):
            raise Rejected("illegal", "a player who can play must play (P10)")
        n = _copy(state)
        events = [{"a": "pass", "seat": seat}]
        n.to_move = players[nxt]
    else:
        raise Rejected("bad_action", f"unknown Prší action {a!r}")
    n.version += 1
    last = n.last
    drop = len(last) + len(events) - LAST_EVENTS
    n.last = (*(last[drop:] if drop > 0 else last), *events)
    return _outcome(Outcome, (n, events))


def _why_not(s: PrsiState, card: str) -> str:
    if s.pending_draw:
        return "a 7 is pending: answer with a 7 or draw (P6)"
    if s.pending_skip:
        return "an Ace is pending: answer with an Ace or stand (P7)"
    return f"{card} follows neither the suit in play ({s.suit}) nor the top card {s.discard[-1]} (P5)"


def _play(n: PrsiState, i: int, card: str, suit: str | None) -> list[dict[str, Any]]:
    """Seat ``i`` plays ``card`` (already checked) into the copy ``n``: P5–P8, P11. Returns the events."""
    players = n.players
    seat = players[i]
    hands = n.hands
    hand = hands[i]
    j = hand.index(card)
    hand = hand[:j] + hand[j + 1:]
    n.hands = (*hands[:i], hand, *hands[i + 1:])
    n.discard = (*n.discard, card)
    r = card[0]
    if suit is None:
        events: list[dict[str, Any]] = [{"a": "play", "seat": seat, "card": card}]
        n.suit = card[-1]
    else:
        events = [{"a": "play", "seat": seat, "card": card, "suit": suit}]
        n.suit = suit  # P8: the Queen's named suit
    nxt = (i + 1) % len(players)
    if not hand:  # P11: the round ends at once
        if r == "7":  # the next player draws the whole chain's debt, no answer possible
            events += _draw(n, nxt, n.pending_draw + 2)
        _end_round(n, seat, events)
        return events
    if r == "7":
        n.pending_draw += 2  # P6
    elif r == "A":
        n.pending_skip = True  # P7 (an answering Ace keeps it active)
    n.to_move = players[nxt]
    return events


# ---------------------------------------------------------------- queries


def legal_actions(state: PrsiState, seat: str) -> list[dict[str, Any]]:
    """Every action ``seat`` may take now, as read-only :class:`Action` dicts (``[]`` when not its turn).

    A Queen that is not the last card appears once per suit it may name (P8).
    ``draw`` when a card can be drawn or a 7 debt is pending, ``stand`` only on an
    active Ace, ``pass`` only when nothing can be drawn or played (P10).
    """
    if seat != state.to_move or state.over:
        return []
    vx = state.vx
    if vx is not None and vx.on:
        return _pv.legal_actions(state, seat)  # PV1–PV9
    hand = state.hands[state.players.index(seat)]
    out: list[dict[str, Any]] = []
    if state.pending_draw:  # P6
        for c in hand:
            out += _ANSWER_7[c]
        out.append(_DRAW)
        return out
    if state.pending_skip:  # P7
        for c in hand:
            out += _ANSWER_A[c]
        out.append(_STAND)
        return out
    if len(hand) > 1:  # P5, P8
        plays = _FOLLOW[state.suit][state.discard[-1][0]]
        for c in hand:
            out += plays[c]
    else:
        out += _FOLLOW_LAST[state.suit][state.discard[-1][0]][hand[0]]
    if state.stock or len(state.discard) > 1:
        out.append(_DRAW)
    elif not out:
        out.append(_PASS)  # P10
    return out


def awaiting(state: PrsiState) -> list[str]:
    """The seats the game waits for: ``[to_move]``, or ``[]`` once over (``to_move`` is ``None`` then)."""
    seat = state.to_move
    return [] if seat is None else [seat]


def _display_key(card: str) -> tuple[int, int]:
    return _SUIT_ORDER[card[-1]], RANK_INDEX[card[:-1]]


def view(state: PrsiState, seat: str | None) -> dict[str, Any]:
    """What ``seat`` may see (CONTRACTS.md §1, S3), JSON-ready.

    ``seat=None`` (or a seat not at the table) gets the spectator view: no hand,
    no legal actions. Nobody sees another hand or the stock order: only counts.
    ``last`` holds the state's own event dicts (never changed once made): read-only.
    """
    if seat not in state.players:
        seat = None
    i = state.players.index(seat) if seat is not None else -1
    out = {
        "game": "prsi",
        "version": state.version,
        "seat": seat,
        "players": [
            {"id": p, "cards": len(h), "points": state.points[p]}
            for p, h in zip(state.players, state.hands, strict=True)
        ],
        "hand": sorted(state.hands[i], key=_display_key) if seat is not None else None,
        "to_move": state.to_move,
        "dealer": state.dealer,
        "over": state.over,
        "places": dict(state.places) if state.places is not None else None,
        "balances": dict(state.balances) if state.balances is not None else None,
        "legal": [dict(x) for x in legal_actions(state, seat)] if seat is not None else [],
        "last": list(state.last),  # events are never changed once made: shared, read-only
        "round": state.round,
        "rounds": ROUNDS,
        "top": state.discard[-1],
        "suit": state.suit,
        "pending_draw": state.pending_draw,
        "pending_skip": state.pending_skip,
        "stock": len(state.stock),
        "discard": len(state.discard),
        "round_points": dict(state.round_points) if state.round_points is not None else None,
        "points": dict(state.points),
        "history": [{"round": h["round"], "points": dict(h["points"])} for h in state.history],
    }
    if state.vx is not None:
        _pv.view_extra(state, seat, out)  # PV1–PV9
    return out


def own_view(state: PrsiState, seat: str, out: dict[str, Any]) -> None:
    """Turn a copy of the spectator's view into ``seat``'s (``engine.views``): what is
    ``seat``'s own, ``seat``, ``hand``, ``legal`` (and PV7's ``drawn``); the rest is alike (S3)."""
    out["seat"] = seat
    out["hand"] = sorted(state.hands[state.players.index(seat)], key=_display_key)
    out["legal"] = [dict(x) for x in legal_actions(state, seat)]
    if state.vx is not None:
        _pv.view_extra(state, seat, out)


def observer(state: PrsiState) -> dict[str, Any]:
    """The all-seeing state of FORMAT.md, exactly its Prší keys (with variants, also theirs)."""
    out = {
        "to_move": state.to_move,
        "hands": {p: list(h) for p, h in zip(state.players, state.hands, strict=True)},
        "stock": list(state.stock),
        "round": state.round,
        "dealer": state.dealer,
        "top": state.discard[-1],
        "suit": state.suit,
        "discard": list(state.discard),
        "pending_draw": state.pending_draw,
        "pending_skip": state.pending_skip,
        "round_points": dict(state.round_points) if state.round_points is not None else None,
        "points": dict(state.points),
        "over": state.over,
        "places": dict(state.places) if state.places is not None else None,
        "balances": dict(state.balances) if state.balances is not None else None,
    }
    if state.vx is not None:
        _pv.observer_extra(state, out)  # FORMAT.md options.variants
    return out


# ---------------------------------------------------------------- computer player


def computer_action(state: PrsiState, seat: str) -> dict[str, Any] | None:
    """The computer player's action for ``seat``, or ``None`` when it is not its turn.

    Deterministic and always legal. On an active 7 it answers with a 7 if it can
    (P6), on an active Ace with an Ace (P7); else it sheds the plain card worth
    the most points (P12), keeping 7s and Aces as answers and Queens for late
    (unless the next player is down to one card: then a 7 or an Ace goes first);
    a Queen names its longest remaining suit (P8). It draws or passes only when
    it cannot play (P5, P10).
    """
    if state.over or seat != state.to_move:
        return None
    vx = state.vx
    if vx is not None and vx.on:
        return _pv.computer_action(state, seat)  # PV1–PV9
    players = state.players
    i = players.index(seat)
    hand = state.hands[i]
    playable = [c for c in hand if _playable(state, c)]
    if state.pending_draw or state.pending_skip:
        if playable:
            return {"a": "play", "card": _best_suit_card(hand, playable)}
        return {"a": "draw"} if state.pending_draw else {"a": "stand"}
    answers = [c for c in playable if c[0] in ("7", "A")]
    if answers and len(state.hands[(i + 1) % len(players)]) == 1:  # hold the next player back
        return {"a": "play", "card": max(answers, key=lambda c: (POINTS[c[:-1]], _suit_count(hand, c), c))}
    plain = [c for c in playable if c[0] not in ("7", "A", "Q")]
    if plain:
        return {"a": "play", "card": max(plain, key=lambda c: (POINTS[c[:-1]], _suit_count(hand, c), c))}
    if answers:  # better shed than draw
        return {"a": "play", "card": max(answers, key=lambda c: (POINTS[c[:-1]], _suit_count(hand, c), c))}
    if playable:
        queen = playable[0]
        if len(hand) == 1:
            return {"a": "play", "card": queen}
        return {"a": "play", "card": queen, "suit": _longest_suit(hand, queen)}
    return {"a": "draw"} if _can_draw(state) else {"a": "pass"}


def _suit_count(hand: tuple[str, ...], card: str) -> int:
    s = card[-1]
    return sum(1 for c in hand if c[-1] == s and c != card)


def _best_suit_card(hand: tuple[str, ...], options: list[str]) -> str:
    return max(options, key=lambda c: (_suit_count(hand, c), c))


def _longest_suit(hand: tuple[str, ...], queen: str) -> str:
    rest = [c for c in hand if c != queen and c[:-1] != "Q"] or [c for c in hand if c != queen]
    counts = {s: 0 for s in SUITS}
    worth = {s: 0 for s in SUITS}
    for c in rest:
        counts[c[-1]] += 1
        worth[c[-1]] += POINTS[c[:-1]]
    return max(SUITS, key=lambda s: (counts[s], worth[s], -_SUIT_ORDER[s]))


# ---------------------------------------------------------------- persistence


def dump(state: PrsiState) -> dict[str, Any]:
    """JSON-ready dict of ``state`` with ``schema`` and ``game``; :func:`load` inverts it exactly."""
    out = {
        "schema": SCHEMA,
        "game": "prsi",
        "version": state.version,
        "players": list(state.players),
        "seed": state.seed,
        "decks": [list(d) for d in state.decks] if state.decks is not None else None,
        "round": state.round,
        "dealer": state.dealer,
        "hands": {p: list(h) for p, h in zip(state.players, state.hands, strict=True)},
        "stock": list(state.stock),
        "discard": list(state.discard),
        "suit": state.suit,
        "pending_draw": state.pending_draw,
        "pending_skip": state.pending_skip,
        "to_move": state.to_move,
        "points": dict(state.points),
        "round_points": dict(state.round_points) if state.round_points is not None else None,
        "history": [{"round": h["round"], "points": dict(h["points"])} for h in state.history],
        "over": state.over,
        "places": dict(state.places) if state.places is not None else None,
        "balances": dict(state.balances) if state.balances is not None else None,
        "last": list(state.last),  # events are never changed once made: shared, read-only
    }
    if state.vx is not None:
        _pv.dump_extra(state, out)  # PV1–PV9; house dumps have no "variants"
    return out


def load(data: Mapping[str, Any]) -> PrsiState:
    """Rebuild a state from :func:`dump`'s output; ``ValueError`` on another schema or game."""
    if data.get("game") != "prsi" or data.get("schema") != SCHEMA:
        raise ValueError(f"not a Prší state of schema {SCHEMA}")
    players = tuple(data["players"])
    decks = data["decks"]
    rp = data["round_points"]
    places, balances = data["places"], data["balances"]
    return PrsiState(
        version=int(data["version"]),
        players=players,
        seed=data["seed"],
        decks=tuple(tuple(d) for d in decks) if decks is not None else None,
        round=int(data["round"]),
        dealer=data["dealer"],
        hands=tuple(tuple(data["hands"][p]) for p in players),
        stock=tuple(data["stock"]),
        discard=tuple(data["discard"]),
        suit=data["suit"],
        pending_draw=int(data["pending_draw"]),
        pending_skip=bool(data["pending_skip"]),
        to_move=data["to_move"],
        points=dict(data["points"]),
        round_points=dict(rp) if rp is not None else None,
        history=tuple({"round": h["round"], "points": dict(h["points"])} for h in data["history"]),
        over=bool(data["over"]),
        places=dict(places) if places is not None else None,
        balances=dict(balances) if balances is not None else None,
        last=tuple(data["last"]),
        vx=_pv.load_extra(data),
    )


# The table variants (PV1–PV9) hook in above wherever ``state.vx`` is set.
from engine import prsi_variants as _pv  # noqa: E402  (it builds on this module)
