"""MultiAgentConformanceTests: the mock multi-agent env passes it, broken envs fail it."""

from __future__ import annotations

import pytest
import torch
from _marl_mocks import AGENTS, N_ACTIONS, MarlMockEnv

from torchenv.envs import MarlGroupMapType
from torchenv.specs import Categorical
from torchenv.testing import MultiAgentConformanceTests


class TestMarlMockConformance(MultiAgentConformanceTests):
    """Default grouping by name prefix: groups "walker" (3 agents) and "scout" (1)."""

    done_aggregation = "all"
    expected_groups = ("walker", "scout")

    def make_env(self):
        return MarlMockEnv(batch_size=(3,))


class TestMarlMockHeterogeneousConformance(MultiAgentConformanceTests):
    """One group of all agents: observations of sizes 4 and 6 are lazily stacked."""

    done_aggregation = "all"
    expected_groups = ("agents",)

    def make_env(self):
        return MarlMockEnv(batch_size=(2,), group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)


class TestMarlMockUnbatchedConformance(MultiAgentConformanceTests):
    """No batch dims, one group per agent (PettingZoo-like)."""

    expected_groups = tuple(AGENTS)

    def make_env(self):
        return MarlMockEnv(batch_size=(), group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)


@pytest.mark.parametrize("done", ["shared", "root"])
def test_other_done_layouts_pass(done):
    class _T(MultiAgentConformanceTests):
        def make_env(self):
            return MarlMockEnv(batch_size=(2,), done=done)

    t = _T()
    t.test_marl_group_keys()
    t.test_marl_reward_and_done_layout()
    t.test_check_env_specs()
    t.test_step_and_maybe_reset()
    if done == "shared":
        t.test_marl_done_consistent_with_root()


# ---------------------------------------------------------------------- broken envs are caught
class _Broken(MultiAgentConformanceTests):
    def __init__(self, factory):
        self._factory = factory

    def make_env(self):
        return self._factory()


class _WrongRootDone(MarlMockEnv):
    """The root done follows 'any' agent although the layout says 'all'... on some steps."""

    def _output(self, reward=None):
        td = super()._output(reward)
        td.set("done", ~td.get("done") & (self.t > 0).unsqueeze(-1))
        return td


class _EmptyMask(MarlMockEnv):
    """A mask that allows nothing for the scout."""

    def _output(self, reward=None):
        td = super()._output(reward)
        td.get(("scout", "action_mask")).zero_()
        return td


class _UnmaskableCategorical(Categorical):
    """A Categorical whose mask updates are lost (a broken spec)."""

    def update_mask(self, mask):
        return None


class _IgnoresMask(MarlMockEnv):
    """The walkers' action spec drops the masks ActionMask writes: random actions break them."""

    def __init__(self):
        super().__init__()
        spec = self.full_action_spec["walker", "action"]
        self.full_action_spec["walker", "action"] = _UnmaskableCategorical(
            N_ACTIONS, shape=spec.shape
        )


class _FlatActions(MarlMockEnv):
    def __init__(self):
        super().__init__()
        spec = self.full_action_spec
        from torchenv.specs import Composite

        self.full_action_spec = Composite(
            action=spec["walker", "action"].clone(),
            walker=spec["walker"],
            scout=spec["scout"],
            shape=self.batch_size,
        )


def test_root_done_inconsistent_is_caught():
    with pytest.raises(AssertionError, match="root 'done' is not the all"):
        t = _Broken(_WrongRootDone)
        t.done_aggregation = "all"
        t.test_marl_done_consistent_with_root()


def test_empty_action_mask_is_caught():
    with pytest.raises(AssertionError, match=r"\('scout', 'action_mask'\).* allows no action"):
        _Broken(_EmptyMask).test_marl_masks_valid()


def test_masked_random_actions_are_checked():
    with pytest.raises(AssertionError, match=r"\('walker', 'action'\): a random action"):
        _Broken(_IgnoresMask).test_marl_random_actions_follow_masks()


def test_flat_action_key_is_caught():
    with pytest.raises(AssertionError, match="not nested under a group"):
        _Broken(_FlatActions).test_marl_group_keys()


def test_group_map_mismatch_is_caught():
    class _Lying(MarlMockEnv):
        group_map = {"walker": ["walker_0", "walker_1"], "scout": ["scout_0"]}

    with pytest.raises(AssertionError, match="group 'walker': 2 agents in env.group_map"):
        _Broken(_Lying).test_marl_group_keys()


def test_expected_groups_mismatch_is_caught():
    t = _Broken(MarlMockEnv)
    t.expected_groups = ("agents",)
    with pytest.raises(AssertionError, match="expected"):
        t.test_marl_group_keys()


def test_random_actions_without_action_mask_break_the_mask():
    """Sanity of the mock: without ActionMask, random actions do hit forbidden moves (reward -1)."""
    env = MarlMockEnv(batch_size=(4,))
    env.set_seed(0)
    torch.manual_seed(0)
    data = env.rollout(20, break_when_any_done=False)
    assert (data["next", "walker", "reward"] == -1).any()


# ---------------------------------------------------------------------- batched envs of it
def _heterogeneous_mock():
    return MarlMockEnv(batch_size=(2,), group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)


class TestSerialMarlMockConformance(MultiAgentConformanceTests):
    """A SerialEnv of heterogeneous multi-agent envs: lazily stacked groups through the workers."""

    done_aggregation = "all"
    expected_groups = ("agents",)

    def make_env(self):
        from torchenv.batched import SerialEnv

        return SerialEnv(2, _heterogeneous_mock)


class TestSerialMarlMockHomogeneousConformance(MultiAgentConformanceTests):
    """A SerialEnv of multi-agent envs with homogeneous groups (shared buffers)."""

    done_aggregation = "all"
    expected_groups = ("walker", "scout")

    def make_env(self):
        from torchenv.batched import SerialEnv

        return SerialEnv(2, MarlMockEnv)


@pytest.mark.parametrize("factory", [MarlMockEnv, _heterogeneous_mock])
def test_parallel_env_of_multi_agent_envs(factory):
    from torchenv.batched import ParallelEnv
    from torchenv.envs import check_env_specs

    env = ParallelEnv(2, factory)
    try:
        env.set_seed(0)
        torch.manual_seed(0)
        data = env.rollout(16, break_when_any_done=False)
        assert data["next", "done"].any(), "no episode ended: the partial resets were not exercised"
        check_env_specs(env, seed=0)
    finally:
        env.close()
