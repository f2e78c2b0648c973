"""Transformed envs inside SerialEnv / ParallelEnv, and batched envs wrapped in transforms."""

from __future__ import annotations

import pytest
import torch

from torchenv.envs import check_env_specs
from torchenv.envs.builtin import CartPoleEnv
from torchenv.transforms import (
    CatFrames,
    Compose,
    DoubleToFloat,
    ObservationNorm,
    RewardSum,
    StepCounter,
    TransformedEnv,
)

batched = pytest.importorskip("torchenv.batched")
if not hasattr(batched, "SerialEnv"):  # pragma: no cover - until the batched layer lands
    pytest.skip("torchenv.batched.SerialEnv is not available", allow_module_level=True)


def _stack():
    return Compose(
        StepCounter(max_steps=5),
        RewardSum(),
        ObservationNorm(0.0, 2.0, in_keys=["observation"]),
        DoubleToFloat(),
        CatFrames(2, -1, in_keys=["observation"]),
    )


def make_transformed():
    return TransformedEnv(CartPoleEnv(seed=0), _stack())


def test_transformed_env_inside_serial_env():
    env = batched.SerialEnv(2, make_transformed)
    try:
        check_env_specs(env)
        td = env.rollout(10, break_when_any_done=False)
        assert td["observation"].shape == torch.Size([2, 10, 8])
        # StepCounter(max_steps=5) truncates every sub-env after 5 steps
        assert td["next", "truncated"][:, 4].all()
        assert td["step_count"][:, 5].eq(0).all()
    finally:
        env.close()


def test_serial_env_wrapped_in_transforms():
    env = TransformedEnv(batched.SerialEnv(3, lambda: CartPoleEnv(seed=0)), _stack())
    try:
        check_env_specs(env)
        td = env.rollout(6, break_when_any_done=False)
        assert td.shape == torch.Size([3, 6])
        assert td["next", "step_count"][:, :5].squeeze(-1).tolist() == [[1, 2, 3, 4, 5]] * 3
    finally:
        env.close()


@pytest.mark.parallel
def test_transformed_env_inside_parallel_env():
    env = batched.ParallelEnv(2, make_transformed)
    try:
        check_env_specs(env)
        td = env.rollout(6, break_when_any_done=False)
        assert td["observation"].shape == torch.Size([2, 6, 8])
        assert td["next", "truncated"][:, 4].all()
    finally:
        env.close()


@pytest.mark.parallel
def test_parallel_env_wrapped_in_transforms():
    env = TransformedEnv(batched.ParallelEnv(2, lambda: CartPoleEnv(seed=0)), _stack())
    try:
        check_env_specs(env)
        td = env.rollout(6, break_when_any_done=False)
        assert td.shape == torch.Size([2, 6])
        assert td["next", "episode_reward"][:, 4].squeeze(-1).tolist() == [5.0, 5.0]
    finally:
        env.close()
