"""GymEnv(name, num_envs=N): gymnasium vector envs as natively batched envs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.envs import check_env_specs
from torchenv.testing import EnvConformanceTests
from torchenv_gym import GymEnv
from torchenv_gym._toy_envs import LIB
from torchenv_gym._versions import AUTORESET_DISABLED, AUTORESET_NEXT_STEP, AUTORESET_SAME_STEP

pytestmark = pytest.mark.skipif(LIB.__name__ != "gymnasium", reason="vector envs need gymnasium")

GYMNASIUM_1 = LIB.__name__ == "gymnasium" and int(LIB.__version__.split(".")[0]) >= 1
MODES = ["sync", "async"] + (["vector_entry_point"] if GYMNASIUM_1 else [])

# CartPole ends when |x| > 2.4 or |theta| > 12 degrees; resets draw every coordinate in [-0.05, 0.05].
THETA = 12 * 2 * np.pi / 360


def _terminal(obs: torch.Tensor) -> torch.Tensor:
    return (obs[..., 0].abs() > 2.4) | (obs[..., 2].abs() > THETA)


def _fresh(obs: torch.Tensor) -> torch.Tensor:
    return (obs.abs() <= 0.05).all(-1)


def _resets_on_next_step(env) -> bool:
    """Next-step autoreset without access to the sub-envs: gymnasium's convention shows through."""
    return env._vec.mode == AUTORESET_NEXT_STEP and not hasattr(env._env, "envs")


class TestVectorCartPoleConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("CartPole-v1", num_envs=3)


class TestVectorPendulumConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("Pendulum-v1", num_envs=2)


@pytest.mark.parametrize("mode", MODES)
def test_batch_size_and_specs(mode):
    env = GymEnv("CartPole-v1", num_envs=5, vectorization_mode=mode)
    try:
        assert env.batch_size == (5,)
        assert env.action_spec.shape == (5, 2)
        assert env.observation_spec["observation"].shape == (5, 4)
        assert env.reward_spec.shape == (5, 1)
        assert env.full_done_spec["done"].shape == (5, 1)
        check_env_specs(env)
    finally:
        env.close()


@pytest.mark.parametrize("mode", MODES)
def test_rollout_gives_true_terminal_observations_then_resets(mode):
    env = GymEnv("CartPole-v1", num_envs=4, vectorization_mode=mode)
    env.set_seed(0)
    torch.manual_seed(0)
    td = env.rollout(80, break_when_any_done=False)
    env.close()
    next_obs, obs = td["next", "observation"], td["observation"]
    terminated = td["next", "terminated"].squeeze(-1)
    assert terminated.sum() >= 4, "random CartPole episodes should end within 80 steps"
    # the observation that comes with "terminated" is the real last one, not a reset one
    assert _terminal(next_obs[terminated]).all()
    env_idx, t_idx = terminated[:, :-1].nonzero(as_tuple=True)
    after = obs[env_idx, t_idx + 1]
    if _resets_on_next_step(env):
        # gymnasium resets during the following step: that step returns a fresh obs, reward 0
        assert _fresh(td["next", "observation"][env_idx, t_idx + 1]).all()
        assert (td["next", "reward"][env_idx, t_idx + 1] == 0).all()
    else:
        # the next root observation is a fresh reset one
        assert _fresh(after).all()
    # envs that did not end were left alone
    running = ~td["next", "done"].squeeze(-1)[:, :-1]
    torch.testing.assert_close(obs[:, 1:][running], next_obs[:, :-1][running])


def test_autoreset_mode_per_version():
    env = GymEnv("CartPole-v1", num_envs=2)
    if GYMNASIUM_1 and tuple(int(p) for p in LIB.__version__.split(".")[:2]) >= (1, 1):
        assert env._vec.mode == AUTORESET_DISABLED
    elif GYMNASIUM_1:
        assert env._vec.mode == AUTORESET_NEXT_STEP
    else:
        assert env._vec.mode == AUTORESET_SAME_STEP
    env.close()


@pytest.mark.parametrize("mode", MODES)
def test_partial_reset_only_touches_masked_envs(mode):
    env = GymEnv("CartPole-v1", num_envs=3, vectorization_mode=mode)
    env.set_seed(1)
    td = env.reset()
    push = torch.tensor([[0, 1]] * 3)
    while True:
        td["action"] = push
        td = env.step(td)
        done = td["next", "done"].squeeze(-1)
        nxt = td["next"].clone()
        if done.any():
            break
        td = td["next"].clone()
    before = nxt["observation"].clone()
    nxt["_reset"] = done.unsqueeze(-1)
    out = env.reset(nxt)
    kept = ~done
    torch.testing.assert_close(out["observation"][kept], before[kept])
    if not _resets_on_next_step(env):
        assert _fresh(out["observation"][done]).all()
    assert not out["done"].any()
    env.close()


