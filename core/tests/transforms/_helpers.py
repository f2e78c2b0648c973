"""Helpers of the transforms tests (loaded by conftest.py as ``torchenv_transforms_helpers``)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


class CountingEnv(EnvBase):
    """Observation = step count (float64 by default), reward = action sum, done at ``max_count``.

    Records the actions received by ``_step`` in ``self.actions``.
    """

    def __init__(self, batch_size=(), max_count: int = 1000, dtype=torch.float64, obs_dim: int = 3):
        super().__init__(batch_size=torch.Size(batch_size))
        shape = self.batch_size
        self.observation_spec = Composite(
            observation=Unbounded(shape=(*shape, obs_dim), dtype=dtype), shape=shape
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(*shape, 1), dtype=dtype)
        self.reward_spec = Unbounded(shape=(*shape, 1), dtype=dtype)
        flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=shape
        )
        self.max_count = max_count
        self.dtype = dtype
        self.obs_dim = obs_dim
        self.count = torch.zeros((*shape, 1), dtype=torch.int64)
        self.actions: list[torch.Tensor] = []

    def _reset(self, tensordict=None, **kwargs):
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is None:
            self.count = torch.zeros_like(self.count)
        else:
            self.count = self.count.masked_fill(reset.reshape(self.count.shape), 0)
        return self._obs(TensorDict(batch_size=self.batch_size))

    def _obs(self, td):
        shape = self.batch_size
        obs = self.count.to(self.dtype).expand(*shape, self.obs_dim).clone()
        td.set("observation", obs)
        done = self.count >= self.max_count
        td.set("done", done.clone())
        td.set("terminated", done.clone())
        td.set("truncated", torch.zeros_like(done))
        return td

    def _step(self, tensordict):
        action = tensordict.get("action")
        self.actions.append(action.clone())
        self.count = self.count + 1
        td = TensorDict(batch_size=self.batch_size)
        td.set("reward", action.sum(-1, keepdim=True).to(self.dtype))
        return self._obs(td)

    def _set_seed(self, seed):
        pass


class ImageEnv(EnvBase):
    """Random uint8 ``[H, W, 3]`` pixels, a discrete action."""

    def __init__(self, h: int = 8, w: int = 10):
        super().__init__(batch_size=())
        self.observation_spec = Composite(
            pixels=Bounded(0, 255, shape=(h, w, 3), dtype=torch.uint8),
            observation=Unbounded(shape=(2, 1)),
        )
        self.action_spec = Categorical(4, shape=())
        self.reward_spec = Unbounded(shape=(1,))
        self.h, self.w = h, w

    def _obs(self, td):
        td.set("pixels", torch.randint(0, 256, (self.h, self.w, 3), dtype=torch.uint8))
        td.set("observation", torch.randn(2, 1))
        td.set("done", torch.zeros(1, dtype=torch.bool))
        return td

    def _reset(self, tensordict=None, **kwargs):
        return self._obs(TensorDict())

    def _step(self, tensordict):
        return self._obs(TensorDict(reward=torch.ones(1)))

    def _set_seed(self, seed):
        pass
