"""torchenv.spaces on duck-typed space classes (no simulator imported): specs, readers, writers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.spaces import (
    make_array_writer,
    make_direct_obs_writer,
    make_reader,
    make_writer,
    register_space_conversion,
    space_to_spec,
)
from torchenv.specs import Binary, Bounded, Categorical, Composite, MultiOneHot, OneHot, Unbounded


class Space:
    pass


class Box(Space):
    def __init__(self, low, high, shape, dtype=np.float32):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.low = np.broadcast_to(np.asarray(low, self.dtype), self.shape)
        self.high = np.broadcast_to(np.asarray(high, self.dtype), self.shape)


class Discrete(Space):
    def __init__(self, n, start=0):
        self.n, self.start, self.dtype = n, start, np.dtype(np.int64)


class MultiDiscrete(Space):
    def __init__(self, nvec):
        self.nvec, self.start, self.dtype = np.asarray(nvec), 0, np.dtype(np.int64)


class MultiBinary(Space):
    def __init__(self, n):
        self.n, self.dtype = n, np.dtype(np.int8)


class Dict(Space):
    def __init__(self, spaces):
        self.spaces = spaces


class Tuple(Space):
    def __init__(self, spaces):
        self.spaces = tuple(spaces)


def test_box_keeps_dtype_and_bounds():
    spec = space_to_spec(Box(-1, 1, (3,), np.float64))
    assert isinstance(spec, Bounded) and spec.dtype == torch.float64
    assert isinstance(space_to_spec(Box(-np.inf, np.inf, (2,))), Unbounded)


def test_discrete_encodings_and_start():
    space = Discrete(4, start=2)
    assert isinstance(space_to_spec(space), OneHot)
    spec = space_to_spec(space, categorical_action_encoding=True)
    assert isinstance(spec, Categorical)
    assert make_reader(space, spec)(np.int64(5)).item() == 3
    assert make_writer(space, spec)(torch.tensor(3)) == 5
    assert make_writer(space, spec)(np.array(3)) == 5  # numpy actions too (ArrayEnv)


def test_multi_discrete_mixed_sizes_is_multi_one_hot():
    space = MultiDiscrete([2, 3])
    spec = space_to_spec(space)
    assert isinstance(spec, MultiOneHot)
    value = make_reader(space, spec)(np.array([1, 2]))
    assert value.tolist() == [0, 1, 0, 0, 1]
    assert make_writer(space, spec)(value.numpy()).tolist() == [1, 2]


def test_multi_binary_and_batched_reader():
    space = MultiBinary(3)
    spec = space_to_spec(space, batch_size=(4,))
    assert isinstance(spec, Binary) and spec.shape == (4, 3)
    value = make_reader(space, spec, (4,))(np.ones((4, 3), np.int8))
    assert value.shape == (4, 3) and value.dtype == torch.int8


def test_dict_and_tuple_nest():
    space = Dict({"state": Box(-1, 1, (2,)), "pair": Tuple([Discrete(2), Box(0, 1, (1,))])})
    spec = space_to_spec(space, categorical_action_encoding=True)
    assert isinstance(spec, Composite)
    assert set(spec.keys(True, True)) == {"observation", ("pair", "0"), ("pair", "1")}
    read = make_reader(space, spec)
    out = read({"state": np.zeros(2, np.float32), "pair": (np.int64(1), np.ones(1, np.float32))})
    assert out["pair"]["0"].item() == 1


def test_stacked_tuple_and_direct_writers():
    space = Tuple([Box(-1, 1, (2,)), Box(-1, 1, (2,))])
    spec = space_to_spec(space)
    assert spec.shape == (2, 2)
    assert make_array_writer(space, spec) is None  # tuples need more than a copy
    obs_spec = Composite(observation=space_to_spec(Box(-1, 1, (2,))))
    write = make_direct_obs_writer(Box(-1, 1, (2,)), obs_spec)
    out = {"observation": np.zeros(2, np.float32)}
    write(np.array([0.5, -0.5]), out)
    assert out["observation"].tolist() == [0.5, -0.5]


def test_scalar_box_gets_a_trailing_dim():
    space = Box(-1, 1, ())
    spec = space_to_spec(space)
    assert spec.shape == (1,)
    assert make_reader(space, spec)(np.float32(0.25)).shape == (1,)


def test_unknown_space_names_the_fix_and_registration_works():
    class Strange(Space):
        shape = (2,)

    with pytest.raises(KeyError, match="Strange.*register_space_conversion"):
        space_to_spec(Strange())
    from torchenv.spaces._convert import _REGISTRY

    register_space_conversion(Strange)(lambda space, device=None, **kw: Unbounded(space.shape))
    try:
        assert space_to_spec(Strange()).shape == (2,)
    finally:
        _REGISTRY.pop(Strange)


def test_array_readers_give_spec_shaped_arrays_without_copies():
    from torchenv.spaces import make_array_reader, make_obs_array_reader

    box = Box(-1, 1, (2,))
    value = np.zeros(2, np.float32)
    assert make_array_reader(box, space_to_spec(box))(value) is value  # no copy
    space = Discrete(3, start=1)
    spec = space_to_spec(space, categorical_action_encoding=True)
    assert make_array_reader(space, spec)(np.int64(3)).tolist() == 2
    assert make_array_reader(space, space_to_spec(space)) is None  # one-hot: needs encoding
    obs = Dict({"state": box, "flag": MultiBinary(1)})
    obs_spec = space_to_spec(obs)
    read = make_obs_array_reader(obs, obs_spec)
    out = read({"state": value, "flag": np.ones(1, np.int8)})
    assert set(out) == {"observation", "flag"} and out["flag"].dtype == np.int8
    assert make_obs_array_reader(Tuple([box, Discrete(2)]), Composite(observation=spec)) is None
