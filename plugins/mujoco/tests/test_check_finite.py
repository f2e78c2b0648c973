"""A NaN or infinite action into batched MuJoCo is reported (issue 35): once with the default
``check_finite="warn"``, with the key and only the affected rows; ``"raise"`` raises."""

from __future__ import annotations

import warnings

import pytest
import torch

import torchenv
from torchenv.envs import NonFiniteError

pytestmark = pytest.mark.mujoco


def _finite_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "non-finite" in str(w.message)]


@pytest.mark.parametrize("task", ["HalfCheetah", "Hopper"])
def test_nan_action_warns_once_where_mujoco_only_printed(task):
    env = torchenv.make(f"mujoco:{task}")
    td = env.reset()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            td = env.rand_action(td)
            td["action"][..., 0] = float("nan")
            _, td = env.step_and_maybe_reset(td)
    (message,) = _finite_warnings(record)
    assert "non-finite action 'action' at batch index (0,): NaN" in message
    env.close()


def test_batched_simulator_reports_only_the_affected_rows():
    env = torchenv.make("mujoco:HalfCheetah", num_envs=4, check_finite="raise")
    td = env.rand_action(env.reset())
    td["action"][1, 2] = float("nan")
    td["action"][3, 0] = float("inf")
    with pytest.raises(
        NonFiniteError, match=r"batch index \(1,\), \(3,\): NaN/inf in 2 of 24"
    ) as info:
        env.step(td)
    assert info.value.rows == [(1,), (3,)]
    # rows 0 and 2 are still finite: the simulator's batch keeps them apart
    out = env.step(env.rand_action(env.reset()))
    assert torch.isfinite(out["next", "observation"]).all()
    env.close()


def test_nan_reaching_the_rollout_through_a_policy_raises():
    env = torchenv.make("mujoco:Hopper", num_envs=2, check_finite="raise")

    def policy(td):
        td = env.rand_action(td)
        td["action"][0] = float("nan")
        return td

    with pytest.raises(NonFiniteError, match=r"action 'action' at batch index \(0,\)"):
        env.rollout(3, policy)
    env.close()
