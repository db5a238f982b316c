"""Prší table variants PV1–PV9 (RULES.md, "Prší table variants"; FORMAT.md ``options.variants``).

A table may turn on any combination of ``PV1`` … ``PV7`` and ``PV3q``; a state with
variants carries a :class:`Variants` in ``PrsiState.vx`` (``None`` is the house
rules, P1–P14, played by :mod:`engine.prsi` alone). Every entry point of
:mod:`engine.prsi` hands a state with variants over to this module, so the house
path stays as it is and every variant rule lives here:

* PV1 no stacking: a live debt takes no answer, the next player draws it.
* PV2 seven of hearts brings back: a player who goes out waits one extra turn of the
  next player, who may play ``7h`` (the one who went out is back and draws) or
  ``pass`` (the round ends).
* PV3 no finishing on a 7 or an Ace; PV3q only a Queen may be the last card.
* PV4 quick Prší: 6 cards each; ``{"a": "play", "cards": [...]}`` plays a group of
  one rank, the first card must fit, the last is the new top card.
* PV5 a Jack names a rank (``"rank"``), like a Queen names a suit.
* PV6 ``Ks`` makes the next player draw 4, answered only by ``7s`` (which ``Ks``
  answers in turn).
* PV7 a card drawn by choice may be played at once when it fits (or ``pass``).

The settled points of PV9 are implemented as written; where this module had to
choose, the docstring of the function says so (``Ruling`` notes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine import Outcome
from engine import prsi as _p
from engine.cards import PRSI_PACK, SUITS
from engine.errors import Rejected

VARIANTS: tuple[str, ...] = ("PV1", "PV2", "PV3", "PV3q", "PV4", "PV5", "PV6", "PV7")  # PV8: the order shown
NAMED_RANKS: tuple[str, ...] = ("7", "8", "9", "10", "J", "Q", "K", "A")  # PV9.3
QUICK_HAND_SIZE = 6  # PV4

_PLAY = _p._PLAY
_PLAY_Q = _p._PLAY_Q
_PLAY_J = {c: tuple(_p.Action(a="play", card=c, rank=r) for r in NAMED_RANKS) for c in PRSI_PACK if c[0] == "J"}
_DRAW, _STAND, _PASS = _p._DRAW, _p._STAND, _p._PASS


@dataclass(frozen=True, slots=True)
class Variants:
    """The variant part of a Prší state (immutable; replaced whole when it changes).

    * ``on`` — the variants turned on (a subset of :data:`VARIANTS`).
    * ``named_rank`` — PV5: the rank a Jack named, in force until a card of that
      rank, a Queen or a Jack is played; ``None`` if none.
    * ``out_pending`` — PV2: the seat that played its last card while the next
      player has the extra turn; ``None`` otherwise.
    * ``drawn`` — PV7: the card ``to_move`` has just drawn by choice and may still
      play this turn; ``None`` otherwise.
    """

    on: frozenset[str]
    named_rank: str | None = None
    out_pending: str | None = None
    drawn: str | None = None

    def names(self) -> list[str]:
        """The variants on, in the rulebook's order (``["PV1", "PV6"]``)."""
        return [v for v in VARIANTS if v in self.on]


def parse(variants: Iterable[str] | None) -> Variants | None:
    """``Variants`` for a list of names (PV8); ``None`` for no list (house rules).

    An empty list gives a ``Variants`` with nothing on: the table plays the house rules
    (:mod:`engine.prsi` handles it as ``None``), but its observer state, views and dumps
    show ``"variants": []`` as FORMAT.md says of any table given ``options.variants``.
    Raises ``ValueError`` on anything but a list of known names (``PV1``…``PV7``, ``PV3q``).
    """
    if variants is None:
        return None
    if isinstance(variants, (str, bytes)) or not isinstance(variants, Iterable):
        raise ValueError("variants is a list of PV1…PV7, PV3q")
    names = list(variants)
    bad = [v for v in names if not isinstance(v, str) or v not in VARIANTS]
    if bad:
        raise ValueError(f"unknown Prší variants {bad!r}: known are {', '.join(VARIANTS)}")
    return Variants(frozenset(names))


