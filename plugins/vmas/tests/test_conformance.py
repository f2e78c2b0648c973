"""The multi-agent and the natively batched contracts (torchenv.testing) on VMAS scenarios, run
for real: every class runs both ``MultiAgentConformanceTests`` and ``BatchedEnvConformanceTests``.

balance, navigation and transport (homogeneous groups), simple_adversary in one group (agents of
different observation sizes: a lazily stacked, heterogeneous group) and in its default groups,
and discrete one-hot actions.
"""

from __future__ import annotations

import pytest

pytest.importorskip("vmas")

from torchenv.envs import MarlGroupMapType
from torchenv.testing import BatchedEnvConformanceTests, MultiAgentConformanceTests
from torchenv_vmas import VmasEnv

pytestmark = pytest.mark.vmas


class _VmasConformance(MultiAgentConformanceTests, BatchedEnvConformanceTests):
    scenario = "balance"
    options: dict = {}
    num_envs = 4
    # max_steps makes done flags (truncation) come within the conformance rollouts
    max_steps = 12

    def make_batched_env(self, num_envs):
        return VmasEnv(
            self.scenario, num_envs=num_envs, max_steps=self.max_steps, seed=0, **self.options
        )


class TestBalance(_VmasConformance):
    scenario = "balance"
    expected_groups = ("agents",)


class TestNavigation(_VmasConformance):
    scenario = "navigation"
    expected_groups = ("agents",)
    options = {"n_agents": 3}


class TestTransport(_VmasConformance):
    scenario = "transport"
    expected_groups = ("agents",)


class TestHeterogeneousOneGroup(_VmasConformance):
    scenario = "simple_adversary"
    expected_groups = ("agents",)
    options = {"group_map": MarlGroupMapType.ALL_IN_ONE_GROUP}

    def test_group_is_lazily_stacked(self):
        env = self.make_env()
        assert env.het_specs_map == {"agents": True}
        obs = env.reset()["agents"]
        assert [t["observation"].shape[-1] for t in obs.unbind(1)] == [8, 10, 10]


class TestHeterogeneousDefaultGroups(_VmasConformance):
    scenario = "simple_adversary"
    expected_groups = ("adversary", "agent")


class TestDiscreteOneHot(_VmasConformance):
    scenario = "navigation"
    options = {"continuous_actions": False, "categorical_actions": False, "n_agents": 2}
