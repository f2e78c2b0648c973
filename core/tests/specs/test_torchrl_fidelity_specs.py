"""TorchRL 0.14.1 behaviours of the specs that TorchRL's own test suite relies on (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.specs import Bounded, Categorical, MultiCategorical, Unbounded


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