# ---------------------------------------------------------------- dealing


def hand_size(vx: Variants) -> int:
    """Cards dealt to each player: 6 with PV4 (even to five), else 4 (P3)."""
    return QUICK_HAND_SIZE if "PV4" in vx.on else _p.HAND_SIZE


def opening(n: _p.PrsiState) -> None:
    """After a deal into the copy ``n``: clear the round's variant marks, apply the opening card.

    PV9.2: an opening ``Ks`` (PV6) acts as P4 says of a 7, the starting player owes 4.
    PV1: an opening 7 is owed as P4 says, but cannot be answered (see :func:`_fits`).
    PV9.3: an opening Jack names nothing.
    """
    vx = n.vx
    assert vx is not None
    n.vx = Variants(vx.on)
    if "PV6" in vx.on and n.discard[-1] == "Ks":
        n.pending_draw = 4


# ---------------------------------------------------------------- rules


def _fits(s: _p.PrsiState, vx: Variants, card: str) -> bool:
    """May ``card`` go on the discard pile now, alone or as a group's first card (P5–P8, PV1, PV5, PV6)?

    PV9.1: on a live debt the card carrying it decides: a live 7 takes any 7, a live
    ``7s`` also ``Ks`` (PV6); a live ``Ks`` takes only ``7s``; with PV1 nothing
    answers. A live debt under a King is always a ``Ks`` debt (only PV6 Kings carry
    one; **Ruling:** a PV4 group of Kings holding ``Ks`` leaves a ``Ks`` debt under
    its last King, as PV9.6 says, while a group of 7s is carried by its last 7).
    PV5: a Jack goes on anything a Queen goes on; a named rank admits only that
    rank, a Queen or a Jack.
    """
    r = card[0]
    on = vx.on
    if s.pending_draw:
        if "PV1" in on:
            return False
        top = s.discard[-1]
        if top[0] == "K":
            return card == "7s"
        return r == "7" or (card == "Ks" and top == "7s" and "PV6" in on)
    if s.pending_skip:
        return r == "A"
    if r == "Q" or (r == "J" and "PV5" in on):
        return True
    if vx.named_rank is not None:
        return card[:-1] == vx.named_rank
    return card[-1] == s.suit or r == s.discard[-1][0]


def _may_finish(vx: Variants, rank: str) -> bool:
    """PV3, PV3q (PV9.5: with both on, PV3q): may a card or group of ``rank`` empty its player's hand?"""
    if "PV3q" in vx.on:
        return rank == "Q"
    if "PV3" in vx.on:
        return rank not in ("7", "A")
    return True


def _extra_fits(s: _p.PrsiState, vx: Variants) -> bool:
    """PV2: does ``7h`` fit in the extra turn?

    By P5 (a heart in play, or a 7 on top) or as the answer to a last 7's live chain
    (P6; not with PV1, PV9.4; never on a last ``Ks``, PV9.1). A last Ace is not
    active and a last Queen or Jack named nothing, so nothing else can apply.
    """
    if s.pending_draw:
        return "PV1" not in vx.on and s.discard[-1][0] == "7"
    return s.suit == "h" or s.discard[-1][0] == "7"


def _why_illegal(s: _p.PrsiState, vx: Variants, hand: tuple[str, ...], cards: tuple[str, ...]) -> str | None:
    """Why playing ``cards`` (all held) is illegal now, or ``None`` when it is allowed."""
    empties = len(cards) == len(hand)
    if vx.out_pending is not None:
        if cards != ("7h",):
            return "the extra turn allows only 7h or pass (PV2)"
        if not _extra_fits(s, vx):
            return "7h does not fit here: pass (PV2)"
        if empties and not _may_finish(vx, "7"):
            return _last_card_rule(vx)
        return None
    if vx.drawn is not None:
        if cards != (vx.drawn,):
            return f"only the card just drawn ({vx.drawn}) may be played now, or pass (PV7)"
        return None
    rank = cards[0][:-1]
    if any(c[:-1] != rank for c in cards[1:]):
        return "the cards of a group are of one rank (PV4)"
    if not _fits(s, vx, cards[0]):
        return _why_not(s, vx, cards[0])
    if empties and not _may_finish(vx, rank):
        return _last_card_rule(vx)
    return None


