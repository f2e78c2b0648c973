"""dm_env specs → torchenv specs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from dm_env import specs

from torchenv.specs import Bounded, Categorical, Composite, OneHot, Unbounded
from torchenv_dmcontrol import dm_spec_to_spec


def test_bounded_keeps_dtype_and_bounds():
    spec = dm_spec_to_spec(specs.BoundedArray((3,), np.float64, [-1, -2, -3], 1.0))
    assert isinstance(spec, Bounded) and spec.dtype == torch.float64
    assert spec.space.low.tolist() == [-1, -2, -3] and spec.space.high.tolist() == [1, 1, 1]
    assert dm_spec_to_spec(specs.BoundedArray((), np.float32, 0, 1)).shape == (1,)


def test_array_is_unbounded_and_scalars_get_one_dim():
    spec = dm_spec_to_spec(specs.Array((), np.float64))
    assert isinstance(spec, Unbounded) and spec.shape == (1,) and spec.dtype == torch.float64
    assert dm_spec_to_spec(specs.Array((4, 5, 3), np.uint8)).dtype == torch.uint8


def test_dtype_can_be_forced():
    assert dm_spec_to_spec(specs.Array((2,), np.float64), dtype=torch.float32).dtype == (
        torch.float32
    )


def test_discrete_array_one_hot_or_categorical():
    discrete = specs.DiscreteArray(4)
    assert isinstance(dm_spec_to_spec(discrete), OneHot)
    cat = dm_spec_to_spec(discrete, categorical_discrete_encoding=True)
    assert isinstance(cat, Categorical) and cat.space.n == 4


def test_nested_dicts_become_nested_composites():
    spec = dm_spec_to_spec(
        {"arm": {"pos": specs.Array((2,), np.float64)}, "t": specs.Array((), np.float64)}
    )
    assert isinstance(spec, Composite) and isinstance(spec["arm"], Composite)
    assert set(spec.keys(True, True)) == {("arm", "pos"), "t"}


def test_unknown_spec_names_what_came():
    with pytest.raises(TypeError, match="cannot convert int"):
        dm_spec_to_spec(3)
