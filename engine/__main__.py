"""Command line: ``python -m engine replay CASE.json`` and ``python -m engine simulate``.

``replay`` follows ../shared/conformance/FORMAT.md exactly: it prints one JSON
object and exits 0, also when actions were rejected; it exits 2 only when the case
file is unreadable or invalid. ``simulate`` plays full games between computer
players and prints matches/s and actions/s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

import engine
from engine.errors import Rejected

CALLOUTS = frozenset({"zevok", "one_card", "how_many"})


def replay_case(case: dict[str, Any]) -> dict[str, Any]:
    """Replay one conformance case dict; returns ``{"results": [...], "state": {...}}``.

    Ratings cases (``"game": "ratings"``) return ``{"boards": {...}}``.
    Raises ``ValueError``/``KeyError``/``TypeError`` when the case itself is invalid.
    """
    game = case["game"]
    if game == "ratings":
        from engine import ratings

        return ratings.replay(case)
    players = list(case["players"])
    state = engine.new_game(game, players, dealer=case.get("dealer"), seed=case.get("seed"),
                            decks=case.get("decks"), options=case.get("options"))
    results: list[str] = []
    for act in case.get("actions", []):
        if not isinstance(act, dict):
            results.append("bad_action")
            continue
        seat = act.get("p")
        action = {k: v for k, v in act.items() if k != "p"}
        if seat not in players:
            results.append("bad_action")
            continue
        try:
            state = engine.apply(state, seat, action).state
            results.append("ok")
        except Rejected as rej:
            results.append(rej.code)
    return {"results": results, "state": engine.observer(state)}


def play_out(game: str, players: list[str], seed: int, max_actions: int = 100_000) -> tuple[Any, int]:
    """Play one whole game between computer players; returns ``(final_state, actions)``.

    Callouts (``zevok``, ``one_card``, ``how_many``) go first, as a fast player's
    would, and a seat's own declaration (``one_card``) before anyone's ask: a
    computer declares at once (else an asker early in seat order could catch every
    debtor, and two givers could pass one card to and fro forever). Otherwise the
    seats the game awaits act in seat order.
    """
    rng = random.Random(seed)
    state = engine.new_game(game, players, dealer=rng.choice(players), seed=seed)
    n = 0
    while not state.over and n < max_actions:
        chosen: tuple[str, dict[str, Any]] | None = None
        callout: tuple[str, dict[str, Any]] | None = None
        waiting = engine.awaiting(state)
        for seat in players:
            act = engine.computer_action(state, seat)
            if act is None:
                continue
            if act["a"] == "one_card":
                callout = (seat, act)
                break
            if act["a"] in CALLOUTS:
                callout = callout or (seat, act)
            elif chosen is None and seat in waiting:
                chosen = (seat, act)
        chosen = callout or chosen
        if chosen is None:
            raise RuntimeError(f"no computer action in {game} at action {n}")
        state = engine.apply(state, chosen[0], chosen[1]).state
        n += 1
    return state, n


def _simulate(args: argparse.Namespace) -> int:
    players = [f"p{i + 1}" for i in range(args.players)]
    actions = 0
    start = time.perf_counter()
    for i in range(args.games):
        _, n = play_out(args.game, players, args.seed + i)
        actions += n
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "game": args.game, "games": args.games, "players": args.players, "actions": actions,
        "seconds": round(elapsed, 3),
        "matches_per_s": round(args.games / elapsed, 1) if elapsed else None,
        "actions_per_s": round(actions / elapsed, 1) if elapsed else None,
    }))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``replay CASE.json`` or ``simulate``; returns the exit code (0, or 2 for an invalid case)."""
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("replay", help="replay a conformance case (FORMAT.md)")
    rp.add_argument("case")
    sp = sub.add_parser("simulate", help="play games between computer players")
    sp.add_argument("--game", choices=engine.GAMES, default="prsi")
    sp.add_argument("--games", type=int, default=100)
    sp.add_argument("--seed", type=int, default=1)
    sp.add_argument("--players", type=int, default=3)
    args = parser.parse_args(argv)
    if args.cmd == "simulate":
        return _simulate(args)
    try:
        with open(args.case, encoding="utf-8") as fh:
            case = json.load(fh)
        out = replay_case(case)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"invalid case {args.case}: {exc!r}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