def _last_card_rule(vx: Variants) -> str:
    if "PV3q" in vx.on:
        return "only a Queen may be the last card (PV3q): draw"
    return "a 7 or an Ace may not be the last card (PV3): draw"


def _why_not(s: _p.PrsiState, vx: Variants, card: str) -> str:
    if s.pending_draw:
        if "PV1" in vx.on:
            return "no stacking (PV1): draw"
        if s.discard[-1][0] == "K":
            return "the king of leaves is pending: answer with 7s or draw (PV6)"
        if s.discard[-1] == "7s" and "PV6" in vx.on:
            return "7s is pending: answer with a 7 or Ks, or draw (P6, PV6)"
        return "a 7 is pending: answer with a 7 or draw (P6)"
    if s.pending_skip:
        return "an Ace is pending: answer with an Ace or stand (P7)"
    if vx.named_rank is not None:
        return f"a Jack named {vx.named_rank}: play a {vx.named_rank}, a Queen or a Jack, or draw (PV5)"
    return f"{card} follows neither the suit in play ({s.suit}) nor the top card {s.discard[-1]} (P5)"


# ---------------------------------------------------------------- applying


def apply(state: _p.PrsiState, seat: str, action: Mapping[str, Any]) -> Outcome:
    """:func:`engine.prsi.apply` for a table with variants (same contract, same reason order).

    ``play`` takes ``card`` or, with PV4, ``cards`` (a group in order; PV9.6: empty,
    repeated or given with ``card`` is ``bad_action``, one card is an ordinary play).
    PV9.8: a field of a variant that is off is no field (``cards`` without PV4, ``rank``
    without PV5, ``suit`` on a card that is no Queen): the play is judged without it.
    A Queen that does not empty the hand needs ``suit``; with PV5 a Jack (or a group
    ending in one) that does not empty the hand needs ``rank`` (PV9.3). ``pass`` is
    also PV2's extra turn and PV7's declined card (PV9.4, PV9.7).
    """
    if not isinstance(action, Mapping):
        raise Rejected("bad_action", "an action is a dict")
    a = action.get("a")
    if a not in _p.ACTIONS:
        raise Rejected("bad_action", f"unknown Prší action {a!r}")
    players = state.players
    if seat not in players:
        raise Rejected("bad_action", f"unknown seat {seat!r}")
    vx = state.vx
    assert vx is not None
    i = players.index(seat)
    hand = state.hands[i]
    cards: tuple[str, ...] = ()
    suit = rank = None
    if a == "play":
        cards = _read_cards(vx, action)
        last = cards[-1]
        empties = len(cards) == len(hand) and set(cards) == set(hand)
        if not empties:
            if last[0] == "Q":  # P8: a last Queen names nothing
                suit = action.get("suit")
                if suit not in SUITS:
                    raise Rejected("bad_action", "a Queen that is not the last card needs a suit: h, d, c or s")
            elif last[0] == "J" and "PV5" in vx.on:  # PV5, PV9.3
                rank = action.get("rank")
                if rank not in NAMED_RANKS:
                    raise Rejected("bad_action", "a Jack that is not the last card needs a rank: 7 8 9 10 J Q K A")
    if state.over:
        raise Rejected("game_over", "the match has ended")
    if seat != state.to_move:
        raise Rejected("not_your_turn", f"it is {state.to_move}'s turn")
    nxt = (i + 1) % len(players)
    n = _p._copy(state)
    if a == "play":
        missing = [c for c in cards if c not in hand]
        if missing:
            raise Rejected("not_in_hand", f"{seat} does not hold {', '.join(missing)}")
        why = _why_illegal(state, vx, hand, cards)
        if why is not None:
            raise Rejected("illegal", why)
        events = _bring_back(n, i, vx) if vx.out_pending is not None else _play(n, i, cards, suit, rank)
    elif a == "draw":
        if vx.out_pending is not None:
            raise Rejected("illegal", "the extra turn allows only 7h or pass (PV2)")
        if vx.drawn is not None:
            raise Rejected("illegal", f"play the card just drawn ({vx.drawn}) or pass (PV7)")
        if state.pending_skip:
            raise Rejected("illegal", "an Ace is pending: answer with an Ace or stand (P7)")
        if state.pending_draw:
            events = _p._draw(n, i, state.pending_draw)  # P6, PV1, PV6: the whole debt; the chain is spent
            n.pending_draw = 0
            n.to_move = players[nxt]
        elif _p._can_draw(state):
            events = _p._draw(n, i, 1)  # P5
            drawn = n.hands[i][-1]
            if "PV7" in vx.on and _fits(n, vx, drawn):  # PV7, PV9.7: the drawer stays to move
                n.vx = replace(vx, drawn=drawn)
            else:
                n.to_move = players[nxt]
        else:
            raise Rejected("illegal", "nothing can be drawn: play or pass (P10)")
    elif a == "stand":
        if vx.out_pending is not None or vx.drawn is not None or not state.pending_skip:
            raise Rejected("illegal", "no Ace is pending (P7)")
        n.pending_skip = False  # P7
        events = [{"a": "stand", "seat": seat}]
        n.to_move = players[nxt]
    else:  # pass
        if vx.out_pending is not None:  # PV2: the round ends as P11 says
            events = [{"a": "pass", "seat": seat}]
            if state.pending_draw:
                events += _p._draw(n, i, state.pending_draw)
            winner = vx.out_pending
            n.vx = Variants(vx.on)
            _p._end_round(n, winner, events)
        elif vx.drawn is not None:  # PV7: the drawn card is declined
            events = [{"a": "pass", "seat": seat}]
            n.vx = replace(vx, drawn=None)
            n.to_move = players[nxt]
        else:
            if state.pending_skip or state.pending_draw or _p._can_draw(state):
                raise Rejected("illegal", "pass only when nothing can be drawn (P10)")
            if _plays(state, vx, hand, first_only=True):
                raise Rejected("illegal", "a player who can play must play (P10)")
            events = [{"a": "pass", "seat": seat}]
            n.to_move = players[nxt]
    n.version += 1
    last = n.last
    drop = len(last) + len(events) - _p.LAST_EVENTS
    n.last = (*(last[drop:] if drop > 0 else last), *events)
    return Outcome(n, events)