@pytest.mark.parametrize("mode", MODES)
def test_partial_reset_of_running_sub_envs(mode):
    env = GymEnv("CartPole-v1", num_envs=3, vectorization_mode=mode)
    env.set_seed(2)
    td = env.reset()
    td["action"] = torch.tensor([[0, 1]] * 3)
    td = env.step(td)["next"].clone()
    assert not td["done"].any()
    td["_reset"] = torch.tensor([[True], [False], [False]])
    before = td["observation"].clone()
    if env._vec.mode != AUTORESET_DISABLED and not hasattr(env._env, "envs"):
        # only sync vector envs (or disabled autoreset) can reset one running sub-env
        with pytest.raises(NotImplementedError, match="still running"):
            env.reset(td)
    else:
        out = env.reset(td)
        assert _fresh(out["observation"][0])
        torch.testing.assert_close(out["observation"][1:], before[1:])
    env.close()


def test_vector_entry_point_matches_raw_vector_env():
    if not GYMNASIUM_1:
        pytest.skip("vector_entry_point needs gymnasium>=1.0")
    env = GymEnv("CartPole-v1", num_envs=6, vectorization_mode="vector_entry_point")
    raw = LIB.make_vec("CartPole-v1", num_envs=6, vectorization_mode="vector_entry_point")
    env.set_seed(5)  # TorchRL's convention: the seeded reset happens here
    td = env.reset()
    raw.reset(seed=5)
    raw_obs, _ = raw.reset()
    rng = np.random.default_rng(0)
    for _ in range(60):
        actions = rng.integers(0, 2, 6)
        td["action"] = torch.nn.functional.one_hot(torch.from_numpy(actions), 2)
        td, td_next = env.step_and_maybe_reset(td)
        raw_obs, raw_rew, raw_term, raw_trunc, _ = raw.step(actions)
        np.testing.assert_allclose(td["next", "observation"].numpy(), raw_obs)
        np.testing.assert_allclose(td["next", "reward"].squeeze(-1).numpy(), raw_rew)
        assert td["next", "terminated"].squeeze(-1).tolist() == raw_term.tolist()
        td = td_next
    env.close()
    raw.close()


def test_seeded_full_resets_are_reproducible():
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(11)
    a = env.reset()["observation"]
    env.set_seed(11)
    b = env.reset()["observation"]
    torch.testing.assert_close(a, b)
    assert not torch.equal(a[0], a[1])  # sub-envs get different seeds
    env.close()


def test_vector_infos_flow_with_specs():
    env = GymEnv("ToyDict-v0", num_envs=2).auto_register_info_dict()
    assert env.observation_spec["t"].shape == (2,)  # a scalar info per env, as in TorchRL
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "t"].shape == (2, 3)
    env.close()


def test_unsupported_options_are_refused():
    with pytest.raises(NotImplementedError, match="frame_skip"):
        GymEnv("CartPole-v1", num_envs=2, frame_skip=2)
    with pytest.raises(NotImplementedError, match="from_pixels"):
        GymEnv("CartPole-v1", num_envs=2, from_pixels=True)


def test_gym_backend_has_no_vector_support_message():
    with pytest.raises(ValueError, match="num_envs"):
        GymEnv("CartPole-v1", vectorization_mode="sync")


def test_sync_partial_resets_match_gymnasium_masked_reset():
    # sync envs reset finished sub-envs directly; gymnasium's reset(options={"reset_mask"}) must
    # give the same trajectories (same sub-env resets, same random streams)
    rollouts = []
    for direct in (True, False):
        env = GymEnv("CartPole-v1", num_envs=4, vectorization_mode="sync")
        if env._vec.mode != AUTORESET_DISABLED:
            env.close()
            pytest.skip("direct sub-env resets replace masked resets with disabled autoreset")
        env._vec.sync = direct
        env.set_seed(3)
        torch.manual_seed(3)
        rollouts.append(env.rollout(120, break_when_any_done=False))
        env.close()
    fast, masked = rollouts
    assert fast["next", "done"].sum() >= 4, "random CartPole episodes should end within 120 steps"
    for key in fast.keys(True, True):
        torch.testing.assert_close(fast[key], masked[key], msg=f"{key} differs")
