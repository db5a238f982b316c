"""Random legal playouts, actions per CPU second: Prší and Penki beside RLCard's UNO.

Each measure plays whole games from consecutive seeds until its budget of this
process's CPU time (``time.process_time``: other work on the shared machine does
not count) is spent, choosing uniformly with a seeded ``random.Random`` among the
legal actions of the seat the game waits for. UNO is RLCard's pure-Python
``UnoGame`` (``init_game``, ``get_legal_actions``, ``step``), the reference the Prší
engine must beat by :data:`PRSI_VS_UNO_TARGET` and Penki by
:data:`PENKI_VS_UNO_TARGET`, in alternating rounds of one run (:func:`compare`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

PRSI_VS_UNO_TARGET = 3.5  # issue 24: with room (3.0 before)
PENKI_VS_UNO_TARGET = 3.0  # issue 24 (2.5 before)
MAX_ACTIONS = 20_000  # a random game longer than this is cut off (and counted)


def timed(play: Callable[[int], tuple[int, bool]], budget_s: float, min_games: int = 3,
          first_seed: int = 1) -> dict[str, Any]:
    """Run ``play(seed)`` for seeds ``first_seed``, +1, … until ``budget_s`` CPU seconds are spent (≥ ``min_games``).

    ``play`` returns ``(actions, finished)``. Returns games, actions, seconds (CPU),
    actions_per_s, matches_per_s (per CPU second) and how many games hit :data:`MAX_ACTIONS`.
    """
    games = actions = cut = 0
    seed = first_seed - 1
    start = time.process_time()
    while True:
        seed += 1
        n, finished = play(seed)
        games += 1
        actions += n
        cut += not finished
        elapsed = time.process_time() - start
        if elapsed >= budget_s and games >= min_games:
            break
    return {
        "games": games,
        "actions": actions,
        "seconds": round(elapsed, 3),
        "actions_per_s": round(actions / elapsed, 1),
        "matches_per_s": round(games / elapsed, 2),
        "actions_per_game": round(actions / games, 1),
        "cut_off": cut,
    }


def compare(play_a: Callable[[int], tuple[int, bool]], play_b: Callable[[int], tuple[int, bool]],
            budget_s: float, rounds: int = 5) -> tuple[dict[str, Any], dict[str, Any], float]:
    """Time ``play_a`` and ``play_b`` in alternating rounds; returns (a, b, median ratio a/b).

    Other work on the machine slows both sides of a round alike, so the median of
    the per-round ratios is steadier than the ratio of two separate runs. ``a`` and
    ``b`` are :func:`timed`-style totals plus ``best_actions_per_s`` and ``rounds``.
    """
    (a, b), (ratio,) = compare_many([play_a, play_b], budget_s, rounds)
    return a, b, ratio


def compare_many(plays: list[Callable[[int], tuple[int, bool]]], budget_s: float,
                 rounds: int = 5) -> tuple[list[dict[str, Any]], list[float]]:
    """Time every ``plays[k]`` in turn, round after round; the last is the reference.

    Returns each one's :func:`timed`-style totals and, for each but the last, the
    median over rounds of its actions/s divided by the reference's in the same round.
    """
    parts: list[list[dict[str, Any]]] = [[] for _ in plays]
    seeds = [1] * len(plays)
    for _ in range(rounds):
        for k, play in enumerate(plays):
            r = timed(play, budget_s / rounds, min_games=1, first_seed=seeds[k])
            seeds[k] += r["games"]
            parts[k].append(r)
    ref = parts[-1]
    medians = []
    for mine in parts[:-1]:
        ratios = sorted(m["actions_per_s"] / r["actions_per_s"] for m, r in zip(mine, ref, strict=True))
        medians.append(round(ratios[len(ratios) // 2], 2))
    return [_total(p) for p in parts], medians


def _total(parts: list[dict[str, Any]]) -> dict[str, Any]:
    games = sum(p["games"] for p in parts)
    actions = sum(p["actions"] for p in parts)
    seconds = sum(p["seconds"] for p in parts)
    return {
        "games": games,
        "actions": actions,
        "seconds": round(seconds, 3),
        "actions_per_s": round(actions / seconds, 1),
        "best_actions_per_s": max(p["actions_per_s"] for p in parts),
        "matches_per_s": round(games / seconds, 2),
        "actions_per_game": round(actions / games, 1),
        "cut_off": sum(p["cut_off"] for p in parts),
        "rounds": len(parts),
    }


def engine_random_playout(game: str, players: list[str]) -> Callable[[int], tuple[int, bool]]:
    """A ``play(seed)`` for :func:`timed`: one whole game of random legal actions."""
    import engine

    def play(seed: int) -> tuple[int, bool]:
        rng = random.Random(seed)
        state = engine.new_game(game, players, dealer=players[-1], seed=seed)
        n = 0
        while not state.over and n < MAX_ACTIONS:
            waiting = engine.awaiting(state)
            if not waiting:
                raise RuntimeError(f"{game}: nobody awaited at action {n} (seed {seed})")
            seat = waiting[0] if len(waiting) == 1 else rng.choice(waiting)
            legal = engine.legal_actions(state, seat)
            if not legal:
                raise RuntimeError(f"{game}: {seat} awaited but has no legal action (seed {seed})")
            state = engine.apply(state, seat, rng.choice(legal)).state
            n += 1
        return n, bool(state.over)

    return play


def uno_random_playout(num_players: int) -> Callable[[int], tuple[int, bool]]:
    """RLCard's UNO with random legal actions; ``ImportError`` without rlcard."""
    import numpy as np
    from rlcard.games.uno.game import UnoGame

    def play(seed: int) -> tuple[int, bool]:
        rng = random.Random(seed)
        game = UnoGame(num_players=num_players)
        game.np_random = np.random.RandomState(seed)
        game.init_game()
        n = 0
        while not game.is_over() and n < MAX_ACTIONS:
            game.step(rng.choice(game.get_legal_actions()))
            n += 1
        return n, bool(game.is_over())

    return play


def computer_play_out(game: str, players: list[str]) -> Callable[[int], tuple[int, bool]]:
    """``engine.__main__.play_out`` (computer vs computer, callouts first) as a ``play(seed)``."""
    from engine.__main__ import play_out

    def play(seed: int) -> tuple[int, bool]:
        state, n = play_out(game, players, seed, max_actions=MAX_ACTIONS)
        return n, bool(state.over)

    return play
