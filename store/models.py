"""The store's public models (docs/CONTRACTS.md §2) and :class:`StoreError`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Player counts per game (S1; Prší P1, Penki R1) and their defaults (house rule: 3).
PLAYER_LIMITS: dict[str, tuple[int, int]] = {"prsi": (2, 5), "penki": (2, 6)}
DEFAULT_PLAYERS: dict[str, int] = {"prsi": 3, "penki": 3}
#: Allowed turn times in seconds (S4); ``None`` switches the timer off.
TURN_SECONDS: tuple[int | None, ...] = (None, 30, 60, 120)

By = Literal["player", "timer", "computer"]

ERROR_CODES = (
    "not_found",    # no such lobby/table (or it expired)
    "full",         # every seat taken (or a settings change would leave too many seated)
    "started",      # the lobby already started its table
    "not_creator",  # only the lobby's creator may do that
    "too_few",      # start with fewer than 2 seats
    "not_seated",   # the user has no seat there
    "stale",        # expected_version differs from the table's version
    "expired",      # the lobby/table expired
    "invalid",      # a bad argument (unknown game, players out of range, bad turn time)
    "busy",         # the compare-and-set kept losing (should not happen in practice)
    "too_fast",     # the user's action bucket is empty (TooFast: ``wait`` seconds until a token)
    "left",         # a player's own move for a seat its person left (Store.leave_table)
    "over",         # the game has ended (Store.leave_table)
    "not_your_turn",  # Store.leave_table while the game waits for another seat
)


class StoreError(Exception):
    """A refused store operation; ``code`` is one of :data:`ERROR_CODES`."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class TooFast(StoreError):
    """``Store.apply`` with a ``limit``: the user's action bucket had no token (nothing was
    applied); ``wait``: seconds until one is back (``store.limits``)."""

    def __init__(self, wait: float) -> None:
        super().__init__("too_fast", "too many actions, slow down")
        self.wait = float(wait)


LANGUAGES = ("en", "cs", "ru")  # what Karty speaks (S8); English is the default
_LANGUAGE_OF = {"cs": "cs", "sk": "cs", "ru": "ru", "uk": "ru", "be": "ru", "kk": "ru", "en": "en"}


def language_of(code: str | None) -> str:
    """Telegram's ``language_code`` (``"sk"``, ``"uk-UA"``, ``"en_US"``, None …) → the language
    Karty speaks to them: sk→cs, uk/be/kk→ru, cs, ru, else en. The one mapping of the bot,
    the Mini App (``webapp/static/i18n.js`` mirrors it) and the store."""
    if not code:
        return "en"
    return _LANGUAGE_OF.get(str(code).replace("_", "-").split("-")[0].lower(), "en")


class User(BaseModel):
    """A Telegram user as the store keeps them. ``language``: the one Karty speaks to them
    (an explicit choice, else their Telegram code mapped by :func:`language_of`)."""

    id: int
    name: str
    username: str | None = None
    language: str | None = None


class LobbySettings(BaseModel):
    """Players wanted (Prší 2–5, Penki 2–6; 3 by default), the turn time (S4) and the
    Prší table variants on (RULES.md PV1–PV7, PV3q; none by default, any combination;
    a table with any is friendly, never rated)."""

    players: int = 3
    turn_seconds: int | None = 60
    variants: list[str] = Field(default_factory=list)

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: list[str]) -> list[str]:
        from engine.prsi_variants import VARIANTS

        unknown = [x for x in v if x not in VARIANTS]
        if unknown:
            raise ValueError(f"unknown variants {unknown}: known are {', '.join(VARIANTS)}")
        return [x for x in VARIANTS if x in v]  # the rulebook's order, each once

    @field_validator("turn_seconds")
    @classmethod
    def _turn(cls, v: int | None) -> int | None:
        if v not in TURN_SECONDS:
            raise ValueError(f"turn_seconds must be one of {TURN_SECONDS}")
        return v

    def check(self, game: str) -> LobbySettings:
        """Raise ``StoreError("invalid")`` unless ``players`` fits ``game``; returns self."""
        lo, hi = PLAYER_LIMITS[game]
        if not lo <= self.players <= hi:
            raise StoreError("invalid", f"{game} takes {lo}-{hi} players")
        if self.variants and game != "prsi":
            raise StoreError("invalid", "only Prší has table variants")
        return self

    @classmethod
    def default(cls, game: str) -> LobbySettings:
        return cls(players=DEFAULT_PLAYERS[game])


class Seat(BaseModel):
    """A seat: ``"u<telegram id>"`` for a person, ``"c1"``, ``"c2"``… for a computer.

    ``auto``: the computer plays for this person after three timeouts in a row
    (``strikes``), until they act again (S4). ``played``: the person made a move of
    their own (not the timer's, not the computer's) in this match; a person's seat
    that never did makes the finished match unrated (P16 as amended). ``left``: the person
    left the table (``Store.leave_table``): ``auto`` to the end of the game, their own moves
    refused. ``level``: a computer's strength,
    ``beginner`` | ``regular`` | ``expert`` (issue 14; ``None``: regular).
    """

    seat: str
    user_id: int | None = None
    name: str
    computer: bool = False
    level: Literal["beginner", "regular", "expert"] | None = None
    auto: bool = False
    strikes: int = 0
    played: bool = False
    left: bool = False


