"""The batched-env contract and the asynchronous API of ``AsyncEnvPool``, on both backends."""

from __future__ import annotations

import pytest

from torchenv.batched import AsyncEnvPool
from torchenv.envs import CartPoleEnv, PendulumEnv
from torchenv.testing import AsyncEnvPoolConformanceTests

pytestmark = pytest.mark.parallel


class TestThreadingPoolPendulum(AsyncEnvPoolConformanceTests):
    num_envs = 3

    def make_batched_env(self, num_envs):
        return AsyncEnvPool([PendulumEnv] * num_envs, backend="threading")


class TestProcessorPoolPendulum(AsyncEnvPoolConformanceTests):
    num_envs = 3

    def make_batched_env(self, num_envs):
        return AsyncEnvPool([PendulumEnv] * num_envs, backend="multiprocessing")


@pytest.mark.slow
class TestThreadingPoolCartPole(AsyncEnvPoolConformanceTests):
    """CartPole ends its episodes within the rollouts: resets inside step_and_maybe_reset."""

    num_envs = 3
    rollout_steps = 30

    def make_batched_env(self, num_envs):
        return AsyncEnvPool(
            [CartPoleEnv] * num_envs, backend="threading", recv_size=min(2, num_envs)
        )


@pytest.mark.slow
class TestProcessorPoolCartPole(AsyncEnvPoolConformanceTests):
    num_envs = 3
    rollout_steps = 30

    def make_batched_env(self, num_envs):
        return AsyncEnvPool(
            [CartPoleEnv] * num_envs, backend="multiprocessing", recv_size=min(2, num_envs)
        )


class TestThreadingPoolRestartFailedCartPole(AsyncEnvPoolConformanceTests):
    """``restart_failed=True``: the ``"worker_restarted"`` entry in every output, fault-free."""

    num_envs = 3
    rollout_steps = 30

    def make_batched_env(self, num_envs):
        return AsyncEnvPool(
            [CartPoleEnv] * num_envs,
            backend="threading",
            recv_size=min(2, num_envs),
            restart_failed=True,
        )


class TestProcessorPoolRestartFailedCartPole(AsyncEnvPoolConformanceTests):
    num_envs = 3
    rollout_steps = 30

    def make_batched_env(self, num_envs):
        return AsyncEnvPool(
            [CartPoleEnv] * num_envs,
            backend="multiprocessing",
            recv_size=min(2, num_envs),
            restart_failed=True,
        )
