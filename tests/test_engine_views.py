"""``engine.views``: every seat's view at once (the live path's messages, webapp.ws.Frames)
equals ``engine.view`` seat by seat, for both games and every Prší variant, at every
step of random games; and the shared parts stay what each seat may see (S3)."""

from __future__ import annotations

import random

import pytest

import engine
from engine.prsi_variants import VARIANTS

GAMES = [
    ("prsi", ["a", "b", "c"], {}),
    ("prsi", ["a", "b", "c", "d"], {"variants": list(VARIANTS)}),
    ("prsi", ["a", "b"], {"variants": ["PV7", "PV2", "PV5"]}),
    ("penki", ["a", "b", "c"], {}),
    ("penki", ["a", "b", "c", "d", "e"], {}),
]


@pytest.mark.parametrize(("game", "players", "options"), GAMES)
@pytest.mark.parametrize("seed", range(4))
def test_views_equal_one_view_per_seat_at_every_step(game, players, options, seed) -> None:
    state = engine.new_game(game, players, dealer=players[-1], seed=seed, options=options or None)
    rng = random.Random(seed)
    asked = [*players, None, "nobody"]  # a spectator and a seat not at the table see the public view
    steps = 0
    while not state.over and steps < 400:
        views = engine.views(state, asked)
        assert list(views) == asked
        for seat in asked:
            assert views[seat] == engine.view(state, seat), (game, seed, steps, seat)
        movers = [(s, a) for s in players for a in engine.legal_actions(state, s)]
        if not movers:
            break
        seat, action = rng.choice(movers)
        state = engine.apply(state, seat, action).state
        steps += 1
    assert steps > 20


def test_a_seat_view_shares_only_public_parts() -> None:
    """The views share what everyone sees; a hand and the legal moves are each seat's own objects."""
    state = engine.new_game("prsi", ["a", "b", "c"], dealer="c", seed=5)
    views = engine.views(state, ["a", "b"])
    assert views["a"]["last"] is views["b"]["last"]
    assert views["a"]["hand"] is not views["b"]["hand"]
    assert views["a"]["hand"] != views["b"]["hand"]
    assert views["a"]["legal"] is not views["b"]["legal"]
    assert views["b"]["legal"] == []  # not b's turn: a's moves never leak into b's view


@pytest.mark.parametrize(("game", "players", "options"), GAMES)
def test_events_are_never_changed_once_made(game, players, options) -> None:
    """Views, dumps and loaded states share the event dicts of ``last`` (no copies): that is
    sound only while the engine never changes an event after making it, checked here
    against a deep copy of every event, through dump/load round trips too."""
    import copy

    state = engine.new_game(game, players, dealer=players[0], seed=11, options=options or None)
    rng = random.Random(11)
    made: list[tuple[dict, dict]] = [(e, copy.deepcopy(e)) for e in state.last]
    for step in range(300):
        movers = [(s, a) for s in players for a in engine.legal_actions(state, s)]
        if state.over or not movers:
            break
        seat, action = rng.choice(movers)
        out = engine.apply(state, seat, action)
        made += [(e, copy.deepcopy(e)) for e in out.events]
        state = engine.load(engine.dump(out.state)) if step % 3 == 0 else out.state
        engine.views(state, players)
    assert len(made) > 50
    assert all(e == snapshot for e, snapshot in made)
