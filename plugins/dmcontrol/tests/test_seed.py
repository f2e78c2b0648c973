"""Same seed, same data (issue 29): two fresh DMControl envs seeded alike give bit-identical
rollouts, random actions included, also inside ``SerialEnv``."""

from __future__ import annotations

import pytest

pytest.importorskip("dm_control")

from torchenv.testing import SeedingConformanceTests
from torchenv_dmcontrol import DMControlEnv

pytestmark = pytest.mark.dmcontrol


class TestSeeding(SeedingConformanceTests):
    def make_env(self):
        return DMControlEnv("cartpole", "swingup")
