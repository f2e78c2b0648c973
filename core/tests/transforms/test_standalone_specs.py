"""Transforms used standalone, TorchRL's way: ``t.transform_observation_spec(spec)`` (and the
other per-part methods) with a Composite or a bare leaf spec, outside any env. The expected
specs are TorchRL 0.14.1's; where TorchRL raises or returns the spec unchanged (transforms
that only define ``transform_output_spec``), ours maps the spec as it does inside an env."""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import Bounded, Composite, Unbounded
from torchenv.transforms import (
    ClipTransform,
    Compose,
    DoubleToFloat,
    DTypeCastTransform,
    FlattenObservation,
    GrayScale,
    PermuteTransform,
    RenameTransform,
    RewardScaling,
    SqueezeTransform,
    Stack,
    ToTensorImage,
    UnsqueezeTransform,
)


@pytest.mark.parametrize(
    ("transform", "spec", "shape", "dtype"),
    [
        # HWC -> CHW: a (3, 8, 8) leaf is H=3, W=8, C=8
        (
            ToTensorImage(in_keys=["pixels"]),
            Bounded(0, 255, (3, 8, 8), dtype=torch.uint8),
            (8, 3, 8),
            torch.float32,
        ),
        (GrayScale(in_keys=["pixels"]), Unbounded((3, 8, 8)), (1, 8, 8), torch.float32),
        (
            FlattenObservation(-3, -1, in_keys=["pixels"]),
            Unbounded((3, 8, 8)),
            (192,),
            torch.float32,
        ),
        (UnsqueezeTransform(-1, in_keys=["x"]), Unbounded((3,)), (3, 1), torch.float32),
        (SqueezeTransform(-1, in_keys=["x"]), Unbounded((3,)), (3,), torch.float32),
        (
            PermuteTransform((-1, -3, -2), in_keys=["p"]),
            Unbounded((3, 8, 4)),
            (4, 3, 8),
            torch.float32,
        ),
        (DoubleToFloat(in_keys=["x"]), Unbounded((3,), dtype=torch.float64), (3,), torch.float32),
    ],
)
def test_leaf_observation_spec_is_mapped_as_its_entry(transform, spec, shape, dtype):
    out = transform.transform_observation_spec(spec)
    assert tuple(out.shape) == shape
    assert out.dtype == dtype


def test_clip_of_a_leaf_is_bounded_by_the_clip_range():
    out = ClipTransform(in_keys=["x"], low=-1.0, high=1.0).transform_observation_spec(Unbounded(3))
    assert isinstance(out, Bounded)
    assert out.space.low.tolist() == [-1.0] * 3 and out.space.high.tolist() == [1.0] * 3


def test_reward_leaf_goes_through_transform_reward_spec():
    out = RewardScaling(0.0, 2.0).transform_reward_spec(Unbounded((1,)))
    assert isinstance(out, Unbounded) and out.shape == torch.Size([1])


def test_composite_observation_spec_maps_the_in_keys_only():
    spec = Composite(x=Unbounded(2, dtype=torch.float64), y=Unbounded(1, dtype=torch.float64))
    out = DTypeCastTransform(
        torch.float64, torch.float32, in_keys=["x"]
    ).transform_observation_spec(spec)
    assert out["x"].dtype == torch.float32
    assert out["y"].dtype == torch.float64
    stacked = Stack(in_keys=["a", "b"], out_key="c").transform_observation_spec(
        Composite(a=Unbounded(3), b=Unbounded(3))
    )
    assert stacked["c"].shape == torch.Size([3, 2])


def test_compose_chains_the_leaf_through_each_transform():
    t = Compose(DoubleToFloat(in_keys=["x"]), UnsqueezeTransform(-1, in_keys=["x"]))
    out = t.transform_observation_spec(Unbounded((3,), dtype=torch.float64))
    assert out.shape == torch.Size([3, 1]) and out.dtype == torch.float32


def test_inverse_transforms_map_action_and_state_specs():
    t = DoubleToFloat(in_keys_inv=["action"])
    leaf = t.transform_action_spec(Unbounded(2, dtype=torch.float64))
    assert leaf.dtype == torch.float32  # what the policy writes
    full = t.transform_action_spec(Composite(action=Unbounded(2, dtype=torch.float64)))
    assert full["action"].dtype == torch.float32


def test_rename_standalone_renames_and_inside_an_env_once():
    from torchenv.envs import PendulumEnv
    from torchenv.transforms import TransformedEnv

    renamed = RenameTransform(["x"], ["z"]).transform_observation_spec(
        Composite(x=Unbounded(3), y=Unbounded(1))
    )
    assert set(renamed.keys()) == {"y", "z"}
    env = TransformedEnv(PendulumEnv(), RenameTransform(["observation"], ["obs"]))
    keys = set(env.observation_spec.keys())
    assert "obs" in keys and "observation" not in keys
    assert env.rollout(2)["next", "obs"].shape == torch.Size([2, 3])


@pytest.mark.parametrize(
    ("transform", "torchrl_error"),
    [(GrayScale(in_keys=["z"]), TypeError), (ToTensorImage(in_keys=["z"]), RuntimeError)],
)
def test_non_image_data_raises_torchrl_error_type_and_a_value_error(transform, torchrl_error):
    from tensordict import TensorDict

    data = TensorDict(z=torch.full((2, 2), 0.5))
    with pytest.raises(torchrl_error, match="expected"):
        transform(data)
    with pytest.raises(ValueError, match=r"got shape \(2, 2\)"):
        transform(data)
