"""The gettext catalogues: complete, placeholders intact, compiled .mo matching the .po."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from bot.i18n import DOMAIN, LANGUAGES, LOCALES_DIR, locale_scope, make_i18n, pick_language

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def catalog(lang: str):
    with open(LOCALES_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po", "rb") as f:
        return read_po(f, locale=lang)


def code_msgids() -> set[str | tuple[str, ...]]:
    found = extract_from_dir(str(ROOT / "bot"), method_map=[("**.py", "python")],
                             keywords={"_": None, "ngettext": (1, 2)})
    return {msg for _file, _line, msg, _comments, _ctx in found}


@pytest.mark.parametrize("lang", ["cs", "ru"])
def test_every_text_is_translated_with_its_placeholders(lang):
    cat = catalog(lang)
    ids = {m.id for m in cat if m.id}
    assert code_msgids() <= ids, "run: python -m bot extract && python -m bot update"
    for m in cat:
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strings = m.string if isinstance(m.string, tuple) else (m.string,)
        if isinstance(m.id, tuple):  # ngettext: every plural form of the language is there
            assert len(strings) == cat.num_plurals, (lang, m.id)
        for string in strings:
            assert string, f"{lang}: untranslated {m.id!r}"
            assert sorted(PLACEHOLDER.findall(ids[-1])) == sorted(PLACEHOLDER.findall(string)), (lang, m.id)
        assert "fuzzy" not in m.flags, (lang, m.id)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_compiled_catalogues_match_the_sources(lang):
    with open(LOCALES_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo", "rb") as f:
        mo = gettext.GNUTranslations(f)
    for m in catalog(lang):
        if isinstance(m.id, tuple):
            for n, string in ((1, m.string[0]), (5, m.string[-1])):
                if string:
                    assert mo.ngettext(m.id[0], m.id[1], n) == string, "run: python -m bot compile-locales"
        elif m.id and m.string:
            got = mo.pgettext(m.context, m.id) if m.context else mo.gettext(m.id)  # Mini App keys with their own
            assert got == m.string, "run: python -m bot compile-locales"


def test_s8_language_from_telegram_code_and_fallback():
    assert [pick_language(c) for c in ("cs", "sk", "ru-RU", "uk", "en-US", "de", None)] == [
        "cs", "cs", "ru", "ru", "en", "en", "en"]
    i18n = make_i18n()
    from bot import texts

    with locale_scope(i18n, "cs"):
        assert texts.error_text("full") == "Stůl je plný."
    with locale_scope(i18n, "xx"):
        assert texts.error_text("full") == "The table is full."


def test_locale_command_usage(capsys):
    from bot.__main__ import main

    assert main(["nope"]) == 2
    assert "compile-locales" in capsys.readouterr().err


@pytest.mark.parametrize("lang,forms", [
    ("en", ["1 match", "2 matches", "5 matches"]),
    ("cs", ["1 zápas", "2 zápasy", "5 zápasů"]),
    ("ru", ["1 партия", "2 партии", "5 партий"]),
])
def test_counts_take_the_languages_plural_forms(lang, forms):
    from bot import texts

    with locale_scope(make_i18n(), lang):
        rows = [texts._row({"score": 3, "rank": 1, "matches": n}) for n in (1, 2, 5)]
        buttons = [texts.lobby_button("n", players=n) for n in (2, 5)]
    assert [row.rsplit(" · ", 1)[1] for row in rows] == forms
    assert buttons[0] != buttons[1] or lang == "en"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_rules_follow_the_house_rules(lang):
    """/rules (rules/RULES.md): Prší's house rules (3 players, 5 rounds), balances for both
    games, and the Penki callouts under their Russian names in every language."""
    from bot import texts

    with locale_scope(make_i18n(), lang):
        text = texts.rules_text()
    for callout in ("«ЗЕВОК!»", "«ОДНА КАРТА!»", "«СКОЛЬКО КАРТ?»"):
        assert callout in text
    assert "+100, +10, −110" in text  # P14's example
    assert "3" in text.splitlines()[0] and "5" in text.splitlines()[0]
    assert "+1 " in text and "−1 " in text  # R19


@pytest.mark.parametrize("lang,week,month", [
    ("en", "Nov 30 – Dec 6", "November 2026"),
    ("cs", "30. 11. – 6. 12.", "listopad 2026"),
    ("ru", "30 нояб. — 6 дек.", "ноябрь 2026"),
])
def test_rating_periods_in_words(lang, week, month):
    from bot import texts

    with locale_scope(make_i18n(), lang):
        assert texts.period_label("2026-W49").replace("\u2009", " ") == week  # CLDR puts thin spaces
        assert texts.period_label("2026-11") == month
        assert texts.period_label("nonsense") == "nonsense"


def test_the_mini_apps_texts_come_from_the_same_catalogues():
    """One source of translations (issue 12 point 1): the Mini App's texts are generated from
    the bot's gettext catalogues, so a term both use is one msgid, translated once."""
    import json

    from bot.__main__ import APP_TEXTS, APP_TEXTS_JS, app_texts_js

    assert APP_TEXTS_JS.read_text(encoding="utf-8") == app_texts_js(), "run: python -m bot app-texts"
    doc = json.loads(APP_TEXTS.read_text(encoding="utf-8"))
    own = set(doc["own_context"])
    shared = 0
    for lang in ("cs", "ru"):
        cat = catalog(lang)
        for key, english in doc["texts"].items():
            message = cat.get(english, context=key if key in own else None)
            assert message is not None and message.string, (lang, key)
        bot_ids = {m for m in code_msgids() if isinstance(m, str)}
        shared = len(bot_ids & set(doc["texts"].values()))
    assert shared >= 5  # e.g. the game names: written once for both
    assert "const T = {" not in (ROOT / "webapp" / "static" / "i18n.js").read_text(encoding="utf-8")
