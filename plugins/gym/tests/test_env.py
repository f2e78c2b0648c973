"""GymEnv / GymWrapper on real simulators: conformance, specs, seeding, pixels, infos, batching."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
import torch

from torchenv.envs import check_env_specs
from torchenv.specs import Bounded, Categorical, OneHot, Unbounded
from torchenv.testing import EnvConformanceTests
from torchenv_gym import GymEnv, GymWrapper, default_info_dict_reader, set_gym_backend
from torchenv_gym._toy_envs import LIB, NEW_API

warnings.filterwarnings("ignore", message=".*step.*terminated.*")

HAS_MUJOCO = importlib.util.find_spec("mujoco") is not None
HAS_PYGAME = importlib.util.find_spec("pygame") is not None
GYMNASIUM = LIB.__name__ == "gymnasium"


# ---------------------------------------------------------------------------- conformance
class TestCartPoleConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("CartPole-v1")


class TestPendulumConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("Pendulum-v1")


class TestMountainCarContinuousConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("MountainCarContinuous-v0")


class TestDictSpaceConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("ToyDict-v0")


class TestTupleSpaceConformance(EnvConformanceTests):
    def make_env(self):
        return GymEnv("ToyTuple-v0", categorical_action_encoding=True)


@pytest.mark.mujoco
@pytest.mark.skipif(not (HAS_MUJOCO and GYMNASIUM), reason="mujoco (and gymnasium) not installed")
class TestHalfCheetahConformance(EnvConformanceTests):
    rollout_steps = 4

    def make_env(self):
        return GymEnv("HalfCheetah-v5")


# ---------------------------------------------------------------------------- specs
def test_cartpole_specs_match_torchrl():
    env = GymEnv("CartPole-v1")
    obs = env.observation_spec["observation"]
    assert isinstance(obs, Bounded) and obs.shape == (4,) and obs.dtype == torch.float32
    assert isinstance(env.action_spec, OneHot) and env.action_spec.shape == (2,)
    assert env.action_spec.dtype == torch.long
    assert isinstance(env.reward_spec, Unbounded) and env.reward_spec.shape == (1,)
    assert env.reward_spec.dtype == torch.float32
    for key in ("done", "terminated", "truncated"):
        assert isinstance(env.full_done_spec[key], Categorical)
        assert env.full_done_spec[key].shape == (1,)
        assert env.full_done_spec[key].dtype == torch.bool
    cat = GymEnv("CartPole-v1", categorical_action_encoding=True)
    assert isinstance(cat.action_spec, Categorical) and cat.action_spec.shape == ()


def test_dict_space_gives_nested_keys():
    env = GymEnv("ToyDict-v0")
    keys = set(env.observation_spec.keys(True, True))
    assert {"position", ("sensors", "count"), ("sensors", "flags"), "observation"} <= keys
    # "state" was renamed "observation", as in TorchRL
    assert env.observation_spec["observation"].dtype == torch.float64
    assert set(env.full_action_spec.keys(True, True)) >= {"move", "mode"}
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "sensors", "flags"].shape == (3, 4)
    check_env_specs(env)


def test_tuple_space_gives_index_keys():
    env = GymEnv("ToyTuple-v0")
    assert set(env.observation_spec.keys()) == {"0", "1"}
    assert env.action_spec.shape == (2, 2)  # equal Box elements are stacked
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "1"].shape == (3, 4)


# ---------------------------------------------------------------------------- seeding
def _raw_trajectory(env_id, seed, actions):
    # set_seed(seed) is TorchRL's: a seeded reset right away, so the rollout's reset is the
    # raw env's second one
    env = LIB.make(env_id)
    env.reset(seed=seed)
    if NEW_API:
        obs, _ = env.reset()
    else:
        obs = env.reset()
    out = [np.asarray(obs)]
    rewards = []
    for action in actions:
        result = env.step(action)
        out.append(np.asarray(result[0]))
        rewards.append(float(result[1]))
        if result[2] or (NEW_API and result[3]):
            break
    env.close()
    return np.stack(out), np.array(rewards)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_same_seed_same_trajectory_as_raw_env(env_id):
    env = GymEnv(env_id)
    torch.manual_seed(0)
    env.set_seed(3)
    td = env.rollout(40, break_when_any_done=True)
    if env_id == "CartPole-v1":
        actions = [int(a.argmax()) for a in td["action"]]
    else:
        actions = [a.numpy() for a in td["action"]]
    obs, rewards = _raw_trajectory(env_id, 3, actions)
    ours = torch.cat([td["observation"][:1], td["next", "observation"]]).numpy()
    np.testing.assert_allclose(ours, obs[: len(ours)], rtol=1e-6)
    np.testing.assert_allclose(td["next", "reward"].squeeze(-1).numpy(), rewards, rtol=1e-5)


def test_reset_seed_kwarg_and_unseeded_resets_differ():
    env = GymEnv("Pendulum-v1")
    a = env.reset(seed=1)["observation"]
    b = env.reset(seed=1)["observation"]
    c = env.reset()["observation"]
    assert torch.equal(a, b) and not torch.equal(a, c)


def _make_pendulum():
    return GymEnv("Pendulum-v1")


def _zero_torque(td):
    td["action"] = torch.zeros((*td.batch_size, 1))
    return td


def test_batched_envs_same_seed_same_rollout():
    batched = pytest.importorskip("torchenv.batched")
    single = _make_pendulum()
    single.set_seed(7)
    ref = single.rollout(5, _zero_torque)
    results = []
    for cls in (batched.SerialEnv, batched.ParallelEnv):
        env = cls(2, _make_pendulum)
        try:
            env.set_seed(7)
            td = env.rollout(5, _zero_torque)
            env.set_seed(7)
            again = env.rollout(5, _zero_torque)
        finally:
            env.close()
        # the first sub-env gets the seed, as a single env would; the second another one
        torch.testing.assert_close(td[0]["next", "observation"], ref["next", "observation"])
        assert not torch.equal(td[1]["observation"], td[0]["observation"])
        torch.testing.assert_close(td["next", "observation"], again["next", "observation"])
        results.append(td)
    torch.testing.assert_close(results[0]["next", "observation"], results[1]["next", "observation"])


# ---------------------------------------------------------------------------- wrapper features
def test_wrapper_forwards_attributes_and_closes():
    raw = LIB.make("CartPole-v1")
    env = GymWrapper(raw)
    assert env.unwrapped is raw.unwrapped
    assert env.lib is LIB
    env.close()


def test_read_obs_and_read_action():
    env = GymEnv("CartPole-v1")
    obs = env.read_obs(np.ones(4, np.float32))
    assert torch.equal(obs["observation"], torch.ones(4))
    assert env.read_action(torch.tensor([0, 1])) == 1


def test_wrapper_needs_an_env():
    with pytest.raises(TypeError, match="needs a gym env"):
        GymWrapper()


def test_frame_skip_sums_rewards():
    env = GymEnv("CartPole-v1", frame_skip=3)
    env.set_seed(0)
    td = env.reset()
    td["action"] = torch.tensor([1, 0])
    td = env.step(td)
    assert td["next", "reward"].item() == 3.0
    with pytest.raises(ValueError, match="frame_skip"):
        GymEnv("CartPole-v1", frame_skip=0)


def test_from_pixels_with_a_toy_renderer():
    env = GymWrapper(LIB.make("ToyDict-v0"), from_pixels=True)
    assert set(env.observation_spec.keys()) == {"pixels"}
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "pixels"].shape == (3, 8, 6, 3)
    assert td["next", "pixels"].dtype == torch.uint8
    # the toy env fills frames with its step count
    assert td["next", "pixels"][2].float().mean().item() == 3
    both = GymWrapper(LIB.make("ToyDict-v0"), from_pixels=True, pixels_only=False)
    assert {"pixels", "position"} <= set(both.observation_spec.keys())
    check_env_specs(both)


@pytest.mark.skipif(not HAS_PYGAME, reason="pygame needed to render CartPole")
def test_from_pixels_cartpole():
    env = GymEnv("CartPole-v1", from_pixels=True, pixels_only=False)
    td = env.rollout(2)
    assert td["next", "pixels"].shape[-1] == 3 and td["next", "observation"].shape == (2, 4)


def test_info_dict_reader_explicit_keys():
    env = GymEnv("ToyDict-v0")
    env.set_info_dict_reader(default_info_dict_reader(["t"]))
    td = env.rollout(4, break_when_any_done=False)
    assert td["next", "t"].squeeze(-1).tolist() == [1, 2, 3, 4]
    assert "t" in env.observation_spec


def test_auto_register_info_dict_makes_specs_for_batched_envs():
    env = GymEnv("ToyDict-v0").auto_register_info_dict()
    assert {"t", "flag"} <= set(env.observation_spec.keys())
    assert env.observation_spec["flag"].dtype == torch.bool
    check_env_specs(env)
    td = env.rollout(4, break_when_any_done=False)
    assert td["next", "flag"].squeeze(-1).tolist() == [False, True, False, True]


def test_set_gym_backend_is_used_by_gymenv():
    with set_gym_backend(LIB.__name__):
        env = GymEnv("CartPole-v1")
    assert type(env._env.unwrapped).__module__.split(".")[0] == LIB.__name__


def test_available_envs_lists_registry():
    assert "CartPole-v1" in GymEnv.available_envs  # a class property, as in TorchRL


def _make_toy_with_infos():
    return GymEnv("ToyDict-v0").auto_register_info_dict()


def test_infos_flow_through_parallel_env():
    batched = pytest.importorskip("torchenv.batched")
    env = batched.ParallelEnv(2, _make_toy_with_infos)
    try:
        td = env.rollout(3, break_when_any_done=False)
    finally:
        env.close()
    assert td["next", "t"].squeeze(-1).tolist() == [[1, 2, 3], [1, 2, 3]]
    assert td["next", "flag"].dtype == torch.bool


def test_num_workers_gives_a_parallel_env_of_gym_envs():
    # TorchRL's shortcut: GymEnv(id, num_workers=n) is a ParallelEnv of n GymEnv(id, ...)
    from torchenv.batched import ParallelEnv

    env = GymEnv("CartPole-v1", num_workers=2, categorical_action_encoding=True)
    try:
        assert isinstance(env, ParallelEnv)
        assert env.batch_size == torch.Size([2])
        assert env.action_spec.shape == torch.Size([2])  # categorical: one index per sub-env
        seed = env.set_seed(0)
        assert isinstance(seed, int)
        td = env.rollout(3)
        assert td.batch_size == torch.Size([2, 3])
    finally:
        env.close()
    assert type(GymEnv("CartPole-v1", num_workers=1)) is GymEnv
    with pytest.raises(ValueError, match="num_workers must be an int >= 1, got 0"):
        GymEnv("CartPole-v1", num_workers=0)


def test_get_library_name_names_the_raw_envs_library():
    import gymnasium

    env = GymEnv("CartPole-v1")
    assert env.get_library_name(env._env) == "gymnasium"
    assert GymWrapper.get_library_name(gymnasium.make("Pendulum-v1")) == "gymnasium"
