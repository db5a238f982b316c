"""The Mini App's stylesheet is well formed: every block closed, so no rule after a merge
slip silently swallows the rest of the file (it once lost the variants' and round-end
styles). Comments and strings are left out of the count."""

from __future__ import annotations

import re
from pathlib import Path

CSS = Path(__file__).resolve().parent.parent / "webapp" / "static" / "style.css"


def test_every_css_block_is_closed():
    text = re.sub(r"/\*.*?\*/", "", CSS.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', "", text)
    depth = 0
    for n, line in enumerate(text.splitlines(), 1):
        for ch in line:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            assert depth >= 0, f"an extra '}}' on line {n}"
        if re.match(r"^(\.|#|@media|:root|html|body|[a-z]+\s*\{)", line) and line.rstrip().endswith("{"):
            # a top-level rule opens only at depth 1, or 2 inside @media
            assert depth <= 2, f"line {n} opens a rule inside an unclosed block: {line.strip()}"
    assert depth == 0, "a block is never closed"
