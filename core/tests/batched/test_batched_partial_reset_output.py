"""A partial reset of a batched env returns the current data of the sub-envs it leaves alone.

Transforms read that output (``ActionMask`` writes its mask into the action spec): rows of
workers that were not reset must hold their latest data, not the data of their last reset,
whether the batched env moves data through shared buffers or not.
"""

from __future__ import annotations

import functools

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, SerialEnv


@pytest.mark.parametrize("use_buffers", [True, False])
@pytest.mark.parametrize("cls", [SerialEnv, ParallelEnv])
def test_partial_reset_returns_current_rows(noise_env_cls, cls, use_buffers):
    env = cls(3, functools.partial(noise_env_cls, obs_dim=2), use_buffers=use_buffers)
    try:
        env.set_seed(0)
        td = env.reset()
        for _ in range(2):
            td = env._step_mdp(env.step(env.rand_action(td)))
        current = td["obs"].clone()
        # maybe_reset hands _reset the "_reset" entries only (no observations)
        reset = TensorDict({"_reset": torch.tensor([[True], [False], [False]])}, batch_size=(3,))
        out = env._reset(reset)
        torch.testing.assert_close(out["obs"][1:], current[1:])
        # and after that reset, a step: again current rows
        td = env._step_mdp(env.step(env.rand_action(env.reset(td.set("_reset", reset["_reset"])))))
        current = td["obs"].clone()
        out = env._reset(reset.clone())
        torch.testing.assert_close(out["obs"][1:], current[1:])
    finally:
        env.close()
