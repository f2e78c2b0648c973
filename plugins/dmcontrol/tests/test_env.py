"""DMControlEnv / DMControlWrapper on the real suite: conformance, trajectories, done flags."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest
import torch
from dm_control import suite

from torchenv.envs._direct import direct_plan
from torchenv.testing import EnvConformanceTests
from torchenv_dmcontrol import DMControlEnv, DMControlWrapper

pytestmark = pytest.mark.dmcontrol


class TestCheetahRunConformance(EnvConformanceTests):
    def make_env(self):
        return DMControlEnv("cheetah", "run")


class TestWalkerWalkConformance(EnvConformanceTests):
    def make_env(self):
        return DMControlEnv("walker", "walk")


class TestCartpoleSwingupConformance(EnvConformanceTests):
    def make_env(self):
        return DMControlEnv("cartpole", "swingup", frame_skip=2)


@pytest.mark.usefixtures("pixels_available")
class TestPixelsConformance(EnvConformanceTests):
    rollout_steps = 4

    def make_env(self):
        return DMControlEnv(
            "cartpole",
            "balance",
            from_pixels=True,
            pixels_only=True,
            render_kwargs={"height": 32, "width": 48},
        )


def _raw_trajectory(domain, task, seed, actions, **task_kwargs):
    env = suite.load(domain, task, task_kwargs={"random": seed, **task_kwargs})
    env.reset()  # set_seed's own reset (TorchRL's convention)
    first = env.reset()
    steps = [env.step(a.numpy()) for a in actions]
    return first, steps


@pytest.mark.parametrize(("domain", "task"), [("cheetah", "run"), ("walker", "walk")])
def test_same_seed_same_trajectory_as_raw_dm_control(domain, task):
    env = DMControlEnv(domain, task)
    torch.manual_seed(1)
    actions = [env.action_spec.rand() for _ in range(30)]
    first, steps = _raw_trajectory(domain, task, 7, actions)
    runs = []
    for _ in range(2):
        env.set_seed(7)
        td = env.reset()
        for key, value in first.observation.items():
            np.testing.assert_array_equal(td[key].numpy(), np.reshape(value, td[key].shape))
        outs = []
        for action in actions:
            td = env.step(td.set("action", action))["next"]
            outs.append(td.clone())
            td = td.exclude("reward")
        runs.append(torch.stack(outs))
    assert (runs[0] == runs[1]).all()
    for t, step in enumerate(steps):
        assert runs[0][t]["reward"].item() == step.reward
        for key, value in step.observation.items():
            np.testing.assert_array_equal(runs[0][t][key].numpy(), np.reshape(value, (-1,)))


def test_rollout_direct_path_equals_raw():
    env = DMControlEnv("cheetah", "run")
    assert direct_plan(env) is not None
    torch.manual_seed(2)
    actions = [env.action_spec.rand() for _ in range(20)]
    _, steps = _raw_trajectory("cheetah", "run", 3, actions)
    it = iter(actions)
    env.set_seed(3)
    td = env.rollout(20, policy=lambda td: td.set("action", next(it)))
    expected = np.array([s.reward for s in steps])
    np.testing.assert_array_equal(td["next", "reward"].squeeze(-1).numpy(), expected)
    np.testing.assert_array_equal(
        td["next", "velocity"][-1].numpy(), steps[-1].observation["velocity"]
    )


def test_frame_skip_sums_rewards_and_keeps_last_observation():
    env = DMControlEnv("cartpole", "swingup", frame_skip=3)
    action = torch.full((1,), 0.5, dtype=torch.float64)
    first, steps = _raw_trajectory("cartpole", "swingup", 5, [action] * 6)
    env.set_seed(5)
    td = env.rollout(2, policy=lambda td: td.set("action", action))
    rewards = [s.reward for s in steps]
    np.testing.assert_allclose(
        td["next", "reward"].squeeze(-1).numpy(), [sum(rewards[:3]), sum(rewards[3:])]
    )
    np.testing.assert_array_equal(
        td["next", "position"][-1].numpy(), steps[-1].observation["position"]
    )


def test_time_limit_is_truncation_not_termination():
    # cartpole's control timestep is 0.01 s: a 0.05 s limit ends the episode after 5 steps
    env = DMControlEnv("cartpole", "balance", time_limit=0.05)
    env.set_seed(0)
    td = env.rollout(10, break_when_any_done=True)
    assert td.shape == (5,)
    assert td["next", "truncated"][-1].item() and not td["next", "terminated"].any()
    assert td["next", "done"][-1].item() and not td["next", "done"][:-1].any()


class _Terminating(dm_env.Environment):
    """A real dm_control env whose third step ends the episode with discount 0."""

    def __init__(self, env):
        self._env, self._t = env, 0

    def reset(self):
        self._t = 0
        return self._env.reset()

    def step(self, action):
        self._t += 1
        step = self._env.step(action)
        if self._t == 3:
            return dm_env.termination(step.reward, step.observation)
        return step

    def observation_spec(self):
        return self._env.observation_spec()

    def action_spec(self):
        return self._env.action_spec()


def test_discount_zero_is_termination():
    env = DMControlWrapper(_Terminating(suite.load("cartpole", "balance")))
    td = env.rollout(10)
    assert td.shape == (3,)
    assert td["next", "terminated"][-1].item() and not td["next", "truncated"].any()


def test_wrapper_of_a_loaded_env_and_task_kwargs():
    env = DMControlWrapper(suite.load("walker", "stand"), frame_skip=2)
    assert set(env.observation_spec.keys()) == {"orientations", "height", "velocity"}
    assert env.observation_spec["height"].shape == (1,)
    assert env.reward_spec.dtype == torch.float64 and env.reward_spec.shape == (1,)
    assert env.rollout(3)["next", "height"].shape == (3, 1)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"frame_skip": 0}, ValueError, "frame_skip: expected an int >= 1, got 0"),
        ({"camera_id": 1.5}, TypeError, "camera_id"),
        ({"render_kwargs": [64, 64]}, TypeError, "render_kwargs: expected a dict, got list"),
        ({"pixels_only": True}, ValueError, "pixels_only=True needs from_pixels=True"),
        ({"batch_size": (2,)}, ValueError, r"batch_size: .* expected \(\) but got \(2,\)"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        DMControlEnv("cartpole", "balance", **kwargs)


def test_unknown_task_and_bad_env():
    from torchenv.registry import UnknownEnvError

    with pytest.raises(UnknownEnvError, match="cheetah/run"):
        DMControlEnv("cheetah", "walk")
    with pytest.raises(TypeError, match="env_name: expected a str, got int"):
        DMControlEnv(3, "walk")
    with pytest.raises(TypeError, match="expected a dm_control environment"):
        DMControlWrapper(object())


@pytest.mark.usefixtures("pixels_available")
def test_pixels_with_state_and_camera():
    env = DMControlEnv(
        "cheetah", "run", from_pixels=True, camera_id=1, render_kwargs={"height": 24, "width": 32}
    )
    assert set(env.observation_spec.keys()) == {"pixels", "position", "velocity"}
    env.set_seed(0)
    td = env.rollout(2)
    assert (
        td["next", "pixels"].shape == (2, 24, 32, 3) and td["next", "pixels"].dtype == torch.uint8
    )
    assert td["next", "pixels"].float().std() > 0  # a real frame, not a blank buffer
    frame = env.physics.render(height=24, width=32, camera_id=1)
    np.testing.assert_array_equal(td["next", "pixels"][-1].numpy(), frame)


@pytest.mark.parametrize(
    ("domain", "task"), [("cheetah", "run"), ("walker", "walk"), ("cartpole", "swingup")]
)
def test_specs_are_the_suites_specs(domain, task):
    raw = suite.load(domain, task)
    env = DMControlEnv(domain, task)
    dm_action = raw.action_spec()
    action = env.action_spec
    assert action.shape == dm_action.shape and action.dtype == torch.float64
    np.testing.assert_array_equal(action.space.low.numpy(), dm_action.minimum)
    np.testing.assert_array_equal(action.space.high.numpy(), dm_action.maximum)
    dm_obs = raw.observation_spec()
    assert list(env.observation_spec.keys()) == list(dm_obs)
    for name, spec in dm_obs.items():
        ours = env.observation_spec[name]
        assert ours.shape == (int(np.prod(spec.shape)),) and ours.dtype == torch.float64, name
    assert env.reward_spec.shape == (1,) and env.reward_spec.dtype == torch.float64
    for key in ("done", "terminated", "truncated"):
        assert env.full_done_spec[key].shape == (1,) and env.full_done_spec[key].dtype == torch.bool
