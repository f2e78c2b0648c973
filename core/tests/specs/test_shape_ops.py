"""Leaf shape operations (expand, index, squeeze, unsqueeze, unbind, reshape), moves and equality."""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    MultiOneHot,
    OneHot,
    SpecShapeError,
    Unbounded,
)


def test_expand_adds_leading_dims():
    spec = Bounded(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
    out = spec.expand(3, 2)
    assert out.shape == (3, 2) and out.low.shape == (3, 2)
    assert out.low[:, 1].tolist() == [1.0, 1.0, 1.0]
    assert spec.expand((4, 2)).shape == (4, 2)


def test_expand_broadcasts_singletons_and_rejects_mismatch():
    assert Unbounded(shape=(1, 3)).expand(4, 3).shape == (4, 3)
    with pytest.raises(SpecShapeError, match="must match"):
        Unbounded(3).expand(2, 4)
    with pytest.raises(SpecShapeError, match="fewer dims"):
        Unbounded(shape=(2, 3)).expand(3)


def test_expand_keeps_mask():
    spec = Categorical(3, shape=(2,), mask=torch.tensor([True, False, True]))
    out = spec.expand(5, 2)
    assert out.mask.shape == (5, 2, 3)
    assert 1 not in out.rand().unique().tolist()


def test_index():
    spec = Bounded(0.0, torch.arange(1.0, 13.0).reshape(4, 3))
    assert spec[0].shape == (3,) and spec[0].high.tolist() == [1.0, 2.0, 3.0]
    assert spec[:, 1].shape == (4,) and spec[:, 1].high.tolist() == [2.0, 5.0, 8.0, 11.0]
    assert spec[1:3].shape == (2, 3)
    assert spec[None].shape == (1, 4, 3)
    assert spec[..., 0].shape == (4,)


def test_index_protects_category_dim():
    spec = OneHot(3, shape=(4, 3))
    assert spec[0] == OneHot(3)
    assert spec[..., 1:].shape == (3, 3)
    with pytest.raises(IndexError, match="first 1 dims"):
        spec[:, 1]
    with pytest.raises(IndexError):
        Binary(shape=(2, 3))[0, 1]


def test_squeeze_unsqueeze():
    spec = Unbounded(shape=(1, 3, 1))
    assert spec.squeeze().shape == (3,)
    assert spec.squeeze(0).shape == (3, 1)
    assert spec.squeeze(1) is spec  # not a singleton: unchanged
    assert spec.unsqueeze(-1).shape == (1, 3, 1, 1)
    assert torch.squeeze(spec, 0).shape == (3, 1)
    with pytest.raises(SpecShapeError):
        OneHot(1).squeeze(0)
    assert OneHot(1).squeeze() == OneHot(1)


def test_unbind():
    spec = Bounded(torch.zeros(2, 3), torch.tensor([[1.0] * 3, [2.0] * 3]))
    first, second = spec.unbind(0)
    assert first.shape == (3,) and second.high.tolist() == [2.0] * 3
    assert len(torch.unbind(Unbounded(shape=(4, 2)), 1)) == 2
    with pytest.raises(SpecShapeError):
        OneHot(3).unbind(-1)


def test_reshape():
    spec = Bounded(0.0, 1.0, shape=(2, 3))
    assert spec.reshape(6).shape == (6,) and spec.reshape(6).low.shape == (6,)
    assert MultiOneHot([2, 1], shape=(2, 2, 3)).reshape(4, 3).shape == (4, 3)


def test_clone_is_independent():
    spec = Bounded(0.0, 1.0, shape=(2,))
    other = spec.clone()
    other.low[0] = -5.0
    assert spec.low[0].item() == 0.0 and spec != other


def test_to_device_and_dtype():
    spec = Categorical(3, shape=(2,))
    assert spec.to("cpu") is spec
    out = spec.to(torch.int32)
    assert out.dtype == torch.int32 and out.rand().dtype == torch.int32
    assert spec.cpu() == spec


def test_eq():
    assert Unbounded(3) == Unbounded(3)
    assert Unbounded(3) != Unbounded(4)
    assert Unbounded(3) != Unbounded(3, dtype=torch.float64)
    assert Bounded(0, 1, shape=(2,)) != Bounded(0, 2, shape=(2,))
    assert Categorical(3) != Categorical(4)
    assert Categorical(3) != OneHot(3)
    masked = Categorical(3, mask=torch.tensor([True, False, True]))
    assert masked != Categorical(3) and masked == masked.clone()


def test_repr_matches_torchrl_layout():
    text = repr(Categorical(4))
    assert text == (
        "Categorical(\n    shape=torch.Size([]),\n    space=CategoricalBox(n=4),\n    device=cpu,\n"
        "    dtype=torch.int64,\n    domain=discrete)"
    )


def test_legacy_aliases():
    from torchenv import specs

    assert specs.CompositeSpec is specs.Composite
    spec = specs.BoundedTensorSpec(-1.0, 1.0, shape=(2,))
    assert isinstance(spec, specs.Bounded) and spec.is_in(spec.rand())
    assert specs.OneHotDiscreteTensorSpec(3) == specs.OneHot(3)
    assert specs.DiscreteTensorSpec(3) == specs.Categorical(3)
    assert isinstance(specs.UnboundedContinuousTensorSpec(shape=(2,)), specs.Unbounded)
    assert specs.MultiDiscreteTensorSpec([2, 3]) == specs.MultiCategorical([2, 3])


def test_space_bounds_can_be_edited_in_place():
    # TorchRL transforms (e.g. ObservationNorm) rewrite spec.space.low / .high directly
    spec = Bounded(0.0, 1.0, shape=(2,))
    other = spec.clone()
    spec.space.low = torch.full((2,), 10.0)
    spec.space.high = torch.full((2,), 20.0)
    assert spec.low.tolist() == [10.0, 10.0]
    assert spec.is_in(torch.full((2,), 15.0)) and not spec.is_in(torch.full((2,), 0.5))
    assert bool((spec.rand() >= 10).all())
    assert other.high.tolist() == [1.0, 1.0]  # the clone has its own box
    spec.high = torch.full((2,), 30.0)
    assert spec.is_in(torch.full((2,), 25.0))


def test_leaf_shape_setter():
    spec = Unbounded(shape=(3,))
    spec.shape = (2, 3)
    assert spec.ndim == 2 and spec.rand().shape == (2, 3) and spec.is_in(torch.zeros(2, 3))
