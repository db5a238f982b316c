"""Every text the bot sends, rendered in the current gettext locale (HTML parse mode).

Message ids are English literals passed to ``_`` (never f-strings); counts use
``ngettext(singular, plural, n)`` so Czech and Russian get their plural forms; values
go in with ``str.format`` after translation. User input (names) is always escaped with
:func:`esc`. Callouts keep their Russian names in every language (S8).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from aiogram.utils.i18n import get_i18n, ngettext
from aiogram.utils.i18n import gettext as _

CALLOUTS = ("«ЗЕВОК!»", "«ОДНА КАРТА!»", "«СКОЛЬКО КАРТ?»")

# Telegram's limits (Bot API sendMessage): 4,096 characters after entity parsing, counted
# in UTF-16 code units. Every text here fits by construction: a name is at most
# NAME_IN_LIST characters in a list and NAME_ALONE where it stands alone (Telegram
# allows 64 + 64), and a list that could grow is cut with "…and N more" (:func:`fit`).
MAX_TEXT = 4096
NAME_IN_LIST = 32
NAME_ALONE = 64


def esc(text: Any) -> str:
    """HTML-escape user input for parse mode HTML."""
    return html.escape(str(text), quote=False)


def short(name: Any, limit: int = NAME_IN_LIST) -> str:
    """``name`` cut to ``limit`` characters (UTF-16 code units, as Telegram counts them), "…"
    marking the cut; not escaped. Whitespace runs (a name of newlines) become one space."""
    text = " ".join(str(name).split())
    if _units(text) <= limit:
        return text
    out, used = [], 0
    for ch in text:
        size = _units(ch)
        if used + size > limit - 1:
            break
        out.append(ch)
        used += size
    return "".join(out).rstrip() + "…"


def name(value: Any, limit: int = NAME_IN_LIST) -> str:
    """A user-given name ready for HTML: shortened (:func:`short`) and escaped."""
    return esc(short(value, limit))


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def visible_length(text: str) -> int:
    """What Telegram counts of an HTML text: its characters after entity parsing (UTF-16 units)."""
    import re

    return _units(html.unescape(re.sub(r"<[^>]*>", "", text)))


def fit(head: list[str], rows: list[str], tail: list[str] = (), *, limit: int = MAX_TEXT - 256) -> str:  # type: ignore[assignment]
    """``head + rows + tail`` joined by newlines, keeping as many leading ``rows`` as fit
    into ``limit`` visible characters (room left for a note appended later); the rest become
    one line "…and N more"."""
    def total(kept: int) -> int:
        lines = [*head, *rows[:kept], *([more_text(len(rows) - kept)] if kept < len(rows) else []), *tail]
        return visible_length("\n".join(lines))

    kept = len(rows)
    if total(kept) > limit:
        lo, hi = 0, kept  # the largest prefix that fits, with its "…and N more"
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if total(mid) <= limit:
                lo = mid
            else:
                hi = mid - 1
        kept = lo
    lines = [*head, *rows[:kept]]
    if kept < len(rows):
        lines.append(more_text(len(rows) - kept))
    return "\n".join([*lines, *tail])


def more_text(n: int) -> str:
    return ngettext("…and {n} more", "…and {n} more", n).format(n=n)


def game_name(game: str) -> str:
    if game == "prsi":
        return _("Prší")
    if game == "penki":
        return _("Penki")
    return esc(game)


def turn_time(seconds: int | None) -> str:
    if not seconds:
        return _("off")
    return _("{n} s").format(n=seconds)


def seat_label(seat: Any) -> str:
    """A seat's name for a text: escaped, computers marked with 🤖."""
    sid = str(getattr(seat, "seat", "") or "")
    if getattr(seat, "computer", False):
        if sid[:1] == "c" and sid[1:].isdigit():
            return "🤖 " + _("Computer {n}").format(n=sid[1:])
        return "🤖 " + name(getattr(seat, "name", None) or sid)
    return name(getattr(seat, "name", None) or sid or "?")


