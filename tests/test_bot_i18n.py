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


def code_msgids() -> set[str]:
    found = extract_from_dir(str(ROOT / "bot"), method_map=[("**.py", "python")], keywords={"_": None})
    return {msg for _file, _line, msg, _comments, _ctx in found if isinstance(msg, str)}


@pytest.mark.parametrize("lang", ["cs", "ru"])
def test_every_text_is_translated_with_its_placeholders(lang):
    cat = catalog(lang)
    ids = {m.id for m in cat if m.id}
    assert code_msgids() <= ids, "run: python -m bot extract && python -m bot update"
    for m in cat:
        if not m.id:
            continue
        assert m.string, f"{lang}: untranslated {m.id!r}"
        assert sorted(PLACEHOLDER.findall(m.id)) == sorted(PLACEHOLDER.findall(m.string)), (lang, m.id)
        assert "fuzzy" not in m.flags, (lang, m.id)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_compiled_catalogues_match_the_sources(lang):
    with open(LOCALES_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.mo", "rb") as f:
        mo = gettext.GNUTranslations(f)
    for m in catalog(lang):
        if m.id and m.string:
            assert mo.gettext(m.id) == m.string, "run: python -m bot compile-locales"


def test_language_from_telegram_code_and_fallback():
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
