"""``python -m bot compile-locales | extract | update`` — the gettext catalogues, no make needed.

* ``extract``: scan ``bot/**.py`` for ``_(...)`` into ``bot/locales/karty.pot``;
* ``update``: merge the template into ``bot/locales/{cs,ru,en}/LC_MESSAGES/karty.po``
  (creating missing ones);
* ``compile-locales``: ``.po`` → ``.mo`` (the ``.mo`` files are committed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from babel.messages.frontend import CommandLineInterface

from bot.i18n import DOMAIN, LANGUAGES, LOCALES_DIR

ROOT = Path(__file__).resolve().parent.parent
POT = LOCALES_DIR / f"{DOMAIN}.pot"


def _babel(*args: str) -> None:
    CommandLineInterface().run(["pybabel", "-q", *args])


def extract() -> None:
    _babel("extract", "-F", str(ROOT / "bot" / "babel.cfg"), "-k", "_", "-k", "__", "--no-location",
           "--sort-output", "--project=karty", "-o", str(POT), str(ROOT / "bot"))


def update() -> None:
    for lang in LANGUAGES:
        po = LOCALES_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
        if po.exists():
            _babel("update", "-i", str(POT), "-d", str(LOCALES_DIR), "-D", DOMAIN, "-l", lang, "--no-fuzzy-matching")
        else:
            _babel("init", "-i", str(POT), "-d", str(LOCALES_DIR), "-D", DOMAIN, "-l", lang)


def compile_locales() -> None:
    _babel("compile", "-d", str(LOCALES_DIR), "-D", DOMAIN, "--use-fuzzy")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"extract": extract, "update": update, "compile-locales": compile_locales}
    if not argv or argv[0] not in commands:
        print("usage: python -m bot {extract|update|compile-locales}", file=sys.stderr)
        return 2
    commands[argv[0]]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
