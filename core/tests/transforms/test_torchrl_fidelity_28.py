"""Transform behaviours matched to TorchRL 0.14.1 (issue 28, measured with scripts/torchrl_suite.py)."""

from __future__ import annotations

import pytest
import torch

from torchenv.envs import check_env_specs
from torchenv.envs.builtin import PendulumEnv
from torchenv.transforms import ActionDiscretizer, TransformedEnv


@pytest.mark.parametrize("categorical", [True, False])
def test_action_discretizer_keeps_the_continuous_action_as_state(categorical):
    env = TransformedEnv(
        PendulumEnv(),
        ActionDiscretizer(5, out_action_key="action_disc", categorical=categorical),
    )
    assert list(env.full_action_spec.keys()) == ["action_disc"]
    assert env.full_state_spec["action"] == PendulumEnv().action_spec
    check_env_specs(env)
    rollout = env.rollout(4)
    assert rollout["action"].dtype == torch.float32
    index = rollout["action_disc"] if categorical else rollout["action_disc"].int().argmax(-1, True)
    # median sampling over [-2, 2] with 5 intervals: the step's own continuous action
    torch.testing.assert_close(rollout["action"], -2.0 + 4.0 * (index + 0.5) / 5)


def test_action_discretizer_same_key_keeps_no_state():
    env = TransformedEnv(PendulumEnv(), ActionDiscretizer(5))
    assert "action" not in env.full_state_spec
    assert env.rollout(2)["action"].dtype == torch.int64


def test_step_takes_an_action_without_the_specs_singleton_dim():
    # TorchRL's MultiCategorical of one variable samples a 0-d value; the step expands it
    env = TransformedEnv(PendulumEnv(), ActionDiscretizer(torch.tensor([5])))
    td = env.reset()
    td["action"] = torch.tensor(4)
    out = env.step(td)
    assert out["action"].shape == (1,)
    assert env.rollout(3)["action"].shape == (3, 1)


def test_step_refuses_an_action_that_would_repeat_values():
    env = TransformedEnv(PendulumEnv(), ActionDiscretizer(torch.tensor([5])))
    td = env.reset()
    td["action"] = torch.tensor([1, 2])
    with pytest.raises(ValueError, match="has shape"):
        env.step(td)
