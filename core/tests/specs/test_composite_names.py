"""Composite dim names, as TorchRL 0.14.1 keeps them: ``names=``, ``refine_names``, and names
carried through indexing, (un)squeeze, unbind, expand, stack, reshape, rand and zero."""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import Categorical, Composite, Unbounded


def _named() -> Composite:
    return Composite(a=Unbounded((3, 4, 2)), shape=(3, 4), names=["t", "u"])


def test_names_default_to_none_per_dim_and_can_be_set():
    assert Composite(a=Unbounded((3,)), shape=(3,)).names == [None]
    spec = _named()
    assert spec.names == ["t", "u"]
    spec.names = ["x", "y"]
    assert spec.names == ["x", "y"]
    spec.names = None
    assert spec.names == [None, None]


def test_wrong_number_of_names_is_refused():
    # TorchRL stores ["t"] for a 2-dim Composite (and fails later, at rand); ours refuses it
    with pytest.raises(ValueError, match="one entry per batch dim"):
        Composite(shape=(3, 4), names=["t"])


def test_refine_names():
    assert Composite(a=Unbounded((3, 4)), shape=(3, 4)).refine_names("t", "u").names == ["t", "u"]
    assert Composite(shape=(3, 4)).refine_names(..., "u").names == [None, "u"]
    assert _named().refine_names("t", "u").names == ["t", "u"]
    with pytest.raises(RuntimeError, match="cannot coerce"):
        _named().refine_names("x", "u")


@pytest.mark.parametrize(
    ("op", "names"),
    [
        (lambda s: s[0], ["u"]),
        (lambda s: s[:, 0], ["t"]),
        (lambda s: s[0, 0], []),
        (lambda s: s[None], [None, "t", "u"]),
        (lambda s: s[...], ["t", "u"]),
        (lambda s: s[1:], ["t", "u"]),
        (lambda s: s[torch.tensor([0, 1])], ["t", "u"]),
        (lambda s: s.unsqueeze(0), [None, "t", "u"]),
        (lambda s: s.unsqueeze(-1), ["t", "u", None]),
        (lambda s: s.expand(2, 3, 4), [None, "t", "u"]),
        (lambda s: s.reshape(12), [None]),
        (lambda s: s.flatten(0, 1), [None]),
        (lambda s: s.clone(), ["t", "u"]),
        (lambda s: s.to("cpu"), ["t", "u"]),
        (lambda s: torch.stack([s, s.clone()], 0), [None, "t", "u"]),
    ],
)
def test_shape_operations_carry_the_names(op, names):
    assert op(_named()).names == names


def test_squeeze_and_unbind_drop_the_names_of_their_dims():
    spec = Composite(a=Unbounded((1, 4)), shape=(1, 4), names=["t", "u"])
    assert spec.squeeze().names == ["u"]
    assert spec.squeeze(0).names == ["u"]
    assert [s.names for s in _named().unbind(0)] == [["u"]] * 3
    assert [s.names for s in _named().unbind(1)] == [["t"]] * 4


def test_data_carries_the_names():
    spec = _named()
    assert spec.rand().names == ["t", "u"]
    assert spec.zero().names == ["t", "u"]
    # extra leading dims are unnamed (TorchRL raises a ValueError here)
    assert spec.zero((2,)).names == [None, "t", "u"]
    assert spec.is_in(spec.zero())


def test_nested_composites_get_the_names_of_their_leading_dims():
    spec = Composite(
        b=Composite(a=Unbounded((3, 4, 5)), shape=(3, 4, 5)), shape=(3, 4), names=["t", "u"]
    )
    assert spec["b"].names == ["t", "u", None]


def test_names_do_not_count_in_equality_and_unnamed_specs_stay_unnamed():
    assert _named() == Composite(a=Unbounded((3, 4, 2)), shape=(3, 4))
    plain = Composite(a=Categorical(2, (3,)), shape=(3,))
    assert plain[0].names == [] and plain.unsqueeze(0).names == [None, None]
    assert plain.rand().names == [None]
