"""squeeze / unsqueeze / reshape of lazily stacked specs (Stacked, StackedComposite)."""

from __future__ import annotations

import pytest
import torch
from tensordict import LazyStackedTensorDict

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    OneHot,
    SpecShapeError,
    Stacked,
    StackedComposite,
    Unbounded,
)


def _leaf_stack():
    """Same shape (1, 3), different ``n``: a lazy stack that samples densely, shape (1, 2, 3)."""
    return torch.stack([Categorical(3, shape=(1, 3)), Categorical(5, shape=(1, 3))], 1)


def _composite_stack():
    """Composites with different keys, batch shape (1, 3), stacked at dim 1: shape (1, 2, 3)."""
    a = Composite(x=Unbounded(shape=(1, 3, 2)), shared=Bounded(0, 1, shape=(1, 3)), shape=(1, 3))
    b = Composite(y=Categorical(4, shape=(1, 3)), shared=Bounded(0, 2, shape=(1, 3)), shape=(1, 3))
    return torch.stack([a, b], 1)


def _ragged_stack():
    """Leaf shapes (1, 2) and (1, 4) stacked at dim 1: shape (1, 2, -1)."""
    return torch.stack([Bounded(0, 1, shape=(1, 2)), Bounded(0, 1, shape=(1, 4))], 1)


def _torch_shape(shape, op, *args):
    """What ``op`` does to a tensor of ``shape`` (``-1`` dims stand in as 7)."""
    out = getattr(torch.empty([7 if s == -1 else s for s in shape]), op)(*args).shape
    return torch.Size([-1 if s == 7 else s for s in out])


def _check_samples(spec):
    sample = spec.rand()
    shape = sample.batch_size if isinstance(sample, LazyStackedTensorDict) else sample.shape
    assert shape == spec.shape
    assert spec.is_in(sample)
    assert spec.is_in(spec.zero())


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
@pytest.mark.parametrize(("dim", "stack_dim"), [(0, 2), (1, 2), (2, 1), (3, 1), (-1, 1), (-4, 2)])
def test_unsqueeze_moves_the_stack_dim(make, dim, stack_dim):
    spec = make()
    out = spec.unsqueeze(dim)
    assert type(out) is type(spec)
    assert out.shape == _torch_shape(spec.shape, "unsqueeze", dim)
    assert out.stack_dim == stack_dim
    assert len(out._stacked) == 2 and all(m.ndim == spec.ndim for m in out._stacked)
    _check_samples(out)
    assert out.squeeze(dim) == spec  # round trip
    assert torch.unsqueeze(spec, dim).shape == out.shape


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
def test_squeeze_before_the_stack_dim(make):
    spec = make()
    out = spec.squeeze(0)
    assert type(out) is type(spec)
    assert out.shape == torch.Size([2, 3]) and out.stack_dim == 0
    assert [m.shape for m in out._stacked] == [torch.Size([3])] * 2
    _check_samples(out)
    assert out.unsqueeze(0) == spec
    assert spec.squeeze() == out  # every singleton dim
    assert torch.squeeze(spec, 0) == out


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
def test_squeeze_after_the_stack_dim(make):
    spec = make().unsqueeze(-1)  # (1, 2, 3, 1)
    out = spec.squeeze(3)
    assert out.shape == torch.Size([1, 2, 3]) and out.stack_dim == 1
    _check_samples(out)
    both = spec.squeeze()
    assert both.shape == torch.Size([2, 3]) and both.stack_dim == 0
    _check_samples(both)


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
@pytest.mark.parametrize("dim", [1, 2, -1])
def test_squeeze_of_a_non_singleton_dim_is_a_no_op(make, dim):
    spec = make()
    assert spec.squeeze(dim) is spec


def test_squeeze_of_a_one_member_stack_dim_returns_the_member():
    member = Bounded(0, 1, shape=(1, 2))
    spec = Stacked(member, dim=1)
    assert spec.shape == torch.Size([1, 1, 2])
    assert spec.squeeze(1) is member
    assert spec.squeeze() == Bounded(0, 1, shape=(2,))
    comp = StackedComposite(Composite(x=Unbounded(shape=(1, 2)), shape=(1,)), dim=0)
    assert comp.squeeze(0) is comp._stacked[0]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_ragged_stack_squeeze_unsqueeze():
    spec = _ragged_stack()
    assert spec.shape == torch.Size([1, 2, -1])
    assert spec.squeeze(-1) is spec  # differing dim: not a singleton
    out = spec.squeeze(0)
    assert out.shape == torch.Size([2, -1]) and out.stack_dim == 0
    assert [m.shape for m in out._stacked] == [torch.Size([2]), torch.Size([4])]
    assert out.is_in([torch.rand(2), torch.rand(4)])
    up = out.unsqueeze(-1)
    assert up.shape == torch.Size([2, -1, 1]) and up.stack_dim == 0
    assert [m.shape for m in up._stacked] == [torch.Size([2, 1]), torch.Size([4, 1])]
    assert up.is_in(up.rand())  # nested samples along the stack dim 0
    assert up.squeeze(-1) == out


