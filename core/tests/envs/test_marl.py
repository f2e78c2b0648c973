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


# ---------------------------------------------------------------------- default grouping
from torchenv.envs import group_map_by_prefix, resolve_group_map  # noqa: E402


@pytest.mark.parametrize(
    "names, fallback, expected",
    [
        (
            ["agent_0", "agent_1", "adversary_0"],
            "all_in_one",
            {"agent": ["agent_0", "agent_1"], "adversary": ["adversary_0"]},
        ),
        (["red_team_0", "red_team_1"], "all_in_one", {"red_team": ["red_team_0", "red_team_1"]}),
        (["agent_0", "ball"], "all_in_one", {"agents": ["agent_0", "ball"]}),
        (["agent_0", "agent_x"], "all_in_one", {"agents": ["agent_0", "agent_x"]}),
        (["_0", "agent_1"], "all_in_one", {"agents": ["_0", "agent_1"]}),
        (
            ["agent_0", "ball", "agent_1"],
            "own_group",
            {"agent": ["agent_0", "agent_1"], "ball": ["ball"]},
        ),
        (["player_1", "player_2"], "own_group", {"player": ["player_1", "player_2"]}),
    ],
)
def test_group_map_by_prefix(names, fallback, expected):
    assert group_map_by_prefix(names, fallback=fallback) == expected


def test_group_map_by_prefix_bad_fallback():
    with pytest.raises(ValueError, match="fallback must be"):
        group_map_by_prefix(["a_0"], fallback="nope")


def test_resolve_group_map():
    assert resolve_group_map(None, AGENTS) == {"agent": AGENTS}
    assert resolve_group_map(
        None, AGENTS, default=MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map
    ) == {a: [a] for a in AGENTS}
    custom = {"x": ("agent_0",), "y": ("agent_1", "agent_2")}
    resolved = resolve_group_map(custom, AGENTS)
    assert resolved == {"x": ["agent_0"], "y": ["agent_1", "agent_2"]}
    assert resolve_group_map(MarlGroupMapType.ALL_IN_ONE_GROUP, AGENTS) == {"agents": AGENTS}


@pytest.mark.parametrize(
    "group_map, error, match",
    [
        ("agents", TypeError, "group_map must be None"),
        ({1: AGENTS}, TypeError, "group names must be strings"),
        ({"a": ["agent_0", "agent_1"]}, ValueError, "'agent_2' is in no group"),
    ],
)
def test_resolve_group_map_errors(group_map, error, match):
    with pytest.raises(error, match=match):
        resolve_group_map(group_map, AGENTS)


def test_group_map_by_prefix_lone_agent_as_agents():
    names = ["agent_0", "agent_1"]
    assert group_map_by_prefix(names) == {"agent": names}
    assert group_map_by_prefix(names, lone_agent_as_agents=True) == {"agents": names}
    mixed = ["agent_0", "adversary_0"]
    assert group_map_by_prefix(mixed, lone_agent_as_agents=True) == {
        "agent": ["agent_0"],
        "adversary": ["adversary_0"],
    }
