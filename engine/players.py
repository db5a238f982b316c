"""Computer players of Prší and Penki at three levels: beginner, regular, expert (issue 14).

A computer seat decides from what a person in its chair could know: the seat's
:func:`engine.view` and the game's **public log** (every event :func:`engine.apply`
returned since the deal, in order; events never name a hidden card, S3). Nothing
else is accepted: :func:`decide` takes a view dict and raises ``TypeError`` when
handed a game state, so no level can peek at the stock, the stumps or another hand.

The levels (:data:`LEVELS`, every figure a field of :class:`Level`, so rates can be
tuned with ``dataclasses.replace``):

* **beginner** plays like a new player. Prší: sometimes draws although a card
  fits, sometimes plays a fitting card at random instead of the sensible one, and
  names a Queen's suit at random. Penki: blunders in phase 1 at :attr:`Level.blunder`
  (puts a fitting card on its own pile, or draws instead of the forced move, R5, so
  «ЗЕВОК!» can be called on it), forgets «ОДНА КАРТА!» at :attr:`Level.forget`
  (R17), declares slowly, and notices others' chances (R6, R18) seldom and late.
* **regular** is the heuristic player of :func:`engine.prsi.computer_action` and
  :func:`engine.penki.computer_action`, rebuilt on the view, with an occasional slip
  and human reaction times: every decision carries a ``delay`` in seconds drawn
  from a log-normal distribution (moves, own declarations and callouts on others
  each have their own), sampled from the seeded RNG.
* **expert** searches: determinized Monte Carlo over ``engine`` itself. Each
  iteration deals the hidden cards afresh in a way consistent with the view and the
  public log (Prší: the stock's order after a turnover is known from the discard
  pile, P9, and so are the cards drawn from it; what each opponent chose to play,
  draw or stand since the deal tells what it could not have held if it plays the
  regular heuristic, so the deals that explain those choices are preferred
  (:func:`_mismatches`, :meth:`_PrsiWorld._candidate`); Penki: every phase-1 card was seen
  face up, so phase-2 hands are known but for stumps and penalty cards), picks a
  root action by UCB1 and plays the round (Prší: balances are sums over rounds,
  P14) or the game (Penki, R19) out with the regular heuristic for every seat.
  It never blunders, always declares (about as fast as a person can), and notices
  nearly every chance, calling it after a human reaction time (the race model at
  :data:`CALL_FLOOR`). Its cost is capped by a count of simulated actions
  (:attr:`Level.budget`, calibrated to ≤ 50 ms of CPU per decision at a 3-seat table;
  no clock is read, so a decision is seeded and reproducible whatever the load). Prší
  rounds under the house rules are played out on plain lists by :func:`_fs_round`
  (the same rules and the same regular heuristic as ``engine``, about six times as
  many playouts per CPU millisecond); table variants go through ``engine``. The Prší
  search stops playing out an option that is clearly behind the leader
  (:data:`PRSI_PRUNE`), so the budget goes to the options still in the running.

Randomness: ``seed`` (an int) is the seat's own, constant for a game; every draw
comes from ``random.Random`` keyed by it and by the view's version or by the public
event that opened a chance, so the same view and log always give the same decision,
and a beginner that did not notice a blunder keeps not noticing it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import engine
from engine.cards import PENKI_PACK, PRSI_PACK, RANK_INDEX, SUITS
from engine.prsi import HAND_SIZE

__all__ = ["DEFAULT_LEVEL", "LEVELS", "LEVEL_NAMES", "Decision", "Level", "Memory", "decide", "searches"]

LEVEL_NAMES: tuple[str, ...] = ("beginner", "regular", "expert")
DEFAULT_LEVEL = "regular"
CALLOUTS = frozenset({"zevok", "one_card", "how_many"})


@dataclass(frozen=True, slots=True)
class Delay:
    """A log-normal reaction time in seconds: ``median · e^(sigma·N(0,1))``, clipped to ``[lo, hi]``."""

    median: float
    sigma: float
    lo: float
    hi: float

    def sample(self, rng: random.Random) -> float:
        return round(min(self.hi, max(self.lo, self.median * math.exp(self.sigma * rng.gauss(0.0, 1.0)))), 3)


@dataclass(frozen=True, slots=True)
class Level:
    """How one level plays. Rates are probabilities per chance to err, delays in seconds.

    ``slip``: a turn decision is a random legal action instead of the sensible one.
    ``miss``: Prší, draws although a card fits (P5 allows it). ``blunder``: Penki
    phase 1, puts a fitting card on its own pile or draws past the forced move (R5).
    ``forget``: does not declare «ОДНА КАРТА!» when owed (R17). ``notice``: sees an
    opponent's open «ЗЕВОК!» window or owed declaration (R6, R18). ``random_suit``:
    a Queen names a random suit. ``iterations`` / ``penki_iterations``: at most this many
    rollouts per Prší / Penki decision (0: no search); ``budget`` / ``penki_budget``: at most
    about this many simulated actions per decision (Prší counts its fast playout's actions, an
    ``engine`` action as :data:`ENGINE_STEP_COST` of them; Penki counts ``engine`` actions). ``move`` / ``forced`` / ``declare`` / ``call``: reaction times
    for a move, a move with no choice, an own declaration, a callout on someone.
    """

    name: str
    slip: float
    miss: float
    blunder: float
    forget: float
    notice: float
    random_suit: float
    iterations: int
    penki_iterations: int
    move: Delay
    forced: Delay
    declare: Delay
    call: Delay
    budget: int = 0
    penki_budget: int = 0


# The race model (issue 24), the same for every callout (R6, R17, R18); every delay is in
# seconds from the chance, i.e. the commit of the action that opened it:
# * an own «ОДНА КАРТА!» is known as the card goes down (a person taps while laying it), so
#   ``declare`` is short: a practised person (median 0.45 s) asking at once catches a beginner
#   most times, a regular now and then, an expert almost never;
# * a call on someone («ЗЕВОК!», «СКОЛЬКО КАРТ?») is made only by a computer that noticed the
#   chance (``notice``, drawn once per chance and seat) and never sooner than CALL_FLOOR after it:
#   whoever owes a declaration has had the time a person needs to make it (a fair race);
# * a computer to move never closes a chance before a call would come: it calls first when
#   it noticed, else its move waits for the other computers' calls (store.computers.plan_turns);
# * a computer caught by «СКОЛЬКО КАРТ?» since its last play or take is alert: it forgets its
#   next declaration ALERT_FORGET times as often and makes it ALERT_SPEED times as fast (but no
#   faster than HUMAN_MIN), so no give-and-take cycle of penalty cards repeats for long.
CALL_FLOOR = 0.8
HUMAN_MIN = 0.12
ALERT_FORGET = 0.2
ALERT_SPEED = 0.5

LEVELS: dict[str, Level] = {
    "beginner": Level(
        "beginner", slip=0.30, miss=0.15, blunder=0.25, forget=0.35, notice=0.11, random_suit=0.5, iterations=0, penki_iterations=0,
        move=Delay(1.7, 0.45, 0.8, 6.0), forced=Delay(1.1, 0.4, 0.6, 4.0),
        declare=Delay(0.5, 0.4, 0.2, 2.5), call=Delay(1.8, 0.35, CALL_FLOOR, 5.0)),
    "regular": Level(
        "regular", slip=0.04, miss=0.0, blunder=0.03, forget=0.05, notice=0.37, random_suit=0.0, iterations=0, penki_iterations=0,
        move=Delay(1.0, 0.35, 0.55, 3.5), forced=Delay(0.75, 0.3, 0.45, 2.5),
        declare=Delay(0.37, 0.3, 0.15, 1.5), call=Delay(1.2, 0.3, CALL_FLOOR, 3.0)),
    "expert": Level(
        "expert", slip=0.0, miss=0.0, blunder=0.0, forget=0.0, notice=0.95, random_suit=0.0,
        iterations=20_000, penki_iterations=2_000,
        move=Delay(1.0, 0.3, 0.55, 3.0), forced=Delay(0.7, 0.25, 0.45, 2.0),
        declare=Delay(0.2, 0.25, HUMAN_MIN, 0.8), call=Delay(0.95, 0.25, CALL_FLOOR, 2.0), budget=12_000,
        penki_budget=2_800),
}


@dataclass(frozen=True, slots=True)
class Decision:
    """What a computer seat wants to do: ``action`` (an action dict), after ``delay`` seconds.

    ``kind``: ``"move"`` (a turn action or a penalty card; ``delay`` counts from the start of
    the turn), ``"declare"`` (its own «ОДНА КАРТА!») or ``"call"`` (a callout on someone):
    for these ``delay`` counts from the chance, and ``chance`` is the index in the public log
    of the event that opened it (a store keeps the due time, chance + delay, while the chance
    stays the same: store.computers.plan_turns).
    ``slip``: the level erred on purpose (counted by the benchmarks).
    """

    action: dict[str, Any]
    delay: float
    kind: str = "move"
    chance: int | None = None
    slip: bool = False
    searched: int = field(default=0, compare=False)


def _rng(seed: int, *key: Any) -> random.Random:
    return random.Random(f"{seed}:" + ":".join(map(str, key)))


# ================================================================ public memory


class Memory:
    """What a seat can remember from the public log; built only from events.

    Feed it with :meth:`update` (the whole log each time, it reads only the new
    tail); a log that is not an extension of the one already read starts it afresh.
    Prší: the current round's discard pile in order (the opening card unknown), the
    stock's order once turned over (P9), cards seen going to each hand. Penki: every
    pile (phase 1), the open «ЗЕВОК!» window, each hand's known cards (phase 2), the
    discarded cards, the table, the last beater and who may owe a declaration.
    """

    def __init__(self, game: str, seat: str, players: Sequence[str]) -> None:
        self.game, self.seat, self.players = game, seat, tuple(players)
        self.partial = False  # built from a log that may not start at the deal
        self.read = 0
        self._first: Any = None
        self.reset()

    def reset(self) -> None:
        p = self.players
        self.read = 0
        # Prší
        self.discard: list[str | None] = [None]
        self.stock: list[str | None] | None = None
        self.known: dict[str, set[str]] = {x: set() for x in p}
        self.lacks: dict[str, frozenset[str]] = {x: frozenset() for x in p}  # cards a seat showed it lacks …
        self.free: dict[str, int] = dict.fromkeys(p, 0)  # … but for this many cards it got since
        self.suit: str | None = None
        self.pend7 = self.pendA = False
        self.counts: dict[str, int] = dict.fromkeys(p, HAND_SIZE)  # cards in each hand (house rules' deal)
        self.counted = True  # counts read from a deal on (a memory stored before they were kept: from the next deal)
        self.since: dict[str, list[tuple]] = {x: [] for x in p}  # each seat's choices since its last draw
        self._prev: tuple[Any, Any] = (None, None)
        self._chain: Any = None
        # Penki
        self.piles: dict[str, list[str]] = {x: [] for x in p}
        self.phase = 1
        self.window: tuple[str, int] | None = None  # (blunderer, log index of the blunder)
        self.table: list[str] = []
        self.gone: set[str] = set()  # discarded by Бита
        self.last_beater: str | None = None
        self.candidates: dict[str, int] = {}  # seat -> log index of the action that may have left one card
        self.caught: dict[str, int] = {}  # seat -> times caught by «СКОЛЬКО КАРТ?» since its last play or take
        self.takes = 0  # takes since the last Бита (R13): a table going round in circles

    def feed(self, events: Sequence[Mapping[str, Any]]) -> Memory:
        """Read ``events``, the public log's next events after those already read."""
        handle = self._prsi if self.game == "prsi" else self._penki
        for k, e in enumerate(events):
            if self.read == 0 and k == 0:
                self._first = e
            handle(self.read + k, e)
        self.read += len(events)
        return self

    _SETS = ("known", "lacks")
    _FIELDS = ("game", "seat", "players", "partial", "read", "discard", "stock", "free", "suit", "pend7",
               "pendA", "piles", "phase", "window", "table", "last_beater", "candidates")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` rebuilds it (a store keeps one per table: it is all public)."""
        out = {k: getattr(self, k) for k in self._FIELDS}
        out["players"] = list(self.players)
        out["window"] = list(self.window) if self.window else None
        for k in self._SETS:
            out[k] = {p: sorted(v) for p, v in getattr(self, k).items()}
        out["gone"] = sorted(self.gone)
        out["caught"] = dict(self.caught)
        out["takes"] = self.takes
        out["prev"], out["chain"], out["first"] = list(self._prev), self._chain, self._first
        out["counts"], out["counted"] = dict(self.counts), self.counted
        out["since"] = {p: [list(x) for x in v] for p, v in self.since.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Memory:
        m = cls(data["game"], data["seat"], data["players"])
        for k in cls._FIELDS[3:]:
            setattr(m, k, data[k])
        m.window = tuple(data["window"]) if data["window"] else None
        m.known = {p: set(v) for p, v in data["known"].items()}
        m.lacks = {p: frozenset(v) for p, v in data["lacks"].items()}
        m.gone = set(data["gone"])
        m.caught = dict(data.get("caught") or {})  # a memory stored before issue 24: nobody alert
        m.takes = int(data.get("takes") or 0)
        m._prev, m._chain, m._first = tuple(data["prev"]), data["chain"], data["first"]
        if "counts" in data:  # a memory stored before issue 24 item 6 knows no counts: it infers nothing from choices
            m.counts, m.counted = dict(data["counts"]), bool(data["counted"])
            m.since = {p: [tuple(x) for x in v] for p, v in data["since"].items()}
        else:
            m.counted = False
        return m

    def update(self, log: Sequence[Mapping[str, Any]]) -> Memory:
        first = log[0] if log else None
        if self.read > len(log) or (self.read and first is not self._first and first != self._first):
            self.reset()
        self._first = first
        handle = self._prsi if self.game == "prsi" else self._penki
        for i in range(self.read, len(log)):
            handle(i, log[i])
        self.read = len(log)
        return self

    # ---------------------------------------------------------------- Prší (P3, P9)
    def _prsi(self, i: int, e: Mapping[str, Any]) -> None:
        a = e.get("a")
        seat = e.get("seat")
        prev, self._prev = self._prev, (a, seat)
        if a == "deal":
            self.discard, self.stock = [None], None
            self.known = {x: set() for x in self.players}
            self.lacks = {x: frozenset() for x in self.players}
            self.free = dict.fromkeys(self.players, 0)
            self.suit = None  # the opening card is not in the log: nothing is inferred before the first play
            self.pend7 = self.pendA = False
            self.counts = dict.fromkeys(self.players, HAND_SIZE)
            self.since = {x: [] for x in self.players}
            self.counted = True
        elif a == "play":
            cards = e.get("cards") or ([e["card"]] if "card" in e else [])
            shown = frozenset()
            if len(cards) == 1 and seat in self.lacks and self.suit is not None and not (self.pend7 or self.pendA):
                shown = _passed_over(cards[0], self.suit, self.discard[-1])
            if seat in self.since:
                if len(cards) == 1 and self.suit is not None and self.discard[-1] is not None:
                    self._choice(seat, "play", cards[0], e.get("suit") if cards[0][0] == "Q" else None)
                self.counts[seat] -= len(cards)
            for c in cards:
                known = self.known.get(seat)
                if known is not None and c in known:
                    known.discard(c)
                elif c in self.lacks.get(seat, ()):
                    self.free[seat] = max(0, self.free[seat] - 1)  # it can only have come from the new cards
                self.discard.append(c)
            if shown:  # cards the seat showed it lacks by what it chose to play (see _passed_over)
                self.lacks[seat] = self.lacks[seat] | shown if self.free[seat] == 0 else shown
                self.free[seat] = 0
            if cards:
                top = cards[-1]
                self.suit = e.get("suit") or top[-1]
                self.pend7 = top[0] == "7"
                self.pendA = top[0] == "A"
        elif a == "draw":
            n = int(e.get("n", 0))
            noted = (self.suit, self.discard[-1], 2 if self.pend7 else 0, self.pendA)
            chained = prev[0] == "turnover" and self._chain == seat  # the same draw, split by a turnover
            if seat in self.lacks and not chained and self.suit is not None:
                # What a seat drawing instead of playing shows (P5–P7): it held no 7 on a 7, else
                # nothing that fitted. Cards drawn later are free of it (``free``).
                if self.pend7:
                    self.lacks[seat] = _SEVENS
                elif not self.pendA:
                    top_rank = self.discard[-1][:-1] if self.discard[-1] else None
                    self.lacks[seat] = frozenset(c for c in PRSI_PACK if c[-1] == self.suit
                                                 or c[:-1] == top_rank or c[0] == "Q")
                self.free[seat] = 0
            self.pend7 = False
            self._chain = seat
            got: list[str | None] = [None] * n
            if self.stock is not None:
                got, self.stock = self.stock[:n], self.stock[n:]
                if seat in self.known:
                    self.known[seat].update(c for c in got if c is not None)
            if seat in self.free:
                self.free[seat] += sum(1 for c in got if c is None)
            if seat in self.since:  # a choice too (P5, P6), unless it is the rest of one split by a turnover
                choice = not chained and noted[0] is not None and noted[1] is not None
                self._choice(seat, "draw" if choice else "drawn", ",".join(c for c in got if c is not None), n, noted)
                self.counts[seat] += n
        elif a == "stand":
            if seat in self.lacks:
                self.lacks[seat], self.free[seat] = _ACES, 0
            if seat in self.since and self.suit is not None and self.discard[-1] is not None:
                self._choice(seat, "stand", None, None)
            self.pendA = False
        elif a == "turnover":
            self.stock = self.discard[:-1]
            self.discard = self.discard[-1:]

    def _choice(self, seat: str, kind: str, card: str | None, named: Any, noted: tuple | None = None) -> None:
        """Note a seat's choice (``kind`` play / stand / draw, or ``drawn``: the rest of a draw split by
        a turnover) and the public situation it was made in (suit in play, top card, a pending 7 or
        Ace, the next seat's card count). ``card``: the card played, or for a draw the cards drawn
        that were known (a turned-over stock, P9), comma-joined; ``named``: a Queen's suit, or the
        number of cards drawn. :func:`_mismatches` rebuilds the hand each choice was made from."""
        i = self.players.index(seat)
        nxt = self.players[(i + 1) % len(self.players)]
        suit, top, pd, ps = noted or (self.suit, self.discard[-1], 2 if self.pend7 else 0, self.pendA)
        self.since[seat].append((kind, card, named, suit, top, pd, ps, self.counts.get(nxt, 0)))

    # ---------------------------------------------------------------- Penki
    def _first_fit(self, seat: str, card: str) -> str | None:
        need = (RANK_INDEX[card[:-1]]) % 9
        i = self.players.index(seat)
        for o in self.players[i + 1:] + self.players[:i]:
            pile = self.piles[o]
            if pile and (RANK_INDEX[pile[-1][:-1]] + 1) % 9 == need:
                return o
        return None

    def _penki(self, i: int, e: Mapping[str, Any]) -> None:
        a = e.get("a")
        seat = e.get("seat")
        if self.phase == 1:
            if self.window is not None and a in ("draw", "move", "place") and seat != self.window[0]:
                self.window = None  # R6: the next player's first accepted action closes it
            if a == "move":
                _pop(self.piles.get(seat))
                self.piles[e["to"]].append(e["card"])
            elif a == "place":
                card, to = e["card"], e["to"]
                if to != seat:
                    self.piles[to].append(card)
                else:
                    own = self.piles[seat]
                    blunder = self._first_fit(seat, card) is not None or bool(own and self._first_fit(seat, own[-1]))
                    if blunder and self.window is None:
                        self.window = (seat, i)  # R5, R6: further blunders belong to the open window
                    own.append(card)
            elif a == "zevok":
                self.window = None
            elif a == "penalty_move":
                _pop(self.piles.get(e["from"]))
                self.piles[e["to"]].append(e["card"])
            elif a == "phase2":
                self.phase, self.window = 2, None
                self.known = {x: set(self.piles[x]) for x in self.players}
                self.piles = {x: [] for x in self.players}
            return
        if a == "play":
            self.known.setdefault(seat, set()).discard(e["card"])
            if self.table:
                self.last_beater = seat
            self.table.append(e["card"])
            self.candidates = {seat: i}
            self.caught.pop(seat, None)
        elif a == "take":
            if self.table:
                self.table.pop(0)
            self.known.setdefault(seat, set()).add(e["card"])
            self.candidates = {seat: i}
            self.caught.pop(seat, None)
            self.takes += 1
        elif a == "bita":
            self.gone.update(self.table)
            self.table = []
            self.takes = 0
        elif a == "give":
            self.known[seat] = set()  # which card went is the giver's secret
            self.candidates.pop(e.get("to"), None)
            self.candidates[seat] = i
        elif a == "one_card":
            self.candidates.pop(seat, None)
        elif a == "how_many":
            for p in e.get("caught") or ():
                self.candidates.pop(p, None)
                self.caught[p] = self.caught.get(p, 0) + 1


def _passed_over(card: str, suit: str, top: str | None) -> frozenset[str]:
    """The cards a seat playing ``card`` on a spent top (``top``, suit in play ``suit``) showed it
    lacks, if it plays as people mostly do and the regular heuristic always does (P5, P8, P12):
    it sheds the plain card worth most that fits, so nothing plain that fits and is worth more;
    a 7 rather than a fitting Ace, which is worth more; a Queen only when no other card fits.
    (A 7 or an Ace may also go first to hold back a next player down to one card, so they
    show nothing about plain cards.) Like the draws' inference, a guess from public moves only:
    a deal that cannot honour it is dealt without it (:meth:`_PrsiWorld._hands`)."""
    top_rank = top[:-1] if top else None
    r = card[:-1]
    return _fits_above(card, r, suit, top_rank) - {top}


def _fits_above(card: str, r: str, suit: str, top_rank: str | None) -> frozenset[str]:
    if r == "Q":
        return frozenset(c for c in PRSI_PACK if c[0] != "Q" and (c[-1] == suit or c[:-1] == top_rank))
    if r == "7":
        return frozenset(c for c in _ACES if c[-1] == suit or c[:-1] == top_rank)
    if r == "A":
        return frozenset()
    worth = _POINTS[r]
    return frozenset(c for c in PRSI_PACK if c[0] not in "7AQ" and _POINTS[c[:-1]] > worth
                     and (c[-1] == suit or c[:-1] == top_rank))


def _pop(pile: list[str] | None) -> None:
    if pile:
        pile.pop()


def _memory(view: Mapping[str, Any], log: Sequence[Mapping[str, Any]] | None, memory: Memory | None) -> Memory:
    players = [p["id"] for p in view["players"]]
    if log is None and memory is not None and memory.game == view["game"] and memory.players == tuple(players):
        return memory  # kept up to date by the caller (Memory.feed): the log is not needed
    if log is None:  # only the view's last events: a partial memory that calls nothing on others
        memory = Memory(view["game"], view["seat"], players)
        memory.partial = True
        memory.update(view.get("last") or ())
        if view["game"] == "penki" and view["phase"] == 2:
            memory.phase = 2
        return memory
    if memory is None or memory.game != view["game"] or memory.players != tuple(players):
        memory = Memory(view["game"], view["seat"], players)
    return memory.update(log)


# ================================================================ the entry point


def decide(
    view: Mapping[str, Any],
    log: Sequence[Mapping[str, Any]] | None = None,
    *,
    level: str | Level = DEFAULT_LEVEL,
    seed: int = 0,
    memory: Memory | None = None,
    budget: int | None = None,
    search: bool = True,
) -> Decision | None:
    """The decision of the computer in ``view["seat"]`` now, or ``None`` when it has nothing to do.

    ``view``: :func:`engine.view` for that seat (a dict; a game state raises
    ``TypeError``). ``log``: the public events since the deal, oldest first (``None``:
    only the view's ``last``; a player that cannot see the whole log then calls
    nothing on others, and its search remembers less).
    ``level``: a name of :data:`LEVELS` or a :class:`Level`. ``seed``: the seat's
    own seed for the game. ``memory``: a :class:`Memory` kept between calls to read
    only the log's new tail, or, with ``log=None``, one the caller keeps up to date
    with :meth:`Memory.feed` (a store keeps one per table: it holds only public facts). ``budget``: the expert's search cost cap in
    simulated actions (``None``: the level's :attr:`Level.budget` / :attr:`Level.penki_budget`,
    calibrated to stay within 50 ms of CPU on this machine; deterministic, no clock is read).
    ``search=False``: the expert's kind of decision and delay without its search
    (its move is then the regular one): what a scheduler needs to know ahead.
    The action is always one ``engine.apply`` accepts at that view (turn actions
    are taken from ``view["legal"]``), or a callout the public log shows is due.
    """
    if not isinstance(view, Mapping) or "legal" not in view or "game" not in view:
        raise TypeError("decide() takes engine.view(state, seat), never a game state")
    seat = view.get("seat")
    if seat is None or view.get("over"):
        return None
    lv = LEVELS[level] if isinstance(level, str) else level
    mem = _memory(view, log, memory)
    if view["game"] == "prsi":
        return _prsi_decide(view, mem, lv if search else _no_search(lv), seed, budget)
    return _penki_decide(view, mem, lv if search else _no_search(lv), seed, budget)


def _no_search(lv: Level) -> Level:
    return replace(lv, iterations=0, penki_iterations=0) if lv.iterations or lv.penki_iterations else lv


def searches(view: Mapping[str, Any], level: str | Level) -> bool:
    """Whether :func:`decide` would search for this view (the expert with a real choice to make)."""
    lv = LEVELS[level] if isinstance(level, str) else level
    legal = view.get("legal") or ()
    if view.get("seat") is None or view.get("to_move") != view["seat"] or len(legal) < 2:
        return False
    if view["game"] == "prsi":
        return lv.iterations > 0
    return lv.penki_iterations > 0 and view.get("phase") == 2 and legal[0]["a"] != "give"


def _move(lv: Level, rng: random.Random, action: Mapping[str, Any], forced: bool, slip: bool = False,
          searched: int = 0) -> Decision:
    delay = (lv.forced if forced else lv.move).sample(rng)
    return Decision(dict(action), delay, "move", None, slip, searched)


# ================================================================ Prší

_SEVENS = frozenset(c for c in PRSI_PACK if c[0] == "7")
_ACES = frozenset(c for c in PRSI_PACK if c[0] == "A")
_POINTS = {"7": 7, "8": 8, "9": 9, "10": 10, "J": 2, "Q": 20, "K": 4, "A": 11}  # P12
_PRSI_PACK = frozenset(PRSI_PACK)


def _cards_of(action: Mapping[str, Any]) -> list[str]:
    if action.get("a") != "play":
        return []
    return list(action.get("cards") or [action["card"]])


def _prsi_score(view: Mapping[str, Any], action: Mapping[str, Any]) -> tuple:
    """The regular player's preference (higher first), today's :func:`engine.prsi.computer_action`:
    answer a 7 or an Ace with its kind (P6, P7); shed the plain card worth most (P12), keeping
    7s and Aces as answers and Queens for late, unless the next player is down to one card;
    a Queen names the longest remaining suit (P8). Draw, stand or pass only without a play."""
    cards = _cards_of(action)
    if not cards:
        return (-1, 0, 0, 0, "")
    hand = view["hand"]
    rest = [c for c in hand if c not in cards]
    players = view["players"]
    ids = [p["id"] for p in players]
    nxt = players[(ids.index(view["seat"]) + 1) % len(ids)]
    worth = sum(_POINTS[c[:-1]] for c in cards)
    top = cards[-1]
    r = top[:-1]
    same_suit = sum(1 for c in rest if c[-1] == top[-1])
    if view.get("pending_draw") or view.get("pending_skip"):
        cat = 3
    elif r in ("7", "A"):
        cat = 4 if nxt["cards"] == 1 else 1
    elif r == "Q":
        cat = 0
    else:
        cat = 2
    named = action.get("suit")
    fit: tuple = (0, 0, 0)
    if named is not None:
        fit = (sum(1 for c in rest if c[-1] == named and c[:-1] != "Q"),
               sum(_POINTS[c[:-1]] for c in rest if c[-1] == named), -SUITS.index(named))
    elif action.get("rank") is not None:
        fit = (sum(1 for c in rest if c[:-1] == action["rank"]), 0, 0)
    return (cat, len(cards), worth, same_suit, fit, top)


def _prsi_heuristic(view: Mapping[str, Any], legal: list[dict[str, Any]]) -> dict[str, Any]:
    return max(legal, key=lambda a: _prsi_score(view, a))


def _prsi_decide(view: Mapping[str, Any], mem: Memory, lv: Level, seed: int,
                 budget: int | None) -> Decision | None:
    legal = view["legal"]
    if not legal:
        return None
    rng = _rng(seed, "prsi", view["version"])
    forced = len(legal) == 1
    if forced:
        return _move(lv, rng, legal[0], True)
    plays = [a for a in legal if a["a"] == "play"]
    roll = rng.random()
    if lv.iterations and not forced:
        action, n = _prsi_search(view, mem, lv, seed, budget)
        return _move(lv, rng, action, False, searched=n)
    best = _prsi_heuristic(view, legal)
    if plays and roll < lv.miss and any(a["a"] == "draw" for a in legal) and not view.get("pending_skip"):
        return _move(lv, rng, {"a": "draw"}, False, slip=True)  # missed a fitting card
    if plays and roll < lv.miss + lv.slip:
        pick = rng.choice(plays)
        return _move(lv, rng, pick, False, slip=dict(pick) != dict(best))
    if best.get("suit") is not None and rng.random() < lv.random_suit:
        best = {**best, "suit": rng.choice(SUITS)}
    return _move(lv, rng, best, False)


# ---------------------------------------------------------------- Prší determinization


class _PrsiWorld:
    """The hidden part of a Prší round as the seat can know it, ready to deal afresh."""

    def __init__(self, view: Mapping[str, Any], mem: Memory) -> None:
        self.view = view
        me = view["seat"]
        hand = list(view["hand"])
        counts = {p["id"]: p["cards"] for p in view["players"]}
        discard = list(mem.discard)
        if len(discard) != view["discard"] or discard[-1] not in (None, view["top"]):
            discard = [None] * (view["discard"] - 1) + [view["top"]]
        discard[-1] = view["top"]
        stock = list(mem.stock) if mem.stock is not None and len(mem.stock) == view["stock"] else [None] * view["stock"]
        known = {p: set(mem.known.get(p, ())) for p in counts if p != me}
        mine = set(hand)
        seen = mine | {c for c in discard if c} | {c for c in stock if c}
        for p, ks in known.items():
            ks -= seen
            if len(ks) > counts[p]:
                ks.clear()
        located = [*hand, *(c for c in discard if c), *(c for c in stock if c), *(c for k in known.values() for c in k)]
        if len(located) != len(set(located)):  # the memory does not square with the view: forget it
            discard = [None] * (view["discard"] - 1) + [view["top"]]
            stock = [None] * view["stock"]
            known = {p: set() for p in known}
            located = [*hand, view["top"]]
        self.pool = sorted(_PRSI_PACK - set(located))
        self.hand, self.discard, self.stock, self.known, self.counts = hand, discard, stock, known, counts
        inferred = not any(view.get(k) for k in ("variants", "options"))  # P5–P7 inferences hold for house rules
        self.plain = inferred  # house rules: the fast playouts (:func:`_fs_round`) apply
        self.lacks = {p: mem.lacks.get(p, frozenset()) if inferred else frozenset() for p in known}
        self.free = {p: mem.free.get(p, 0) for p in known}
        # The choices each opponent made since its last draw, checked against a deal (:func:`_mismatches`)
        # when the memory read the round from its deal and its card counts square with the view.
        counted = inferred and mem.counted and not mem.partial and all(
            mem.counts.get(p) == counts[p] for p in counts)
        self.since = {p: list(mem.since.get(p, ())) for p in known} if counted else {}
        self.cost = 0  # simulated actions spent on checking deals, charged to the search's budget
        self._cands: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        holes = discard.count(None) + stock.count(None) + sum(counts[p] - len(k) for p, k in known.items())
        self.ok = holes == len(self.pool)
        self.rules = engine.rules("prsi")

    def _hands(self, pool: list[str], rng: random.Random) -> tuple[dict[str, list[str]], list[str]] | None:
        """Unknown cards to each opponent, at most ``free`` of them from what it showed it lacks."""
        hands: dict[str, list[str]] = {}
        order = list(self.known)
        rng.shuffle(order)
        taken: set[str] = set()
        for p in order:
            need = self.counts[p] - len(self.known[p])
            lacks = self.lacks[p]
            since = self.since.get(p)
            if since:
                got = self._candidate(p, taken, rng)
                if got is not None:
                    hands[p] = [*self.known[p], *got]
                    taken.update(got)
                    pool = [c for c in pool if c not in got]
                    continue
            best: tuple[int, list[str], list[str]] | None = None
            for attempt in range(CHOICE_TRIES if since else 1):
                if attempt:
                    rng.shuffle(pool)
                allowed = self.free[p]
                got: list[str] = []
                rest: list[str] = []
                for c in pool:
                    if len(got) < need and (c not in lacks or allowed > 0):
                        allowed -= c in lacks
                        got.append(c)
                    else:
                        rest.append(c)
                if len(got) < need:
                    break  # no shuffle changes which cards may go
                bad = 0
                if since:
                    self.cost += 1 + len(since)
                    bad = _mismatches([*self.known[p], *got], since, rng)
                if best is None or bad < best[0]:
                    best = (bad, got, rest)
                if not bad:
                    break
            if best is None:
                return None
            hands[p] = [*self.known[p], *best[1]]
            taken.update(best[1])
            pool = best[2]
        return hands, pool

    def _candidate(self, p: str, taken: set[str], rng: random.Random) -> tuple[str, ...] | None:
        """Unknown cards for ``p`` that explain its choices best (:func:`_mismatches`), none of
        ``taken``: drawn from candidates proposed once per decision (a fresh deal of its unknown
        cards each, lacks honoured as :meth:`_hands` does), so checking costs once, not per deal.
        As every proposal is equally likely before the check, picking among those that pass and
        fit beside the other seat's follows what the choices tell (about: few proposals)."""
        cands = self._cands.get(p)
        if cands is None:
            cands = self._cands[p] = self._propose(p, rng)
        best, choices = None, []
        for bad, got in cands:
            if best is not None and bad > best:
                break
            if taken.isdisjoint(got):
                best = bad
                choices.append(got)
        return rng.choice(choices) if choices else None

    def _propose(self, p: str, rng: random.Random) -> list[tuple[int, tuple[str, ...]]]:
        since = self.since[p]
        need = self.counts[p] - len(self.known[p])
        lacks = self.lacks[p]
        tries = min(CANDIDATES, max(CHOICE_TRIES, CHECK_BUDGET // (1 + len(since))))
        pool = self.pool[:]
        out = []
        for _ in range(tries):
            rng.shuffle(pool)
            allowed = self.free[p]
            got: list[str] = []
            for c in pool:
                if len(got) == need:
                    break
                if c not in lacks or allowed > 0:
                    allowed -= c in lacks
                    got.append(c)
            if len(got) < need:
                return []
            self.cost += 1 + len(since)
            out.append((_mismatches([*self.known[p], *got], since, rng), tuple(got)))
        out.sort(key=lambda x: x[0])
        return out

    def raw(self, rng: random.Random) -> tuple[dict[str, list[str]], list[str], list[str]]:
        """A fresh consistent deal of the hidden cards: (hands by seat, discard pile, stock top first)."""
        v = self.view
        pool = self.pool[:]
        rng.shuffle(pool)
        dealt = self._hands(pool, rng)
        if dealt is None:  # what it inferred does not square: deal without it
            dealt = (self._unconstrained(pool), pool[sum(self.counts[p] - len(k) for p, k in self.known.items()):])
        hands, rest = dealt
        hands[v["seat"]] = list(self.hand)
        it = iter(rest)
        discard = [c if c is not None else next(it) for c in self.discard]
        stock = [c if c is not None else next(it) for c in self.stock]
        return hands, discard, stock

    def deal(self, rng: random.Random) -> Any:
        """:meth:`raw` as an ``engine`` state (what table variants need)."""
        v = self.view
        hands, discard, stock = self.raw(rng)
        data = {
            "schema": self.rules.SCHEMA, "game": "prsi", "version": v["version"],
            "players": [p["id"] for p in v["players"]], "seed": 0, "decks": None, "round": v["round"],
            "dealer": v["dealer"], "hands": hands, "stock": stock, "discard": discard, "suit": v["suit"],
            "pending_draw": v["pending_draw"], "pending_skip": v["pending_skip"], "to_move": v["to_move"],
            "points": v["points"], "round_points": v["round_points"], "history": v["history"],
            "over": False, "places": None, "balances": None, "last": [],
        }
        data["hands"] = {p: hands[p] for p in data["players"]}
        if v.get("variants"):  # table variants (PV1–PV7) and where they stand, as the view shows them
            data["variants"] = {"on": list(v["variants"]), "named_rank": v.get("named_rank"),
                                "out_pending": v.get("out_pending"),
                                "drawn": v.get("drawn") if v.get("drawn_pending") else None}
        return self.rules.load(data)

    def _unconstrained(self, pool: list[str]) -> dict[str, list[str]]:
        it = iter(pool)
        return {p: [*k, *(next(it) for _ in range(self.counts[p] - len(k)))] for p, k in self.known.items()}


CHOICE_TRIES = 16  # deals of one opponent's unknown cards tried for one that squares with its choices
CANDIDATES = 160  # at most so many proposals per opponent and decision (:meth:`_PrsiWorld._candidate`) …
CHECK_BUDGET = 2400  # … and at most about so many simulated actions' worth of checks


def _mismatches(hand: list[str], since: Sequence[tuple], rng: random.Random) -> int:
    """How many of a seat's noted choices (:meth:`Memory._choice`, oldest first) the regular
    heuristic would not have made holding ``hand`` now plus the cards it played since each:
    0 for a deal that explains every choice. Of two Queens the one played counts as the
    heuristic's (which goes first is the hand's order, unknown); its named suit must match. The expert prefers deals
    that explain what it saw (a person would reason so: "he played the 8, so no 9 or 10 of
    it"); a seat that plays otherwise only makes the preference a poorer guess."""
    h = list(hand)
    bad = 0
    older = [c for x in since if x[0] in ("draw", "drawn") and x[1] for c in x[1].split(",")]
    for kind, card, named, suit, top, pd, ps, nc in reversed(since):
        if kind == "play":
            if card[0] == "Q":
                h.insert(0, card)  # the heuristic's Queen is the hand's first
            else:
                h.append(card)
        elif kind != "stand":  # a draw: take back what it drew, the unknown cards at random of those it may be
            seen = card.split(",") if card else []
            for c in seen:
                older.remove(c)
                if c in h:
                    h.remove(c)
            unseen = [c for c in h if c not in older]
            k = named - len(seen)
            if kind == "draw":  # what would have been played instead must have come with the draw
                must = [c for c in unseen if c[0] == "7"] if pd else [
                    c for c in unseen if c[0] == "Q" or c[-1] == suit or c[0] == top[0]]
                if must and len(must) <= k:
                    for c in must:
                        h.remove(c)
                        unseen.remove(c)
                    k -= len(must)
            if k > len(unseen):
                return bad + len(since)
            for c in rng.sample(unseen, k):
                h.remove(c)
            if kind == "drawn":
                continue
        k2, c2, n2 = _fs_policy(h, nc, top, suit, pd, ps, True)
        if kind == "draw":
            bad += k2 != "draw"
        elif kind == "stand":
            bad += k2 != "stand"
        else:
            bad += k2 != "play" or c2 != card or (named is not None and n2 != named)
    return bad


ROLLOUT_CAP = 400  # actions; a rollout longer than this is scored where it stands
ENGINE_STEP_COST = 8  # a Prší engine action (table variants) costs about this many fast playout actions
DEAL_COST, ROLLOUT_COST = 20, 3  # a fresh deal and a rollout's set-up, in simulated actions


def _prsi_value(state: Any, me: str) -> float:
    """The round's balance for ``me`` (P14: Σ over opponents of their points − mine), hand points if cut off."""
    pts = {p: sum(_POINTS[c[:-1]] for c in h) for p, h in zip(state.players, state.hands, strict=True)}
    return float(sum(v - pts[me] for p, v in pts.items() if p != me))


def _prsi_rollout(state: Any, me: str) -> tuple[float, int]:
    """The round played out through ``engine`` (table variants) with the regular heuristic:
    (my round balance, actions simulated)."""
    apply, policy, legal_actions = engine.apply, engine.computer_action, engine.legal_actions
    rnd = state.round
    for steps in range(1, ROLLOUT_CAP + 1):
        if state.over or state.round != rnd:
            break
        seat = state.to_move
        action = policy(state, seat) or legal_actions(state, seat)[0]
        out = apply(state, seat, action)
        for e in out.events:
            if e.get("a") == "round_end":
                rp = e["round_points"]
                return float(sum(v - rp[me] for p, v in rp.items() if p != me)), steps
        state = out.state
    return _prsi_value(state, me), ROLLOUT_CAP


def _search(legal: list[dict[str, Any]], world_deal, evaluate, iterations: int, budget: int,
            rng: random.Random, default: int, confidence: float, deal_cost=None,
            prune: float = 0.0) -> tuple[dict[str, Any], int]:
    """Determinized Monte Carlo with common deals: each round of the search deals the hidden
    cards afresh (consistent with the view and the log), plays every candidate action on
    that same deal and plays each out (``evaluate(world, k)`` → (value, actions simulated)).
    Comparing actions on the same deals takes the luck of the deal out of the comparison.
    The heuristic's choice (``default``) stands unless another action beats it on these
    deals by more than ``confidence`` standard errors of the paired difference (a noisy
    search must not undo a good habit).

    ``iterations`` caps the rollouts; ``budget`` caps the simulated actions (the CPU cost:
    a deterministic count, so the same view always gives the same decision, whatever the
    machine's load): no new deal is started that would, at the average so far, overrun it;
    the first one always runs; ``deal_cost()`` is what checking the last deal cost. ``prune``
    (0: never): every :data:`PRUNE_EVERY` deals, an action behind the leader by more than
    ``prune`` standard errors of their paired difference is played out no more (never the
    heuristic's), so the budget goes to the actions still in the running. Returns (action,
    rollouts made)."""
    n = len(legal)
    values: list[list[float]] = [[] for _ in range(n)]
    active = list(range(n))
    done = steps = deals = 0
    while done + len(active) <= max(iterations, n):
        if deals and steps + steps / deals > budget:
            break
        world = world_deal(rng)
        steps += DEAL_COST + (deal_cost() if deal_cost is not None else 0)
        for k in active:
            v, st = evaluate(world, k)
            values[k].append(v)
            steps += st + ROLLOUT_COST
        done += len(active)
        deals += 1
        if prune and len(active) > 2 and deals % PRUNE_EVERY == 0:
            means = {k: sum(values[k]) / deals for k in active}
            lead = max(active, key=lambda k: (means[k], k == default))
            keep = []
            for k in active:
                if k in (lead, default):
                    keep.append(k)
                    continue
                mean, se = _paired(values[k], values[lead])
                if mean + prune * se >= 0:
                    keep.append(k)
            active = keep
    base = values[default]
    best, best_score = default, 0.0
    for k in active:
        if k == default:
            continue
        mean, se = _paired(values[k], base)
        score = mean - confidence * se
        if score > best_score:
            best, best_score = k, score
    return legal[best], done


PRUNE_EVERY = 12


def _paired(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Mean and standard error of the paired differences x − y (0 standard error for one pair)."""
    diffs = [a - b for a, b in zip(xs, ys, strict=True)]
    m = len(diffs)
    mean = sum(diffs) / m
    if m < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((d - mean) ** 2 for d in diffs) / (m - 1) / m)


# Standard errors by which a searched action must beat the heuristic's: Prší's round balances
# swing by tens of points from deal to deal, Penki's places are steadier and its search sees more.
PRSI_CONFIDENCE, PENKI_CONFIDENCE = 1.0, 0.0
PRSI_PRUNE = 3.0  # Prší: an action this many standard errors behind the leader is dropped (Penki: none)


def _prsi_search(view: Mapping[str, Any], mem: Memory, lv: Level, seed: int,
                 budget: int | None) -> tuple[dict[str, Any], int]:
    legal = [dict(a) for a in view["legal"]]
    world = _PrsiWorld(view, mem)
    if not world.ok:
        return _prsi_heuristic(view, legal), 0
    me = view["seat"]
    rng = _rng(seed, "prsi-search", view["version"])
    default = legal.index(dict(_prsi_heuristic(view, legal)))
    budget = lv.budget if budget is None else budget
    if world.plain:  # house rules: plain lists, many times faster than engine states
        ids = [p["id"] for p in view["players"]]
        mi, turn = ids.index(me), ids.index(view["to_move"])
        suit, pd, ps = view["suit"], view["pending_draw"], bool(view["pending_skip"])

        def evaluate(raw: Any, k: int) -> tuple[float, int]:
            hands, stock, discard = raw
            return _fs_round([h[:] for h in hands], stock[:], discard[:], suit, pd, ps, turn, mi, legal[k],
                             ROLLOUT_CAP)

        def deal(r: random.Random) -> Any:
            hands, discard, stock = world.raw(r)
            return [hands[p] for p in ids], stock, discard

        def cost() -> int:
            spent, world.cost = world.cost, 0
            return spent

        return _search(legal, deal, evaluate, lv.iterations, budget, rng, default, PRSI_CONFIDENCE, cost, PRSI_PRUNE)

    def evaluate_engine(state: Any, k: int) -> tuple[float, int]:
        try:
            out = engine.apply(state, me, legal[k])
        except engine.Rejected:  # cannot happen for a listed action; never let search break a move
            return -1e9, 1
        for e in out.events:
            if e.get("a") == "round_end":
                rp = e["round_points"]
                return float(sum(v - rp[me] for p, v in rp.items() if p != me)), 1
        v, st = _prsi_rollout(out.state, me)
        return v, st * ENGINE_STEP_COST

    return _search(legal, world.deal, evaluate_engine, lv.iterations, budget, rng, default, PRSI_CONFIDENCE)


# ---------------------------------------------------------------- Prší fast playouts (house rules)


def _fs_draw(hand: list[str], stock: list[str], discard: list[str], count: int) -> tuple[list[str], list[str]]:
    """P9, P10 as :func:`engine.prsi._draw`: card by card, turning the discard pile over
    (unshuffled, oldest first) whenever the stock is empty; what cannot be drawn is forgiven."""
    drawn = 0
    while drawn < count:
        if not stock:
            if len(discard) <= 1:
                break
            stock, discard = discard[:-1], discard[-1:]
        take = min(count - drawn, len(stock))
        hand.extend(stock[:take])
        del stock[:take]
        drawn += take
        if not stock and len(discard) > 1:
            stock, discard = discard[:-1], discard[-1:]
    return stock, discard


_FS_PTS = {c: _POINTS[c[:-1]] for c in PRSI_PACK}
_FS_ORD = {c: i for i, c in enumerate(sorted(PRSI_PACK))}  # the card's own order, the last tie-break


def _fs_best(hand: list[str], cands: list[str], by_points: bool) -> str:
    """``max(cands)`` by (points if ``by_points``, cards of its suit left in hand, the card):
    the regular heuristic's choice, without building a key per card when points decide."""
    if by_points:
        top = max(_FS_PTS[c] for c in cands)
        cands = [c for c in cands if _FS_PTS[c] == top]
    if len(cands) == 1:
        return cands[0]
    return max(cands, key=lambda c: (sum(1 for x in hand if x[-1] == c[-1]), _FS_ORD[c]))


def _fs_policy(hand: list[str], next_cards: int, top: str, suit: str, pd: int, ps: bool,
               can_draw: bool) -> tuple[str, str | None, str | None]:
    """:func:`engine.prsi.computer_action` on plain lists: ("play", card, named suit) / ("draw"|"stand"|"pass", …)."""
    if pd or ps:
        want = "7" if pd else "A"
        options = [c for c in hand if c[0] == want]
        if options:
            return "play", _fs_best(hand, options, False), None
        return ("draw" if pd else "stand"), None, None
    tr = top[0]
    plain: list[str] = []
    answers: list[str] = []
    queen = None
    for c in hand:
        r = c[0]
        if r == "Q":
            if queen is None:
                queen = c
        elif c[-1] == suit or r == tr:
            if r == "7" or r == "A":
                answers.append(c)
            else:
                plain.append(c)
    if answers and next_cards == 1:
        return "play", _fs_best(hand, answers, True), None
    if plain:
        return "play", _fs_best(hand, plain, True), None
    if answers:
        return "play", _fs_best(hand, answers, True), None
    if queen is None:
        return ("draw" if can_draw else "pass"), None, None
    if len(hand) == 1:
        return "play", queen, None
    return "play", queen, _fs_name(hand, queen)


def _fs_name(hand: list[str], queen: str) -> str:
    """The suit a Queen names (P8): the longest of the rest of the hand, then the one worth most."""
    rest = [c for c in hand if c != queen and c[0] != "Q"] or [c for c in hand if c != queen]
    counts = dict.fromkeys(SUITS, 0)
    worth = dict.fromkeys(SUITS, 0)
    for c in rest:
        counts[c[-1]] += 1
        worth[c[-1]] += _FS_PTS[c]
    return max(SUITS, key=lambda x: (counts[x], worth[x], -SUITS.index(x)))


def _fs_round(hands: list[list[str]], stock: list[str], discard: list[str], suit: str, pd: int, ps: bool,
              turn: int, me: int, first: Mapping[str, Any] | None, cap: int) -> tuple[float, int]:
    """Play a Prší round (house rules, P5–P12) out on plain lists, ``first`` (an action dict)
    for seat ``turn`` first, then the regular heuristic for every seat. Returns (my round
    balance, P14: Σ opponents' round points − mine, hand points if cut off after ``cap``
    actions; actions simulated). The lists are changed."""
    k = len(hands)
    steps = 0
    while steps < cap:
        steps += 1
        hand = hands[turn]
        nxt = (turn + 1) % k
        if first is not None:
            kind, card, named = first["a"], first.get("card"), first.get("suit")
            first = None
        else:
            kind, card, named = _fs_policy(hand, len(hands[nxt]), discard[-1], suit, pd, ps,
                                           bool(stock) or len(discard) > 1)
        if kind == "play":
            hand.remove(card)
            discard.append(card)
            suit = named or card[-1]
            if not hand:  # P11
                if card[0] == "7":
                    stock, discard = _fs_draw(hands[nxt], stock, discard, pd + 2)
                break
            if card[0] == "7":
                pd += 2
            elif card[0] == "A":
                ps = True
        elif kind == "draw":
            stock, discard = _fs_draw(hand, stock, discard, pd or 1)
            pd = 0
        elif kind == "stand":
            ps = False
        turn = nxt
    pts = [sum(_POINTS[c[:-1]] for c in h) for h in hands]
    return float(sum(pts) - k * pts[me]), steps


# ================================================================ Penki

_PENKI_PACK = frozenset(PENKI_PACK)
_PRANK = {c: RANK_INDEX[c[:-1]] for c in PENKI_PACK}
KS, TRUMP = "Ks", "d"
STALL_AFTER = 400
STALL_TAKES = 30  # takes with no Бита between them: the table goes round in circles (a normal game's most: ~20–40)


def _cheap_key(c: str) -> tuple:
    return (c[-1] == TRUMP, _PRANK[c], SUITS.index(c[-1]))


def _worst(hand: Sequence[str]) -> str:
    """The card a player is gladdest to be rid of: Ks, else the lowest non-trump, else the lowest trump."""
    return KS if KS in hand else min(hand, key=_cheap_key)


def _penki_debtors(view: Mapping[str, Any], mem: Memory) -> dict[str, int]:
    """Seats that owe «ОДНА КАРТА!» as the public log shows it (R17): acted since the last
    ordinary action, hold exactly one card, have not declared, were not caught since."""
    if view["phase"] != 2 or mem.phase != 2:
        return {}
    info = {p["id"]: p for p in view["players"]}
    return {p: i for p, i in mem.candidates.items()
            if p in info and info[p]["cards"] == 1 and not info[p]["declared"] and not info[p]["out"]}


def _penki_decide(view: Mapping[str, Any], mem: Memory, lv: Level, seed: int,
                  budget: int | None) -> Decision | None:
    me = view["seat"]
    legal = view["legal"]
    if view["phase"] == 1:
        w = mem.window
        if w is not None and w[0] != me and mem.phase == 1 and not mem.partial:
            crng = _rng(seed, "notice", w[1])
            if crng.random() < lv.notice:
                return Decision({"a": "zevok"}, lv.call.sample(crng), "call", w[1])
        return _penki_phase1(view, lv, seed, legal)
    debtors = _penki_debtors(view, mem)
    if me in debtors:  # R17, known as the card goes down: the delay counts from that action
        crng = _rng(seed, "declare", debtors[me])
        alert = mem.caught.get(me, 0)
        if crng.random() >= lv.forget * ALERT_FORGET ** alert:
            delay = lv.declare.sample(crng)
            if alert:
                delay = round(max(HUMAN_MIN, delay * ALERT_SPEED ** alert), 3)
            return Decision({"a": "one_card"}, delay, "declare", debtors[me])
    others = {p: i for p, i in debtors.items() if p != me}
    if others and not mem.partial:
        chance = max(others.values())
        crng = _rng(seed, "notice", chance)
        if crng.random() < lv.notice:
            return Decision({"a": "how_many"}, lv.call.sample(crng), "call", chance)
    if not legal:
        return None
    rng = _rng(seed, "penki", view["version"])
    hand = view["hand"]
    if legal[0]["a"] == "give":  # R18: the worst card goes
        return _move(lv, rng, {"a": "give", "card": _worst(hand)}, True)
    if len(legal) == 1:
        return _move(lv, rng, legal[0], True)
    if lv.penki_iterations and view["to_move"] == me:
        action, n = _penki_search(view, mem, lv, seed, budget)
        if action is not None:
            return _move(lv, rng, action, False, searched=n)
    best = _penki_heuristic(view, legal, rng, mem.takes >= STALL_TAKES)
    if rng.random() < lv.slip:
        pick = rng.choice(legal)
        return _move(lv, rng, pick, False, slip=dict(pick) != dict(best))
    return _move(lv, rng, best, False)


def _penki_phase1(view: Mapping[str, Any], lv: Level, seed: int, legal: list[dict[str, Any]]) -> Decision | None:
    """R4 without blunders, but for the level's blunder rate (R5)."""
    if not legal:
        return None
    me = view["seat"]
    rng = _rng(seed, "penki", view["version"])
    kinds = {a["a"] for a in legal}
    if view["drawn"] is not None:
        fit = next((a for a in legal if a["to"] != me), None)
        if fit is None:
            return _move(lv, rng, legal[0], True)
        if rng.random() < lv.blunder:
            return _move(lv, rng, {"a": "place", "to": me}, False, slip=True)
        return _move(lv, rng, fit, False)
    if "move" in kinds:
        mv = next(a for a in legal if a["a"] == "move")
        if "draw" in kinds and rng.random() < lv.blunder:
            return _move(lv, rng, {"a": "draw"}, False, slip=True)  # overlooks the forced move
        return _move(lv, rng, mv, "draw" not in kinds)
    return _move(lv, rng, legal[0], True)


def _penki_heuristic(view: Mapping[str, Any], legal: list[dict[str, Any]], rng: random.Random,
                     stalled: bool = False) -> dict[str, Any]:
    """Today's :func:`engine.penki.computer_action` on the view: lead the cheapest card (trumps
    last, ``Ks`` only alone, R15), beat with the cheapest card that beats keeping trumps (R10),
    take when nothing beats (R12). When ``stalled`` (the memory has seen :data:`STALL_TAKES` takes
    since the last Бита, R13) it leads or beats with any card at random and never takes while a
    card beats; from :data:`STALL_AFTER` on it varies among every option, takes included. So an
    endless cycle of leads and takes ends."""
    plays = [a for a in legal if a["a"] == "play"]
    take = next((a for a in legal if a["a"] == "take"), None)
    if not plays:
        return take or legal[0]
    plays.sort(key=lambda a: _cheap_key(a["card"]))
    if view["version"] >= STALL_AFTER:
        options = plays + ([take] if take else [])
        return rng.choice(options)
    if stalled:  # going round in circles: beat whenever it can (a Бита takes cards out), any card
        return rng.choice(plays)
    return plays[0]


# ---------------------------------------------------------------- Penki determinization


class _PenkiWorld:
    """Phase 2 as the seat knows it: known hands (from the phase-1 piles), stumps and gives unknown."""

    def __init__(self, view: Mapping[str, Any], mem: Memory) -> None:
        self.view = view
        me = view["seat"]
        info = {p["id"]: p for p in view["players"]}
        hand = list(view["hand"])
        table = list(view["table"])
        mine, on_table = set(hand), set(table)
        gone = set(mem.gone) - mine - on_table
        if len(gone) > view["discarded"]:
            gone = set()
        known = {p: set(mem.known.get(p, ())) - mine - on_table - gone for p in info if p != me}
        for p, ks in known.items():
            if len(ks) > info[p]["cards"]:
                ks.clear()
        located = [*hand, *table, *gone, *(c for k in known.values() for c in k)]
        if len(located) != len(set(located)):
            gone, known = set(), {p: set() for p in known}
            located = [*hand, *table]
        self.pool = sorted(_PENKI_PACK - set(located))
        holes = (view["discarded"] - len(gone)) + sum(info[p]["cards"] - len(k) for p, k in known.items()) \
            + sum(info[p]["stumps"] for p in info)
        self.ok = holes == len(self.pool)
        self.hand, self.table, self.known, self.info = hand, table, known, info
        self.gone_holes = view["discarded"] - len(gone)
        self.debtors = tuple(p for p in _penki_debtors(view, mem) if p != me)
        self.last_beater = mem.last_beater
        self.rules = engine.rules("penki")

    def deal(self, rng: random.Random) -> Any:
        v = self.view
        pool = self.pool[:]
        rng.shuffle(pool)
        it = iter(pool)
        for _ in range(self.gone_holes):
            next(it)
        hands, stumps = {}, {}
        for p, inf in self.info.items():
            if p == v["seat"]:
                hands[p] = list(self.hand)
            else:
                k = list(self.known[p])
                hands[p] = k + [next(it) for _ in range(inf["cards"] - len(k))]
            stumps[p] = [next(it) for _ in range(inf["stumps"])]
        players = [p["id"] for p in v["players"]]
        data = {
            "schema": self.rules.SCHEMA, "game": "penki", "players": players, "dealer": v["dealer"],
            "seed": None, "version": v["version"], "over": False, "phase": 2, "turn": v["to_move"],
            "stock": [], "piles": {p: [] for p in players}, "drawn": None, "zevok": None, "stumps": stumps,
            "hands": hands, "table": list(self.table), "discarded": v["discarded"],
            "last_beater": self.last_beater, "owes": list(self.debtors),
            "declared": [p for p in players if self.info[p]["declared"]], "penalty_to": None,
            "penalty_from": [], "penalty_queue": [], "places": v["places"], "balances": None, "last": [],
        }
        return self.rules.load(data)


def _penki_value(state: Any, me: str) -> float:
    """R19 balance for ``me``: +1 per opponent placed worse, −1 per better; by hand size if cut off."""
    if state.over:
        mine = state.places[me]
        return float(sum((q > mine) - (q < mine) for p, q in state.places.items() if p != me))
    places = state.places

    def rank(p: str) -> float:
        return places[p] if p in places else 100 + len(state.hands[p]) + len(state.stumps[p])

    mine = rank(me)
    return float(sum((rank(p) > mine) - (rank(p) < mine) for p in state.players if p != me))


def _penki_rollout(state: Any, me: str) -> tuple[float, int]:
    """Play out with the heuristic for everyone, every owed declaration made at once (R17):
    (R19 balance for ``me``, actions simulated)."""
    apply, policy, legal_actions = engine.apply, engine.computer_action, engine.legal_actions
    steps = 0
    for steps in range(1, ROLLOUT_CAP + 1):  # noqa: B007 (the count is returned)
        if state.over:
            break
        for p in state.owes:
            state = apply(state, p, {"a": "one_card"}).state
        seats = engine.awaiting(state)
        if not seats:
            break
        seat = seats[0]
        action = policy(state, seat)
        if action is None or action["a"] in CALLOUTS:
            options = legal_actions(state, seat)
            if not options:
                break
            action = options[0] if action is None or action["a"] != "one_card" else action
        state = apply(state, seat, action).state
    return _penki_value(state, me), steps


def _penki_search(view: Mapping[str, Any], mem: Memory, lv: Level, seed: int,
                  budget: int | None) -> tuple[dict[str, Any] | None, int]:
    if mem.phase != 2:
        return None, 0
    world = _PenkiWorld(view, mem)
    if not world.ok:
        return None, 0
    legal = [dict(a) for a in view["legal"]]
    rng = _rng(seed, "penki-search", view["version"])
    default = legal.index(dict(_penki_heuristic(view, legal, _rng(seed, "penki", view["version"]))))
    me = view["seat"]

    def evaluate(state: Any, k: int) -> tuple[float, int]:
        try:
            out = engine.apply(state, me, legal[k])
        except engine.Rejected:  # cannot happen for a listed action; never let search break a move
            return -1e9, 1
        return _penki_rollout(out.state, me)

    budget = lv.penki_budget if budget is None else budget
    return _search(legal, world.deal, evaluate, lv.penki_iterations, budget, rng, default, PENKI_CONFIDENCE)
