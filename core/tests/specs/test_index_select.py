"""``torch.index_select`` and the other torch functions TorchRL 0.14.1 dispatches on specs.

TorchRL handles ``torch.stack``, ``torch.index_select``, ``torch.squeeze`` and ``torch.unsqueeze``
through ``__torch_function__``; the expected results were produced by TorchRL.
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
    NonTensor,
    OneHot,
    Unbounded,
)

IDX = torch.tensor([0, 2])


def _summary(spec: object) -> tuple:
    return type(spec).__name__, tuple(spec.shape), spec.dtype  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("make", "dim", "expected"),
    [
        (lambda: Unbounded(shape=(4, 3)), 0, ("UnboundedContinuous", (2, 3), torch.float32)),
        (lambda: Bounded(0, 1, shape=(4, 3)), 1, ("BoundedContinuous", (4, 2), torch.float32)),
        (lambda: Bounded(0, 1, shape=(4, 3)), -1, ("BoundedContinuous", (4, 2), torch.float32)),
        (lambda: OneHot(3, shape=(4, 3)), 0, ("OneHot", (2, 3), torch.bool)),
        (lambda: Categorical(3, shape=(4,)), 0, ("Categorical", (2,), torch.int64)),
        (lambda: Binary(3, shape=(4, 3)), 0, ("Binary", (2, 3), torch.int8)),
        (
            lambda: MultiCategorical([2, 3], shape=(4, 2)),
            0,
            ("MultiCategorical", (2, 2), torch.int64),
        ),
        (lambda: MultiOneHot([2, 3], shape=(4, 5)), 0, ("MultiOneHot", (2, 5), torch.bool)),
        (lambda: NonTensor(shape=(4,), example_data="x"), 0, ("NonTensor", (2,), None)),
    ],
)
def test_index_select_shapes(make, dim: int, expected: tuple) -> None:
    out = torch.index_select(make(), dim, IDX)
    assert _summary(out) == expected
    assert out.is_in(out.rand())


def test_index_select_selects_tensors() -> None:
    low = torch.arange(4.0)[:, None].expand(4, 3)
    out = torch.index_select(Bounded(low, 10, shape=(4, 3)), 0, IDX)
    assert out.low.flatten().tolist() == [0.0, 0.0, 0.0, 2.0, 2.0, 2.0]
    mask = torch.tensor([True, False, True]).expand(4, 3)
    assert torch.index_select(OneHot(3, shape=(4, 3), mask=mask), 0, IDX).mask.shape == (2, 3)
    cat = torch.index_select(Categorical(3, shape=(4,), mask=mask), 0, IDX)
    assert cat.mask.flatten().tolist() == [True, False, True] * 2
    assert (cat.rand((50,)) != 1).all()
    mc = MultiCategorical([2, 3], shape=(4, 2))
    assert torch.index_select(mc, 0, IDX).nvec.flatten().tolist() == [2, 3, 2, 3]
    picked = torch.index_select(mc, 1, torch.tensor([1]))
    assert picked.shape == (4, 1) and picked.nvec.flatten().tolist() == [3, 3, 3, 3]


def test_index_select_masked_multicategorical_variables() -> None:
    mask = torch.tensor([True, True, False, True, False])  # var 0: {0, 1}; var 1: {1}
    spec = MultiCategorical([2, 3], mask=mask)
    out = torch.index_select(spec, 0, torch.tensor([1]))
    assert out.mask.tolist() == [False, True, False]
    assert (out.rand((20,)) == 1).all()


def test_index_select_scalar_index_keeps_dim() -> None:
    out = torch.index_select(Unbounded(shape=(4, 3)), 0, torch.tensor(1))
    assert out.shape == (1, 3)


def test_index_select_composite() -> None:
    spec = Composite(
        a=Unbounded(shape=(4, 3)),
        b=Composite(c=Categorical(2, shape=(4,)), shape=(4,)),
        shape=(4,),
    )
    out = torch.index_select(spec, 0, IDX)
    assert out.shape == (2,)
    assert out["a"].shape == (2, 3) and out["b", "c"].shape == (2,)
    assert out.is_in(out.rand())


@pytest.mark.parametrize("make", [lambda: OneHot(3, shape=(4, 3)), lambda: Binary(3, shape=(4, 3))])
def test_index_select_domain_dim_raises(make) -> None:
    with pytest.raises(ValueError, match="last dimension .* represents the domain"):
        torch.index_select(make(), 1, IDX)
    with pytest.raises(ValueError, match="represents the domain"):
        torch.index_select(MultiOneHot([2, 3], shape=(4, 5)), 1, IDX)


@pytest.mark.parametrize("bad", [torch.tensor([5]), torch.tensor([-1])])
def test_index_select_out_of_bounds(bad: torch.Tensor) -> None:
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 4"):
        torch.index_select(Unbounded(shape=(4, 3)), 0, bad)


def test_index_select_lazy_stack_raises() -> None:
    stacked = torch.stack([Unbounded(shape=(3,)), Unbounded(shape=(2,))])
    with pytest.raises(NotImplementedError, match="not supported for Stacked"):
        torch.index_select(stacked, 0, torch.tensor([0]))


def test_other_torch_functions() -> None:
    assert torch.stack([Unbounded(3), Unbounded(3)], 0).shape == (2, 3)
    assert torch.squeeze(Unbounded((1, 3))).shape == (3,)
    assert torch.squeeze(Unbounded((1, 3)), 0).shape == (3,)
    assert torch.unsqueeze(Unbounded((3,)), 0).shape == (1, 3)
    assert torch.unsqueeze(Unbounded((3,)), dim=0).shape == (1, 3)
    assert torch.squeeze(Composite(a=Unbounded((1, 3)), shape=(1,))).shape == ()
    assert torch.unsqueeze(Composite(a=Unbounded((2, 3)), shape=(2,)), 0).shape == (1, 2)
    # not dispatched by TorchRL either
    with pytest.raises(TypeError):
        torch.split(Unbounded((2, 3)), 1)
