"""OpenSpielEnv / OpenSpielWrapper: TorchRL's layout and arguments, chance nodes, states,
simultaneous moves and the errors."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("pyspiel")

import pyspiel

from torchenv.registry import UnknownEnvError
from torchenv.specs import Categorical, OneHot
from torchenv.transforms import ActionMask, TransformedEnv
from torchenv_openspiel import OpenSpielEnv, OpenSpielWrapper

pytestmark = pytest.mark.openspiel


def test_torchrl_layout_kuhn_poker():
    env = OpenSpielEnv("kuhn_poker")
    assert env.group_map == {"agents": ["player_0", "player_1"]}
    assert isinstance(env.full_action_spec["agents", "action"], OneHot)  # TorchRL's default
    td = env.reset()
    assert td["agents", "observation"].shape == (2, 7)
    assert td["agents", "information_state"].shape == (2, 11)
    assert td["current_player"].dtype == torch.int32 and td["current_player"].shape == ()
    assert set(env.full_done_spec.keys()) == {"done", "terminated"}  # no truncation in games
    assert env.full_reward_spec["agents", "reward"].shape == (2, 1)
    # the information state is OpenSpiel's, player by player
    state = env.game_state
    for p in range(2):
        expected = torch.tensor(state.information_state_tensor(p))
        assert torch.equal(td["agents", "information_state"][p], expected)
        assert torch.equal(
            td["agents", "observation"][p], torch.tensor(state.observation_tensor(p))
        )


def test_group_map_none_is_one_group_per_player_and_dict_maps():
    assert OpenSpielEnv("tic_tac_toe", group_map=None).group_map == {
        "player_0": ["player_0"],
        "player_1": ["player_1"],
    }
    env = OpenSpielEnv(
        "kuhn_poker(players=3)", group_map={"a": ["player_2"], "b": ["player_0", "player_1"]}
    )
    td = env.reset()
    assert td["a", "observation"].shape[0] == 1 and td["b", "observation"].shape[0] == 2
    state = env.game_state
    assert torch.equal(td["a", "observation"][0], torch.tensor(state.observation_tensor(2)))
    with pytest.raises(ValueError, match="player_1"):
        OpenSpielEnv("kuhn_poker(players=3)", group_map={"a": ["player_0", "player_2"]})


def test_categorical_actions():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    assert isinstance(env.full_action_spec["agents", "action"], Categorical)
    assert not isinstance(env.full_action_spec["agents", "action"], OneHot)


def test_chance_nodes_are_resolved_with_the_seeded_generator():
    def deals(seed):
        env = OpenSpielEnv("kuhn_poker")
        env.set_seed(seed)
        out = []
        for _ in range(6):
            env.reset()
            assert not env.game_state.is_chance_node()
            out.append(tuple(env.game_state.history()[:2]))
        return out

    assert deals(0) == deals(0)
    assert deals(0) != deals(1)


def test_chance_sampler_is_used():
    calls = []

    def first(actions, probabilities):
        calls.append((list(actions), list(probabilities)))
        return actions[0]

    env = OpenSpielEnv("kuhn_poker", chance_sampler=first)
    env.reset()
    assert env.game_state.history() == [0, 1]  # the first card, then the first one left
    assert calls[0] == ([0, 1, 2], pytest.approx([1 / 3] * 3))
    with pytest.raises(TypeError, match="chance_sampler"):
        OpenSpielEnv("kuhn_poker", chance_sampler=3)


def test_turn_masks_and_action_spec_follow_the_acting_player():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    td = env.reset()
    assert td["agents", "mask"].tolist() == [True, False]
    assert td["agents", "action_mask"][0].all()
    assert td["agents", "action_mask"][1].tolist() == [True] + [False] * 8  # TorchRL: action 0
    td["agents", "action"] = torch.tensor([4, 0])
    td = env.step(td)["next"]
    assert td["agents", "mask"].tolist() == [False, True]
    assert td["agents", "action_mask"][1].tolist() == [True] * 4 + [False] + [True] * 4
    spec_mask = env.full_action_spec["agents", "action"].mask
    assert torch.equal(spec_mask, td["agents", "action_mask"])
    for _ in range(20):  # rand_action follows the spec's mask
        assert env.rand_action()["agents", "action"][1].item() != 4


def test_illegal_action_raises_naming_player_and_legal_actions():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    td = env.reset()
    td["agents", "action"] = torch.tensor([4, 0])
    td = env.step(td)["next"]
    td["agents", "action"] = torch.tensor([0, 4])  # player_1 plays the taken square
    with pytest.raises(
        ValueError, match=r"player_1 played action 4, which is not legal.*\[0, 1, 2, 3, 5"
    ):
        env.step(td)
    td["agents", "action"] = torch.tensor([0, 9])  # out of range
    with pytest.raises(ValueError, match="player_1 played action 9"):
        env.step(td)
    # the failed steps changed nothing
    assert env.game_state.history() == [4]


def test_simultaneous_game_applies_joint_actions():
    env = OpenSpielEnv("matrix_rps", categorical_actions=True)
    assert env.parallel
    td = env.reset()
    assert td["agents", "mask"].tolist() == [True, True]
    assert td["current_player"].item() == pyspiel.PlayerId.SIMULTANEOUS
    td["agents", "action"] = torch.tensor([0, 2])  # rock vs scissors
    out = env.step(td)["next"]
    assert out["done"].item()
    assert out["agents", "reward"].flatten().tolist() == [1.0, -1.0]
    assert out["current_player"].item() == pyspiel.PlayerId.TERMINAL


def test_rewards_are_per_step_changes_of_the_returns():
    # pig scores during the game: rewards add up to the returns
    env = OpenSpielEnv("pig(winscore=8)", categorical_actions=True)
    env.set_seed(0)
    td = env.rollout(500, break_when_any_done=True)
    assert td["next", "done"][-1].item()
    total = td["next", "agents", "reward"].sum(0).flatten()
    assert total.tolist() == pytest.approx(env.game_state.returns())


def test_step_after_the_game_is_over_changes_nothing():
    env = OpenSpielEnv("matrix_rps", categorical_actions=True)
    td = env.reset()
    td["agents", "action"] = torch.tensor([0, 0])
    td = env.step(td)["next"]
    td["agents", "action"] = torch.tensor([0, 0])
    out = env.step(td)["next"]
    assert out["done"].item() and out["agents", "reward"].abs().sum().item() == 0


def test_return_state_and_reset_to_it():
    env = OpenSpielEnv("tic_tac_toe", return_state=True, categorical_actions=True)
    td = env.reset()
    assert isinstance(td["state"], str)
    td["agents", "action"] = torch.tensor([4, 0])
    saved = env.step(td)["next"]
    saved_obs = saved["agents", "observation"].clone()
    td = saved.clone()
    td["agents", "action"] = torch.tensor([0, 0])
    env.step(td)
    assert env.game_state.history() == [4, 0]
    restored = env.reset(saved, set_state=True)
    assert env.game_state.history() == [4]
    assert torch.equal(restored["agents", "observation"], saved_obs)
    assert restored["agents", "mask"].tolist() == [False, True]
    # without set_state: a new game
    assert env.reset(saved.clone(), set_state=False)["agents", "mask"].tolist() == [True, False]
    assert env.game_state.history() == []


def test_get_state_and_set_state_round_trip():
    env = OpenSpielEnv("kuhn_poker", categorical_actions=True)
    env.set_seed(0)
    td = env.reset()
    saved = env.get_state()
    obs = td["agents", "observation"].clone()
    env.rollout(3, auto_reset=False, tensordict=td)
    out = env.set_state(saved)
    assert torch.equal(out["agents", "observation"], obs)
    assert env.get_state() == saved
    with pytest.raises(TypeError, match="get_state"):
        env.set_state(3)
    with pytest.raises(ValueError, match="cannot restore"):
        env.set_state("not a state")


def test_reset_set_state_without_state_says_what_is_missing():
    env = OpenSpielEnv("tic_tac_toe")
    td = env.reset()
    with pytest.raises(KeyError, match="'state'"):
        env.reset(td, set_state=True)


def test_wrapper_takes_a_state_or_a_game():
    game = pyspiel.load_game("tic_tac_toe")
    for env in (OpenSpielWrapper(game), OpenSpielWrapper(game.new_initial_state())):
        assert env.reset()["agents", "observation"].shape == (2, 3, 3, 3)
    with pytest.raises(TypeError, match="pyspiel.State or pyspiel.Game"):
        OpenSpielWrapper("tic_tac_toe")


def test_information_state_only_game():
    # kuhn_poker with an information state only is not a thing: find a game providing only one
    names = []
    for name in ("tiny_bridge_2p", "phantom_ttt", "dark_hex"):
        if name in pyspiel.registered_names():
            t = pyspiel.load_game(name).get_type()
            names.append((name, t.provides_observation_tensor, t.provides_information_state_tensor))
    assert names  # the check below runs on whichever of them exists
    for name, has_obs, has_info in names:
        env = OpenSpielEnv(name)
        td = env.reset()
        keys = set(td["agents"].keys())
        assert ("observation" in keys) == has_obs and ("information_state" in keys) == has_info


def test_errors_unknown_game_parameters_batch_pixels():
    with pytest.raises(UnknownEnvError, match="kuhn_poker"):
        OpenSpielEnv("kuhn_pokr")
    with pytest.raises(ValueError, match="could not load 'kuhn_poker'.*players"):
        OpenSpielEnv("kuhn_poker", parameters={"players": 99})
    with pytest.raises(ValueError, match="not both"):
        OpenSpielEnv("kuhn_poker(players=3)", parameters={"players": 3})
    with pytest.raises(TypeError, match="parameters must be a dict"):
        OpenSpielEnv("kuhn_poker", parameters=[("players", 3)])
    with pytest.raises(ValueError, match="batch_size"):
        OpenSpielEnv("kuhn_poker", batch_size=[2])
    with pytest.raises(NotImplementedError, match="from_pixels"):
        OpenSpielEnv("kuhn_poker", from_pixels=True)
    with pytest.raises(RuntimeError, match="reset"):
        OpenSpielEnv("kuhn_poker").step(OpenSpielEnv("kuhn_poker").full_action_spec.zero())


def test_mean_field_games_are_refused():
    if "mfg_crowd_modelling" not in pyspiel.registered_names():
        pytest.skip("this open_spiel has no mean-field game")
    with pytest.raises(NotImplementedError, match="mean-field"):
        OpenSpielEnv("mfg_crowd_modelling")


def test_action_mask_transform_rollout_is_legal():
    env = TransformedEnv(
        OpenSpielEnv("tic_tac_toe", categorical_actions=True),
        ActionMask(("agents", "action"), ("agents", "action_mask")),
    )
    env.set_seed(0)
    torch.manual_seed(0)
    td = env.rollout(40, break_when_any_done=False)
    assert td["next", "done"].any()


def test_available_envs_and_repr():
    assert "kuhn_poker" in OpenSpielEnv.available_envs
    assert sorted(OpenSpielEnv.available_envs) == sorted(pyspiel.registered_names())
    env = OpenSpielEnv("kuhn_poker")
    assert "kuhn_poker" in repr(env) and env.lib is pyspiel
    assert "Card" in env.render() or env.render()  # OpenSpiel's text of the state


def test_serial_env_of_games():
    from torchenv.batched import SerialEnv

    env = SerialEnv(2, lambda: OpenSpielEnv("kuhn_poker", categorical_actions=True))
    env.set_seed(0)
    td = env.rollout(6, break_when_any_done=False)
    assert td["next", "agents", "observation"].shape == (2, 6, 2, 7)
    env.close()