def error_text(code: str) -> str:
    """A refusal (``StoreError.code`` or a bot-side code) in words."""
    texts = {
        "not_found": _("This lobby no longer exists. Start a new one with /new."),
        "expired": _("This lobby has expired. Start a new one with /new."),
        "full": _("The table is full."),
        "started": _("The game has already started."),
        "not_creator": _("Only the player who opened the lobby can do that."),
        "too_few": _("At least two players are needed."),
        "not_seated": _("You are not at this table."),
        "stale": _("Something changed meanwhile, please try again."),
        "invalid": _("That setting is not possible."),
        "busy": _("Too busy right now, please try again."),
        "already": _("You are already at this table."),
    }
    return texts.get(code, _("Something went wrong, please try again."))


# -- table variants (RULES.md PV1–PV7, PV3q) ---------------------------------------------------
def variant_name(variant: str) -> str:
    """The short name of a Prší table variant (``"PV1"`` → "No stacking")."""
    names = {
        "PV1": _("No stacking of sevens"),
        "PV2": _("Seven of hearts brings back"),
        "PV3": _("No finishing on a 7 or an Ace"),
        "PV3q": _("Finish only on a Queen"),
        "PV4": _("Quick Prší: groups of one rank"),
        "PV5": _("Jack names a rank"),
        "PV6": _("King of leaves: draw 4"),
        "PV7": _("Draw and play"),
    }
    return names.get(variant, esc(variant))


def variants_line(variants: Iterable[str]) -> str | None:
    """"🎲 Variants: … (friendly, not rated)" for a table with variants, else ``None``."""
    names = [variant_name(v) for v in variants]
    if not names:
        return None
    return _("🎲 Variants: {names} (a friendly match, not rated)").format(names=", ".join(names))


def variants_button(count: int) -> str:
    if not count:
        return _("🎲 Variants: none")
    return ngettext("🎲 Variants: {n} on", "🎲 Variants: {n} on", count).format(n=count)


# -- lobby ---------------------------------------------------------------------------------------
def lobby_text(lobby: Any, *, unreachable: Iterable[Any] = (), bot_username: str | None = None) -> str:
    """The lobby message: game, seats (join order; free seats as «—»), settings, notes.

    ``unreachable``: seats whose players the bot cannot message privately (a note
    asks them to press Start in the bot's chat).
    """
    lines = [_("🃏 <b>{game}</b> · new table").format(game=game_name(lobby.game))]
    if getattr(lobby, "rematch_of", None):
        lines = [_("🔁 <b>{game}</b> · play again").format(game=game_name(lobby.game)),
                 _("Same seats, the next dealer deals. Tap 🔁 Play again under the final table to sit down again;"
                   " seats are kept for the last match's players for 2 minutes.")]
    total = lobby.settings.players
    lines.append(
        _("Players: {seated}/{total} · Turn time: {time}").format(
            seated=len(lobby.seats), total=total, time=turn_time(lobby.settings.turn_seconds)
        )
    )
    lines.append("")
    for i in range(max(total, len(lobby.seats))):
        if i < len(lobby.seats):
            seat = lobby.seats[i]
            mark = " 👑" if seat.user_id == lobby.creator_id else ""
            if getattr(seat, "computer", False):
                mark = f" · {level_name(getattr(seat, 'level', None))}"
            lines.append(f"{i + 1}. {seat_label(seat)}{mark}")
        else:
            lines.append(f"{i + 1}. —")
    lines.append("")
    variants = variants_line(getattr(lobby.settings, "variants", []))
    if variants:
        lines.append(variants)
    if any(getattr(s, "computer", False) for s in lobby.seats):
        lines.append(_("🤖 With computer players the match is not rated."))
    if len(lobby.seats) < total:
        lines.append(_("Press Join to take a seat. The 👑 player starts the game."))
    else:
        lines.append(_("All seats are taken. The 👑 player starts the game."))
    for seat in unreachable:
        bot = "@" + esc(bot_username) if bot_username else _("the bot")
        lines.append(
            _("⚠️ {name}: I cannot write to you. Open {bot} and press Start, so I can tell you when it is your turn.")
            .format(name=seat_label(seat), bot=bot)
        )
    return fit(lines[:2], lines[2:])


