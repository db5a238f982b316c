"""Replays (issue 15): a table's game again, action by action, from its log.

:meth:`Replays.replay` deals the table again from its seed (the engine is
deterministic), applies the logged actions in order and returns one frame per
state: what ``seat`` saw then (``engine.view``; S3), and, once the game is over,
every hand as it was (the game has ended, nothing is hidden any more). The last
frame must equal the stored state, else ``StoreError("invalid")``: a replay never
shows a game that was not played.
"""

from __future__ import annotations

from typing import Any

import engine
from store.common import StoreBase
from store.models import StoreError

_DROP = ("legal", "last")  # a frame carries its own events; a replay offers no moves


class Replays(StoreBase):
    """The replays part of :class:`store.Store`."""

    async def replay(self, table_id: str, seat: str | None) -> dict[str, Any]:
        """``{table, game, players, over, rounds, frames}`` of table ``table_id`` for viewer ``seat``.

        ``frames[k]``: ``{version, seat, by, action, events, view, hands?}`` — the state
        after the k-th action (frame 0: the deal), ``view`` as ``seat`` saw it (a
        spectator's when ``seat`` is ``None``), ``hands`` (every seat's cards, and for
        Penki ``stumps``) only when the game is over. ``rounds``: the first frame of each
        Prší round / Penki phase (``{"round": n, "frame": k}``), for jumping.
        ``StoreError``: ``not_found``, ``invalid`` (the log does not replay to the table).
        """
        doc = await self._doc(table_id)
        if doc is None:
            raise StoreError("not_found", f"table {table_id}")
        entries = await self.log(table_id)
        case = await self.export_case(table_id)
        state = engine.new_game(doc["game"], case["players"], dealer=doc["dealer"], seed=doc["seed"],
                                options=case.get("options"))
        stored = engine.load(doc["state"])
        reveal = bool(stored.over)
        if seat not in case["players"]:
            seat = None
        states = [state]
        events_of: list[list[dict[str, Any]]] = []  # from the engine: a finished game's log keeps none
        for e in entries:
            outcome = engine.apply(state, e["seat"], e["action"])
            state = outcome.state
            states.append(state)
            events_of.append(outcome.events)
        if engine.dump(state) != engine.dump(stored):
            raise StoreError("invalid", "the log does not replay to this table")
        frames = []
        rounds: list[dict[str, int]] = []
        mark = None
        for k, st in enumerate(states):
            view = {key: v for key, v in engine.view(st, seat).items() if key not in _DROP}
            e = entries[k - 1] if k else None
            frame: dict[str, Any] = {
                "version": st.version, "seat": e["seat"] if e else None, "by": e.get("by") if e else None,
                "action": e["action"] if e else None, "events": events_of[k - 1] if e else list(st.last), "view": view,
            }
            if reveal:
                frame["hands"] = _hands(st)
            here = st.round if doc["game"] == "prsi" else st.phase
            if here != mark:
                rounds.append({"round": here, "frame": k})
                mark = here
            frames.append(frame)
        return {"table": table_id, "game": doc["game"], "players": case["players"], "seat": seat,
                "names": {s["seat"]: s["name"] for s in doc["seats"]}, "over": reveal,
                "variants": case.get("options", {}).get("variants", []), "rounds": rounds, "frames": frames}


def _hands(state: Any) -> dict[str, Any]:
    """Every hand (and Penki's stumps) of an over game's frame."""
    hands = state.hands
    if isinstance(hands, dict):  # Penki keeps hands and stumps by seat
        out: dict[str, Any] = {"hands": {p: list(hands.get(p, ())) for p in state.players}}
        out["stumps"] = {p: list(state.stumps.get(p, ())) for p in state.players}
        return out
    return {"hands": {p: list(h) for p, h in zip(state.players, hands, strict=True)}}
