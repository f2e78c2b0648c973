"""Multi-agent grouping: how agents of a MARL env are gathered into nested groups.

A multi-agent env exposes each group of agents as one nested entry of its tensordicts
(``td["agents", "observation"]`` holds the observations of every agent in group ``"agents"``,
stacked along a leading agent dimension). The group map says which agent goes in which group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from enum import Enum

__all__ = [
    "MarlGroupMapType",
    "check_marl_grouping",
    "group_map_by_prefix",
    "resolve_group_map",
]


class MarlGroupMapType(Enum):
    """Premade strategies to group the agents of a multi-agent env.

    - ``ALL_IN_ONE_GROUP``: every agent in one group named ``"agents"``; their tensors are
      stacked so that one network can process all agents at once.
    - ``ONE_GROUP_PER_AGENT``: each agent in its own group, named after the agent; for
      heterogeneous agents or agents processed by separate networks.

    >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(["a", "b"])
    {'agents': ['a', 'b']}
    >>> MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(["a", "b"])
    {'a': ['a'], 'b': ['b']}
    """

    ALL_IN_ONE_GROUP = 1
    ONE_GROUP_PER_AGENT = 2

    def get_group_map(self, agent_names: Sequence[str]) -> dict[str, list[str]]:
        """Returns the group map (group name -> agent names) of this strategy for ``agent_names``."""
        if self is MarlGroupMapType.ALL_IN_ONE_GROUP:
            return {"agents": list(agent_names)}
        return {name: [name] for name in agent_names}


def check_marl_grouping(group_map: Mapping[str, Sequence[str]], agent_names: Sequence[str]) -> None:
    """Checks that ``group_map`` puts every agent of ``agent_names`` in exactly one group.

    Args:
        group_map: group name -> names of the agents in that group.
        agent_names: every agent of the environment.

    Raises:
        ValueError: if there are no agents, duplicate agent names, more groups than agents,
            an empty group, an unknown agent, an agent in several groups, or an agent in no group.
            The message names the group and agent concerned.

    >>> agents = ["agent_0", "agent_1"]
    >>> check_marl_grouping(MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(agents), agents)
    >>> check_marl_grouping({"team": ["agent_0"]}, agents)
    Traceback (most recent call last):
    ...
    ValueError: agent 'agent_1' is in no group of the group map; every agent needs exactly one group
    """
    agent_names = list(agent_names)
    if not agent_names:
        raise ValueError("check_marl_grouping: no agents were passed (agent_names is empty)")
    duplicates = sorted(name for name, count in Counter(agent_names).items() if count > 1)
    if duplicates:
        raise ValueError(
            f"agent names must be unique, got duplicates {duplicates} in {agent_names}"
        )
    if len(group_map) > len(agent_names):
        raise ValueError(
            f"the group map has {len(group_map)} groups ({list(group_map)}) but the env has only "
            f"{len(agent_names)} agents; there cannot be more groups than agents"
        )
    known = set(agent_names)
    owner: dict[str, str] = {}
    for group, members in group_map.items():
        if isinstance(members, str):
            raise TypeError(
                f"group {group!r} must map to a list of agent names, got the string {members!r}"
            )
        if not len(members):
            raise ValueError(f"group {group!r} is empty; every group needs at least one agent")
        for name in members:
            if name not in known:
                raise ValueError(
                    f"agent {name!r} of group {group!r} is not an agent of the env "
                    f"(agents: {agent_names})"
                )
            if name in owner:
                where = "twice in group" if owner[name] == group else "in groups"
                groups = repr(group) if owner[name] == group else f"{owner[name]!r} and {group!r}"
                raise ValueError(f"agent {name!r} is present more than once: {where} {groups}")
            owner[name] = group
    for name in agent_names:
        if name not in owner:
            raise ValueError(
                f"agent {name!r} is in no group of the group map; every agent needs exactly one group"
            )


def _prefix(name: str) -> str | None:
    """``"agent_0"`` -> ``"agent"``; ``None`` for a name not of the form ``<name>_<int>``."""
    head, sep, tail = name.rpartition("_")
    if not sep or not head or not tail.isdigit():
        return None
    return head


def group_map_by_prefix(
    agent_names: Sequence[str], *, fallback: str = "all_in_one", lone_agent_as_agents: bool = False
) -> dict[str, list[str]]:
    """Groups agents named ``<name>_<int>`` by ``<name>`` (TorchRL's default grouping).

    Args:
        agent_names: every agent of the env, in the env's order.
        fallback: what becomes of names not of that form: ``"all_in_one"`` (TorchRL's VMAS
            wrapper) puts every agent in one group ``"agents"`` as soon as one name does not
            follow the convention; ``"own_group"`` (TorchRL's PettingZoo wrapper for parallel
            envs) gives that agent a group of its own, named after it.
        lone_agent_as_agents: name the group ``"agents"`` when the only group is ``"agent"``
            (TorchRL's VMAS wrapper does, for backward compatibility).

    Raises:
        ValueError: if ``fallback`` is neither of the two.

    >>> group_map_by_prefix(["agent_0", "agent_1", "adversary_0"])
    {'agent': ['agent_0', 'agent_1'], 'adversary': ['adversary_0']}
    >>> group_map_by_prefix(["agent_0", "ball"])
    {'agents': ['agent_0', 'ball']}
    >>> group_map_by_prefix(["agent_0", "ball"], fallback="own_group")
    {'agent': ['agent_0'], 'ball': ['ball']}
    >>> group_map_by_prefix(["agent_0", "agent_1"], lone_agent_as_agents=True)
    {'agents': ['agent_0', 'agent_1']}
    """
    if fallback not in ("all_in_one", "own_group"):
        raise ValueError(
            f"group_map_by_prefix: fallback must be 'all_in_one' or 'own_group', got {fallback!r}"
        )
    group_map: dict[str, list[str]] = {}
    for name in agent_names:
        group = _prefix(name)
        if group is None:
            if fallback == "all_in_one":
                return MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(agent_names)
            group = name
        group_map.setdefault(group, []).append(name)
    if lone_agent_as_agents and list(group_map) == ["agent"]:
        return {"agents": group_map["agent"]}
    return group_map


GroupMapLike = Mapping[str, Sequence[str]] | MarlGroupMapType | None


def resolve_group_map(
    group_map: GroupMapLike,
    agent_names: Sequence[str],
    *,
    default: Callable[[Sequence[str]], Mapping[str, Sequence[str]]] = group_map_by_prefix,
) -> dict[str, list[str]]:
    """Turns what a user passed as ``group_map`` into a checked dict (group -> agent names).

    Args:
        group_map: ``None`` (use ``default``), a :class:`MarlGroupMapType` or a mapping.
        agent_names: every agent of the env.
        default: the env's default grouping, called with ``agent_names`` when ``group_map``
            is ``None``.

    Raises:
        TypeError: if ``group_map`` is of another type.
        ValueError: if the map is invalid (see :func:`check_marl_grouping`).

    >>> resolve_group_map(None, ["agent_0", "agent_1"])
    {'agent': ['agent_0', 'agent_1']}
    >>> resolve_group_map(MarlGroupMapType.ONE_GROUP_PER_AGENT, ["a", "b"])
    {'a': ['a'], 'b': ['b']}
    """
    if group_map is None:
        resolved = default(list(agent_names))
    elif isinstance(group_map, MarlGroupMapType):
        resolved = group_map.get_group_map(agent_names)
    elif isinstance(group_map, Mapping):
        resolved = group_map
    else:
        raise TypeError(
            "group_map must be None, a MarlGroupMapType or a dict of group name -> agent names, "
            f"got {type(group_map).__name__}"
        )
    for group in resolved:
        if not isinstance(group, str):
            raise TypeError(f"group names must be strings, got {group!r}")
    check_marl_grouping(resolved, agent_names)
    return {group: list(members) for group, members in resolved.items()}