def started_text(lobby: Any, table: Any | None) -> str:
    """The lobby message once its table runs: who plays and how to open it."""
    seats = table.seats if table is not None else lobby.seats
    lines = [
        _("🃏 <b>{game}</b> · the game is on").format(game=game_name(lobby.game)),
        _("Players: {names}").format(names=", ".join(seat_label(s) for s in seats)),
        _("Turn time: {time}").format(time=turn_time(lobby.settings.turn_seconds)),
        "",
        _("Open the table with the button below."),
    ]
    variants = variants_line(getattr(lobby.settings, "variants", []))
    if variants:
        lines.insert(3, variants)
    return "\n".join(lines)


def level_name(level: str | None) -> str:
    """A computer's level in words (issue 14; ``None`` is regular)."""
    return {"beginner": _("beginner"), "expert": _("expert")}.get(level or "", _("regular"))


def level_button(seat: Any) -> str:
    """A lobby button showing (and cycling) one computer's level."""
    return _("{seat}: {level}").format(seat=seat_label(seat), level=level_name(getattr(seat, "level", None)))


def lobby_button(action: str, *, seconds: int | None = None, players: int | None = None) -> str:
    labels = {
        "join": _("✋ Join"),
        "leave": _("🚪 Leave"),
        "cpu": _("🤖 Add computer"),
        "start": _("▶️ Start"),
        "back": _("⬅️ Back"),
    }
    if action == "time":
        return _("⏱ {time}").format(time=turn_time(seconds))
    if action == "n":
        return ngettext("👥 {n} player", "👥 {n} players", players or 0).format(n=players)
    return labels[action]


def replay_label() -> str:
    return _("▶️ Replay")


def replay_open_text() -> str:
    return _("▶️ The replay of your match: step through it move by move.")


def rematch_button(answer: str) -> str:
    return _("🔁 Play again") if answer == "y" else _("✖️ Not this time")


def open_label() -> str:
    return _("🃏 Open the table")


# -- notifications ---------------------------------------------------------------------------------
def start_text(table: Any) -> str:
    names = ", ".join(seat_label(s) for s in table.seats)
    lines = [
        _("🎴 <b>{game}</b>: the game begins!").format(game=game_name(table.game)),
        _("Players: {names}").format(names=names),
    ]
    variants = variants_line(getattr(table, "variants", None) or [])
    if variants:
        lines.append(variants)
    return "\n".join(lines)


def turn_text(table: Any, seconds_left: int | None = None) -> str:
    """The private "your turn" message; ``seconds_left`` of the turn timer if it runs."""
    text = _("⏰ Your turn in <b>{game}</b>.").format(game=game_name(table.game))
    if seconds_left is not None and seconds_left > 0:
        text += " " + _("{n} s left.").format(n=seconds_left)
    return text


def turn_done_text() -> str:
    """The live "your turn" message once no table waits for the player any more."""
    return _("✅ Done: no table is waiting for your move.")


def _others(table: Any, user_id: int, limit: int = NAME_IN_LIST) -> str:
    return ", ".join(seat_label_short(s, limit) for s in getattr(table, "seats", []) if s.user_id != user_id)


def seat_label_short(seat: Any, limit: int) -> str:
    if getattr(seat, "computer", False):
        return seat_label(seat)
    return name(getattr(seat, "name", None) or getattr(seat, "seat", "?"), limit)


def waiting_row(table: Any, user_id: int) -> str:
    """One table in the live "your turn" message: the game and the others at it."""
    return _("• <b>{game}</b> with {names}").format(game=game_name(table.game), names=_others(table, user_id))


def waiting_button(n: int, table: Any) -> str:
    """The button opening the ``n``-th listed table (plain text: no HTML in buttons)."""
    return _("🃏 {n}. {game}").format(n=n, game=html.unescape(game_name(table.game)))


