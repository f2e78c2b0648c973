"""The raw OpenSpiel loop that ``torchenv bench`` compares ``OpenSpielEnv`` with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from torchenv_openspiel._games import load_game

__all__ = ["make_raw_loop"]


def make_raw_loop(env_id: str, kwargs: dict[str, Any]) -> Callable[[int], int]:
    """``run(steps)``: the game played by pyspiel with random legal actions.

    Each step reads every player's observation tensor (what the env hands the agents), applies
    the acting players' actions, samples chance outcomes and starts a new game once one is over.

    >>> run = make_raw_loop("kuhn_poker", {})
    >>> run(20)
    20
    """
    game = load_game(env_id, kwargs.get("parameters"))
    game_type = game.get_type()
    read = (
        "observation_tensor"
        if game_type.provides_observation_tensor
        else "information_state_tensor"
    )
    players = range(game.num_players())
    rng = np.random.default_rng(0)

    def new_state() -> Any:
        state = game.new_initial_state()
        resolve(state)
        return state

    def resolve(state: Any) -> None:
        while state.is_chance_node():
            actions, probabilities = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(actions, p=probabilities)))

    def run(steps: int) -> int:
        state = new_state()
        for _ in range(steps):
            if state.is_terminal():
                state = new_state()
            observations = [getattr(state, read)(p) for p in players]  # noqa: F841
            if state.is_simultaneous_node():
                state.apply_actions(
                    [int(rng.choice(state.legal_actions(p) or [0])) for p in players]
                )
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
            resolve(state)
        return steps

    run.close = lambda: None  # type: ignore[attr-defined]
    return run
