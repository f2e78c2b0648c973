"""Indexing semantics, ``encode`` shape checks, Binary checks and MultiCategorical shapes/sampling.

Expected shapes, values and exception types come from running the same code on TorchRL 0.14.1.
"""

from __future__ import annotations

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
    Unbounded,
)


def _u() -> Unbounded:
    return Unbounded((4, 3))


@pytest.mark.parametrize(
    ("index", "shape"),
    [
        (0, (3,)),
        (-1, (3,)),
        (slice(1, 3), (2, 3)),
        (slice(None, None, 2), (2, 3)),
        ((Ellipsis, 0), (4,)),
        (None, (1, 4, 3)),
        ((0, 1), ()),
        ([0, 2], (2, 3)),
        (torch.tensor([0, 2]), (2, 3)),
        (torch.tensor([True, False, True, False]), (2, 3)),
        ((0,), (3,)),
        (([0, 1], [1, 2]), (2,)),
        (torch.tensor([[0, 1], [2, 3]]), (2, 2, 3)),
    ],
)
def test_index_shapes(index, shape) -> None:
    assert _u()[index].shape == shape


@pytest.mark.parametrize(
    ("index", "exc"),
    [
        (4, IndexError),
        (-5, IndexError),
        ((0, 1, 2), IndexError),
        ("a", TypeError),
        (1.5, TypeError),
    ],
)
def test_invalid_indexes(index, exc) -> None:
    with pytest.raises(exc):
        _u()[index]


def test_non_index_raises_type_error_and_multicategorical_index_error() -> None:
    # TorchRL raises TypeError for most specs and IndexError for MultiCategorical: both catch it
    from torchenv.specs import MultiCategorical

    for spec in (_u(), MultiCategorical([2, 3], (4, 2))):
        with pytest.raises(TypeError, match="invalid index 1.5"):
            spec[1.5]
        with pytest.raises(IndexError, match="invalid index 1.5"):
            spec[1.5]


def test_double_ellipsis() -> None:
    with pytest.raises(IndexError, match="single ellipsis"):
        _u()[..., ...]


def test_index_keeps_bounds() -> None:
    high = torch.arange(12.0).view(4, 3) + 1
    assert Bounded(torch.zeros(4, 3), high, (4, 3))[1].high.tolist() == [4.0, 5.0, 6.0]


def test_domain_dims_cannot_be_indexed() -> None:
    assert OneHot(3, shape=(4, 3))[0].shape == (3,)
    assert OneHot(3, shape=(4, 3))[..., 0].shape == (3,)  # ``...`` stops before the domain dim
    assert Binary(3, shape=(4, 3))[0].shape == (3,)
    assert MultiOneHot([2, 3], shape=(4, 5))[0].shape == (5,)
    for spec, index in [
        (OneHot(3, shape=(4, 3)), (0, 1)),
        (OneHot(3), 0),
        (Binary(3), 0),
        (Binary(3, shape=(4, 3)), (0, 1)),
        (Categorical(3, shape=(4,)), (0, 0)),
        (Categorical(3), 0),
        (MultiOneHot([2, 3], shape=(4, 5)), (0, 0)),
    ]:
        with pytest.raises(IndexError):
            spec[index]


def test_multicategorical_indexing() -> None:
    spec = MultiCategorical([2, 3], shape=(4, 2))
    assert spec[0].shape == (2,)
    assert spec[1:3].nvec.flatten().tolist() == [2, 3, 2, 3]
    # an int on the variable dim keeps a one-variable spec, as in TorchRL
    assert spec[0, 0].shape == (1,) and spec[0, 0].nvec.tolist() == [2]
    assert spec[0, 1].nvec.tolist() == [3]
    with pytest.raises(IndexError):
        spec[0, 2]


def test_composite_and_nontensor_indexing() -> None:
    comp = Composite(a=Unbounded((4, 3)), shape=(4,))
    assert comp[0].shape == () and comp[0]["a"].shape == (3,)
    assert comp[...].shape == (4,)
    assert comp[1:]["a"].shape == (3, 3)
    with pytest.raises(IndexError):
        comp[4]
    with pytest.raises(IndexError):
        comp[0, 0]
    with pytest.raises(KeyError):
        comp["b"]
    assert NonTensor(shape=(4,))[0].shape == ()
    with pytest.raises(IndexError):
        NonTensor(shape=(4,))[5]


def test_unbounded_encode() -> None:
    assert Unbounded((2,)).encode(np.ones(2)).tolist() == [1.0, 1.0]
    assert Unbounded((2, 2)).encode(np.ones(4)).shape == (2, 2)  # same numel: reshaped
    assert Unbounded((1,)).encode(1.0).shape == (1,)
    assert Unbounded(()).encode(1.0).shape == ()
    assert Unbounded((2,)).encode([1, 2]).dtype == torch.float32
    assert Unbounded((2,), dtype=torch.int64).encode(np.array([1.7, 2.2])).tolist() == [1, 2]
    for bad in (np.ones(3), 1.0):
        with pytest.raises(ValueError):
            Unbounded((2,)).encode(bad)
        with pytest.raises(RuntimeError):  # TorchRL raises a RuntimeError: both are caught
            Unbounded((2,)).encode(bad)