def test_protected_dims_of_the_members():
    spec = torch.stack([OneHot(1, shape=(2, 1)), OneHot(1, shape=(3, 1))], 0)  # (2, -1, 1)
    with pytest.raises(SpecShapeError, match=r"squeeze dim -1 of Stacked.*protected"):
        spec.squeeze(-1)
    assert spec.squeeze() is spec  # the one-hot dim is kept
    with pytest.raises(SpecShapeError, match=r"unsqueeze Stacked.*at dim 3.*protected"):
        spec.unsqueeze(3)
    assert spec.unsqueeze(2).shape == torch.Size([2, -1, 1, 1])


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
def test_invalid_dims(make):
    spec = make()
    with pytest.raises(
        IndexError, match=r"cannot squeeze .* at dim 3: expected a dim in \[-3, 2\]"
    ):
        spec.squeeze(3)
    with pytest.raises(IndexError, match="at dim -4"):
        spec.squeeze(-4)
    with pytest.raises(IndexError, match=r"cannot unsqueeze .* at dim 4: expected .*\[-4, 3\]"):
        spec.unsqueeze(4)
    with pytest.raises(IndexError, match="at dim -5"):
        spec.unsqueeze(-5)


def test_composite_holding_a_lazy_stack_squeezes_it():
    outer = Composite(stack=_leaf_stack(), shape=(1,))
    out = outer.squeeze(0)
    assert out.shape == torch.Size([]) and out["stack"].shape == torch.Size([2, 3])
    assert out.is_in(out.rand())
    assert outer.unsqueeze(1)["stack"].shape == torch.Size([1, 1, 2, 3])


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
@pytest.mark.parametrize(
    ("shape", "stack_dim"),
    [((2, 3), 0), ((1, 2, 3), 1), ((2, 3, 1), 0), ((1, 1, 2, 3), 2), ((-1, 2, 3), 1)],
)
def test_reshape_keeping_the_stack_dim(make, shape, stack_dim):
    spec = make()
    out = spec.reshape(*shape)
    expected = torch.empty(1, 2, 3).reshape(shape).shape
    assert out.shape == expected and out.stack_dim == stack_dim
    _check_samples(out)
    assert out.reshape(spec.shape) == spec  # round trip (a Size is accepted too)
    assert spec.view(shape).shape == expected


def test_reshape_of_the_dims_after_the_stack_dim():
    spec = torch.stack([Categorical(3, shape=(4, 6)), Categorical(5, shape=(4, 6))], 0)
    out = spec.reshape(2, 2, 2, 6)
    assert out.shape == torch.Size([2, 2, 2, 6]) and out.stack_dim == 0
    assert [m.shape for m in out._stacked] == [torch.Size([2, 2, 6])] * 2
    _check_samples(out)


def test_reshape_of_a_ragged_stack_keeps_the_differing_dims():
    spec = _ragged_stack()  # (1, 2, -1)
    out = spec.reshape(2, -1)
    assert out.shape == torch.Size([2, -1]) and out.stack_dim == 0
    assert [m.shape for m in out._stacked] == [torch.Size([2]), torch.Size([4])]
    with pytest.raises(
        SpecShapeError, match=r"cannot reshape Stacked\(shape=\[1, 2, -1\].* to \[2, 4\]"
    ):
        spec.reshape(2, 4)


@pytest.mark.parametrize("make", [_leaf_stack, _composite_stack])
@pytest.mark.parametrize("shape", [(6,), (3, 2), (2, 1, 3, 2)])
def test_reshape_that_splits_the_stack_dim_or_numel_fails(make, shape):
    spec = make()
    name = type(spec).__name__
    with pytest.raises(SpecShapeError, match=rf"cannot reshape {name}\(.* to \[{shape[0]}[,\]]"):
        spec.reshape(*shape)


def test_reshape_error_explains_why():
    with pytest.raises(SpecShapeError, match="keeps its stack dim 1 \\(size 2\\) whole"):
        _leaf_stack().reshape(3, 2)
