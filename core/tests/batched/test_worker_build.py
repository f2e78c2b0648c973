"""Building sub-envs in workers: a failed build says so; spawn workers take lambdas (cloudpickle)."""

from __future__ import annotations

import os

import pytest

from torchenv.batched import ParallelEnv, WorkerError
from torchenv.envs import PendulumEnv

_MAIN = os.getpid()


def _fails_in_workers():
    if os.getpid() != _MAIN:  # the main process builds one for the specs; the workers fail
        raise ValueError("no such task in the worker")
    return PendulumEnv()


@pytest.mark.parallel
def test_build_failure_in_a_worker_names_the_build_not_the_reset():
    env = ParallelEnv(2, _fails_in_workers, mp_start_method="fork")
    try:
        with pytest.raises(WorkerError, match=r"raised ValueError while building the env") as info:
            env.reset()
        assert "during reset" not in str(info.value).splitlines()[0]
        assert "no such task in the worker" in str(info.value)
    finally:
        env.close()


@pytest.mark.parallel
@pytest.mark.slow
def test_spawn_workers_take_a_lambda_through_cloudpickle():
    pytest.importorskip("cloudpickle")
    env = ParallelEnv(2, lambda: PendulumEnv(), mp_start_method="spawn")
    try:
        assert env.rollout(3).batch_size == (2, 3)
    finally:
        env.close()