def turns_text(rows: list[str], listed: int) -> str:
    """The live "your turn" message for several tables: ``rows`` from :func:`waiting_row`,
    the first ``listed`` numbered like their buttons, the rest counted."""
    head = [ngettext("⏰ Your turn at {n} table:", "⏰ Your turn at {n} tables:", len(rows)).format(n=len(rows))]
    numbered = [f"{i}. {row.lstrip('• ')}" for i, row in enumerate(rows[:listed], 1)]
    more = len(rows) - len(numbered)
    tail = [more_text(more)] if more > 0 else []
    return fit(head, numbered, tail)


def _names(table: Any) -> dict[str, str]:
    return {s.seat: seat_label(s) for s in getattr(table, "seats", [])}


def _signed(n: Any) -> str:
    try:
        return f"{int(n):+d}"
    except (TypeError, ValueError):
        return esc(n)


def round_text(table: Any, info: Mapping[str, Any]) -> str:
    """Prší round result: ``info`` like the engine's ``round_end`` event
    (``round``, ``round_points``, ``points``, ``winner``)."""
    names = _names(table)
    rounds = 5
    lines = [
        _("🃏 <b>{game}</b>, round {round}/{rounds} is over.").format(
            game=game_name(table.game), round=info.get("round", "?"), rounds=rounds
        )
    ]
    winner = info.get("winner")
    if winner:
        lines.append(_("{name} won the round.").format(name=names.get(winner, name(winner))))
    round_points = info.get("round_points") or {}
    points = info.get("points") or {}
    order = sorted(points or round_points, key=lambda s: (points.get(s, 0), s))
    for seat in order:
        lines.append(
            _("{name}: +{round} → {total}").format(
                name=names.get(seat, name(seat)), round=round_points.get(seat, 0), total=points.get(seat, 0)
            )
        )
    return "\n".join(lines)


def end_text(table: Any, info: Mapping[str, Any]) -> str:
    """The final table: places, points (Prší) and balances; ``info`` like ``match_end``/``game_end``."""
    names = _names(table)
    places = info.get("places") or {}
    balances = info.get("balances") or {}
    points = info.get("points") or {}
    seats = list(places) or list(balances) or [s.seat for s in getattr(table, "seats", [])]
    seats.sort(key=lambda s: (places.get(s, 99), -(balances.get(s) or 0), s))
    lines = [_("🏁 <b>{game}</b>: final table").format(game=game_name(table.game))]
    medals = {1: "🥇", 2: "🥈", 3: "🥉"}
    for seat in seats:
        place = places.get(seat)
        prefix = medals.get(place, f"{place}.") if place else "·"
        row = f"{prefix} {names.get(seat, name(seat))}"
        if seat in points:
            row += " — " + ngettext("{n} point", "{n} points", int(points[seat] or 0)).format(n=points[seat])
        if seat in balances:
            row += f" ({_signed(balances[seat])})"
        lines.append(row)
    tail = []
    unplayed = [s for s in info.get("unplayed") or () if isinstance(s, str)]
    if unplayed:  # P16 as amended: a seat whose person never made a move of their own
        tail.append(_("This match is not rated: {names} never made a move of their own.").format(
            names=", ".join(names.get(s, name(s)) for s in unplayed[:6])))
    elif not getattr(table, "rated", True) and getattr(table, "variants", None):
        tail.append(_("This match is not rated (a friendly table with variants)."))
    elif not getattr(table, "rated", True):
        tail.append(_("This match is not rated (computer players took part)."))
    return fit(lines[:1], lines[1:], tail)


# -- commands ------------------------------------------------------------------------------------
def name_alone(value: Any) -> str:
    return name(value, NAME_ALONE)


def welcome_text(who: str) -> str:
    return "\n".join(
        [
            _("Hello, {name}! I deal Czech Prší and Russian Penki.").format(name=name_alone(who)),
            "",
            _("Add me to a group and send /new prsi or /new penki there, or play right here."),
            _("I will message you here when it is your turn."),
            "",
            _("/help lists all commands."),
        ]
    )