class Lobby(BaseModel):
    """A lobby (S1): seats in join order, the creator first.

    A "Play again" lobby of a finished table (:mod:`store.rematch`) also has
    ``rematch_of`` (that table's id), ``order`` (its seat ids clockwise: who sits
    where again), ``dealer_pos`` (the index in ``order`` of the first dealer: the
    next one), ``reserved`` (user ids of its people who have not answered yet, whose
    seats nobody else takes until ``reserved_until``, epoch s); ``chat_id`` is
    ``None`` for a table outside any chat (local play).
    """

    id: str
    chat_id: int | None
    thread_id: int | None = None
    game: str
    creator_id: int
    settings: LobbySettings
    seats: list[Seat] = Field(default_factory=list)
    table_id: str | None = None
    message_id: int | None = None
    version: int = 0
    rematch_of: str | None = None
    order: list[str] = Field(default_factory=list)
    dealer_pos: int | None = None
    reserved: list[int] = Field(default_factory=list)
    reserved_until: float | None = None

    def seat_of(self, user_id: int) -> str | None:
        """The seat id of ``user_id`` here, or ``None``."""
        return next((s.seat for s in self.seats if s.user_id == user_id), None)

    def held(self, now: float) -> list[int]:
        """Rematch: user ids whose seats are still kept for them at ``now`` (not yet seated)."""
        if self.reserved_until is None or now >= self.reserved_until:
            return []
        seated = {s.user_id for s in self.seats}
        return [u for u in self.reserved if u not in seated]


class Table(BaseModel):
    """A live (or finished, kept 7 days) game. ``state`` is the engine state object."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    game: str
    chat_id: int | None = None
    thread_id: int | None = None
    lobby_id: str | None = None
    seats: list[Seat]
    settings: LobbySettings
    state: Any
    version: int
    deadline: float | None = None
    rated: bool
    created: float

    def seat_of(self, user_id: int) -> str | None:
        """The seat id of ``user_id`` at this table, or ``None``."""
        return next((s.seat for s in self.seats if s.user_id == user_id), None)

    def seat(self, seat_id: str) -> Seat | None:
        """The :class:`Seat` with id ``seat_id``, or ``None``."""
        return next((s for s in self.seats if s.seat == seat_id), None)

    def summary(self) -> dict[str, Any]:
        """JSON-ready metadata (no state): what lists of tables show."""
        return {
            "id": self.id, "game": self.game, "chat_id": self.chat_id, "thread_id": self.thread_id,
            "lobby_id": self.lobby_id, "seats": [s.model_dump() for s in self.seats],
            "settings": self.settings.model_dump(), "version": self.version, "deadline": self.deadline,
            "rated": self.rated, "created": self.created, "over": bool(getattr(self.state, "over", False)),
        }


class ApplyResult:
    """What :meth:`Store.apply` returns: ``version`` (int) and ``events`` (list of dicts) of
    the commit, ``duplicate`` (a repeated client_action_id: nothing applied, the first
    outcome's version and events) and ``table``, the :class:`Table` at ``version`` or later
    (built on first use from ``known``, a :class:`store.live.Known`: a move's path that only
    needs the version builds no model)."""

    __slots__ = ("_known", "duplicate", "events", "version")

    def __init__(self, *, version: int, events: list[dict[str, Any]], known: Any, duplicate: bool = False) -> None:
        self.version = int(version)
        self.events = events
        self.duplicate = bool(duplicate)
        self._known = known

    @property
    def table(self) -> Table:
        return self._known.table  # built once, by the Known

    @property
    def deadline(self) -> float | None:
        """The turn timer's deadline (epoch seconds) of :attr:`table`, without building it."""
        return self._known.doc.get("deadline")

    def __repr__(self) -> str:
        return f"ApplyResult(version={self.version}, duplicate={self.duplicate}, events={self.events!r})"


#: The fields of a dumped :class:`Seat` in the model's order: (name, required, default).
SEAT_FIELDS: tuple[tuple[str, bool, Any], ...] = tuple(
    (n, f.is_required(), None if f.is_required() else f.default) for n, f in Seat.model_fields.items())


def seat_dicts(seats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[Seat(**s).model_dump() for s in seats]`` for seats as a stored document holds them
    (written from :class:`Seat` models, so valid), without building the models: every field
    in the model's order, a missing optional one at its default, nothing else. ``KeyError``
    without a required one."""
    return [{k: s[k] if required else s.get(k, d) for k, required, d in SEAT_FIELDS} for s in seats]
