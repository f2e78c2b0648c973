"""``SerialEnv`` / ``ParallelEnv``: ``step_and_maybe_reset`` checks its input like ``step``."""

from __future__ import annotations

import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv

pytestmark = pytest.mark.parallel

KINDS = [SerialEnv, ParallelEnv]


@pytest.fixture(params=KINDS, ids=lambda c: c.__name__)
def env(request, noise_env_cls):
    env = request.param(2, noise_env_cls)
    env.set_seed(0)
    yield env
    env.close()


def _stepped_then_fresh(env):
    """A step with action 0.9 (left in the buffers), then a fresh input without action."""
    td = env.reset()
    td["action"] = torch.full((2, 1), 0.9)
    env.step_and_maybe_reset(td)
    return env.reset()


def test_missing_action_is_refused_not_taken_from_the_last_step(env):
    td = _stepped_then_fresh(env)
    with pytest.raises(KeyError, match=r"the action entry 'action' is missing"):
        env.step_and_maybe_reset(td)


def test_bool_action_for_a_float_spec_is_refused(env):
    td = env.reset()
    td["action"] = torch.ones(2, 1, dtype=torch.bool)
    with pytest.raises(TypeError, match=r"'action' has dtype torch.bool.*torch.float32"):
        env.step_and_maybe_reset(td)


def test_zero_dim_action_is_not_broadcast(env):
    td = env.reset()
    td._tensordict["action"] = torch.tensor(0.5)  # what a careless writer may leave
    with pytest.raises(
        ValueError, match=r"'action' has shape \(\) but the spec expects shape \(2, 1\)"
    ):
        env.step_and_maybe_reset(td)


def test_range_checked_with_run_type_checks(env):
    env.run_type_checks = True
    td = env.reset()
    td["action"] = torch.full((2, 1), 100.0)
    with pytest.raises(ValueError, match=r"'action' is out of its spec"):
        env.step_and_maybe_reset(td)


def test_float64_action_is_cast_and_gives_the_float32_result(env, noise_env_cls):
    ref = SerialEnv(2, noise_env_cls)
    ref.set_seed(0)
    td_ref = ref.reset()
    td_ref["action"] = torch.full((2, 1), 0.25)
    out_ref, _ = ref.step_and_maybe_reset(td_ref)
    td = env.reset()
    td["action"] = torch.full((2, 1), 0.25, dtype=torch.float64)
    out, _ = env.step_and_maybe_reset(td)
    assert out["action"].dtype == torch.float32
    torch.testing.assert_close(out["next", "obs"], out_ref["next", "obs"])
    ref.close()