def _read_cards(vx: Variants, action: Mapping[str, Any]) -> tuple[str, ...]:
    """The cards of a ``play``: ``(card,)`` or a PV4 group; ``bad_action`` when malformed (PV9.6).

    PV9.8: without PV4, ``cards`` is no field: the play is judged by its ``card`` alone
    (and one without ``card`` is ``bad_action``, as any play without one).
    """
    group = action.get("cards") if "PV4" in vx.on else None
    card = action.get("card")
    if group is None:
        if type(card) is not str or card not in _p.PACK:
            raise Rejected("bad_action", f"{card!r} is not a card of the Prší pack")
        return (card,)
    if card is not None:
        raise Rejected("bad_action", "give either card or cards (PV4)")
    if not isinstance(group, (list, tuple)) or not group:
        raise Rejected("bad_action", "cards is a non-empty list of cards (PV4)")
    if any(type(c) is not str or c not in _p.PACK for c in group):
        raise Rejected("bad_action", "cards holds something that is not a card of the Prší pack")
    if len(set(group)) != len(group):
        raise Rejected("bad_action", "a card is listed twice (PV4)")
    return tuple(group)


def _play(n: _p.PrsiState, i: int, cards: tuple[str, ...], suit: str | None, rank: str | None
          ) -> list[dict[str, Any]]:
    """Seat ``i`` plays ``cards`` (checked) into the copy ``n``: P5–P8, P11 with PV1–PV6.

    PV4: each 7 of a group adds 2 (also with PV1), a group of Kings holding ``Ks``
    adds 4 (PV6), a group of Aces gives one stand, the last card is the top and names
    the suit (Queen) or rank (PV5 Jack). A hand emptied ends the round (P11: a last 7's
    or ``Ks``'s chain is drawn by the next player at once) or, with PV2, opens the
    next player's extra turn with that chain still pending.
    """
    players = n.players
    seat = players[i]
    hands = n.hands
    hand = tuple(c for c in hands[i] if c not in cards)
    n.hands = (*hands[:i], hand, *hands[i + 1:])
    n.discard = (*n.discard, *cards)
    last = cards[-1]
    r = last[0]
    event: dict[str, Any] = {"a": "play", "seat": seat, "card": last}
    if len(cards) > 1:
        event["cards"] = list(cards)
    if suit is not None:
        event["suit"] = suit
    if rank is not None:
        event["rank"] = rank
    events = [event]
    n.suit = suit if suit is not None else last[-1]  # P8; PV9.3: a Jack leaves its own suit showing
    vx = n.vx
    assert vx is not None
    if r == "7":
        add = 2 * len(cards)  # P6, PV4
    elif r == "K" and "PV6" in vx.on and "Ks" in cards:
        add = 4  # PV6, PV9.6
    else:
        add = 0
    n.pending_draw += add
    nxt = (i + 1) % len(players)
    if not hand:  # P11; a last Ace is not active, a last Queen or Jack names nothing
        n.pending_skip = False
        if "PV2" in vx.on:
            n.vx = Variants(vx.on, out_pending=seat)
            n.to_move = players[nxt]
            return events
        if n.pending_draw:
            events += _p._draw(n, nxt, n.pending_draw)
        n.vx = Variants(vx.on)
        _p._end_round(n, seat, events)
        return events
    n.pending_skip = r == "A"  # P7, PV4: a group of Aces is one stand
    n.vx = Variants(vx.on, named_rank=rank)  # PV5: any play ends a named rank (a Jack names anew)
    n.to_move = players[nxt]
    return events


