"""Spaces → specs, and values both ways (readers / writers) for every space class."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.spaces import make_reader, make_writer
from torchenv.specs import Binary, Bounded, Categorical, Composite, OneHot, Unbounded
from torchenv_gym import gym_space_to_spec, register_gym_spec_conversion
from torchenv_gym._toy_envs import LIB, spaces


def roundtrip(space, **kwargs):
    """Sample the space → read → spec.is_in; spec.rand → write → space.contains."""
    spec = gym_space_to_spec(space, **kwargs)
    read, write = make_reader(space, spec), make_writer(space, spec)
    space.seed(0)
    for _ in range(5):
        value = read(space.sample())
        if isinstance(value, dict):
            from tensordict import TensorDict

            value = TensorDict(value, [])
        assert spec.is_in(value), f"{space} sample read as {value} is not in {spec}"
        action = spec.rand()
        assert space.contains(write(action)), f"{spec} rand {action} written not in {space}"
    return spec


def test_box_bounded_keeps_dtype_and_bounds():
    spec = roundtrip(spaces.Box(-2.0, 3.0, (2, 3), np.float32))
    assert isinstance(spec, Bounded)
    assert spec.shape == (2, 3) and spec.dtype == torch.float32
    assert (spec.space.low == -2).all() and (spec.space.high == 3).all()


def test_box_float64_stays_float64():
    spec = roundtrip(spaces.Box(-1.0, 1.0, (4,), np.float64))
    assert spec.dtype == torch.float64


def test_box_infinite_is_unbounded_and_partially_infinite_is_bounded():
    assert isinstance(gym_space_to_spec(spaces.Box(-np.inf, np.inf, (3,))), Unbounded)
    low = np.array([-1.0, -np.inf], np.float32)
    spec = gym_space_to_spec(spaces.Box(low, -low, dtype=np.float32))
    assert isinstance(spec, Bounded)
    assert torch.isinf(spec.space.high[1])


def test_box_scalar_shape_becomes_one():
    space = spaces.Box(-1.0, 1.0, (), np.float32)
    spec = roundtrip(space)
    assert spec.shape == (1,)


def test_box_integer():
    spec = roundtrip(spaces.Box(0, 100, (2, 2), np.uint8))
    assert spec.dtype == torch.uint8 and isinstance(spec, Bounded)
    # the whole range of the dtype is no bound at all (as in TorchRL)
    assert isinstance(gym_space_to_spec(spaces.Box(0, 255, (2,), np.uint8)), Unbounded)


def test_discrete_one_hot_default_and_categorical():
    space = spaces.Discrete(5)
    one_hot = roundtrip(space)
    assert isinstance(one_hot, OneHot) and one_hot.shape == (5,) and one_hot.dtype == torch.long
    cat = roundtrip(space, categorical_action_encoding=True)
    assert isinstance(cat, Categorical) and cat.shape == () and cat.n == 5


@pytest.mark.skipif(not hasattr(spaces.Discrete(2), "start"), reason="Discrete has no start")
def test_discrete_start_is_shifted():
    space = spaces.Discrete(3, start=-1)
    spec = gym_space_to_spec(space, categorical_action_encoding=True)
    read, write = make_reader(space, spec), make_writer(space, spec)
    assert int(read(-1)) == 0 and int(read(1)) == 2
    assert write(torch.tensor(0)) == -1


def test_multi_discrete_mixed_and_equal_sizes():
    mixed = spaces.MultiDiscrete([2, 3, 4])
    spec = roundtrip(mixed)
    assert type(spec).__name__ == "MultiOneHot" and spec.shape == (9,)
    spec = roundtrip(mixed, categorical_action_encoding=True)
    assert type(spec).__name__ == "MultiCategorical" and spec.shape == (3,)
    equal = spaces.MultiDiscrete([3, 3])
    spec = roundtrip(equal)
    assert isinstance(spec, OneHot) and spec.shape == (2, 3)
    spec = roundtrip(equal, categorical_action_encoding=True)
    assert isinstance(spec, Categorical) and spec.shape == (2,)


def test_multi_binary():
    spec = roundtrip(spaces.MultiBinary(6))
    assert isinstance(spec, Binary) and spec.shape == (6,) and spec.dtype == torch.int8


def test_dict_nested_composite_and_state_remap():
    space = spaces.Dict(
        {
            "state": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "inner": spaces.Dict({"d": spaces.Discrete(3)}),
        }
    )
    spec = roundtrip(space)
    assert isinstance(spec, Composite)
    assert set(spec.keys(True, True)) == {"observation", ("inner", "d")}
    kept = gym_space_to_spec(space, remap_state_to_observation=False)
    assert "state" in kept


def test_dict_action_entries_are_arrays():
    # TorchRL hands a Dict action space numpy arrays, a Discrete entry included
    space = spaces.Dict({"a0": spaces.Discrete(2), "a1": spaces.Box(-1.0, 1.0, (1,), np.float32)})
    spec = gym_space_to_spec(space, categorical_action_encoding=True)
    action = spec.rand()
    written = make_writer(space, spec)(action)
    assert all(isinstance(value, np.ndarray) for value in written.values())
    assert int(written["a0"]) == int(action["a0"]) and space.contains(written)


def test_tuple_equal_elements_are_stacked():
    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    spec = roundtrip(spaces.Tuple((box, box, box)))
    assert isinstance(spec, Bounded) and spec.shape == (3, 2)


def test_tuple_mixed_elements_are_a_composite():
    space = spaces.Tuple((spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Discrete(3)))
    spec = roundtrip(space)
    assert isinstance(spec, Composite) and list(spec.keys()) == ["0", "1"]
    assert isinstance(spec["1"], OneHot)


@pytest.mark.skipif(not hasattr(spaces, "Text"), reason="no Text space in this gym version")
def test_text_is_non_tensor():
    space = spaces.Text(8)
    spec = gym_space_to_spec(space)
    assert type(spec).__name__ == "NonTensor"
    value = make_reader(space, spec)("hello")
    assert value.data == "hello"


def test_register_custom_conversion_by_class_and_by_name():
    class Weird(spaces.Box):
        pass

    space = Weird(-1.0, 1.0, (2,), np.float32)
    assert isinstance(gym_space_to_spec(space), Bounded)  # falls back to Box through the MRO

    @register_gym_spec_conversion(Weird)
    def convert(space, device=None, **kwargs):
        return Unbounded(shape=(7,), device=device)

    try:
        assert gym_space_to_spec(space).shape == (7,)
    finally:
        from torchenv.spaces._convert import _REGISTRY

        _REGISTRY.pop(Weird)


def test_unknown_space_names_the_space_and_the_fix():
    class Strange(spaces.Space):
        pass

    with pytest.raises(KeyError, match="Strange.*register_gym_spec_conversion"):
        gym_space_to_spec(Strange())


def test_batch_size_expands():
    spec = gym_space_to_spec(spaces.Discrete(4), batch_size=(5,))
    assert spec.shape == (5, 4)


def test_vector_batch_reader_and_writer():
    box = spaces.Box(-1.0, 1.0, (), np.float32)
    spec = gym_space_to_spec(box, batch_size=(3,))
    read = make_reader(box, spec, (3,))
    assert read(np.zeros(3, np.float32)).shape == (3, 1)
    write = make_writer(box, spec, (3,))
    assert write(torch.zeros(3, 1)).shape == (3,)
    disc = spaces.Discrete(4)
    spec = gym_space_to_spec(disc, batch_size=(3,))
    write = make_writer(disc, spec, (3,))
    action = torch.nn.functional.one_hot(torch.tensor([0, 3, 1]), 4)
    assert write(action).tolist() == [0, 3, 1]
    assert LIB.__name__ in ("gym", "gymnasium")


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64])
@pytest.mark.parametrize("start", [0, 3])
def test_vector_two_action_writer_is_argmax(dtype, start):
    # Discrete(2) in a vector env: a comparison stands in for argmax; same result on any input
    disc = spaces.Discrete(2, start=start)
    spec = gym_space_to_spec(disc, batch_size=(6,)).to(dtype)
    write = make_writer(disc, spec, (6,))
    rows = [[0, 1], [1, 0], [0, 0], [1, 1], [2, 1], [1, 2]]
    action = torch.tensor(rows).to(dtype)
    written = write(action)
    expected = action.to(torch.int64).numpy().argmax(-1) + start
    assert written.dtype == expected.dtype
    assert written.tolist() == expected.tolist()


@pytest.mark.parametrize("start", [0, 2])
def test_vector_categorical_writer(start):
    disc = spaces.Discrete(3, start=start)
    spec = gym_space_to_spec(disc, batch_size=(4,), categorical_action_encoding=True)
    write = make_writer(disc, spec, (4,))
    assert write(torch.tensor([0, 2, 1, 0])).tolist() == [start, start + 2, start + 1, start]
