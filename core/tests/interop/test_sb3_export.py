"""Stable-Baselines3 on torchenv envs: to_gymnasium for one env, to_sb3 for a batched one."""

from __future__ import annotations

import numpy as np
import pytest

import torchenv

sb3 = pytest.importorskip("stable_baselines3", reason="needs stable-baselines3")
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv, VecMonitor  # noqa: E402

from torchenv.interop import to_sb3  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*Box observation space (minimum|maximum)")


@pytest.fixture(autouse=True)
def _sb3_logs_in_tmp(tmp_path, monkeypatch):
    """SB3's learn() creates a log folder under the system temp dir unless told where."""
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path / "sb3"))


def test_vec_env_protocol_and_episode_ends():
    vec = to_sb3(torchenv.make("builtin:CartPole", batch_size=[3], max_episode_steps=5))
    assert isinstance(vec, VecEnv) and vec.num_envs == 3
    vec.seed(0)
    obs = vec.reset()
    assert obs.shape == (3, 4)
    for _ in range(5):
        vec.step_async(np.array([0, 1, 0]))
        obs, rewards, dones, infos = vec.step_wait()
        assert rewards.shape == (3,) and dones.dtype == bool and len(infos) == 3
    # the 5-step limit ends every episode that was not terminated before
    assert dones.all()
    for info, ob in zip(infos, obs):
        assert info["terminal_observation"].shape == (4,)
        assert not np.array_equal(info["terminal_observation"], ob)
        assert "TimeLimit.truncated" in info


def test_seeding_reproduces():
    def first_obs(seed):
        vec = to_sb3(torchenv.make("builtin:CartPole", batch_size=[2]))
        vec.seed(seed)
        return vec.reset()

    np.testing.assert_array_equal(first_obs(7), first_obs(7))
    assert not np.array_equal(first_obs(7), first_obs(8))


def test_refuses_unbatched_envs_with_the_alternative():
    with pytest.raises(TypeError, match="to_gymnasium"):
        to_sb3(torchenv.make("builtin:CartPole"))


@pytest.mark.slow
def test_ppo_learns_on_exported_cartpole():
    """PPO trained on a batched torchenv CartPole beats random play on the exported single env."""
    vec = VecMonitor(to_sb3(torchenv.make("builtin:CartPole", batch_size=[4])))
    model = sb3.PPO("MlpPolicy", vec, n_steps=256, seed=0, verbose=0)
    single = torchenv.to_gymnasium(torchenv.make("builtin:CartPole"))
    random_return, _ = evaluate_policy(_Random(single), single, n_eval_episodes=10)
    model.learn(8_000)
    trained_return, _ = evaluate_policy(model, single, n_eval_episodes=5)
    assert random_return < 40
    assert trained_return > 3 * random_return


class _Random:
    """The policy interface evaluate_policy calls, acting at random."""

    def __init__(self, env):
        self.env = env
        env.action_space.seed(0)

    def predict(self, observation, state=None, episode_start=None, deterministic=False):
        return np.array([self.env.action_space.sample()]), None