def _bring_back(n: _p.PrsiState, i: int, vx: Variants) -> list[dict[str, Any]]:
    """PV2: seat ``i`` plays ``7h`` in the extra turn into the copy ``n``.

    The seat that went out is back and at once draws the chain (2 for the ``7h`` and
    a last 7's chain), card by card as P10 says; play goes on after seat ``i``. If
    the ``7h`` was seat ``i``'s own last card, seat ``i`` is out in its turn and the
    next player gets an extra turn (PV9.4), with nothing owed (the chain was drawn).
    """
    players = n.players
    seat = players[i]
    out = vx.out_pending
    assert out is not None
    hands = n.hands
    hand = tuple(c for c in hands[i] if c != "7h")
    n.hands = (*hands[:i], hand, *hands[i + 1:])
    n.discard = (*n.discard, "7h")
    n.suit = "h"
    events: list[dict[str, Any]] = [{"a": "play", "seat": seat, "card": "7h"}, {"a": "back", "seat": out}]
    debt = n.pending_draw + 2
    n.pending_draw = 0
    n.pending_skip = False
    events += _p._draw(n, players.index(out), debt)
    nxt = (i + 1) % len(players)
    n.vx = Variants(vx.on, out_pending=seat if not hand else None)
    n.to_move = players[nxt]
    return events


# ---------------------------------------------------------------- queries


