"""``ParallelEnv(..., envs_per_worker=k)``: several sub-envs per worker process (issue 31)."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv, WorkerError
from torchenv.envs import ArrayEnv, CartPoleEnv, PendulumEnv
from torchenv.specs import Bounded, Composite, Unbounded
from torchenv.testing import BatchedEnvConformanceTests, assert_tensordict_equal

pytestmark = pytest.mark.parallel


class TestConformanceTwoPerWorker(BatchedEnvConformanceTests):
    """The batched-env contract holds with two sub-envs per process (4 envs, 2 processes)."""

    def make_batched_env(self, num_envs):
        return ParallelEnv(num_envs, CartPoleEnv, envs_per_worker=2)


class TestConformanceUneven(BatchedEnvConformanceTests):
    """... and with a last process that runs fewer sub-envs (5 envs in processes of 3 and 2)."""

    num_envs = 5

    def make_batched_env(self, num_envs):
        return ParallelEnv(num_envs, PendulumEnv, envs_per_worker=3)


def test_processes_and_pids():
    env = ParallelEnv(5, PendulumEnv, envs_per_worker=2)
    assert env.num_processes == 3
    env.reset()
    pids = env.worker_pids
    assert len(pids) == 5 and len(set(pids)) == 3
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    env.close()


@pytest.mark.parametrize("k", [2, 4])
def test_same_data_as_serial_env_seed_for_seed(k):
    """Rollouts, step_and_maybe_reset loops and partial resets give SerialEnv's data."""
    ser, par = SerialEnv(4, CartPoleEnv), ParallelEnv(4, CartPoleEnv, envs_per_worker=k)
    try:
        assert ser.set_seed(7) == par.set_seed(7)
        rollouts = []
        for env in (ser, par):
            torch.manual_seed(0)  # the same random actions for both
            rollouts.append(env.rollout(30, break_when_any_done=False))
        assert_tensordict_equal(*rollouts)
        tds = [env.reset() for env in (ser, par)]
        torch.manual_seed(1)
        actions = [ser.rand_action(tds[0].clone())["action"] for _ in range(40)]
        for action in actions:
            outs = [
                env.step_and_maybe_reset(td.set("action", action))
                for env, td in zip((ser, par), tds)
            ]
            assert_tensordict_equal(outs[0][0], outs[1][0])
            tds = [outs[0][1], outs[1][1]]
        mask = torch.tensor([[False], [True], [False], [True]])
        resets = [env.reset(td.clone().set("_reset", mask)) for env, td in zip((ser, par), tds)]
        assert_tensordict_equal(resets[0], resets[1])
    finally:
        ser.close()
        par.close()


class Walk(ArrayEnv):
    """A 1-d random walk with numpy I/O (ArrayEnv: the direct array path), counting its
    direct steps; episodes end after 3 to 6 steps."""

    def __init__(self):
        super().__init__(batch_size=())
        self.observation_spec = Composite(x=Unbounded((1,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))
        self.rng = np.random.default_rng(0)
        self.x, self.t, self.length, self.direct_steps = 0.0, 0, 3, 0

    def _array_reset(self, out, mask, seed):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.x, self.t = float(self.rng.normal()), 0
        self.length = int(self.rng.integers(3, 7))
        out["x"][...] = self.x

    def _array_step(self, action, out):
        self.x += float(action[0]) + 0.1 * float(self.rng.normal())
        self.t += 1
        out["x"][...] = self.x
        out["reward"][...] = -abs(self.x)
        out["terminated"][...] = False
        out["truncated"][...] = self.t >= self.length
        out["done"][...] = self.t >= self.length

    def _step_into(self, action, out):
        self.direct_steps += 1
        return super()._step_into(action, out)


def test_direct_array_path_is_taken_and_matches():
    """Each sub-env writes straight into its shared rows; the data is SerialEnv's."""
    ser, par = SerialEnv(4, Walk), ParallelEnv(4, Walk, envs_per_worker=2)
    try:
        ser.set_seed(0), par.set_seed(0)
        rollouts = []
        for env in (ser, par):
            torch.manual_seed(0)  # the same random actions for both
            rollouts.append(env.rollout(20, break_when_any_done=False))
        assert_tensordict_equal(*rollouts)
        assert par.direct_steps == [20] * 4  # rollout's step_and_maybe_reset took the path
        tds = [ser.reset(), par.reset()]
        torch.manual_seed(0)
        for _ in range(25):
            action = torch.rand(4, 1) * 2 - 1
            outs = [
                env.step_and_maybe_reset(td.set("action", action))
                for env, td in zip((ser, par), tds)
            ]
            assert_tensordict_equal(outs[0][0], outs[1][0])
            tds = [outs[0][1], outs[1][1]]
        assert par.direct_steps == [45] * 4
    finally:
        ser.close()
        par.close()


def test_views_and_fan_out():
    env = ParallelEnv(4, Walk, envs_per_worker=2)
    env.set_seed(0)
    env.rollout(2)
    view = env[1:3]  # one sub-env of each process
    assert view.rollout(3, break_when_any_done=False).batch_size == (2, 3)
    # attribute fan-out: one answer per sub-env (the view's steps go through the pipes)
    assert env.direct_steps == [2, 2, 2, 2] and view.direct_steps == [2, 2]
    env.close()


def test_error_names_the_sub_env():
    class Fails(PendulumEnv):
        def __init__(self, bad=False):
            super().__init__()
            self.bad = bad

        def _step(self, tensordict):
            if self.bad:
                raise ValueError("sub-env exploded")
            return super()._step(tensordict)

    env = ParallelEnv(4, Fails, [{}, {}, {}, {"bad": True}], envs_per_worker=2)
    td = env.reset()
    with pytest.raises(WorkerError, match="worker 3 .*sub-env exploded") as info:
        env.step(env.rand_action(td))
    assert info.value.worker_index == 3
    # the process goes on: its other sub-env still answers
    assert env[2].rollout(2).batch_size == (1, 2)
    env.close()


def test_a_dead_process_takes_its_sub_envs_with_it():
    env = ParallelEnv(4, PendulumEnv, envs_per_worker=2)
    td = env.reset()
    os.kill(env.worker_pids[2], signal.SIGKILL)
    with pytest.raises(WorkerError, match=r"worker [23] .*died .*SIGKILL"):
        env.step(env.rand_action(td))
    env.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_envs_per_worker_is_checked(bad):
    with pytest.raises(ValueError, match="envs_per_worker must be a positive int"):
        ParallelEnv(2, PendulumEnv, envs_per_worker=bad)


def test_serial_for_single_ignores_envs_per_worker():
    env = ParallelEnv(1, PendulumEnv, serial_for_single=True, envs_per_worker=4)
    assert isinstance(env, SerialEnv)
    env.close()
