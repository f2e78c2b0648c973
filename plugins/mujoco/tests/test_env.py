"""MujocoEnv: batched conformance on every task, partial resets, truncation, seeding, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchenv
from torchenv.testing import BatchedEnvConformanceTests
from torchenv_mujoco import TASKS, MujocoEnv

pytestmark = pytest.mark.mujoco

SLIDER = """
<mujoco>
  <worldbody>
    <body name="box"><joint name="x" type="slide" axis="1 0 0"/><geom size=".1"/></body>
  </worldbody>
  <actuator><motor joint="x" ctrlrange="-1 1" ctrllimited="true"/></actuator>
</mujoco>
"""


class _TaskConformance(BatchedEnvConformanceTests):
    task = "HalfCheetah"
    direct_path = True
    rollout_steps = 4

    def make_batched_env(self, num_envs):
        return MujocoEnv(self.task, num_envs=num_envs, num_threads=2)


class TestHalfCheetahConformance(_TaskConformance):
    task = "HalfCheetah"


class TestHopperConformance(_TaskConformance):
    task = "Hopper"


class TestWalker2dConformance(_TaskConformance):
    task = "Walker2d"


class TestAntConformance(_TaskConformance):
    task = "Ant"


class TestInvertedPendulumConformance(_TaskConformance):
    task = "InvertedPendulum"


class TestReacherConformance(_TaskConformance):
    task = "Reacher"


@pytest.mark.slow
class TestHumanoidConformance(_TaskConformance):
    task = "Humanoid"


class TestCustomModelConformance(BatchedEnvConformanceTests):
    direct_path = True

    def make_batched_env(self, num_envs):
        return MujocoEnv(
            SLIDER,
            num_envs=num_envs,
            frame_skip=3,
            reset_noise_scale=0.1,
            reward_fn=lambda sim, action, before: sim.qpos[:, 0] - before[:, 0],
            termination_fn=lambda sim, obs: np.abs(sim.qpos[:, 0]) > 0.5,
            max_episode_steps=20,
        )


def test_make_by_name_with_threads():
    env = torchenv.make("mujoco:HalfCheetah", num_envs=8, num_threads=2)
    assert tuple(env.batch_size) == (8,)
    assert env.num_threads == 2 and env.frame_skip == 5
    assert env.observation_spec["observation"].shape == (8, 17)
    assert env.action_spec.shape == (8, 6)
    env.close()


def test_tasks_are_listed():
    assert sorted(torchenv.list_envs("mujoco")) == sorted(TASKS)


def test_unknown_task_suggests():
    with pytest.raises(Exception, match="HalfCheetah"):
        torchenv.make("mujoco:HalfCheeta")


def test_thread_count_does_not_change_the_numbers():
    runs = []
    for threads in (1, 2):
        env = MujocoEnv("Hopper", num_envs=6, num_threads=threads)
        env.set_seed(3)
        torch.manual_seed(0)
        runs.append(env.rollout(10, break_when_any_done=False))
        env.close()
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)


def test_truncation_at_the_task_step_limit():
    env = MujocoEnv("Reacher", num_envs=3)
    assert env._task.max_episode_steps == 50
    td = env.rollout(50, break_when_any_done=False)
    truncated = td["next", "truncated"][..., 0]
    assert not truncated[:, :49].any() and truncated[:, 49].all()
    assert (td["next", "done"] == td["next", "truncated"]).all()  # Reacher never terminates


def test_partial_reset_restarts_the_step_count():
    env = MujocoEnv("HalfCheetah", num_envs=3, max_episode_steps=4)
    td = env.reset()
    for _ in range(3):
        td = env.rand_step(td)["next"]
    td["_reset"] = torch.tensor([[True], [False], [False]])
    reset = env.reset(td)
    untouched = td["observation"][1:]
    torch.testing.assert_close(reset["observation"][1:], untouched)
    nxt = env.rand_step(reset)["next"]
    assert nxt["truncated"][:, 0].tolist() == [False, True, True]


def test_seeding_reproduces_the_initial_states():
    a, b = MujocoEnv("Ant", num_envs=4), MujocoEnv("Ant", num_envs=4)
    a.set_seed(11), b.set_seed(11)
    obs_a, obs_b = a.reset()["observation"], b.reset()["observation"]
    torch.testing.assert_close(obs_a, obs_b, rtol=0, atol=0)
    assert not torch.equal(obs_a[0], obs_a[1])  # sub-envs draw different noise


def test_custom_function_sees_declared_fields():
    seen = {}

    def observe(sim):
        seen["xpos"] = sim.field("xpos").shape
        return sim.qpos.copy()

    env = MujocoEnv(SLIDER, num_envs=2, observation_fn=observe, fields=("xpos",))
    assert env.observation_spec["observation"].shape == (2, 1)
    env.rand_step(env.reset())
    assert seen["xpos"] == (2, 2, 3)


def test_undeclared_field_is_named():
    with pytest.raises(KeyError, match="fields=.*xpos"):
        MujocoEnv(SLIDER, num_envs=2, observation_fn=lambda sim: sim.field("xpos")[:, 1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_threads": 0}, "num_threads"),
        ({"frame_skip": 0}, "frame_skip"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"batch_size": (5,), "num_envs": 2}, "batch_size"),
        ({"reward_fn": lambda *a: 0}, "reward_fn"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MujocoEnv("HalfCheetah", **kwargs)


def test_bad_model_is_named():
    with pytest.raises(FileNotFoundError, match="model"):
        MujocoEnv("/nowhere/model.xml")
    with pytest.raises(ValueError, match="fields"):
        MujocoEnv(SLIDER, fields=("not_a_field",))
