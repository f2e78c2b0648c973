"""Full games with random legal actions: every action taken was legal for OpenSpiel, and the
masks (``(group, "action_mask")``, ``(group, "mask")``, the action spec's mask) say exactly what
OpenSpiel allows, on every step.

Games: kuhn_poker (chance deals, 2 and 3 players), leduc_poker (chance mid-game),
tic_tac_toe (turn-based, no chance), goofspiel (simultaneous moves), matrix_rps (one
simultaneous move), oshi_zumo (simultaneous, many moves) and pig (dice: chance after most
moves). Each game under the default one group and one group per player, with index and one-hot
actions.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pyspiel")

from torchenv.envs import MarlGroupMapType
from torchenv_openspiel import OpenSpielEnv

pytestmark = pytest.mark.openspiel

GAMES = [
    ("kuhn_poker", 20),
    ("kuhn_poker(players=3)", 10),
    ("leduc_poker", 10),
    ("tic_tac_toe", 10),
    ("goofspiel(num_cards=4)", 10),
    ("matrix_rps", 10),
    ("oshi_zumo(coins=10,size=2)", 5),
    ("pig(winscore=10)", 3),
]


def _allowed(env, td, player: int) -> np.ndarray:
    """The allowed actions of ``player`` in ``td``'s masks, checked against the spec's mask."""
    group, index = env._layout.agent_group[env.agent_names[player]]
    mask = td[group, "action_mask"][index]
    spec_mask = env.full_action_spec[group, "action"].mask[index]
    assert torch.equal(mask, spec_mask), f"{group}: the action spec's mask is not the output's"
    return np.flatnonzero(mask.numpy())


def _check_masks(env, td) -> list[int]:
    """Asserts the masks of ``td`` match OpenSpiel's state; returns the acting players."""
    state = env.game_state
    n = env.num_players
    if state.is_terminal():
        acting = []
    elif state.is_simultaneous_node():
        acting = [p for p in range(n) if state.legal_actions(p)]
    else:
        acting = [state.current_player()]
    assert td["current_player"].item() == state.current_player()
    assert td["done"].item() == state.is_terminal()
    for player in range(n):
        group, index = env._layout.agent_group[env.agent_names[player]]
        assert td[group, "mask"][index].item() == (player in acting), (player, acting)
        allowed = _allowed(env, td, player).tolist()
        expected = sorted(state.legal_actions(player)) if player in acting else [0]
        assert allowed == expected, f"player {player}: mask {allowed}, OpenSpiel {expected}"
    return acting


def _action_td(env, td, rng: np.random.Generator, acting: list[int]):
    """Random legal actions for the acting players (the others play 0); returns the td and
    the joint action."""
    action = env.full_action_spec.zero()
    chosen = {}
    for player in acting:
        group, index = env._layout.agent_group[env.agent_names[player]]
        choice = int(rng.choice(_allowed(env, td, player)))
        chosen[player] = choice
        if env.categorical_actions:
            action[group, "action"][index] = choice
        else:
            action[group, "action"][index, choice] = 1
    return td.update(action), chosen


@pytest.mark.parametrize("categorical", [True, False], ids=["index", "onehot"])
@pytest.mark.parametrize("group_map", ["one_group", "per_player"])
@pytest.mark.parametrize(("game", "episodes"), GAMES, ids=[g for g, _ in GAMES])
def test_full_games_take_only_legal_actions(game, episodes, group_map, categorical):
    env = OpenSpielEnv(
        game,
        categorical_actions=categorical,
        group_map=None if group_map == "per_player" else MarlGroupMapType.ALL_IN_ONE_GROUP,
    )
    env.set_seed(1)
    rng = np.random.default_rng(0)
    steps = 0
    for _ in range(episodes):
        td = env.reset()
        returns = np.zeros(env.num_players)
        while True:
            acting = _check_masks(env, td)
            assert acting, "a game that is not over has a player to act"
            state = env.game_state
            legal = {p: set(state.legal_actions(p)) for p in acting}
            td, chosen = _action_td(env, td, rng, acting)
            for player, action in chosen.items():
                assert action in legal[player], f"player {player} took illegal action {action}"
            td = env.step(td)
            steps += 1
            nxt = td["next"]
            for player in range(env.num_players):
                group, index = env._layout.agent_group[env.agent_names[player]]
                returns[player] += nxt[group, "reward"][index].item()
            td = nxt
            if td["done"].item():
                _check_masks(env, td)
                break
        # rewards add up to OpenSpiel's returns over each game
        np.testing.assert_allclose(returns, env.game_state.returns(), rtol=1e-6)
    assert steps >= episodes


def test_turn_based_history_replays_legally():
    """kuhn_poker's history (chance deals included) replays move by move in a fresh pyspiel
    state, every move legal there."""
    import pyspiel

    env = OpenSpielEnv("kuhn_poker", categorical_actions=True)
    env.set_seed(3)
    for _ in range(5):
        env.rollout(10, break_when_any_done=True)
        history = env.game_state.history()
        replay = pyspiel.load_game("kuhn_poker").new_initial_state()
        for action in history:
            if replay.is_chance_node():
                assert action in [a for a, _ in replay.chance_outcomes()]
            else:
                assert action in replay.legal_actions()
            replay.apply_action(action)
        assert replay.is_terminal()
        assert replay.returns() == env.game_state.returns()
