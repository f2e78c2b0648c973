"""``enumerate()`` / ``cardinality()`` of Composite, MultiOneHot, MultiCategorical and NonTensor.

Expected rows were produced by TorchRL 0.14.1 (``use_mask=True``, which TorchRL refuses for these
specs, is checked by hand).
"""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import (
    Categorical,
    Choice,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Unbounded,
)

MASK = torch.tensor([True, True, False, True, True])  # variable 1 may not be 0


def test_multionehot_enumerate() -> None:
    spec = MultiOneHot([2, 3])
    assert spec.cardinality() == 6
    values = spec.enumerate()
    assert values.shape == (6, 5) and values.dtype == torch.bool
    assert values.int().tolist() == [
        [1, 0, 1, 0, 0],
        [1, 0, 0, 1, 0],
        [1, 0, 0, 0, 1],
        [0, 1, 1, 0, 0],
        [0, 1, 0, 1, 0],
        [0, 1, 0, 0, 1],
    ]
    assert all(spec.is_in(v) for v in values)
    batched = MultiOneHot([2, 3], shape=(2, 5)).enumerate()
    assert batched.shape == (6, 2, 5)
    assert torch.equal(batched[:, 0], values) and torch.equal(batched[:, 1], values)


def test_multicategorical_enumerate() -> None:
    assert MultiCategorical([2, 3]).enumerate().flatten().tolist() == [
        0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2,
    ]  # fmt: skip
    assert MultiCategorical([2, 3], shape=(2, 2)).enumerate().shape == (6, 2, 2)


@pytest.mark.parametrize("make", [MultiOneHot, MultiCategorical])
def test_masked_enumerate(make) -> None:
    spec = make([2, 3], mask=MASK)
    assert spec.cardinality() == 6  # as TorchRL: the mask does not change the cardinality
    with pytest.raises(RuntimeError, match="Cannot enumerate a masked"):
        spec.enumerate()
    allowed = spec.enumerate(use_mask=True)
    assert allowed.shape[0] == 4
    assert all(spec.is_in(v) for v in allowed)


def test_composite_enumerate() -> None:
    spec = Composite(a=Categorical(3), b=OneHot(2))
    assert spec.cardinality() == 6
    td = spec.enumerate()
    assert td.batch_size == (6,)
    assert td["a"].tolist() == [0, 0, 1, 1, 2, 2]
    assert td["b"].flatten().tolist() == [True, False, False, True] * 3
    assert spec.is_in(td[3])


def test_composite_enumerate_nested_and_batched() -> None:
    nested = Composite(a=Categorical(2), n=Composite(b=Categorical(3)))
    td = nested.enumerate()
    assert td.batch_size == (6,)
    assert td["a"].tolist() == [0, 0, 0, 1, 1, 1]
    assert td["n", "b"].tolist() == [0, 1, 2, 0, 1, 2]
    batched = Composite(a=Categorical(3, shape=(2,)), shape=(2,)).enumerate()
    assert batched.batch_size == (3, 2)
    assert batched["a"].flatten().tolist() == [0, 0, 1, 1, 2, 2]


def test_composite_enumerate_masked_and_choice() -> None:
    spec = Composite(
        a=Categorical(3, mask=torch.tensor([True, False, True])), b=MultiOneHot([2, 2])
    )
    assert spec.cardinality() == 12
    assert spec.enumerate()["a"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert spec.enumerate(use_mask=True)["a"].tolist() == [0] * 4 + [2] * 4
    choice = Composite(c=Choice([Categorical(3), Categorical(2)]))
    assert choice.enumerate()["c"].tolist() == [0, 1, 2, 0, 1]


def test_composite_enumerate_empty() -> None:
    # deliberate difference: TorchRL says 0 values and an empty batch
    assert Composite().cardinality() == 1
    assert Composite().enumerate().batch_size == (1,)


@pytest.mark.parametrize(
    "spec",
    [
        NonTensor(shape=(), example_data="x"),
        Unbounded(2),
        Composite(a=Categorical(2), s=NonTensor(shape=(), example_data="x")),
        Composite(a=Unbounded(1)),
    ],
)
def test_not_enumerable(spec) -> None:
    with pytest.raises(NotImplementedError):
        spec.enumerate()
    with pytest.raises(NotImplementedError):
        spec.cardinality()
