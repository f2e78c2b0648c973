"""Same seed, same data (issue 29): two fresh PettingZoo envs seeded alike give bit-identical
rollouts, random actions included (they draw from the env's generator seeded by ``set_seed``),
also inside ``SerialEnv``."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("mpe2")

from torchenv.batched import SerialEnv
from torchenv.testing import assert_tensordict_equal
from torchenv_pettingzoo import PettingZooEnv

pytestmark = pytest.mark.pettingzoo


def _make():
    return PettingZooEnv("mpe/simple_spread_v3", parallel=True, max_cycles=15)


def _seeded_rollout(env, seed, steps=40):
    try:
        env.set_seed(seed)
        return env.rollout(steps, break_when_any_done=False)
    finally:
        env.close()


def test_same_seed_same_rollout():
    first = _seeded_rollout(_make(), 3)
    torch.rand(3)  # the global generator moving in between changes nothing
    assert_tensordict_equal(_seeded_rollout(_make(), 3), first, "two envs seeded 3")


def test_other_seed_other_rollout():
    a, b = _seeded_rollout(_make(), 3), _seeded_rollout(_make(), 4)
    assert any(
        not torch.equal(a.get(k), b.get(k))
        for k in a.keys(True, True)
        if a.get(k).is_floating_point()
    )


def test_serial_env_same_seed_same_rollout():
    first = _seeded_rollout(SerialEnv(2, _make), 5, steps=20)
    assert_tensordict_equal(_seeded_rollout(SerialEnv(2, _make), 5, steps=20), first, "SerialEnv")
