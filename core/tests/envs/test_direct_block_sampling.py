"""Block sampling of random actions: one draw equals successive ``rand()`` calls, or is refused."""

from __future__ import annotations

import pytest
import torch

from torchenv.envs._direct import block_sampler
from torchenv.specs import Bounded, Categorical, OneHot, Unbounded

SPECS = {
    "onehot": lambda: OneHot(3),
    "onehot-batched": lambda: OneHot(2, shape=(4, 2)),
    "categorical": lambda: Categorical(5, shape=(2,)),
    "bounded-float": lambda: Bounded(-2.0, 2.0, shape=(3,)),
    "bounded-double": lambda: Bounded(-1.0, 1.0, shape=(2,), dtype=torch.float64),
    "bounded-int": lambda: Bounded(-3, 7, shape=(2,), dtype=torch.int32),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_block_equals_successive_draws(name):
    spec = SPECS[name]()
    block = block_sampler(spec)
    assert block is not None
    torch.manual_seed(7)
    expected = torch.stack([spec.rand() for _ in range(11)])
    state_after = torch.get_rng_state()
    torch.manual_seed(7)
    drawn = block(11)
    assert drawn.shape == (11, *spec.shape)
    assert drawn.dtype == expected.dtype
    assert torch.equal(drawn, expected)
    assert torch.equal(torch.get_rng_state(), state_after)
    assert spec.is_in(drawn[0]) and spec.is_in(drawn[-1])


def test_checking_leaves_the_generator_alone():
    spec = Bounded(0.0, 1.0, shape=(2,), dtype=torch.float16)  # a kind not checked yet
    torch.manual_seed(3)
    before = torch.get_rng_state()
    block_sampler(spec)
    assert torch.equal(torch.get_rng_state(), before)


def test_masked_specs_draw_one_by_one():
    spec = OneHot(3)
    spec.update_mask(torch.tensor([True, False, True]))
    block = block_sampler(spec)
    assert block is None or block(4) is None
    categorical = Categorical(3)
    categorical.update_mask(torch.tensor([False, True, True]))
    block = block_sampler(categorical)
    assert block is None or block(4) is None


def test_specs_drawn_otherwise_are_refused():
    """No block for normal draws (vectorised in chunks by torch) nor for half-infinite bounds
    (drawn from a clamped normal); the check is cached per kind of spec, so a sampler may come
    back (from a finite spec of the same class, dtype and shape) but then gives no block."""
    assert block_sampler(Unbounded(shape=(2,))) is None
    block = block_sampler(Bounded(-float("inf"), 1.0, shape=(2,)))
    assert block is None or block(4) is None
