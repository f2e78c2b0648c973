"""Each worker's specs are compared at start with those the batched env laid out (issue 35): a
factory that builds another env in a worker is an error naming the worker, the entry and both
shapes/dtypes, never data broadcast or cast into buffers of another layout."""

from __future__ import annotations

import os
import sys

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, RayParallelEnv, SerialEnv, SpecMismatchError
from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Composite, Unbounded

PARENT = os.getpid()
_DIM = {"value": 3}  # what _from_global builds (read in the worker, after fork)


class DimEnv(EnvBase):
    """An observation of ``dim`` values (3 in the parent process, 1 elsewhere by default)."""

    def __init__(self, dim: int | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.dim = dim if dim is not None else (3 if os.getpid() == PARENT else 1)
        self.observation_spec = Composite(observation=Unbounded((self.dim,), dtype=dtype))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))
        self.dtype = dtype

    def _reset(self, tensordict=None, **kwargs):
        obs = torch.ones(self.dim, dtype=self.dtype)
        return TensorDict(observation=obs, done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        obs = torch.arange(self.dim, dtype=self.dtype) + 2
        done = torch.zeros(1, dtype=torch.bool)
        return TensorDict(observation=obs, reward=torch.zeros(1), done=done)

    def _set_seed(self, seed):
        pass


def _from_global() -> DimEnv:
    return DimEnv(_DIM["value"])


class _Counter:
    """A factory whose first env (the one the batched env reads its specs from) differs."""

    def __init__(self):
        self.calls = 0

    def __call__(self) -> DimEnv:
        self.calls += 1
        return DimEnv(3 if self.calls == 1 else 1)


def _check_message(err: BaseException, worker: int, what: str) -> None:
    text = str(err)
    assert f"worker {worker}" in text
    assert "'observation'" in text
    assert what in text


@pytest.mark.parallel
def test_parallel_env_whose_workers_build_another_shape_raises_at_start():
    # the reproducer: shape (1,) in the workers, (3,) in the parent
    env = ParallelEnv(2, DimEnv)
    with pytest.raises(SpecMismatchError) as info:
        env.rollout(2)
    _check_message(info.value, 0, "float32 of shape (1,) in worker 0, float32 of shape (3,)")
    assert info.value.worker_index == 0
    assert info.value.key == ("full_observation_spec", "observation")
    assert env.worker_pids == []  # the workers were stopped
    env.close()


@pytest.mark.parallel
@pytest.mark.parametrize("use_buffers", [True, False])
def test_per_worker_kwargs_that_change_the_specs_name_the_worker(use_buffers):
    env = ParallelEnv(2, DimEnv, create_env_kwargs=[{"dim": 3}, {"dim": 2}])
    env.configure_parallel(use_buffers=use_buffers)
    with pytest.raises(SpecMismatchError, match="worker 1") as info:
        env.reset()
    _check_message(info.value, 1, "float32 of shape (2,) in worker 1, float32 of shape (3,)")
    env.close()


@pytest.mark.parallel
def test_dtype_difference_is_reported():
    env = ParallelEnv(2, DimEnv, create_env_kwargs=[{"dim": 2}, {"dim": 2, "dtype": torch.float64}])
    with pytest.raises(SpecMismatchError) as info:
        env.reset()
    _check_message(info.value, 1, "float64 of shape (2,) in worker 1, float32 of shape (2,)")
    env.close()


def test_serial_env_checks_its_sub_envs():
    env = SerialEnv(2, _Counter())
    with pytest.raises(SpecMismatchError) as info:
        env.reset()
    _check_message(info.value, 0, "float32 of shape (1,) in worker 0, float32 of shape (3,)")
    env.close()


@pytest.mark.parallel
def test_metadata_from_workers_checks_workers_started_again():
    _DIM["value"] = 3
    try:
        env = ParallelEnv(2, _from_global, metadata_from_workers=True)
        assert env.observation_spec["observation"].shape == (2, 3)
        env.close()
        _DIM["value"] = 1  # the next workers (forked from now on) build another env
        with pytest.raises(SpecMismatchError, match="worker 0"):
            env.reset()
        env.close()
    finally:
        _DIM["value"] = 3


@pytest.mark.parallel
def test_matching_workers_start_and_roll_out():
    env = ParallelEnv(2, DimEnv, create_env_kwargs={"dim": 3})
    out = env.rollout(2)
    assert out["next", "observation"].shape == (2, 2, 3)
    assert out["next", "observation"][0, 0].tolist() == [2.0, 3.0, 4.0]
    env.close()


@pytest.mark.ray
@pytest.mark.xdist_group("ray")
def test_ray_actors_whose_env_differs_raise_at_start(ray_local):
    ray_local.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    env = RayParallelEnv(2, DimEnv, num_cpus=0.5)
    with pytest.raises(SpecMismatchError) as info:
        env.reset()
    _check_message(info.value, 0, "float32 of shape (1,) in worker 0, float32 of shape (3,)")
    assert env.worker_pids == []
    env.close()