def test_binary_checks() -> None:
    assert Binary(3).encode([1, 0, 1]).tolist() == [1, 0, 1]
    assert Binary(3).encode(np.array([1, 0, 1])).dtype == torch.int8
    assert Binary(3, dtype=torch.bool).encode([1, 0, 1]).tolist() == [True, False, True]
    with pytest.raises(RuntimeError):
        Binary(3).encode([1, 0])
    with pytest.raises(ValueError, match="must be n=3"):
        Binary(3, shape=(2,))
    assert Binary(shape=(2, 3)).shape == (2, 3) and Binary(3, shape=(2, 3)).shape == (2, 3)
    assert Binary(shape=()).shape == ()
    assert Binary(3).is_in(torch.tensor([1, 0, 1], dtype=torch.int8))
    assert not Binary(3).is_in(torch.tensor([1, 0, 2], dtype=torch.int8))
    assert Binary(3).expand(2, 3).shape == (2, 3)
    with pytest.raises(ValueError):
        Binary(3).expand(2, 4)


def test_multicategorical_shapes() -> None:
    assert MultiCategorical([2, 3]).shape == (2,)
    assert MultiCategorical([2, 3], shape=(4, 2)).shape == (4, 2)
    with pytest.raises(ValueError):
        MultiCategorical([2, 3], shape=(4, 3))
    nvec2d = MultiCategorical(torch.tensor([[2, 3], [4, 5]]))
    assert nvec2d.shape == (2, 2) and nvec2d.rand((3,)).shape == (3, 2, 2)
    assert MultiCategorical([2, 3]).rand((2,)).shape == (2, 2)
    assert MultiCategorical([2, 3], dtype=torch.int32).rand().dtype == torch.int32
    assert MultiCategorical(3).shape == (1,)
    assert MultiCategorical([2, 3]).is_in(torch.tensor([1, 2]))
    assert not MultiCategorical([2, 3]).is_in(torch.tensor([2, 2]))
    assert MultiCategorical([2, 3]).encode([1, 2]).tolist() == [1, 2]
    with pytest.raises(RuntimeError):
        MultiCategorical([2, 3]).encode([1, 2, 0])
    assert [s.shape for s in MultiCategorical([2, 3], shape=(4, 2)).unbind(0)] == [(2,)] * 4
    assert MultiCategorical([2, 3]).expand(4, 2).nvec.flatten().tolist() == [2, 3] * 4


def test_multicategorical_remove_singleton() -> None:
    spec = MultiCategorical([3])  # remove_singleton=True, as TorchRL's default
    assert spec.shape == (1,) and spec.zero().shape == (1,)
    assert spec.rand().shape == () and spec.rand((5,)).shape == (5,)
    assert spec.is_in(spec.rand()) and spec.is_in(torch.tensor([1])) and spec.is_in(torch.tensor(1))
    keep = MultiCategorical([3], remove_singleton=False)
    assert keep.rand().shape == (1,) and keep.rand((5,)).shape == (5, 1)
    masked = MultiCategorical([3], mask=torch.tensor([True, False, True]))
    assert masked.rand().shape == (1,)  # TorchRL keeps the dim for masked specs
    assert MultiCategorical([3], shape=(4, 1)).rand().shape == (4, 1)


def _uniform(counts: list[int], n_draws: int) -> bool:
    expected = n_draws / len(counts)
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    return chi2 < 30.0  # far beyond the 99.9% quantile for <= 5 categories


def test_multicategorical_rand_distribution() -> None:
    torch.manual_seed(0)
    x = MultiCategorical([2, 3, 4]).rand((30000,))
    for i, n in enumerate((2, 3, 4)):
        counts = torch.bincount(x[:, i], minlength=n).tolist()
        assert len(counts) == n and _uniform(counts, 30000)
    x = MultiCategorical(torch.tensor([[2, 3], [4, 5]])).rand((20000,))
    for j, row in enumerate(([2, 3], [4, 5])):
        for i, n in enumerate(row):
            counts = torch.bincount(x[:, j, i], minlength=n).tolist()
            assert len(counts) == n and _uniform(counts, 20000)


def test_bounded_int_rand_up_to_dtype_max() -> None:
    spec = Bounded(0, 2**63 - 1, shape=(3,), dtype=torch.int64)
    x = spec.rand((4,))
    assert x.shape == (4, 3) and spec.is_in(x)
    small = Bounded(-5, 127, shape=(), dtype=torch.int8)
    y = small.rand((1000,))
    assert small.is_in(y) and y.min() >= -5


def test_multicategorical_remove_singleton_project() -> None:
    spec = MultiCategorical([3])
    assert spec.project(torch.tensor(5.3)).tolist() == 2  # a 0-d value stays 0-d (TorchRL)
    assert spec.project(torch.tensor([5.3, -1.2])).tolist() == [2, 0]
    assert not spec.is_in(torch.tensor(1.0))  # wrong dtype: no endless retry
    assert not spec.is_in(torch.tensor([[7]]))
