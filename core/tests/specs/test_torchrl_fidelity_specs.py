"""TorchRL 0.14.1 behaviours of the specs that TorchRL's own test suite relies on (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    ContinuousBox,
    MultiCategorical,
    Unbounded,
)


class TestEncodeShapes:
    def test_array_with_extra_leading_dims_is_refused(self) -> None:
        spec = Bounded(-torch.ones(3), torch.ones(3))
        with pytest.raises(RuntimeError, match="Shape mismatch"):
            spec.encode(np.zeros((2, 3), dtype=np.float32))

    def test_expanded_spec_encodes_the_batched_array(self) -> None:
        spec = Bounded(-torch.ones(3), torch.ones(3)).expand(2, 3)
        out = spec.encode(np.full((2, 3), 0.5, dtype=np.float32))
        assert out.shape == (2, 3)
        assert bool((out == 0.5).all())

    @pytest.mark.parametrize("value", [np.zeros(4), [0.0] * 4, 0.0])
    def test_wrong_number_of_elements_is_refused(self, value: object) -> None:
        with pytest.raises(RuntimeError, match="Shape mismatch"):
            Unbounded(shape=(3,)).encode(value)

    def test_same_number_of_elements_is_reshaped(self) -> None:
        out = Unbounded(shape=(2, 3)).encode(np.arange(6.0))
        assert out.shape == (2, 3)
        assert out[1, 2].item() == 5.0

    def test_discrete_specs_refuse_batched_arrays(self) -> None:
        with pytest.raises(RuntimeError, match="Shape mismatch"):
            Categorical(4, shape=(3,)).encode(np.zeros((2, 3), dtype=np.int64))
        with pytest.raises(RuntimeError, match="Shape mismatch"):
            MultiCategorical([2, 3]).encode(np.zeros((3, 2), dtype=np.int64))

    def test_tensors_keep_their_batch_dims(self) -> None:
        out = Unbounded(shape=(3,)).encode(torch.ones(5, 3))
        assert out.shape == (5, 3)


class TestSpaceSetter:
    def test_bounded_bounds_follow_the_assigned_box(self) -> None:
        spec = Bounded(-1.0, 1.0, shape=(2,))
        spec.space = ContinuousBox(torch.zeros(2), torch.full((2,), 3.0))
        assert spec.low.tolist() == [0.0, 0.0]
        assert spec.high.tolist() == [3.0, 3.0]
        assert spec.is_in(torch.full((2,), 2.5))
        assert not spec.is_in(torch.full((2,), -0.5))
        assert spec != Bounded(-1.0, 1.0, shape=(2,))

    def test_bounded_refuses_a_box_of_another_shape(self) -> None:
        spec = Bounded(-1.0, 1.0, shape=(2,))
        with pytest.raises(ValueError, match="do not broadcast"):
            spec.space = ContinuousBox(torch.zeros(3), torch.ones(3))
        with pytest.raises(TypeError, match="ContinuousBox"):
            spec.space = (0, 1)

    def test_unbounded_records_the_box(self) -> None:
        spec = Unbounded(shape=(2,))
        box = ContinuousBox(torch.zeros(2), torch.ones(2))
        spec.space = box
        assert spec.space == box
        assert spec != Unbounded(shape=(2,))


def test_categorical_to_one_hot_has_the_one_hot_spec_dtype() -> None:
    spec = Categorical(4, shape=(2,))
    one_hot = spec.to_one_hot(torch.tensor([1, 3]))
    assert one_hot.dtype == spec.to_one_hot_spec().dtype == torch.bool
    assert spec.to_one_hot_spec().is_in(one_hot)
    assert spec.to_one_hot_spec().to_categorical(one_hot).tolist() == [1, 3]


class TestIndexBounds:
    @pytest.mark.parametrize("idx", [range(5), np.array([[0, 3]]), torch.tensor([3, 0]), [-4]])
    def test_array_index_out_of_range_raises_index_error(self, idx: object) -> None:
        spec = Unbounded(shape=(3, 2))
        with pytest.raises(IndexError, match="out of bounds for dim 0 with size 3"):
            spec[idx]

    def test_composite_checks_its_batch_dims(self) -> None:
        spec = Composite(obs=Unbounded(shape=(3, 2)), shape=(3,))
        with pytest.raises(IndexError, match="out of bounds"):
            spec[torch.tensor([0, 5])]
        assert spec[torch.tensor([2, -3])]["obs"].shape == (2, 2)

    def test_in_range_array_index_keeps_working(self) -> None:
        spec = Unbounded(shape=(3, 2))
        assert spec[torch.tensor([2, -3])].shape == (2, 2)
        assert spec[None, [0, 1]].shape == (1, 2, 2)
        assert spec[:, [1]].shape == (3, 1)


def test_multicategorical_project_keeps_a_0d_value_0d() -> None:
    spec = MultiCategorical(5)
    assert spec.rand().shape == ()
    out = spec.project(torch.tensor(7.4))
    assert out.shape == ()
    assert out.item() == 4
    assert spec.project(torch.tensor([[9], [-2]])).tolist() == [[4], [0]]
