"""Test environments for the batched envs (handed to tests through fixtures)."""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


class CountingNoiseEnv(EnvBase):
    """A deterministic stochastic env: noise from its own generator, random episode lengths.

    Observation ``obs`` (``[obs_dim]``) and ``count``; reward from the generator; done when the
    step counter reaches a length drawn at reset. ``fail_at`` raises at that step;
    ``die_at`` kills the process at that step.
    """

    def __init__(self, obs_dim: int = 3, scale: float = 1.0, fail_at=None, die_at=None):
        super().__init__(batch_size=())
        self.obs_dim = obs_dim
        self.scale = scale
        self.g = 9.81 * scale
        self.fail_at = fail_at
        self.die_at = die_at
        self.rng = torch.Generator().manual_seed(0)
        self.register_buffer("stat", torch.zeros(1))
        self.count = 0
        self.length = 5
        self.observation_spec = Composite(
            obs=Unbounded(shape=(obs_dim,)),
            count=Unbounded(shape=(1,), dtype=torch.int64),
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))
        self.full_done_spec = Composite(
            done=Categorical(2, shape=(1,), dtype=torch.bool),
            terminated=Categorical(2, shape=(1,), dtype=torch.bool),
            truncated=Categorical(2, shape=(1,), dtype=torch.bool),
        )

    def _set_seed(self, seed):
        self.rng.manual_seed(int(seed))

    def bump(self, value: float) -> float:
        """Adds ``value`` to the ``stat`` buffer in place; returns the new value."""
        self.stat.add_(value)
        return float(self.stat)

    def get_count(self, offset: int = 0) -> int:
        return self.count + offset

    def _reset(self, tensordict=None, scale=None, **kwargs):
        if scale is not None:
            self.scale = scale
        self.count = 0
        self.length = int(torch.randint(3, 8, (), generator=self.rng))
        obs = torch.randn(self.obs_dim, generator=self.rng) * self.scale
        return TensorDict(
            obs=obs,
            count=torch.zeros(1, dtype=torch.int64),
            done=torch.zeros(1, dtype=torch.bool),
            terminated=torch.zeros(1, dtype=torch.bool),
            truncated=torch.zeros(1, dtype=torch.bool),
        )

    def _step(self, tensordict):
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            raise ValueError(f"deliberate failure at step {self.count}")
        if self.die_at is not None and self.count == self.die_at:
            os.kill(os.getpid(), 9)
        action = tensordict["action"]
        obs = torch.randn(self.obs_dim, generator=self.rng) * self.scale + action
        done = torch.tensor([self.count >= self.length])
        return TensorDict(
            obs=obs,
            count=torch.tensor([self.count]),
            reward=torch.rand(1, generator=self.rng) + action,
            done=done,
            terminated=done.clone(),
            truncated=torch.zeros(1, dtype=torch.bool),
        )


class DynamicEnv(EnvBase):
    """An env whose observation grows by one row per step (a ``-1`` dim in its spec)."""

    def __init__(self, max_count: int = 4):
        super().__init__(batch_size=())
        self.observation_spec = Composite(observation=Unbounded(shape=(-1, 2)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(2,))
        self.reward_spec = Unbounded(shape=(1,))
        self.count = 0
        self.max_count = max_count

    def _reset(self, tensordict=None, **kwargs):
        self.count = 0
        return TensorDict(observation=torch.zeros(1, 2), done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        self.count += 1
        done = torch.tensor([self.count >= self.max_count])
        return TensorDict(
            observation=torch.full((self.count + 1, 2), float(self.count)),
            reward=torch.ones(1),
            done=done,
            terminated=done.clone(),
        )


@pytest.fixture
def noise_env_cls():
    return CountingNoiseEnv


@pytest.fixture
def dynamic_env_cls():
    return DynamicEnv