def _plays(s: _p.PrsiState, vx: Variants, hand: tuple[str, ...], *, first_only: bool = False
           ) -> list[dict[str, Any]]:
    """Every legal ``play`` (groups included) in the normal course of a turn; ``first_only``: stop at one."""
    out: list[dict[str, Any]] = []
    quick = "PV4" in vx.on
    jacks = "PV5" in vx.on
    several = len(hand) > 1
    for c in hand:
        if not _fits(s, vx, c):
            continue
        r = c[:-1]
        if several:
            if r == "Q":
                out += _PLAY_Q[c]
            elif r == "J" and jacks:
                out += _PLAY_J[c]
            else:
                out.append(_PLAY[c])
        elif _may_finish(vx, r):
            out.append(_PLAY[c])
        if first_only and out:
            return out
        if quick:
            out += _groups(vx, hand, c)
    return out


def _groups(vx: Variants, hand: tuple[str, ...], first: str) -> list[dict[str, Any]]:
    """PV4 groups of two or more starting with ``first`` (which fits): one per set of
    further cards and choice of last card, the middle cards in hand order (any other
    middle order is accepted as well)."""
    r = first[:-1]
    others = [c for c in hand if c != first and c[:-1] == r]
    out: list[dict[str, Any]] = []
    for mask in range(1, 1 << len(others)):
        chosen = [c for k, c in enumerate(others) if mask >> k & 1]
        empties = len(chosen) + 1 == len(hand)
        if empties and not _may_finish(vx, r):
            continue
        for last in chosen:
            cards = [first, *(c for c in chosen if c != last), last]
            if empties:
                out.append(_p.Action(a="play", cards=cards))
            elif r == "Q":
                out += [_p.Action(a="play", cards=cards, suit=s) for s in SUITS]
            elif r == "J" and "PV5" in vx.on:
                out += [_p.Action(a="play", cards=cards, rank=k) for k in NAMED_RANKS]
            else:
                out.append(_p.Action(a="play", cards=cards))
    return out


def legal_actions(state: _p.PrsiState, seat: str) -> list[dict[str, Any]]:
    """:func:`engine.prsi.legal_actions` with variants.

    PV2's extra turn: ``7h`` when it fits and ``pass``. PV7's drawn card: that card
    (once per suit or rank it may name) and ``pass``. Otherwise as P5–P10 with the
    variants' limits (PV1 no answers, PV3 last cards, PV5 Jacks with each rank, PV6),
    and with PV4 every group (see :func:`_groups`).
    """
    if seat != state.to_move or state.over:
        return []
    vx = state.vx
    assert vx is not None
    hand = state.hands[state.players.index(seat)]
    if vx.out_pending is not None:
        ok = "7h" in hand and _extra_fits(state, vx) and (len(hand) > 1 or _may_finish(vx, "7"))
        return [_PLAY["7h"], _PASS] if ok else [_PASS]
    if vx.drawn is not None:
        c = vx.drawn
        if c[0] == "Q":
            plays: list[dict[str, Any]] = list(_PLAY_Q[c])
        elif c[0] == "J" and "PV5" in vx.on:
            plays = list(_PLAY_J[c])
        else:
            plays = [_PLAY[c]]
        return [*plays, _PASS]
    out = _plays(state, vx, hand)
    if state.pending_draw:
        out.append(_DRAW)
    elif state.pending_skip:
        out.append(_STAND)
    elif _p._can_draw(state):
        out.append(_DRAW)
    elif not out:
        out.append(_PASS)  # P10, PV3
    return out


def view_extra(state: _p.PrsiState, seat: str | None, view: dict[str, Any]) -> None:
    """Add the variant keys to a view (S3: the PV7 card only to its drawer).

    ``variants`` (names on), ``named_rank`` (PV5), ``out_pending`` (PV2),
    ``drawn_pending`` (PV7: the player to move may still play the card just drawn),
    ``drawn`` (that card, in its drawer's own view only, else null).
    """
    vx = state.vx
    assert vx is not None
    view["variants"] = vx.names()
    view["named_rank"] = vx.named_rank
    view["out_pending"] = vx.out_pending
    view["drawn_pending"] = vx.drawn is not None
    view["drawn"] = vx.drawn if seat is not None and seat == state.to_move else None


