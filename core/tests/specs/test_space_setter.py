"""Assigning ``spec.space`` as TorchRL allows (issue 18), checked against TorchRL 0.14.1."""

import pytest
import torch

from torchenv.specs import Categorical
from torchenv.specs._boxes import CategoricalBox


def test_categorical_space_assignment_changes_the_count():
    # TorchRL 0.14.1: n becomes 5 and rand() reaches category 4.
    torch.manual_seed(0)
    spec = Categorical(4)
    spec.space = Categorical(5).space
    assert spec.n == 5
    assert spec.space.n == 5
    assert spec.is_in(torch.tensor(4))
    assert int(spec.rand((500,)).max()) == 4


def test_categorical_space_assignment_refuses_another_box():
    spec = Categorical(4)
    with pytest.raises(TypeError, match="expected a CategoricalBox"):
        spec.space = "five"
    with pytest.raises(Exception, match="space.n"):
        spec.space = CategoricalBox(0)
    assert spec.n == 4
