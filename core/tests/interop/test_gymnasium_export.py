"""torchenv.to_gymnasium: unbatched envs as gymnasium.Env, batched ones as VectorEnv."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import torchenv
from torchenv.envs import TicTacToeEnv
from torchenv.transforms import DTypeCastTransform, RewardSum, StepCounter

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*Box observation space (minimum|maximum)")


@pytest.mark.parametrize("name", ["builtin:CartPole", "builtin:Pendulum"])
def test_exported_env_passes_gymnasium_check_env(name):
    env = torchenv.to_gymnasium(torchenv.make(name))
    check_env(env, skip_render_check=True)


def test_exported_gymnasium_env_passes_check_env_and_matches_the_original():
    pytest.importorskip("torchenv_gym")
    exported = torchenv.to_gymnasium(torchenv.make("gymnasium:CartPole-v1"))
    check_env(exported, skip_render_check=True)
    raw = gymnasium.make("CartPole-v1")
    obs, _ = exported.reset(seed=3)
    raw_obs, _ = raw.reset(seed=3)
    np.testing.assert_array_equal(obs, raw_obs)
    for action in [0, 1, 1, 0, 1]:
        step, raw_step = exported.step(action), raw.step(action)
        np.testing.assert_array_equal(step[0], raw_step[0])
        assert step[1:4] == raw_step[1:4]


def test_spaces_come_from_the_transformed_specs():
    cast = DTypeCastTransform(torch.float32, torch.float64, in_keys=["observation"])
    exported = torchenv.to_gymnasium(
        torchenv.TransformedEnv(torchenv.make("builtin:CartPole"), cast)
    )
    assert exported.observation_space.dtype == np.float64
    obs, _ = exported.reset(seed=0)
    assert obs.dtype == np.float64 and exported.observation_space.contains(obs)


def test_several_observation_entries_give_a_dict_space():
    exported = torchenv.to_gymnasium(torchenv.make("builtin:Pendulum"))
    assert isinstance(exported.observation_space, gymnasium.spaces.Dict)
    obs, _ = exported.reset(seed=0)
    assert exported.observation_space.contains(obs)
    assert exported.action_space == gymnasium.spaces.Box(-2.0, 2.0, (1,), np.float32)


def test_one_hot_actions_take_indices():
    env = torchenv.make("builtin:CartPole", categorical_action_encoding=False)
    exported = torchenv.to_gymnasium(env)
    assert exported.action_space == gymnasium.spaces.Discrete(2)
    exported.reset(seed=0)
    assert exported.step(1)[1] == 1.0


def test_refuses_envs_it_cannot_express():
    with pytest.raises(TypeError, match="one action and one reward entry.*TicTacToeEnv"):
        torchenv.to_gymnasium(TicTacToeEnv())
    with pytest.raises(TypeError, match=r"batch size \(\) or \(n,\)"):
        torchenv.to_gymnasium(torchenv.make("builtin:CartPole", batch_size=[2, 2]))
    with pytest.raises(TypeError, match="expects a torchenv EnvBase"):
        torchenv.to_gymnasium(gymnasium.make("CartPole-v1"))


def test_vector_env_same_step_autoreset_cleanrl_loop():
    n = 4
    vec = torchenv.to_gymnasium(torchenv.make("builtin:CartPole", batch_size=[n]))
    assert isinstance(vec, gymnasium.vector.VectorEnv)
    assert vec.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert vec.single_action_space == gymnasium.spaces.Discrete(2)
    obs, _ = vec.reset(seed=1)
    vec.action_space.seed(1)
    returns, running, ended = [], np.zeros(n), 0
    for _ in range(300):
        obs, reward, terminated, truncated, infos = vec.step(vec.action_space.sample())
        assert obs.shape == (n, 4) and reward.shape == (n,) and terminated.dtype == bool
        running += reward
        done = terminated | truncated
        if done.any():
            assert (infos["_final_obs"] == done).all()
            for i in np.flatnonzero(done):
                final = infos["final_obs"][i]
                assert final.shape == (4,)
                assert not np.array_equal(final, obs[i])  # obs[i] is the new episode's first
                returns.append(running[i])
                running[i] = 0
                ended += 1
        else:
            assert infos == {}
    assert ended > 10
    assert all(r >= 1 for r in returns)


def test_vector_env_equals_the_torchenv_env_step_for_step():
    torch.manual_seed(0)
    env = torchenv.make("builtin:CartPole", batch_size=[3])
    env.set_seed(5)
    expected = env.rollout(50, break_when_any_done=False)
    vec = torchenv.to_gymnasium(torchenv.make("builtin:CartPole", batch_size=[3]))
    obs, _ = vec.reset(seed=5)
    np.testing.assert_array_equal(obs, expected["observation"][:, 0].numpy())
    for t in range(50):
        obs, reward, terminated, truncated, infos = vec.step(expected["action"][:, t].numpy())
        np.testing.assert_array_equal(reward, expected["next", "reward"][:, t, 0].numpy())
        np.testing.assert_array_equal(terminated, expected["next", "terminated"][:, t, 0].numpy())
        if t + 1 < 50:
            np.testing.assert_array_equal(obs, expected["observation"][:, t + 1].numpy())


def test_register_gym_as_torchrl_spells_it():
    from torchenv.envs import CartPoleEnv

    CartPoleEnv.register_gym(
        "TorchenvTestCartPole-v0",
        transform=StepCounter(),
        info_keys=["step_count"],
        max_episode_steps=3,
    )
    env = gymnasium.make("TorchenvTestCartPole-v0")
    obs, info = env.reset(seed=0)
    assert isinstance(obs["observation"], torch.Tensor)  # to_numpy=False by default, as TorchRL
    # as TorchRL's: a dict even for one entry, and an info entry is not an observation too
    assert set(obs) == {"observation"} and "step_count" in info
    obs, _, terminated, truncated, info = env.step(1)
    assert int(info["step_count"]) == 1
    for _ in range(2):
        *_, truncated, info = env.step(1)
    assert truncated  # gymnasium's TimeLimit, from max_episode_steps
    numpy_env = torchenv.to_gymnasium(torchenv.make("builtin:CartPole"), to_numpy=True)
    assert isinstance(numpy_env.reset(seed=0)[0], np.ndarray)
    with pytest.raises(ValueError, match="gymnasium only"):
        CartPoleEnv.register_gym("TorchenvTestCartPole-v1", backend="gym")


def test_make_replaces_the_registered_transform_and_to_numpy():
    # TorchRL: gymnasium.make(id, transform=..., to_numpy=...) overrides what register_gym set
    from torchenv.envs import CartPoleEnv

    CartPoleEnv.register_gym("TorchenvTestCartPoleMake-v0", transform=StepCounter())
    plain = gymnasium.make("TorchenvTestCartPoleMake-v0")
    assert "step_count" in plain.reset(seed=0)[0]
    other = gymnasium.make("TorchenvTestCartPoleMake-v0", transform=RewardSum(), to_numpy=True)
    obs, _ = other.reset(seed=0)
    assert "step_count" not in obs and "episode_reward" in obs
    assert isinstance(obs["observation"], np.ndarray)


@pytest.mark.parametrize("batch_size", [(), (2,)])
def test_refuses_a_multi_agent_env_up_front(batch_size):
    """One group means one action and one reward entry, but per agent: refused before reset."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "envs"))
    try:
        from _marl_mocks import AGENTS, MarlMockEnv
    finally:
        sys.path.pop(0)
    env = MarlMockEnv(batch_size=batch_size, group_map={"agents": AGENTS})
    assert len(env.action_keys) == 1 and len(env.reward_keys) == 1
    resets = []
    env._reset = lambda *a, **k: resets.append(1)  # never called: refused up front
    with pytest.raises(TypeError, match=r"single-agent envs; MarlMockEnv is multi-agent.*4, 1"):
        torchenv.to_gymnasium(env)
    assert resets == []
