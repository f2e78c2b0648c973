"""Same seed, same data (issue 29): two fresh VMAS envs seeded alike give bit-identical
rollouts, random actions included, also inside ``SerialEnv``."""

from __future__ import annotations

import pytest

pytest.importorskip("vmas")

from torchenv.testing import SeedingConformanceTests
from torchenv_vmas import VmasEnv

pytestmark = pytest.mark.vmas


class TestSeeding(SeedingConformanceTests):
    def make_env(self):
        return VmasEnv("navigation", num_envs=3, max_steps=15)
