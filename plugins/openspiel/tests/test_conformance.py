"""The multi-agent contract (``MultiAgentConformanceTests``) on real OpenSpiel games.

kuhn_poker (chance deals, one group, one-hot actions: TorchRL's defaults), tic_tac_toe (no
chance, one group per player, index actions), goofspiel (simultaneous moves with chance
point cards), leduc_poker with the serialised state, and a 3-player kuhn_poker.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel")

from torchenv.testing import MultiAgentConformanceTests
from torchenv_openspiel import OpenSpielEnv

pytestmark = pytest.mark.openspiel


class TestKuhnPoker(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    direct_path = False  # action masks: the TensorDict path
    rollout_steps = 12  # several games (2 or 3 moves each)

    def make_env(self):
        return OpenSpielEnv("kuhn_poker")


class TestTicTacToePerPlayer(MultiAgentConformanceTests):
    expected_groups = ("player_0", "player_1")
    stochastic = False  # no chance: the game does not depend on the seed
    rollout_steps = 12

    def make_env(self):
        return OpenSpielEnv("tic_tac_toe", group_map=None, categorical_actions=True)


class TestGoofspiel(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    rollout_steps = 10

    def make_env(self):
        return OpenSpielEnv("goofspiel", parameters={"num_cards": 4}, categorical_actions=True)


class TestLeducPokerWithState(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    rollout_steps = 12

    def make_env(self):
        return OpenSpielEnv("leduc_poker", return_state=True, categorical_actions=True)


class TestKuhnPokerThreePlayers(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    rollout_steps = 12

    def make_env(self):
        return OpenSpielEnv("kuhn_poker(players=3)")
