"""Stacking errors as TorchRL 0.14.1 raises them (RuntimeError, its words), still ValueErrors."""

from __future__ import annotations

import pytest
import torch

from torchenv.specs import Bounded, Unbounded


@pytest.mark.parametrize(
    ("specs", "words"),
    [
        ((Bounded(-1, 1, (3,), dtype=torch.float64), Bounded(-1, 1, (3,))), "Dtypes differ"),
        ((Bounded(-1, 1, (3,)), Unbounded((3,))), "Found more than one type of specs"),
        ((Bounded(-1, 1, (3,)), Bounded(-1, 1, (3, 3))), "Ndims differ"),
    ],
)
def test_stack_errors_are_runtime_errors_with_torchrls_words(specs, words):
    with pytest.raises(RuntimeError, match=words):
        torch.stack(list(specs), 0)
    with pytest.raises(ValueError):
        torch.stack(list(specs), 0)
