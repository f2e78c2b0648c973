"""MarlGroupMapType and check_marl_grouping."""

from __future__ import annotations

import pytest

from torchenv.envs import MarlGroupMapType, check_marl_grouping

AGENTS = ["agent_0", "agent_1", "agent_2"]


def test_all_in_one_group():
    group_map = MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(AGENTS)
    assert group_map == {"agents": AGENTS}
    assert group_map["agents"] is not AGENTS  # a copy: editing it does not touch the input
    check_marl_grouping(group_map, AGENTS)


def test_one_group_per_agent():
    group_map = MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(AGENTS)
    assert group_map == {name: [name] for name in AGENTS}
    assert list(group_map) == AGENTS
    check_marl_grouping(group_map, AGENTS)


def test_enum_members_match_torchrl_values():
    assert MarlGroupMapType.ALL_IN_ONE_GROUP.value == 1
    assert MarlGroupMapType.ONE_GROUP_PER_AGENT.value == 2
    assert MarlGroupMapType["ALL_IN_ONE_GROUP"] is MarlGroupMapType.ALL_IN_ONE_GROUP


def test_custom_grouping_is_accepted():
    check_marl_grouping({"red": ["agent_0", "agent_2"], "blue": ["agent_1"]}, AGENTS)


@pytest.mark.parametrize(
    ("group_map", "agents", "message"),
    [
        ({"agents": []}, [], "no agents"),
        ({"agents": ["a", "a"]}, ["a", "a"], r"unique.*\['a'\]"),
        ({"g1": ["a"], "g2": ["b"], "g3": ["b"]}, ["a", "b"], "3 groups.*only 2 agents"),
        ({"g1": ["agent_0", "agent_1", "agent_2"], "empty": []}, AGENTS, "group 'empty' is empty"),
        (
            {"g": ["agent_0", "agent_1", "agent_2", "ghost"]},
            AGENTS,
            "'ghost' of group 'g' is not an agent",
        ),
        (
            {"g1": ["agent_0", "agent_1"], "g2": ["agent_1", "agent_2"]},
            AGENTS,
            "'agent_1'.*'g1' and 'g2'",
        ),
        (
            {"g": ["agent_0", "agent_0", "agent_1", "agent_2"]},
            AGENTS,
            "'agent_0'.*twice in group 'g'",
        ),
        ({"g": ["agent_0", "agent_1"]}, AGENTS, "'agent_2' is in no group"),
    ],
)
def test_invalid_groupings_raise_clear_errors(group_map, agents, message):
    with pytest.raises(ValueError, match=message):
        check_marl_grouping(group_map, agents)


def test_group_of_a_string_is_rejected():
    with pytest.raises(TypeError, match="group 'g' must map to a list"):
        check_marl_grouping({"g": "agent_0"}, ["agent_0"])
