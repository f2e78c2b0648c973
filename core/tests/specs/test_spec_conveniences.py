"""TorchRL spec methods used by TorchRL code: ``flatten``/``unflatten``, ``make_neg_dim``,
``erase_memoize_cache``, the identity conversions (``Categorical.to_categorical``,
``OneHot.to_one_hot``...) and ``Composite.zeros_update``/``ones_update``/``rand_update``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    SpecShapeError,
    Unbounded,
)


def test_flatten_and_unflatten_follow_torch():
    reference = torch.zeros(2, 3, 4)
    spec = Unbounded((2, 3, 4))
    assert spec.flatten(0, 1).shape == reference.flatten(0, 1).shape
    assert spec.flatten(0, 1).unflatten(0, (2, 3)) == spec
    bounded = Bounded(-torch.ones(2, 3), torch.ones(2, 3), (2, 3))
    flat = bounded.flatten(0, 1)
    assert flat.shape == torch.Size([6])
    assert torch.equal(flat.space.low, -torch.ones(6))
    assert OneHot(4, shape=(2, 3, 4)).flatten(0, 1).shape == torch.Size([6, 4])
    composite = Composite(a=Unbounded((2, 3, 1)), shape=(2, 3)).flatten(0, 1)
    assert composite.shape == torch.Size([6])
    assert composite["a"].shape == torch.Size([6, 1])


def test_flatten_refuses_to_merge_the_one_hot_dim():
    # TorchRL returns a OneHot over 4 categories whose last dim is 12 (a spec no value fits)
    with pytest.raises(SpecShapeError):
        OneHot(4, shape=(2, 3, 4)).flatten(1, 2)


def test_make_neg_dim_marks_a_dim_dynamic_in_place():
    spec = Unbounded((2, 3))
    spec.make_neg_dim(0)
    assert spec.shape == torch.Size([-1, 3])
    spec = Unbounded((2, 3))
    spec.make_neg_dim(-1)
    assert spec.shape == torch.Size([2, -1])
    with pytest.raises(ValueError, match="out of range"):
        Unbounded((2, 3)).make_neg_dim(2)
    composite = Composite(a=Unbounded((2, 3)), b=Categorical(3, (2,)), shape=(2,))
    composite.make_neg_dim(0)
    assert composite.shape == torch.Size([-1])
    assert composite["a"].shape == torch.Size([-1, 3])
    assert composite["b"].shape == torch.Size([-1])


def test_erase_memoize_cache_keeps_encode_working():
    spec = Composite(a=Unbounded(2), b=Composite(c=Categorical(3)))
    spec.memoize_encode()
    spec.erase_memoize_cache()
    data = spec.encode({"a": [1.0, 2.0], "b": {"c": 2}})
    assert data["a"].tolist() == [1.0, 2.0]
    assert data["b", "c"].item() == 2


def test_identity_conversions_return_their_input():
    categorical = Categorical(3, (2,))
    value = torch.tensor([0, 2])
    assert categorical.to_categorical(value, safe=True) is value
    assert categorical.to_categorical_spec() is categorical
    one_hot = OneHot(3)
    hot = torch.tensor([False, True, False])
    assert one_hot.to_one_hot(hot, safe=True) is hot
    assert one_hot.to_one_hot_spec() is one_hot
    binary = Binary(3)
    bits = torch.tensor([0, 1, 0], dtype=torch.int8)
    assert binary.to_categorical(bits) is bits
    multi = MultiCategorical([2, 3])
    assert multi.to_categorical_spec() is multi
    assert multi.to_categorical(torch.tensor([1, 2])).tolist() == [1, 2]
    multi_hot = MultiOneHot([2, 3])
    assert multi_hot.to_one_hot_spec() is multi_hot
    with pytest.raises(AssertionError):
        categorical.to_categorical(torch.tensor([0, 5]), safe=True)


def test_composite_updates_write_into_the_given_tensordict():
    spec = Composite(a=Bounded(2.0, 3.0, (2,)), b=Composite(c=Categorical(4, (1,))))
    data = TensorDict(other=torch.full((1,), 7.0))
    assert spec.zeros_update(data) is data
    assert data["a"].tolist() == [0.0, 0.0] and data["other"].item() == 7.0
    spec.ones_update(data)
    assert data["a"].tolist() == [1.0, 1.0] and data["b", "c"].tolist() == [1]
    spec.rand_update(data)
    assert spec.is_in(data.exclude("other"))
    assert ((data["a"] >= 2.0) & (data["a"] <= 3.0)).all()
