"""Transform behaviours matched to TorchRL 0.14.1 (issue 28, measured with scripts/torchrl_suite.py)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import check_env_specs
from torchenv.envs.builtin import PendulumEnv
from torchenv.specs import Unbounded
from torchenv.transforms import (
    ActionDiscretizer,
    CatFrames,
    DeviceCastTransform,
    TensorDictPrimer,
    TransformedEnv,
)


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


@pytest.mark.parametrize(("padding", "pad"), [("same", 0.0), ("constant", 5.0)])
def test_cat_frames_before_any_reset_pads_with_padding_value(padding, pad):
    # TorchRL: a buffer that saw no reset starts as padding_value, the frame comes last
    cat = CatFrames(N=3, in_keys=["a"], dim=-1, padding=padding, padding_value=pad)
    first = cat._call(TensorDict(a=torch.full((2,), 1.0)))["a"]
    second = cat._call(TensorDict(a=torch.full((2,), 2.0)))["a"]
    assert first.tolist() == [pad] * 4 + [1.0, 1.0]
    assert second.tolist() == [pad] * 2 + [1.0, 1.0, 2.0, 2.0]


def test_cat_frames_after_reset_keeps_same_padding():
    env = TransformedEnv(PendulumEnv(), CatFrames(N=3, in_keys=["observation"], dim=-1))
    first = env.reset()["observation"]
    assert first.tolist() == first[:3].tolist() * 3


def test_cat_frames_positive_dim_message_names_torchrls_rule():
    with pytest.raises(ValueError, match="dim must be < 0 to accommodate for tensordict"):
        CatFrames(N=2, in_keys=["a"], dim=1)


@pytest.mark.parametrize("out_keys", [None, ["obs_moved"]])
def test_device_cast_of_some_keys_leaves_the_env_without_device(out_keys):
    base = PendulumEnv(device="cpu:0")
    env = TransformedEnv(
        base,
        DeviceCastTransform("cpu:1", in_keys=["observation"], out_keys=out_keys),
    )
    assert env.device is None
    assert env.output_spec.device is None and env.input_spec.device is None
    key = "observation" if out_keys is None else "obs_moved"
    assert env.full_observation_spec[key].device == torch.device("cpu:1")
    assert env.full_action_spec["action"].device == torch.device("cpu:0")
    check_env_specs(env)
    assert env.rollout(2).device is None


def test_device_cast_of_everything_moves_the_env():
    env = TransformedEnv(PendulumEnv(device="cpu:0"), DeviceCastTransform("cpu:1"))
    assert env.device == torch.device("cpu:1")
    check_env_specs(env)


def test_primer_random_takes_torchrls_default_value_zero():
    primer = TensorDictPrimer(mykey=Unbounded([3]), random=True, default_value=0.0)
    env = TransformedEnv(PendulumEnv(), primer)
    assert env.reset()["mykey"].shape == (3,)
    with pytest.raises(ValueError, match="Setting random to True and providing a default_value"):
        TensorDictPrimer(mykey=Unbounded([3]), random=True, default_value=1.0)
