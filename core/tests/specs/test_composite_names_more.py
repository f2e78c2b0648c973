"""Dim names of Composite follow TorchRL 0.14.1 (values checked against torchrl.data.Composite)."""

import pytest
import torch

from torchenv.specs import Bounded, Composite, Unbounded


def named() -> Composite:
    return Composite(a=Unbounded((3, 4, 2)), shape=(3, 4), names=["t", "u"])


def test_names_default_and_given():
    assert Composite(shape=(3, 4)).names == [None, None]
    assert named().names == ["t", "u"]
    assert Composite(shape=(3, 4), names=[None, "u"]).names == [None, "u"]


def test_indexing_drops_the_indexed_dims_name():
    spec = named()
    assert spec[0].names == ["u"]
    assert spec[:, 0].names == ["t"]
    assert spec[..., 0].names == ["t"]
    assert spec[0:2].names == ["t", "u"]
    assert spec[torch.tensor([0, 1])].names == ["t", "u"]
    assert Composite(a=Unbounded((3, 2)), shape=(3,), names=["t"])[0].names == []


def test_unsqueeze_squeeze_expand():
    spec = named()
    assert spec.unsqueeze(0).names == [None, "t", "u"]
    assert spec.unsqueeze(1).names == ["t", None, "u"]
    assert spec.unsqueeze(-1).names == ["t", "u", None]
    assert spec.expand(5, 3, 4).names == [None, "t", "u"]
    ones = Composite(a=Unbounded((1, 4, 2)), shape=(1, 4), names=["t", "u"])
    assert ones.squeeze().names == ["u"]
    assert ones.squeeze(0).names == ["u"]
    assert spec.squeeze(1).names == ["t", "u"]  # not of size 1: unchanged
    # squeezing away the only named dim leaves no names
    assert Composite(shape=(1, 4), names=["t", None]).squeeze(0).names == [None]


def test_unbind_children_lose_the_dim():
    spec = named()
    assert [c.names for c in spec.unbind(0)] == [["u"]] * 3
    assert [c.names for c in spec.unbind(1)] == [["t"]] * 4


def test_reshape_and_view_drop_names():
    spec = named()
    assert spec.reshape(12).names == [None]
    assert spec.reshape(3, 4).names == [None, None]
    assert spec.view(12).names == [None]


def test_rand_zero_carry_names():
    spec = named()
    assert spec.rand().names == ["t", "u"]
    assert spec.zero().names == ["t", "u"]
    # TorchRL raises here (the names don't fit the batch dims); we name the new dims None
    assert spec.rand((5,)).names == [None, "t", "u"]
    assert Composite(a=Unbounded((3,)), shape=(3,)).rand().names == [None]


def test_clone_to_keep_names_eq_ignores_them():
    spec = named()
    assert spec.clone().names == ["t", "u"]
    assert spec.to("cpu").names == ["t", "u"]
    assert spec == Composite(a=Unbounded((3, 4, 2)), shape=(3, 4))
    assert spec == Composite(a=Unbounded((3, 4, 2)), shape=(3, 4), names=["t", "v"])


def test_clone_names_are_independent():
    spec = named()
    copy = spec.clone()
    copy.names = ["x", "y"]
    assert spec.names == ["t", "u"]


def test_names_setter_validates_and_propagates():
    spec = Composite(b=Composite(a=Unbounded((3, 4, 2)), shape=(3, 4, 2)), shape=(3, 4))
    spec.names = ["x", "y"]
    assert spec.names == ["x", "y"]
    assert spec["b"].names == ["x", "y", None]
    with pytest.raises(ValueError):
        spec.names = ["x"]
    spec.names = None
    assert spec.names == [None, None]


def test_nested_composites_get_names_at_construction():
    inner = Composite(a=Unbounded((3, 4, 2)), shape=(3, 4))
    assert Composite(b=inner, shape=(3, 4), names=["t", "u"])["b"].names == ["t", "u"]


def test_wrong_length_names_raise_value_error():
    # TorchRL raises the same ValueError later, at rand()/zero(); we raise at construction
    with pytest.raises(ValueError):
        Composite(shape=(3, 4), names=["t"])
    with pytest.raises(ValueError):
        Composite(names=["t"])


def test_refine_names():
    assert Composite(shape=(3, 4)).refine_names("a", ...).names == ["a", None]
    spec = Composite(shape=(3, 4, 5, 6))
    assert spec.refine_names(None, None, None, "d").names == [None, None, None, "d"]
    assert spec.refine_names("a", None, None, "d").names == ["a", None, None, "d"]
    with pytest.raises(RuntimeError, match="cannot coerce"):
        spec.refine_names("a", ...)  # '...' stands for unnamed dims: 'd' cannot become None
    with pytest.raises(RuntimeError, match="cannot coerce"):
        named().refine_names("x", "y")
    with pytest.raises(RuntimeError, match="cannot coerce"):
        Composite(shape=(3, 4), names=["t", None]).refine_names(..., "b")


def test_stack_of_named_composites():
    spec = named()
    assert torch.stack([spec, spec.clone()], 0).names == [None, "t", "u"]
    assert torch.stack([spec, spec.clone()], 1).names == ["t", None, "u"]
    assert torch.stack([spec, spec.clone()], 0)[0].names == ["t", "u"]
    one = Composite(a=Unbounded((3, 2)), shape=(3,), names=["t"])
    other = Composite(a=Unbounded((3, 2)), b=Unbounded((3,)), shape=(3,), names=["t"])
    hetero = torch.stack([one, other], 0)
    assert hetero.names == [None, None]
    assert hetero.rand().names == [None, "t"]
    assert hetero[0].names == ["t"]
    # same keys but different values: TorchRL gives an unnamed lazy stack
    one = Composite(a=Bounded(-1, 1, (3, 2)), shape=(3,), names=["t"])
    wide = Composite(a=Bounded(-2, 2, (3, 2)), shape=(3,), names=["t"])
    assert torch.stack([one, wide], 0).names == [None, None]


def test_torchrl_private_name_helpers():
    spec = named()
    assert spec._has_names() and spec._td_dim_names == ["t", "u"]
    spec._erase_names()
    assert not spec._has_names() and spec._td_dim_names is None and spec.names == [None, None]
