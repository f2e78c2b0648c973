"""Same seed, same data (issue 29): two fresh MuJoCo envs seeded alike give bit-identical
rollouts, random actions included, also inside ``SerialEnv``."""

from __future__ import annotations

import pytest

pytest.importorskip("mujoco")

from torchenv.testing import SeedingConformanceTests
from torchenv_mujoco import MujocoEnv

pytestmark = pytest.mark.mujoco


class TestSeeding(SeedingConformanceTests):
    def make_env(self):
        return MujocoEnv("InvertedPendulum", num_envs=2)
