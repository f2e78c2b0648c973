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

    def make_env(self):
        # max_steps=4: episodes end inside the conformance rollouts
        return MeltingpotEnv("coins", max_steps=4)
