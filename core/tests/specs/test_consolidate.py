"""``consolidate_spec`` / ``check_no_exclusive_keys`` / ``contains_lazy_spec`` (``torchrl.data``).

The expected shapes are those TorchRL 0.14.1 gives for the same stacks.
"""

from __future__ import annotations

import pytest
import torch

import torchenv
from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    StackedComposite,
    Unbounded,
    check_no_exclusive_keys,
    consolidate_spec,
    contains_lazy_spec,
)


def _leaves(spec: Composite) -> dict:
    return {
        key: (type(spec[key]).__name__, tuple(spec[key].shape)) for key in spec.keys(True, True)
    }


def _hetero() -> StackedComposite:
    a = Composite(obs=Unbounded(shape=(2,)), shared=Categorical(3, shape=(1,)))
    b = Composite(
        obs=Unbounded(shape=(3,)),
        shared=Categorical(3, shape=(1,)),
        extra=Bounded(0, 1, shape=(4, 5)),
        nest=Composite(x=Unbounded((2,)), y=Unbounded(())),
    )
    c = Composite(
        obs=Unbounded(shape=(3,)),
        shared=Categorical(3, shape=(1,)),
        extra=Bounded(0, 1, shape=(4, 6)),
        nest=Composite(x=Unbounded((2,))),
    )
    return torch.stack([a, b, c], 0)


def test_exported_like_torchrl_data() -> None:
    assert torchenv.consolidate_spec is consolidate_spec
    assert torchenv.check_no_exclusive_keys is check_no_exclusive_keys
    assert torchenv.contains_lazy_spec is contains_lazy_spec


def test_check_no_exclusive_keys() -> None:
    stack = _hetero()
    assert check_no_exclusive_keys(stack) is False
    assert check_no_exclusive_keys(Composite(a=Unbounded(1))) is True
    assert check_no_exclusive_keys(Unbounded(1)) is True
    nested = Composite(group=stack, other=Unbounded(1))
    assert check_no_exclusive_keys(nested) is False
    assert check_no_exclusive_keys(nested, recurse=False) is True


def test_contains_lazy_spec() -> None:
    stack = _hetero()
    assert contains_lazy_spec(stack)
    assert not contains_lazy_spec(Composite(a=Unbounded(1)))
    assert contains_lazy_spec(Composite(s=stack))
    assert contains_lazy_spec(torch.stack([Unbounded(2), Unbounded(3)]))


def test_consolidate_fills_exclusive_keys() -> None:
    stack = _hetero()
    out = consolidate_spec(stack)
    assert isinstance(out, StackedComposite) and out.shape == torch.Size([3])
    assert sorted(out.keys()) == ["extra", "nest", "obs", "shared"]
    assert check_no_exclusive_keys(out)
    assert _leaves(out[0]) == {
        ("nest", "x"): ("UnboundedContinuous", (0,)),
        ("nest", "y"): ("UnboundedContinuous", ()),
        "extra": ("BoundedContinuous", (4, 0)),
        "obs": ("UnboundedContinuous", (2,)),
        "shared": ("Categorical", (1,)),
    }
    assert _leaves(out[2])[("nest", "y")] == ("UnboundedContinuous", ())
    assert _leaves(out[2])["extra"] == ("BoundedContinuous", (4, 6))
    assert out.rand().shape == torch.Size([3])
    assert sorted(stack.keys()) == ["obs", "shared"]  # the input is left unchanged


def test_consolidate_nested_and_options() -> None:
    nested = Composite(group=_hetero(), other=Unbounded(1))
    out = consolidate_spec(nested)
    assert check_no_exclusive_keys(out)
    assert _leaves(out["group"][0])["extra"] == ("BoundedContinuous", (4, 0))
    assert not check_no_exclusive_keys(consolidate_spec(nested, recurse_through_entries=False))
    plain = Composite(a=Unbounded(1))
    copy = consolidate_spec(plain)
    assert copy == plain and copy is not plain
    assert type(consolidate_spec(Unbounded(1))).__name__ == "UnboundedContinuous"


def test_consolidate_keeps_batch_dims() -> None:
    a = Composite(obs=Unbounded(shape=(5, 2)), shape=(5,))
    b = Composite(obs=Unbounded(shape=(5, 2)), z=Unbounded((5, 7)), shape=(5,))
    out = consolidate_spec(torch.stack([a, b], 1))
    assert out.shape == torch.Size([5, 2])
    assert _leaves(out[:, 0])["z"] == ("UnboundedContinuous", (5, 0))
    assert _leaves(out[:, 1])["z"] == ("UnboundedContinuous", (5, 7))


def test_consolidate_rejects_mixed_classes() -> None:
    stack = torch.stack(
        [
            Composite(z=Unbounded(1)),
            Composite(q=Unbounded(1)),
            Composite(z=Categorical(2, shape=(1,))),
        ]
    )
    with pytest.raises(ValueError, match="different classes"):
        consolidate_spec(stack)


def test_check_no_exclusive_keys_matches_torchrl_on_stacks() -> None:
    # expected values: torchrl.data.utils.check_no_exclusive_keys 0.14.1 on the same specs
    a = Composite(a=Unbounded(2))
    ab = Composite(a=Unbounded(2), b=Unbounded(1))
    assert check_no_exclusive_keys(torch.stack([a, ab], 0)) is False
    assert check_no_exclusive_keys(torch.stack([a, a.clone()], 0)) is True
    # same keys, different leaf shapes: a lazy stack without exclusive keys
    assert check_no_exclusive_keys(torch.stack([a, Composite(a=Unbounded(3))], 0)) is True
    # the members share their only top-level key "n": TorchRL looks at the members' keys only
    nested_stack = torch.stack([Composite(n=a), Composite(n=ab)], 0)
    assert check_no_exclusive_keys(nested_stack) is True
    holder = Composite(x=torch.stack([a, ab], 0), shape=(2,))
    assert check_no_exclusive_keys(holder) is False
    assert check_no_exclusive_keys(holder, recurse=False) is True


def test_stack_members_reachable_like_torchrl_specs_list() -> None:
    # TorchRL code reads ``stack._specs[i]``; here the members are ``stack[i]`` / ``unbind``
    a = Composite(a=Unbounded(2))
    ab = Composite(a=Unbounded(2), b=Unbounded(1))
    stack = torch.stack([a, ab], 0)
    assert stack.stack_dim == 0
    assert sorted(stack[1].keys()) == ["a", "b"]
    assert [sorted(m.keys()) for m in stack.unbind(stack.stack_dim)] == [["a"], ["a", "b"]]
    assert sorted(consolidate_spec(stack).keys(True, True)) == ["a", "b"]