def help_text() -> str:
    return "\n".join(
        [
            _("<b>Commands</b>"),
            _("/new prsi — a new Prší table"),
            _("/new penki — a new Penki table"),
            _("/rating — your weekly and monthly rating"),
            _("/top — this week's best players"),
            _("/rules — the rules in short"),
            _("/lang — choose the language"),
            _("/help — this list"),
        ]
    )


def command_menu() -> list[tuple[str, str]]:
    """Telegram's command menu (``setMyCommands``): (command, description) in the current locale."""
    return [
        ("new", _("New table: /new prsi or /new penki")),
        ("rating", _("Your weekly and monthly rating")),
        ("top", _("This week's best players")),
        ("rules", _("The rules in short")),
        ("lang", _("Choose the language")),
        ("help", _("All commands")),
    ]


def rules_text() -> str:
    """The rules in short, as the engine plays them (rules/RULES.md: the house rules of Prší,
    P1–P16; Penki R1–R19). The callouts keep their Russian names in every language."""
    return "\n".join(
        [
            _("<b>Prší</b> (32 cards; house rules: 3 players, 5 rounds; 2–5 players possible)"),
            _("Play a card of the suit in play or of the top card's rank, or draw one."),
            _("7: the next player draws 2 per seven in the chain or answers with a 7."),
            _("Ace: the next player stands or answers with an Ace."),
            _("Queen: goes on anything (but an active 7 or Ace) and names the suit."),
            _("Cards left in hand score points (Q 20, A 11, 7–10 face value, K 4, J 2); "
              "the lowest total after 5 rounds wins."),
            _("Balance: for each opponent, their total minus yours (totals 20, 50, 90 give +100, +10, −110)."),
            "",
            _("<b>Penki</b> (36 cards, 2–6 players, 3 by default)"),
            _("Everyone also gets 2 face-down stumps, unseen until the stock runs out."),
            _("Phase 1: draw and build piles upwards (6 on an Ace); a card that fits an opponent's pile "
              "must go there first."),
            _("Missed a fit? Any opponent may call {zevok}: every opponent then puts the top card of their pile "
              "on the blunderer's pile.").format(zevok="«ЗЕВОК!»"),
            _("Phase 2: your pile is your hand. Beat the top card with a higher one of its suit (♦ trumps, "
              "♠ only by ♠) or take the bottom card."),
            _("With one card left, call {one}. If you don't, anyone may ask {how} before the next play or take, "
              "and then every other player gives you a card.").format(one="«ОДНА КАРТА!»", how="«СКОЛЬКО КАРТ?»"),
            _("Get rid of all your cards, stumps included, to finish first."),
            _("Balance: +1 for each opponent you finish ahead of, −1 for each one ahead of you."),
            "",
            _("Leaderboards add up your best 3 balances of the week and best 5 of the month; "
              "games with computer players are not rated."),
        ]
    )


def lang_prompt() -> str:
    return _("Choose your language:")


def lang_done() -> str:
    return _("Language set: English.")


def chat_lang_prompt() -> str:
    return _("Choose the language of this chat's posts (chat admins):")


def chat_lang_done() -> str:
    return _("This chat's posts are in English now.")


def chat_lang_admins_only() -> str:
    return _("Only this chat's admins can set its language. Your own: /lang in our private chat.")


def unknown_game_text() -> str:
    return _("Which game? /new prsi or /new penki")


def anonymous_text() -> str:
    return _("Anonymous admins and channels cannot play. Please send the command as yourself.")


def private_only_rating_note() -> str:
    return _("I could not write to you privately. Open me and press Start, then try /rating again.")


def rating_sent_note() -> str:
    return _("I sent your rating to our private chat.")


def _row(row: Mapping[str, Any] | None) -> str:
    if not row:
        return _("no matches")
    matches = int(row.get("matches", 0) or 0)
    return _("score {score} · rank {rank} · {matches}").format(
        score=_signed(row.get("score", 0)), rank=row.get("rank", "?"),
        matches=ngettext("{n} match", "{n} matches", matches).format(n=matches),
    )


