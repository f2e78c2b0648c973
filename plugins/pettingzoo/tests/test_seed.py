"""Same seed, same data (issue 29): two fresh PettingZoo envs seeded alike give bit-identical
rollouts, random actions included, also inside ``SerialEnv``."""

from __future__ import annotations

import pytest

pytest.importorskip("mpe2")

from torchenv.testing import SeedingConformanceTests
from torchenv_pettingzoo import PettingZooEnv

pytestmark = pytest.mark.pettingzoo


class TestSeeding(SeedingConformanceTests):
    def make_env(self):
        return PettingZooEnv("mpe/simple_spread_v3", parallel=True, max_cycles=15)
