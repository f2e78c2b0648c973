"""``squeeze``/``unsqueeze`` on the domain dim of Binary / OneHot / MultiOneHot / MultiCategorical.

TorchRL 0.14.1 lets ``Binary`` gain or lose its last dim (``n`` follows the new last dim), makes
``squeeze(-1)`` a no-op when that dim is not 1, refuses to change the domain dim of the other
discrete specs, and leaves a single-dim spec as it is on ``squeeze()``. Expected values come from
TorchRL.
"""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    SpecIndexError,
    Unbounded,
)


def test_binary_unsqueeze_last() -> None:
    spec = Binary(3).unsqueeze(-1)
    assert isinstance(spec, Binary) and spec.shape == (3, 1)
    assert spec.rand().shape == (3, 1) and spec.rand().dtype == torch.int8
    assert spec.is_in(torch.ones(3, 1, dtype=torch.int8))
    assert spec.enumerate().shape == (2, 3, 1)
    assert spec.squeeze(-1).shape == (3,)
    assert torch.unsqueeze(Binary(3), -1).shape == (3, 1)
    assert spec[0].shape == (1,)
    assert spec.expand(2, 3, 1).shape == (2, 3, 1)
    assert Binary(3, shape=(2, 3)).unsqueeze(2).shape == (2, 3, 1)
    assert Binary(3, shape=(2, 3)).unsqueeze(-2).shape == (2, 1, 3)


def test_binary_squeeze_last() -> None:
    assert Binary(1, shape=(2, 1)).squeeze(-1).shape == (2,)
    assert Binary(1).squeeze().shape == (1,)  # a single dim stays, as in TorchRL


@pytest.mark.parametrize(
    ("spec", "shape"),
    [
        (OneHot(3, shape=(1, 3)), (1, 3)),
        (MultiOneHot([2, 3], shape=(1, 5)), (1, 5)),
        (MultiCategorical([2, 3], shape=(1, 2)), (1, 2)),
    ],
)
def test_squeeze_non_singleton_domain_is_noop(spec, shape) -> None:
    assert spec.squeeze(-1).shape == shape


@pytest.mark.parametrize("spec", [OneHot(1, shape=(2, 1)), MultiCategorical([2], shape=(2, 1))])
def test_squeeze_singleton_domain_raises(spec) -> None:
    with pytest.raises(ValueError, match="must remain unchanged"):
        spec.squeeze(-1)


@pytest.mark.parametrize("spec", [OneHot(3), MultiOneHot([2, 3]), MultiCategorical([2, 3])])
def test_unsqueeze_domain_raises(spec) -> None:
    with pytest.raises(ValueError):
        spec.unsqueeze(-1)
    assert spec.unsqueeze(-2).shape == (1, *spec.shape)


def test_squeeze_single_dim_is_noop() -> None:
    for spec in (Unbounded((1,)), Bounded(0, 1, (1,)), Categorical(2, (1,))):
        assert spec.squeeze().shape == (1,)
        assert spec.squeeze(0).shape == ()
    assert Unbounded((1, 1)).squeeze().shape == ()
    assert Composite(a=Unbounded((1,)), shape=(1,)).squeeze().shape == ()


@pytest.mark.parametrize("dim", [3, -3])
def test_unsqueeze_out_of_range(dim: int) -> None:
    # TorchRL raises a ValueError, tensors an IndexError: SpecIndexError is both
    with pytest.raises(ValueError, match=r"expected a value in \[-2, 1\]"):
        Unbounded((3,)).unsqueeze(dim)
    with pytest.raises(IndexError):
        Unbounded((3,)).unsqueeze(dim)


def test_squeeze_unbind_out_of_range() -> None:
    with pytest.raises(IndexError):
        Unbounded((3,)).squeeze(3)
    with pytest.raises(SpecIndexError):
        Unbounded((3,)).unbind(3)
