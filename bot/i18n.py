"""Languages (S8): gettext catalogues ``bot/locales/{cs,ru,en}/LC_MESSAGES/karty.mo``.

A user's language is the one they chose (``/lang`` here, or the switch in the Mini App),
else the one of their Telegram client (``language_code``: cs/sk → Czech, ru/uk/be/kk →
Russian), else English: one precedence, kept by :mod:`store.languages` in
``store.User.language`` for every process. Group posts use the chat's language when a
chat admin set one with ``/lang`` in the group, else the language of the table's opener.

Texts rendered outside a handler (debounced lobby edits, notifications) use
:func:`locale_scope`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiogram.types import TelegramObject
from aiogram.types import User as TgUser
from aiogram.utils.i18n import I18n, I18nMiddleware

log = logging.getLogger(__name__)

LOCALES_DIR = Path(__file__).parent / "locales"
CACHE_SECONDS = 30.0  # a language chosen in the Mini App reaches the bot's texts this soon
DOMAIN = "karty"
LANGUAGES: tuple[str, ...] = ("en", "cs", "ru")
DEFAULT = "en"
LANGUAGE_NAMES = {"en": "English", "cs": "Čeština", "ru": "Русский"}



def make_i18n() -> I18n:
    """The I18n over the compiled catalogues (``RuntimeError`` if a ``.po`` is not compiled)."""
    return I18n(path=LOCALES_DIR, default_locale=DEFAULT, domain=DOMAIN)


def pick_language(code: str | None) -> str:
    """Telegram ``language_code`` ("cs", "sk", "uk-UA", "en-us", None …) → "cs" | "ru" | "en":
    :func:`store.models.language_of`, the one mapping of the bot, the Mini App and the store."""
    from store.models import language_of

    return language_of(code)


@contextlib.contextmanager
def locale_scope(i18n: I18n, locale: str | None) -> Iterator[None]:
    """Make ``gettext``/``_`` translate into ``locale`` inside the block."""
    with i18n.context(), i18n.use_locale(locale if locale in LANGUAGES else DEFAULT):
        yield


def display_name(user: TgUser) -> str:
    """``first_name last_name`` (raw: escape before putting it into HTML)."""
    return " ".join(p for p in (user.first_name, user.last_name) if p).strip() or (user.username or str(user.id))


class LanguagePrefs:
    """Which users chose their language explicitly (``/lang``).

    Kept by the store (the durable flag set ``lang_explicit``); remembered in this
    process too, so a store outage only loses what other processes learnt.
    """

    FLAG = "lang_explicit"

    def __init__(self, store: Any) -> None:
        self.store = store
        self._local: set[int] = set()

    async def is_explicit(self, user_id: int) -> bool:
        """Whether ``user_id`` picked a language with /lang (else Telegram's language_code rules)."""
        if user_id in self._local:
            return True
        try:
            return await self.store.has_flag(self.FLAG, user_id)
        except Exception:
            log.exception("reading the language flag failed")
        return False

    async def mark(self, user_id: int) -> None:
        """Record that ``user_id`` picked a language with /lang."""
        self._local.add(user_id)
        try:
            await self.store.set_flag(self.FLAG, user_id)
        except Exception:
            log.exception("storing the language flag failed")


class UserLocaleMiddleware(I18nMiddleware):
    """Inner middleware for messages, callback queries and errors.

    Runs only for updates a handler takes (plain group chatter costs nothing): saves
    the Telegram user into the store when their name, username or language changed
    (``store.save_user``), puts ``user`` (``store.User``) and ``locale`` into the
    handler data, and wraps the handler in that locale.
    """

    def __init__(self, i18n: I18n, store: Any, prefs: LanguagePrefs) -> None:
        super().__init__(i18n=i18n)
        self.store = store
        self.prefs = prefs
        self._seen: dict[int, tuple[str, str | None, str | None, float]] = {}

    async def resolve_user(self, tg_user: TgUser) -> Any:
        """The stored ``User`` for ``tg_user``, created or refreshed as needed."""
        from store import User  # late import: the store package is a peer

        name = display_name(tg_user)
        cached = self._seen.get(tg_user.id)
        now = time.monotonic()
        if cached is not None and cached[:2] == (name, tg_user.username) and now - cached[3] < CACHE_SECONDS:
            return User(id=tg_user.id, name=name, username=tg_user.username, language=cached[2])
        # the one precedence (store.languages): an explicit choice, else Telegram's code mapped
        user = await self.store.seen_user(tg_user.id, name, tg_user.username, tg_user.language_code)
        language = user.language
        if len(self._seen) > 50_000:
            self._seen.clear()
        self._seen[tg_user.id] = (name, tg_user.username, language, now)
        return user

    def forget(self, user_id: int) -> None:
        """Drop the cache for ``user_id`` (after ``/lang``)."""
        self._seen.pop(user_id, None)

    async def get_locale(self, event: TelegramObject, data: dict[str, Any]) -> str:
        if "locale" in data:
            return data["locale"]
        tg_user: TgUser | None = data.get("event_from_user")
        if tg_user is None or tg_user.is_bot:
            data["locale"] = DEFAULT
            return DEFAULT
        try:
            user = await self.resolve_user(tg_user)
            data["user"] = user
            locale = user.language if user.language in LANGUAGES else pick_language(tg_user.language_code)
        except Exception:
            log.exception("could not load user %s", tg_user.id)
            locale = pick_language(tg_user.language_code)
        data["locale"] = locale
        return locale
