"""``gymnasium:HalfCheetah-v5`` given a NaN action (issue 35): a NaN reward came back silently
(MuJoCo only printed a C warning); ``check_finite`` reports it, on both step paths."""

from __future__ import annotations

import warnings

import pytest

import torchenv
from torchenv.envs import NonFiniteError

pytest.importorskip("mujoco", reason="gymnasium's MuJoCo tasks need mujoco")
pytestmark = pytest.mark.gymnasium


def _nan_action(env, td):
    td = env.rand_action(td)
    td["action"][0] = float("nan")
    return td


def test_nan_action_into_half_cheetah_warns_once():
    env = torchenv.make("gymnasium:HalfCheetah-v5")
    td = env.reset()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            _, td = env.step_and_maybe_reset(_nan_action(env, td))  # the direct array path
    messages = [str(w.message) for w in record if "non-finite" in str(w.message)]
    assert len(messages) == 1 and "action 'action'" in messages[0], messages
    env.close()


def test_raise_on_step_and_in_rollout():
    env = torchenv.make("gymnasium:HalfCheetah-v5", check_finite="raise")
    with pytest.raises(NonFiniteError, match="non-finite action 'action': NaN in 1 of 6"):
        env.step(_nan_action(env, env.reset()))
    with pytest.raises(NonFiniteError):
        env.rollout(3, lambda td: _nan_action(env, td))
    env.close()
