"""Memory: the size of a dumped state's JSON and the heap of 1,000 live states."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from typing import Any

LIVE_STATES = 1_000


def _midgame(game: str, players: list[str], seed: int, actions: int) -> Any:
    """A state after up to ``actions`` random legal actions from a fresh deal."""
    import engine

    rng = random.Random(seed)
    state = engine.new_game(game, players, dealer=players[-1], seed=seed)
    for _ in range(actions):
        if state.over:
            break
        seat = engine.awaiting(state)[0]
        state = engine.apply(state, seat, rng.choice(engine.legal_actions(state, seat))).state
    return state


def _json_bytes(state: Any) -> int:
    import engine

    return len(json.dumps(engine.dump(state), ensure_ascii=False, separators=(",", ":")).encode())


def measure(game: str, players: list[str], live: int = LIVE_STATES) -> dict[str, Any]:
    """Dump sizes (fresh, after 20 and 60 actions) and tracemalloc of ``live`` loaded states.

    The live states are rebuilt with ``engine.load`` from JSON dumps made beforehand
    (as a server process holds them after reading Redis), so the figure is the
    states' own heap, not the garbage of the playouts that produced them.
    """
    import engine

    sizes = {f"dump_bytes_after_{k}": _json_bytes(_midgame(game, players, 7, k)) for k in (0, 20, 60)}
    dumps = [json.dumps(engine.dump(_midgame(game, players, seed, 20 + seed % 40)))
             for seed in range(1, live + 1)]
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        states = [engine.load(json.loads(text)) for text in dumps]
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(states) == live
    del states
    return {
        **sizes,
        "live_states": live,
        "live_bytes": current - before,
        "peak_bytes": peak - before,
        "bytes_per_state": round((current - before) / live),
    }
