"""torch.stack on specs: dense stacks, lazy Stacked leaves and StackedComposite (multi-agent)."""

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
    stack_specs,
)


def test_stack_identical_leaves():
    out = torch.stack([OneHot(3)] * 4, 0)
    assert isinstance(out, OneHot) and out.shape == (4, 3)
    assert out == OneHot(3).expand(4, 3)
    assert out.is_in(out.rand())


def test_stack_dim():
    out = torch.stack([Unbounded(shape=(2, 3))] * 5, dim=1)
    assert out.shape == (2, 5, 3)
    assert torch.stack([Unbounded(shape=(2, 3))] * 5, dim=-1).shape == (2, 3, 5)


def test_stack_bounds_are_stacked():
    out = torch.stack([Bounded(0.0, 1.0, shape=(2,)), Bounded(0.0, 2.0, shape=(2,))], 0)
    assert isinstance(out, Bounded) and out.high[:, 0].tolist() == [1.0, 2.0]
    sample = out.rand((200,))
    assert bool((sample[:, 0] <= 1).all()) and bool((sample[:, 1] > 1).any())


def test_stack_masks():
    a = Categorical(3, mask=torch.tensor([True, False, False]))
    b = Categorical(3)
    out = torch.stack([a, b], 0)
    assert out.mask.tolist() == [[True, False, False], [True, True, True]]
    assert (out.rand((50,))[:, 0] == 0).all()


def test_stack_heterogeneous_leaves_is_lazy():
    out = torch.stack([Unbounded(shape=(2,)), Unbounded(shape=(3,))], 0)
    assert isinstance(out, Stacked) and out.shape == (2, -1)
    assert out[0] == Unbounded(shape=(2,)) and out[1].shape == (3,)
    assert out.is_in([torch.zeros(2), torch.zeros(3)])
    assert not out.is_in([torch.zeros(3), torch.zeros(3)])
    assert out.clone() == out and len(out.unbind(0)) == 2


def test_stack_errors():
    with pytest.raises(SpecShapeError, match="different types"):
        torch.stack([Unbounded(3), OneHot(3)], 0)
    with pytest.raises(SpecShapeError, match="dtypes"):
        torch.stack([Unbounded(3), Unbounded(3, dtype=torch.float64)], 0)
    with pytest.raises(ValueError, match="empty"):
        stack_specs([])


def test_stack_same_composites_is_dense():
    agent = Composite(obs=Unbounded(shape=(4,)), action=OneHot(2))
    out = torch.stack([agent, agent.clone(), agent.clone()], 0)
    assert type(out) is Composite and out.shape == (3,)
    assert out["obs"].shape == (3, 4)
    td = out.rand()
    assert td.batch_size == (3,) and out.is_in(td)


def test_multi_agent_layout():
    specs = [Bounded(-1.0, float(i + 1), shape=(2,)) for i in range(3)]
    full = Composite(agents=Composite(action=torch.stack(specs, 0), shape=(3,)))
    assert full["agents", "action"].shape == (3, 2)
    assert full.is_in(full.rand())


def test_stack_heterogeneous_composites():
    a = Composite(obs=Unbounded(shape=(2,)), shared=Categorical(3))
    b = Composite(obs=Unbounded(shape=(3,)), shared=Categorical(3), extra=Unbounded(1))
    out = torch.stack([a, b], 0)
    assert isinstance(out, StackedComposite) and isinstance(out, Composite)
    assert out.shape == (2,) and list(out.keys()) == ["obs", "shared"]
    assert out[0] is a and out[1] is b
    assert isinstance(out["obs"], Stacked) and out["shared"].shape == (2,)
    td = out.rand()
    assert isinstance(td, LazyStackedTensorDict) and td[1]["extra"].shape == (1,)
    assert out.is_in(td)
    td_batched = out.zero((4,))
    assert td_batched.batch_size == (4, 2)
    assert out.exclusive_keys() == [[], ["extra"]]


def test_stacked_composite_inside_composite():
    a = Composite(obs=Unbounded(shape=(2,)))
    b = Composite(obs=Unbounded(shape=(3,)))
    full = Composite(agents=torch.stack([a, b], 0))
    assert full["agents"].shape == (2,)
    assert full.is_in(full.rand())


def test_stacked_composite_lock_and_clone():
    a = Composite(obs=Unbounded(shape=(2,)))
    b = Composite(obs=Unbounded(shape=(3,)))
    out = torch.stack([a, b], 0)
    out.lock_()
    assert a.is_locked and b.is_locked
    with pytest.raises(RuntimeError):
        out["new"] = Unbounded(shape=(2, 1))
    out.unlock_()
    out["new"] = Unbounded(shape=(2, 1))
    assert a["new"].shape == (1,) and "new" in out
    assert out.clone() == out
