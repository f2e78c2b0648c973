"""torchenv.specs._torchrl: exact spec conversion (TorchRL's side runs in tox -e torchrl).

``from_torchrl_spec`` reads any spec with TorchRL's attributes, torchenv's own included, so the
whole walk is checked here without torchrl: a torchenv spec comes back as an equal copy.
"""

from __future__ import annotations

import pytest
import torch

from torchenv import specs as S
from torchenv.specs._torchrl import from_torchrl_spec, is_torchrl_spec

CASES = {
    "bounded": S.Bounded(-1.0, 2.0, shape=(3,)),
    "bounded_int": S.Bounded(0, 5, shape=(2,), dtype=torch.int64),
    "unbounded64": S.Unbounded((2,), dtype=torch.float64),
    "categorical_mask": S.Categorical(3, mask=torch.tensor([True, False, True])),
    "onehot": S.OneHot(4),
    "multionehot": S.MultiOneHot([2, 3]),
    "multicategorical": S.MultiCategorical([2, 3]),
    "binary": S.Binary(3),
    "nested": S.Composite(
        a=S.Unbounded((5, 1)),
        b=S.Composite(c=S.Categorical(2, shape=(5, 2)), shape=(5,)),
        shape=(5,),
    ),
    "stacked": torch.stack([S.Unbounded((2,)), S.Unbounded((3,))], 0),
    "stacked_composite": torch.stack(
        [S.Composite(a=S.Unbounded((2,))), S.Composite(a=S.Unbounded((3,)))], 0
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conversion_is_an_equal_copy(name):
    spec = CASES[name]
    copy = from_torchrl_spec(spec)
    assert type(copy) is type(spec)
    assert copy == spec
    assert copy is not spec


def test_is_torchrl_spec_reads_the_class_module():
    assert not is_torchrl_spec(S.OneHot(2))
    fake = type("OneHot", (), {"__module__": "torchrl.data.tensor_specs"})()
    assert is_torchrl_spec(fake)


def test_unknown_spec_kind_is_refused_by_name():
    with pytest.raises(TypeError, match="cannot convert a spec of type object"):
        from_torchrl_spec(object())