def observer_extra(state: _p.PrsiState, out: dict[str, Any]) -> None:
    """FORMAT.md: the observer gains ``variants`` and, with PV2, ``out_pending`` (null outside the extra turn)."""
    vx = state.vx
    assert vx is not None
    out["variants"] = vx.names()
    if "PV2" in vx.on:
        out["out_pending"] = vx.out_pending


def dump_extra(state: _p.PrsiState, out: dict[str, Any]) -> None:
    vx = state.vx
    assert vx is not None
    out["variants"] = {"on": vx.names(), "named_rank": vx.named_rank, "out_pending": vx.out_pending,
                       "drawn": vx.drawn}


def load_extra(data: Mapping[str, Any]) -> Variants | None:
    """The :class:`Variants` of a dump (``None`` for a house-rules dump without ``variants``)."""
    d = data.get("variants")
    if d is None:
        return None
    vx = parse(d["on"])
    if vx is None:
        raise ValueError("a dump's variants are not a list")
    return Variants(vx.on, d.get("named_rank"), d.get("out_pending"), d.get("drawn"))


# ---------------------------------------------------------------- computer player


def computer_action(state: _p.PrsiState, seat: str) -> dict[str, Any] | None:
    """The computer player at a table with variants: always one of :func:`legal_actions`.

    Like the house player: answer a debt or an Ace when it can (with the largest
    group), else go out when it may, else shed the plain cards worth the most
    (a whole group of them with PV4), keeping 7s, Aces, Queens, PV5 Jacks and
    PV6's ``Ks`` for later unless the next player is down to one card; a Queen
    names its longest suit, a Jack the rank it holds most of. PV2: ``7h`` whenever
    it may; PV7: plays the drawn card. Draws, stands or passes only when it cannot
    play (P5, P10).
    """
    legal = legal_actions(state, seat)
    if not legal:
        return None
    plays = [x for x in legal if x["a"] == "play"]
    if not plays:
        return dict(legal[0])
    vx = state.vx
    assert vx is not None
    players = state.players
    i = players.index(seat)
    hand = state.hands[i]
    if vx.out_pending is not None or vx.drawn is not None:
        return dict(max(plays, key=lambda x: _naming_fit(x, hand)))
    danger = len(state.hands[(i + 1) % len(players)]) == 1
    special = {"7", "A", "Q"} | ({"J"} if "PV5" in vx.on else set())

    def key(x: dict[str, Any]) -> tuple[Any, ...]:
        cards = x.get("cards") or [x["card"]]
        rank = cards[0][:-1]
        rest = [c for c in hand if c not in cards]
        is_special = rank in special or ("PV6" in vx.on and "Ks" in cards)
        attack = rank in ("7", "A") or ("PV6" in vx.on and "Ks" in cards)
        return (
            not rest,  # go out
            danger and attack,  # hold the next player back
            not is_special,  # keep answers and free cards
            sum(_p.POINTS[c[:-1]] for c in cards),
            _naming_fit(x, hand),
            _p._suit_count((*rest, cards[-1]), cards[-1]),
            tuple(cards),
        )

    if state.pending_draw or state.pending_skip:
        return dict(max(plays, key=lambda x: (len(x.get("cards") or ()), _naming_fit(x, hand),
                                              tuple(x.get("cards") or [x["card"]]))))
    return dict(max(plays, key=key))


def _naming_fit(x: dict[str, Any], hand: tuple[str, ...]) -> tuple[int, int]:
    """How well a Queen's suit or a Jack's rank suits the cards left (0s for other plays)."""
    cards = x.get("cards") or [x["card"]]
    rest = [c for c in hand if c not in cards]
    if "suit" in x:
        s = x["suit"]
        return sum(1 for c in rest if c[-1] == s), sum(_p.POINTS[c[:-1]] for c in rest if c[-1] == s)
    if "rank" in x:
        r = x["rank"]
        return sum(1 for c in rest if c[:-1] == r), _p.POINTS[r]
    return 0, 0
