"""Typed rejections of actions (conformance/FORMAT.md, "Output")."""

from __future__ import annotations

from typing import Literal

Reason = Literal["bad_action", "game_over", "not_your_turn", "not_in_hand", "illegal"]
REASONS: tuple[Reason, ...] = ("bad_action", "game_over", "not_your_turn", "not_in_hand", "illegal")


class Rejected(Exception):
    """An action the rules refuse; the state it was applied to is unchanged.

    ``code`` is one of :data:`REASONS`, checked in that order (FORMAT.md);
    ``detail`` is a short English explanation for logs and the Mini App.
    """

    def __init__(self, code: Reason, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code: Reason = code
        self.detail = detail
