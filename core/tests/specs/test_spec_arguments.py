"""Spec constructors refuse nonsense, naming the argument (issue 20)."""

import numpy as np
import pytest
import torch

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    SpecArgumentError,
    Unbounded,
)


@pytest.mark.parametrize(
    ("build", "err", "match"),
    [
        (
            lambda: Categorical(n=-1),
            SpecArgumentError,
            r"Categorical: n must be an int >= 1; got -1",
        ),
        (lambda: Categorical(n=0), SpecArgumentError, r"Categorical: n must be an int >= 1"),
        (lambda: Categorical(n=2.5), TypeError, r"Categorical: n must be an int"),
        (lambda: Categorical(n=True), TypeError, r"Categorical: n must be an int"),
        (lambda: Binary(n=-1), SpecArgumentError, r"Binary: n must be an int >= 1; got -1"),
        (lambda: OneHot(n=0), SpecArgumentError, r"OneHot: n must be an int >= 1"),
        (lambda: MultiCategorical(nvec=[2.5, 3]), SpecArgumentError, r"MultiCategorical: nvec"),
        (lambda: MultiCategorical(nvec=[0, 3]), SpecArgumentError, r"MultiCategorical: nvec"),
        (lambda: MultiCategorical(nvec=[]), TypeError, r"MultiCategorical: nvec"),
        (lambda: MultiOneHot(nvec=[2, -3]), SpecArgumentError, r"MultiOneHot: nvec"),
        (
            lambda: Bounded(low=1e40, high=float("nan"), shape=(1,)),
            SpecArgumentError,
            r"high must not be NaN",
        ),
        (
            lambda: Bounded(low=0.5, high=3, shape=(1,), dtype=torch.int64),
            SpecArgumentError,
            r"low must hold whole numbers",
        ),
        (
            lambda: Bounded(low=0, high=300, shape=(1,), dtype=torch.uint8),
            SpecArgumentError,
            r"high must lie within \[0, 255\]",
        ),
        (
            lambda: Bounded(low=float("-inf"), high=0, shape=(1,), dtype=torch.int32),
            SpecArgumentError,
            r"low must lie within",
        ),
        (lambda: Bounded(low="a", high=1.0, shape=(1,)), TypeError, r"low must be a number"),
        (lambda: Bounded(2.0, 1.0, shape=(1,)), ValueError, r"low must be <= high"),
        (
            lambda: Unbounded(shape=(2.5,)),
            TypeError,
            r"Unbounded\w*: shape must be a sequence of ints",
        ),
        (
            lambda: Unbounded(shape=(-2,)),
            SpecArgumentError,
            r"Unbounded\w*: shape dims must be >= 0, or -1",
        ),
        (lambda: Unbounded(shape="ab"), TypeError, r"Unbounded\w*: shape"),
        (
            lambda: Unbounded(shape=(2,), dtype="float99"),
            TypeError,
            r"Unbounded\w*: dtype must be a torch.dtype",
        ),
        (
            lambda: Unbounded(shape=(2,), device="nowhere"),
            SpecArgumentError,
            r"Unbounded\w*: device 'nowhere'",
        ),
        (lambda: Categorical(3, shape=(True,)), TypeError, r"Categorical: shape"),
        (
            lambda: Categorical(300, dtype=torch.int8),
            SpecArgumentError,
            r"n=300 categories .* do not fit in dtype torch.int8",
        ),
        (
            lambda: Categorical(3, dtype=torch.bool),
            SpecArgumentError,
            r"n=3 categories .* torch.bool",
        ),
        (
            lambda: Composite(shape=(2.5,)),
            TypeError,
            r"Composite: shape must be a sequence of ints",
        ),
        (lambda: Composite(shape=(-2,)), SpecArgumentError, r"Composite: shape dims must be >= 0"),
        (lambda: Composite(device="nowhere"), SpecArgumentError, r"Composite: device 'nowhere'"),
        (lambda: NonTensor(shape=(-3,)), SpecArgumentError, r"NonTensor: shape dims must be >= 0"),
    ],
)
def test_nonsense_is_refused_naming_the_argument(build, err, match):
    with pytest.raises(err, match=match):
        build()


def test_sensible_arguments_still_accepted():
    assert Categorical(np.int64(3), shape=torch.Size([2])).n == 3
    assert Categorical(torch.tensor(4), dtype="int8").dtype == torch.int8
    assert MultiCategorical(torch.tensor([2.0, 3.0])).nvec.tolist() == [2, 3]
    assert MultiOneHot([2, 3]).shape == (5,)
    spec = Bounded(float("-inf"), float("inf"), shape=(2,))
    assert spec.is_in(torch.tensor([1e30, -1e30]))
    assert Bounded(0, 255, shape=(3,), dtype=torch.uint8).high.tolist() == [255] * 3
    assert Unbounded(shape=(-1, 2)).shape == (-1, 2)
    assert Binary(shape=(2, 3)).shape == (2, 3)
    assert Categorical(2, shape=(1,), dtype=torch.bool).is_in(torch.tensor([True]))
    assert Composite(shape=(-1,)).shape == (-1,)