def rating_text(who: str, per_game: Mapping[str, Mapping[str, Any]], *, in_chat: bool,
                replay_link: Any = None) -> str:
    """``per_game``: game → ``{"all": user_rating(...), "chat": user_rating(..., chat_id)|None}``.

    Per game: this week's and this month's score, rank and matches among all players
    and (``in_chat``) in this chat, then the last results (balance and place), each a
    link to its replay when ``replay_link(table_id)`` gives one (issue 15).
    """
    lines = [_("📊 <b>Rating of {name}</b>").format(name=name_alone(who))]
    for game, data in per_game.items():
        everyone = data.get("all") or {}
        chat = data.get("chat") or {}
        lines.append("")
        lines.append(f"<b>{game_name(game)}</b>")
        for period in ("week", "month"):
            key = everyone.get(f"{period}_key", "")
            if period == "week":
                lines.append(_("This week ({dates})").format(dates=esc(period_label(key))))
            else:
                lines.append(_("This month ({month})").format(month=esc(period_label(key))))
            lines.append("  " + _("all players: {row}").format(row=_row(everyone.get(period))))
            if in_chat:
                lines.append("  " + _("in this chat: {row}").format(row=_row(chat.get(period))))
        last = everyone.get("last") or []
        if last:
            def result(r: Mapping[str, Any]) -> str:
                text = _("{balance} (place {place})").format(balance=_signed(r.get("balance", 0)),
                                                             place=r.get("place", "?"))
                url = replay_link(str(r["table"])) if replay_link is not None and r.get("table") else None
                return f'<a href="{esc(url)}">{text}</a>' if url else text

            results = ", ".join(result(r) for r in last[:5])
            lines.append(_("Last results: {results}").format(results=results))
    return "\n".join(lines)


def period_label(key: str) -> str:
    """A leaderboard period key in words of the current locale: ``"2026-W49"`` → "Nov 30 – Dec 6",
    ``"2026-11"`` → "November 2026" ("listopad 2026", "ноябрь 2026"); the key itself if unparsable."""
    from babel.dates import format_date, format_interval

    try:
        locale = get_i18n().current_locale
    except LookupError:
        locale = "en"
    try:
        if "-W" in key:
            year, week = key.split("-W")
            monday = date.fromisocalendar(int(year), int(week), 1)
            return format_interval(monday, monday + timedelta(days=6), "MMMd", locale=locale)
        year, month = key.split("-")
        return format_date(date(int(year), int(month), 1), "LLLL y", locale=locale)
    except (ValueError, LookupError):
        return key


def top_text(boards: list[tuple[str, str, list[Mapping[str, Any]]]]) -> str:
    """``boards``: (game, scope "chat"|"all", rows of ``store.leaderboard``)."""
    lines = [_("🏆 <b>Best players this week</b>")]
    for game, scope, rows in boards:
        lines.append("")
        title = _("{game} · this chat") if scope == "chat" else _("{game} · everyone")
        lines.append("<b>" + title.format(game=game_name(game)) + "</b>")
        if not rows:
            lines.append(_("no matches yet"))
        for row in rows:
            lines.append(
                f"{row.get('rank', '?')}. {name(row.get('name') or row.get('user_id'))} "
                f"{_signed(row.get('score', 0))} ({row.get('matches', 0)})"
            )
    return fit(lines[:1], lines[1:])


def topic_moved_text() -> str:
    """Appended to the first post of a table whose forum topic was closed or deleted."""
    return _("ℹ️ This table's forum topic is closed or was deleted, so the table now posts here.")


def open_table_text(table: Any) -> str:
    return _("🃏 Your <b>{game}</b> table is ready.").format(game=game_name(table.game))


def lobby_waiting_text(lobby: Any) -> str:
    text = _("This <b>{game}</b> game has not started yet. Once it runs, I will write to you here when it is your turn.")
    return text.format(game=game_name(lobby.game))
