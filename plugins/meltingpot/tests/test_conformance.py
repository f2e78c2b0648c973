"""The multi-agent contract (``MultiAgentConformanceTests``) on a real Melting Pot substrate."""

from __future__ import annotations

import pytest

pytest.importorskip("meltingpot")

from torchenv.testing import MultiAgentConformanceTests
from torchenv_meltingpot import MeltingpotEnv

pytestmark = [pytest.mark.meltingpot, pytest.mark.slow]


class TestCoins(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    rollout_steps = 6
    # two coins substrates built with the same seed and stepped side by side in one process
    # diverged (and did not in another run): Melting Pot/dmlab2d hold randomness that the
    # build seed does not pin, so seeded rollouts are not compared
    deterministic = False

    def make_env(self):
        # max_steps=4: episodes end inside the conformance rollouts
        return MeltingpotEnv("coins", max_steps=4)
