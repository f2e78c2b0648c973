"""A sub-env that fails to build in its worker: the WorkerError says "while building the env"."""

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
