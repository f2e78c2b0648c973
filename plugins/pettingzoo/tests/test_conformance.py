"""The multi-agent contract (``MultiAgentConformanceTests``) on real PettingZoo envs.

simple_spread (MPE, parallel; from PettingZoo <= 1.25 or mpe2), simple_adversary in one group
(agents of different observation sizes: a lazily stacked group), tictactoe and connect_four
(AEC, action masks in the observations; one-hot actions for connect_four), knights_archers_zombies
(butterfly, agents can die), and the test-local envs whose agents leave mid-episode (parallel and
AEC, with ``use_mask``).
"""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("pettingzoo")

from leaving_envs import LeavingAEC, LeavingParallel

from torchenv.envs import MarlGroupMapType
from torchenv.testing import MultiAgentConformanceTests
from torchenv_pettingzoo import PettingZooEnv, PettingZooWrapper, task_names
from torchenv_pettingzoo._tasks import find_task

pytestmark = pytest.mark.pettingzoo


def _needs(task: str):
    return pytest.mark.skipif(
        task not in task_names(), reason=f"{task} is not installed (or its dependencies are not)"
    )


@_needs("mpe/simple_spread_v3")
class TestSimpleSpread(MultiAgentConformanceTests):
    expected_groups = ("agent",)
    done_aggregation = "any"
    direct_path = True  # parallel, one dense group: PettingZoo's dicts go straight to arrays

    def make_env(self):
        # max_cycles=10: episodes end (truncation) inside the conformance rollouts
        return PettingZooEnv("mpe/simple_spread_v3", parallel=True, max_cycles=10)


@_needs("mpe/simple_adversary_v3")
class TestSimpleAdversaryOneGroup(MultiAgentConformanceTests):
    expected_groups = ("agents",)
    done_aggregation = "any"
    direct_path = False  # a lazily stacked group

    def make_env(self):
        return PettingZooEnv(
            "mpe/simple_adversary_v3",
            parallel=True,
            group_map=MarlGroupMapType.ALL_IN_ONE_GROUP,
            use_mask=True,
            return_state=True,
            max_cycles=10,
        )

    def test_group_is_lazily_stacked(self):
        env = self.make_env()
        obs = env.reset()["agents"]
        assert [t["observation"].shape[-1] for t in obs.unbind(0)] == [8, 10, 10]
        assert env.reset()["state"].shape == (28,)


@_needs("classic/tictactoe_v3")
class TestTicTacToe(MultiAgentConformanceTests):
    expected_groups = ("player_1", "player_2")
    done_aggregation = "all"
    direct_path = False  # turn-based
    stochastic = False  # the board starts empty, the game has no chance

    def make_env(self):
        return PettingZooEnv("classic/tictactoe_v3", parallel=False, use_mask=True)


@_needs("classic/connect_four_v3")
class TestConnectFourOneHot(MultiAgentConformanceTests):
    expected_groups = ("player_0", "player_1")
    done_aggregation = "all"
    stochastic = False

    def make_env(self):
        return PettingZooEnv(
            "classic/connect_four_v3", parallel=False, use_mask=True, categorical_actions=False
        )


@pytest.mark.skipif(
    not any(n.startswith("butterfly/knights_archers_zombies") for n in task_names()),
    reason="butterfly/knights_archers_zombies is not installed (or its dependencies are not)",
)
class TestKnightsArchersZombies(MultiAgentConformanceTests):
    expected_groups = ("archer", "knight")
    done_aggregation = "all"

    def make_env(self):
        # line_death: agents die at the walls, so some leave within the rollouts; zombies (the
        # randomness) come every 3 steps (v10's spawn_rate became spawn_delay in v11)
        task = find_task("butterfly/knights_archers_zombies")
        spawn = "spawn_rate" if task.name.endswith("_v10") else "spawn_delay"
        return PettingZooEnv(
            task.name,
            parallel=True,
            use_mask=True,
            done_on_any=False,
            line_death=True,
            max_cycles=30,
            **{spawn: 3},
        )


class TestLeavingParallel(MultiAgentConformanceTests):
    expected_groups = ("runner",)
    done_aggregation = "all"

    def make_env(self):
        return PettingZooWrapper(
            LeavingParallel(), use_mask=True, done_on_any=False, return_state=True
        )


class TestLeavingParallelDirect(MultiAgentConformanceTests):
    """No infos: the direct array path, agents leaving while the episode goes on."""

    expected_groups = ("runner",)
    done_aggregation = "all"
    direct_path = True

    def make_env(self):
        return PettingZooWrapper(
            LeavingParallel(infos=False), use_mask=True, done_on_any=False, return_state=True
        )


class TestLeavingParallelDoneOnAny(MultiAgentConformanceTests):
    expected_groups = ("runner",)
    done_aggregation = "any"

    def make_env(self):
        return PettingZooWrapper(LeavingParallel(), use_mask=True)


class TestLeavingAEC(MultiAgentConformanceTests):
    expected_groups = ("player_0", "player_1", "player_2")
    done_aggregation = "all"

    def make_env(self):
        return PettingZooWrapper(LeavingAEC(), use_mask=True)


def test_kaz_marker_is_installed_when_pymunk_is():
    # the butterfly family is listed exactly when its dependencies are importable
    listed = any(name.startswith("butterfly/") for name in task_names())
    assert listed == (importlib.util.find_spec("pygame") is not None)
