"""``MarlLayout``: the multi-agent layout of an env, built once, used on every step.

It resolves the group map, builds the nested specs (see ``_marl_specs``) and turns the per-agent
values a simulator hands back into the group TensorDict of a step, and group actions back into
per-agent actions (see ``_marl_data``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from torchenv.envs._marl import GroupMapLike, group_map_by_prefix, resolve_group_map
from torchenv.envs._marl_arrays import (
    split_action_tensors,
    supports_arrays,
    tensordict_of_arrays,
    write_output,
)
from torchenv.envs._marl_data import (
    MISSING,
    group_leaf,
    het_leaf,
    make_plan,
    to_root_tensor,
    wrap_group,
)
from torchenv.envs._marl_specs import (
    DONE_LAYOUTS,
    REWARD_LAYOUTS,
    agent_leaf_specs,
    build_group_specs,
)
from torchenv.specs import Composite, MultiOneHot, OneHot, TensorSpec, Unbounded

__all__ = ["MarlLayout"]

_FLAGS = ("done", "terminated", "truncated")


def _per_agent_specs(
    name: str, specs: Mapping[str, Any] | None, agents: Sequence[str], required: bool
) -> dict[str, Any]:
    if specs is None:
        if required:
            raise TypeError(f"MarlLayout: {name} is required (a dict agent -> spec)")
        return {}
    if not isinstance(specs, Mapping):
        raise TypeError(
            f"MarlLayout: {name} must be a dict agent -> spec, got {type(specs).__name__}"
        )
    unknown = [a for a in specs if a not in agents]
    if unknown:
        raise ValueError(
            f"MarlLayout: {name} names unknown agents {unknown} (agents: {list(agents)})"
        )
    missing = [a for a in agents if a not in specs]
    if required and missing:
        raise ValueError(f"MarlLayout: {name} has no spec for the agents {missing}")
    return dict(specs)


class MarlLayout:
    """How the agents of a multi-agent env are laid out in its specs and tensordicts.

    Build one per env at construction, from the agents' own (unbatched) specs and a group map;
    assign its specs with :meth:`set_specs`; on each step build the output with :meth:`output` and
    read the actions with :meth:`split_actions`. The layout follows TorchRL's multi-agent wrappers:
    ``(group, "observation")`` of shape ``(*batch, n_agents_in_group, ...)``, ``(group, "action")``,
    ``(group, "reward")`` of shape ``(*batch, n, 1)``, root ``"done"``/``"terminated"``/
    ``"truncated"`` of shape ``(*batch, 1)`` and, unless ``done="root"``, the same per agent under
    each group. Agents of a group whose specs differ are stacked lazily.

    Args:
        agent_names: the env's agents, in the order the simulator uses.
        group_map: ``None`` (``default_group_map``), a :class:`MarlGroupMapType` or a dict
            group -> agent names.
        observation_specs: agent -> unbatched observation spec (a leaf or a Composite), stored
            at ``(group, "observation")``.
        action_specs: agent -> unbatched action spec (a leaf), at ``(group, "action")``.
        reward_specs: agent -> unbatched reward spec; defaults to ``Unbounded((1,))`` float32.
        reward: ``"per_agent"`` (``(group, "reward")``, TorchRL's layout) or ``"shared"`` (one
            root ``"reward"`` of shape ``(*batch, 1)`` for a team reward, given to
            :meth:`output` as ``root={"reward": ...}``; ``reward_specs`` must then be ``None``).
        info_specs: agent -> unbatched Composite stored at ``(group, "info")``.
        action_mask: add ``(group, "action_mask")``: booleans, one per one-hot action, what the
            ``ActionMask`` transform reads. ``True`` for every group, or the names of the groups
            that have one (their agents need discrete actions).
        agent_mask: add ``(group, "mask")`` of shape ``(*batch, n)``: which agents act (alive
            agents in parallel envs, the agent whose turn it is in turn-based ones).
        done: ``"per_agent"`` (group flags per agent, root flags aggregated from them; TorchRL's
            PettingZoo layout), ``"shared"`` (root flags given by the simulator, copied to every
            agent of each group) or ``"root"`` (root flags only; TorchRL's VMAS layout).
        truncated: include the ``"truncated"`` flags.
        done_on_any: with ``done="per_agent"``, the root flag is set when any agent's is
            (``True``) or when all agents' are (``False``; the root is then "truncated" if any
            agent was truncated, else "terminated", so that done == terminated | truncated).
        state_spec: unbatched spec of a root ``"state"`` observation (global state).
        batch_size: the env's batch size (VMAS: ``(num_envs,)``).
        device: the device of specs and data.
        default_group_map: called with ``agent_names`` when ``group_map`` is ``None``.

    Raises:
        ValueError, TypeError: at construction, for an invalid group map, a missing or unknown
            agent in the specs, a mask on a continuous action, or an unknown ``done`` layout.

    Examples:
        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(
        ...     ["agent_0", "agent_1"],
        ...     observation_specs={a: Unbounded((3,)) for a in ["agent_0", "agent_1"]},
        ...     action_specs={a: Categorical(4) for a in ["agent_0", "agent_1"]},
        ...     action_mask=True,
        ... )
        >>> layout.group_map
        {'agent': ['agent_0', 'agent_1']}
        >>> layout.full_observation_spec["agent", "action_mask"].shape
        torch.Size([2, 4])
        >>> td = layout.output(
        ...     {"observation": {"agent_0": [0.0, 1.0, 2.0]}, "reward": {"agent_0": 1.0},
        ...      "terminated": {"agent_0": False}, "truncated": {"agent_0": False}}
        ... )  # agent_1 has left: zeros, all actions allowed, done
        >>> td["agent", "observation"].tolist(), td["agent", "done"].flatten().tolist()
        ([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]], [False, True])
        >>> td["done"].tolist()  # done_on_any
        [True]
    """

    def __init__(
        self,
        agent_names: Sequence[str],
        group_map: GroupMapLike = None,
        *,
        observation_specs: Mapping[str, TensorSpec],
        action_specs: Mapping[str, TensorSpec],
        reward_specs: Mapping[str, TensorSpec] | None = None,
        info_specs: Mapping[str, Composite] | None = None,
        reward: str = "per_agent",
        action_mask: bool | Collection[str] = False,
        agent_mask: bool = False,
        done: str = "per_agent",
        truncated: bool = True,
        done_on_any: bool = True,
        state_spec: TensorSpec | None = None,
        batch_size: Sequence[int] = (),
        device: Any = None,
        default_group_map: Callable[[Sequence[str]], Mapping[str, Sequence[str]]] = (
            group_map_by_prefix
        ),
    ) -> None:
        self.agent_names = list(agent_names)
        self.group_map = resolve_group_map(group_map, self.agent_names, default=default_group_map)
        if done not in DONE_LAYOUTS:
            raise ValueError(f"MarlLayout: done must be one of {DONE_LAYOUTS}, got {done!r}")
        self.done_layout = done
        if reward not in REWARD_LAYOUTS:
            raise ValueError(f"MarlLayout: reward must be one of {REWARD_LAYOUTS}, got {reward!r}")
        if reward == "shared" and reward_specs is not None:
            raise ValueError(
                "MarlLayout: reward='shared' has one root reward; pass no reward_specs"
            )
        self.reward_layout = reward
        self.done_on_any = bool(done_on_any)
        self.batch_size = torch.Size(batch_size)
        self.device = None if device is None else torch.device(device)
        self.done_keys = _FLAGS if truncated else _FLAGS[:2]
        if isinstance(action_mask, bool):
            masked = set(self.group_map) if action_mask else set()
        else:
            masked = set(action_mask)
            unknown = sorted(masked - set(self.group_map))
            if unknown:
                raise ValueError(
                    f"MarlLayout: action_mask names unknown groups {unknown} "
                    f"(groups: {list(self.group_map)})"
                )
        self.masked_groups = [g for g in self.group_map if g in masked]
        self.has_action_mask = bool(self.masked_groups)
        self.has_agent_mask = bool(agent_mask)
        obs = _per_agent_specs("observation_specs", observation_specs, self.agent_names, True)
        act = _per_agent_specs("action_specs", action_specs, self.agent_names, True)
        rew = _per_agent_specs("reward_specs", reward_specs, self.agent_names, False)
        info = _per_agent_specs("info_specs", info_specs, self.agent_names, False)
        if info and len(info) != len(self.agent_names):
            missing = [a for a in self.agent_names if a not in info]
            raise ValueError(f"MarlLayout: info_specs has no spec for the agents {missing}")
        self._agent_specs = {
            name: agent_leaf_specs(
                name,
                observation=obs[name],
                action=act[name],
                reward=rew.get(name),
                info=info.get(name),
                action_mask=self.agent_group_of(name) in masked,
                agent_mask=self.has_agent_mask,
                done_keys=self.done_keys,
            )
            for name in self.agent_names
        }
        specs, self.heterogeneous = build_group_specs(
            self.group_map,
            self._agent_specs,
            done=done,
            done_keys=self.done_keys,
            shared_reward=(
                Unbounded(shape=(1,), dtype=torch.float32) if reward == "shared" else None
            ),
            state_spec=state_spec,
            batch_size=self.batch_size,
            device=self.device,
        )
        self.full_observation_spec: Composite = specs["observation"]
        self.full_action_spec: Composite = specs["action"]
        self.full_reward_spec: Composite = specs["reward"]
        self.full_done_spec: Composite = specs["done"]
        self._state_spec = None if state_spec is None else self.full_observation_spec["state"]
        position = {name: i for i, name in enumerate(self.agent_names)}
        self.agent_group: dict[str, tuple[str, int]] = {
            name: (group, i)
            for group, members in self.group_map.items()
            for i, name in enumerate(members)
        }
        self._positions = {g: [position[a] for a in m] for g, m in self.group_map.items()}
        # unbatched group specs of every output entry, for the conversions
        self._out_specs: dict[str, Any] = {}
        for group, members in self.group_map.items():
            merged = [Composite() for _ in members]
            for spec, name in zip(merged, members, strict=True):
                for part in ("observation", "reward", "done"):
                    if (part == "done" and done == "root") or (
                        part == "reward" and reward == "shared"
                    ):
                        continue
                    spec.update(self._agent_specs[name][part])
            self._out_specs[group] = (
                merged if self.heterogeneous[group] else torch.stack(merged, dim=0)
            )
        self._root_flag_spec = {k: self.full_done_spec[k] for k in self.done_keys}
        self._root_reward_spec = self.full_reward_spec["reward"] if reward == "shared" else None
        cpu = self.device is None or self.device.type == "cpu"
        self._data_device = None if cpu else self.device
        self._plans: dict[tuple[str, str], Any] = {}
        # what every output needs, computed once: (group, members, positions, heterogeneous)
        self._agent_set = frozenset(self.agent_names)
        self._group_items = [
            (g, m, self._positions[g], self.heterogeneous[g]) for g, m in self.group_map.items()
        ]
        # one homogeneous group, no batch dims: the root flags are the group flags' any/all
        # over the agent dim, whose result already has the root shape (1,)
        # unbatched homogeneous groups: split_actions(numpy=True) takes _numpy_actions;
        # group -> the one-hot action spec to turn into indices (None: nothing to turn)
        self._flat_actions = not self.batch_size and not any(self.heterogeneous.values())
        self._action_leaf: dict[str, Any] = {}
        for group in self.group_map:
            leaf = None if self.heterogeneous[group] else self.full_action_spec[group, "action"]
            self._action_leaf[group] = leaf if isinstance(leaf, (OneHot, MultiOneHot)) else None
        # homogeneous unbatched cpu groups with per-agent done, terminated and truncated flags:
        # _flag_block builds them (and the root's) from the simulator's dicts at once
        flat = (
            not self.batch_size
            and not any(self.heterogeneous.values())
            and done == "per_agent"
            and self.done_keys == _FLAGS
            and self._data_device is None
        )
        self._flag_groups = list(self.group_map.items()) if flat else None
        self._flat_flags = (
            len(self.group_map) == 1
            and not self.batch_size
            and not any(self.heterogeneous.values())
        )
        self._supports_arrays = supports_arrays(self)

    # ------------------------------------------------------------------ specs
    def agent_group_of(self, agent: str) -> str:
        """The group of ``agent``."""
        for group, members in self.group_map.items():
            if agent in members:
                return group
        raise KeyError(f"MarlLayout: unknown agent {agent!r} (agents: {self.agent_names})")

    @property
    def groups(self) -> list[str]:
        """The group names, in order."""
        return list(self.group_map)

    @property
    def n_agents(self) -> int:
        """The number of agents of the env."""
        return len(self.agent_names)

    def set_specs(self, env: Any) -> None:
        """Assigns the four full specs to ``env`` (an :class:`~torchenv.envs.EnvBase`)."""
        env.full_observation_spec = self.full_observation_spec.clone()
        env.full_action_spec = self.full_action_spec.clone()
        env.full_reward_spec = self.full_reward_spec.clone()
        env.full_done_spec = self.full_done_spec.clone()

    def action_mask_keys(self) -> list[tuple[tuple[str, str], tuple[str, str]]]:
        """``[((group, "action"), (group, "action_mask")), ...]`` for the ``ActionMask`` transform."""
        return [((g, "action"), (g, "action_mask")) for g in self.masked_groups]

    def update_action_spec_masks(self, action_spec: Composite, tensordict: TensorDictBase) -> None:
        """Writes each masked group's ``(group, "action_mask")`` of ``tensordict`` into the mask
        of its action spec (what TorchRL's PettingZoo wrapper does after every step), so that
        ``rand_action`` picks allowed actions without the ``ActionMask`` transform.

        Args:
            action_spec: the env's ``full_action_spec`` (updated in place).
            tensordict: the output of a reset or step.

        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["a_0"], observation_specs={"a_0": Unbounded((1,))},
        ...     action_specs={"a_0": Categorical(3)}, action_mask=True)
        >>> td = layout.output({"action_mask": {"a_0": [False, False, True]}, "done": {}})
        >>> spec = layout.full_action_spec.clone()
        >>> layout.update_action_spec_masks(spec, td)
        >>> spec.rand()["a", "action"].tolist()
        [2]
        """
        for group in self.masked_groups:
            spec = action_spec[group, "action"]
            if hasattr(spec, "update_mask"):
                spec.update_mask(tensordict.get((group, "action_mask")))

    def reset_rows(self, tensordict: TensorDictBase | None) -> torch.Tensor:
        """The sub-envs a ``_reset`` call must reset: a boolean tensor of the batch shape.

        From the root ``"_reset"`` entry; all of them without any ``"_reset"`` entry. Only
        group-level ``(group, "_reset")`` entries (some agents done, the episode not) reset
        nothing: ``step_and_maybe_reset`` calls ``reset`` then, and the env should leave its
        state alone (and draw no random numbers, to stay reproducible).

        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["a_0"], observation_specs={"a_0": Unbounded((1,))},
        ...     action_specs={"a_0": Categorical(2)}, batch_size=(3,))
        >>> layout.reset_rows(None).tolist()
        [True, True, True]
        >>> td = TensorDict({"_reset": [[True], [False], [False]]}, batch_size=(3,))
        >>> layout.reset_rows(td).tolist()
        [True, False, False]
        """
        batch = self.batch_size
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is not None:
            return reset.reshape(*batch, -1).any(-1)
        nested = tensordict is not None and any(
            tensordict.get((g, "_reset"), None) is not None for g in self.group_map
        )
        return torch.full(batch, not nested, dtype=torch.bool, device=self.device)

    # ------------------------------------------------------------------ outputs
    def output(
        self,
        per_agent: Mapping[Any, Sequence[Any] | Mapping[str, Any]],
        root: Mapping[str, Any] | None = None,
        *,
        acting: Collection[str] | None = None,
    ) -> TensorDict:
        """The TensorDict of a reset or step, from the agents' values.

        Args:
            per_agent: key (``"observation"``, ``"reward"``, ``"info"``, ``"action_mask"``,
                ``"done"``, ``"terminated"``, ``"truncated"``) -> the agents' values: a
                sequence in ``agent_names`` order, or a dict agent -> value where absent agents
                are filled (0; ``True`` for masks and done flags). Values are tensors with the
                batch dims first (a trailing singleton may be left out), numpy arrays, numbers,
                or dicts of those for Composite specs.
            root: root entries: ``"done"``/``"terminated"``/``"truncated"`` (needed with the
                ``"shared"`` and ``"root"`` layouts) and ``"state"``.
            acting: the agents marked in ``(group, "mask")`` (default: all), unless the
                per-agent values of ``"mask"`` are given (batched envs where it differs
                between sub-envs).

        Returns:
            A TensorDict of the env's batch size, group entries of batch ``(*batch, n)``.
        """
        batch, device, data_device = self.batch_size, self.device, self._data_device
        nb = len(batch)
        root = {} if root is None else root
        plans = self._plans
        groups: dict[str, Any] = {}
        for group, members, _, het in self._group_items:
            groups[group] = [{} for _ in members] if het else {}
        flat_flags = None
        if self._flag_groups is not None and "done" not in per_agent:
            term, trunc = per_agent.get("terminated"), per_agent.get("truncated")
            if type(term) is dict and type(trunc) is dict and not root.keys() & _FLAGS:
                flat_flags = self._flag_block(term, trunc)
        for key, values in per_agent.items():
            if flat_flags is not None and (key == "terminated" or key == "truncated"):
                continue
            if type(key) is str:
                name = key
            elif isinstance(key, tuple) and len(key) == 1:
                name = key[0]
            else:
                raise KeyError(
                    f"MarlLayout.output: per-agent keys are flat (e.g. 'observation'), got {key!r}"
                )
            is_map = type(values) is dict or isinstance(values, Mapping)
            if is_map:
                if not self._agent_set.issuperset(values):
                    unknown = [a for a in values if a not in self._agent_set]
                    raise KeyError(
                        f"MarlLayout.output: {name!r} has values for unknown agents {unknown}"
                    )
            elif len(values) != len(self.agent_names):
                raise ValueError(
                    f"MarlLayout.output: {name!r} has {len(values)} values, expected one per agent "
                    f"({len(self.agent_names)}: {self.agent_names}) or a dict agent -> value"
                )
            for group, members, positions, het in self._group_items:
                plan = plans.get((group, name)) or self._plan(group, name)
                if is_map:
                    get = values.get
                    vals = [get(a, MISSING) for a in members]
                else:
                    vals = [values[p] for p in positions]
                if het:
                    for agent_data, agent_plan, v, a in zip(
                        groups[group], plan, vals, members, strict=True
                    ):
                        agent_data[name] = het_leaf(agent_plan, v, a, (name,), data_device)
                else:
                    groups[group][name] = group_leaf(plan, vals, members, (name,), nb, data_device)
        if flat_flags is None:
            flags = self._fill_flags(groups, root)
        else:
            agent_flags, flags = flat_flags
            for group, values in agent_flags.items():
                groups[group].update(values)
        if self.has_agent_mask and "mask" not in per_agent:
            self._fill_agent_mask(groups, acting)
        source: dict[str, Any] = {
            group: wrap_group(groups[group], batch, len(members), device, het)
            for group, members, _, het in self._group_items
        }
        for key, value in root.items():
            if key in self._root_flag_spec:
                continue
            if key == "state" and self._state_spec is not None:
                source[key] = to_root_tensor(self._state_spec, value, key, batch, data_device)
            elif key == "reward" and self._root_reward_spec is not None:
                source[key] = to_root_tensor(self._root_reward_spec, value, key, batch, data_device)
            else:
                raise KeyError(
                    f"MarlLayout.output: unknown root key {key!r}; expected one of "
                    f"{self._root_keys()}"
                )
        source.update(flags)
        # every value was shaped from the specs above (or rejected): no validation again
        return TensorDict._new_unsafe(source, batch_size=batch, device=device)

    def _root_keys(self) -> list[str]:
        keys = list(self._root_flag_spec)
        if self._state_spec is not None:
            keys.append("state")
        if self._root_reward_spec is not None:
            keys.append("reward")
        return keys

    def _plan(self, group: str, name: str) -> Any:
        """The conversion plan of entry ``name`` of ``group`` (cached; one per agent when the
        group is heterogeneous)."""
        spec = self._out_specs[group]
        first = spec[0] if self.heterogeneous[group] else spec
        if name not in first:
            raise KeyError(
                f"MarlLayout.output: group {group!r} has no entry {name!r} in its specs "
                f"(entries: {sorted(first.keys())}); pass the matching spec/flag at construction"
            )
        if self.heterogeneous[group]:
            plan: Any = [make_plan(agent[name], self.batch_size) for agent in spec]
        else:
            plan = make_plan(spec[name], self.batch_size)
        self._plans[(group, name)] = plan
        return plan

    def _group_flag(self, data: Any, key: str, het: bool) -> torch.Tensor | None:
        if het:
            parts = [d.get(key) for d in data]
            return None if parts[0] is None else torch.stack(parts, len(self.batch_size))
        return data.get(key)

    def _flag_block(
        self, terminated: dict, truncated: dict
    ) -> tuple[dict[str, dict[str, torch.Tensor]], dict[str, torch.Tensor]] | None:
        """The per-agent flags of every group and the root flags, for homogeneous unbatched
        groups, from the simulator's dicts of bools (absent agents are done): one bool array
        per group. ``None`` when a value is not a plain flag or an agent is unknown (the
        general path then converts, or words the error)."""
        agents = self._agent_set
        if not (agents.issuperset(terminated) and agents.issuperset(truncated)):
            return None
        from_numpy = torch.from_numpy
        groups: dict[str, dict[str, torch.Tensor]] = {}
        all_done: list[bool] = []
        all_term: list[bool] = []
        all_trunc: list[bool] = []
        for group, members in self._flag_groups:
            try:
                term = [bool(terminated.get(a, True)) for a in members]
                trunc = [bool(truncated.get(a, True)) for a in members]
            except (ValueError, TypeError, RuntimeError):
                return None
            done = [t or u for t, u in zip(term, trunc, strict=True)]
            n = len(members)
            # one array, three numpy views (torch's split costs more than three from_numpy)
            block = np.array(done + term + trunc, dtype=bool).reshape(3, n, 1)
            groups[group] = {
                "done": from_numpy(block[0]),
                "terminated": from_numpy(block[1]),
                "truncated": from_numpy(block[2]),
            }
            all_done += done
            all_term += term
            all_trunc += trunc
        if self.done_on_any:
            root = [any(all_done), any(all_term), any(all_trunc)]
        else:
            # every agent done; "truncated" if any of them was cut short, else "terminated"
            finished = all(all_done)
            cut = finished and any(all_trunc)
            root = [finished, finished and not cut, cut]
        flags = np.array(root, dtype=bool).reshape(3, 1)
        return groups, {
            "done": from_numpy(flags[0]),
            "terminated": from_numpy(flags[1]),
            "truncated": from_numpy(flags[2]),
        }

    def _fill_flags(
        self, groups: dict[str, Any], root: Mapping[str, Any]
    ) -> dict[str, torch.Tensor]:
        batch, nb, layout = self.batch_size, len(self.batch_size), self.done_layout
        flags: dict[str, torch.Tensor] = {}
        for key in self.done_keys:
            if key in root:
                flags[key] = to_root_tensor(
                    self._root_flag_spec[key], root[key], key, batch, self._data_device
                )
        if layout == "per_agent" and self._flat_flags:
            data = groups[next(iter(self.group_map))]
            if "terminated" in data and ("truncated" in data or len(self.done_keys) == 2):
                if "done" not in data:
                    trunc = data.get("truncated")
                    term = data["terminated"]
                    data["done"] = term.clone() if trunc is None else term | trunc
                if self.done_on_any:
                    for key in self.done_keys:
                        if key not in flags:
                            flags[key] = data[key].any(0)
                    return flags
                done = flags.setdefault("done", data["done"].all(0))
                if "truncated" in self.done_keys:
                    trunc = flags.setdefault("truncated", done & data["truncated"].any(0))
                    flags.setdefault("terminated", done & ~trunc)
                else:
                    flags.setdefault("terminated", data["terminated"].all(0))
                return flags
        if layout == "per_agent":
            for group in self.group_map:
                data, het = groups[group], self.heterogeneous[group]
                per = [data] if not het else data
                for d in per:
                    if "terminated" not in d and "done" in d:
                        d["terminated"] = d["done"].clone()
                    if "truncated" in self.done_keys and "truncated" not in d:
                        ref = d.get("done", d.get("terminated"))
                        if ref is not None:
                            d["truncated"] = torch.zeros_like(ref)
                    if "done" not in d and "terminated" in d:
                        d["done"] = (
                            d["terminated"] | d["truncated"]
                            if "truncated" in d
                            else d["terminated"].clone()
                        )
                if self._group_flag(data, "done", het) is None:
                    raise KeyError(
                        f"MarlLayout.output: done='per_agent' needs per-agent 'terminated' (and "
                        f"'truncated') or 'done' values; group {group!r} got none"
                    )
            agents = {key: self._all_agents(groups, key) for key in self.done_keys}
            if self.done_on_any:
                for key in self.done_keys:
                    flags.setdefault(key, agents[key].any(-1, keepdim=True))
            else:
                # every agent done; "truncated" if any of them was cut short, else "terminated"
                # (keeps done == terminated | truncated at the root)
                done = flags.setdefault("done", agents["done"].all(-1, keepdim=True))
                if "truncated" in self.done_keys:
                    trunc = flags.setdefault(
                        "truncated", done & agents["truncated"].any(-1, keepdim=True)
                    )
                    flags.setdefault("terminated", done & ~trunc)
                else:
                    flags.setdefault("terminated", agents["terminated"].all(-1, keepdim=True))
        else:
            if "done" not in flags:
                if "terminated" not in flags:
                    raise KeyError(
                        f"MarlLayout.output: done={layout!r} needs root={{'done': ...}} (or "
                        "'terminated'); none was given"
                    )
                flags["done"] = (
                    flags["terminated"] | flags["truncated"]
                    if "truncated" in flags
                    else flags["terminated"]
                )
            if "terminated" not in flags:
                flags["terminated"] = flags["done"].clone()
            if "truncated" in self.done_keys and "truncated" not in flags:
                flags["truncated"] = torch.zeros_like(flags["done"])
            if layout == "shared":
                for group, members in self.group_map.items():
                    shape = (*batch, len(members), 1)
                    for key in self.done_keys:
                        value = flags[key].unsqueeze(nb).expand(shape).clone()
                        if self.heterogeneous[group]:
                            for i, d in enumerate(groups[group]):
                                d[key] = value.select(nb, i)
                        else:
                            groups[group][key] = value
        return flags

    def _all_agents(self, groups: dict[str, Any], key: str) -> torch.Tensor:
        """The flags ``key`` of every agent, ``(*batch, n_agents)``."""
        batch = self.batch_size
        parts = [
            self._group_flag(groups[g], key, self.heterogeneous[g]).reshape(*batch, -1)
            for g in self.group_map
        ]
        return torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]

    def _fill_agent_mask(self, groups: dict[str, Any], acting: Collection[str] | None) -> None:
        nb = len(self.batch_size)
        for group, members in self.group_map.items():
            if acting is None:
                mask = torch.ones(len(members), dtype=torch.bool)
            else:
                mask = torch.tensor([a in acting for a in members], dtype=torch.bool)
            if nb:
                mask = mask.expand(*self.batch_size, len(members)).clone()
            if self._data_device is not None:
                mask = mask.to(self._data_device)
            if self.heterogeneous[group]:
                for i, d in enumerate(groups[group]):
                    d["mask"] = mask.select(nb, i)
            else:
                groups[group]["mask"] = mask

    # ------------------------------------------------------------------ actions
    def _group_actions(self, td: TensorDictBase, group: str, categorical: bool) -> list[Any]:
        nb = len(self.batch_size)
        if self.heterogeneous[group]:
            sub = td.get(group)
            if isinstance(sub, LazyStackedTensorDict) and sub.stack_dim == nb:
                parts = [t.get("action") for t in sub.tensordicts]
            else:
                parts = [t.get("action") for t in sub.unbind(nb)]
            if categorical:
                parts = [
                    self._to_categorical(self._agent_specs[a]["action"]["action"], p)
                    for a, p in zip(self.group_map[group], parts, strict=True)
                ]
            return parts
        action = td.get((group, "action"))
        if categorical:
            action = self._to_categorical(self.full_action_spec[group, "action"], action)
        return list(action.unbind(nb))

    @staticmethod
    def _to_categorical(spec: TensorSpec, action: torch.Tensor) -> torch.Tensor:
        if isinstance(spec, (OneHot, MultiOneHot)):
            return spec.to_categorical(action, safe=False)
        return action

    def split_actions(
        self, td: TensorDictBase, *, numpy: bool = False, categorical: bool = False
    ) -> Any:
        """The agents' actions from the groups' ``(group, "action")`` entries.

        Args:
            td: the tensordict given to ``_step``.
            numpy: return a dict agent -> numpy action (one ``.numpy()`` per group; the agents'
                actions are views into it); otherwise a list of tensors in ``agent_names`` order
                (views along the agent dim).
            categorical: turn one-hot actions into category indices first.

        >>> from torchenv.specs import OneHot, Unbounded
        >>> layout = MarlLayout(["a_0", "a_1"], observation_specs={"a_0": Unbounded((1,)),
        ...     "a_1": Unbounded((1,))}, action_specs={"a_0": OneHot(3), "a_1": OneHot(3)})
        >>> td = layout.full_action_spec.zero()
        >>> td["a", "action"][1, 2] = 1
        >>> layout.split_actions(td, numpy=True, categorical=True)
        {'a_0': np.int64(0), 'a_1': np.int64(2)}
        """
        if numpy and self._flat_actions:
            return self._numpy_actions(td, categorical)
        out: list[Any] = [None] * len(self.agent_names)
        for group in self.group_map:
            parts = self._group_actions(td, group, categorical)
            for p, part in zip(self._positions[group], parts, strict=True):
                out[p] = part
        if not numpy:
            return out
        return {name: _to_numpy(part) for name, part in zip(self.agent_names, out, strict=True)}

    def _numpy_actions(self, td: TensorDictBase, categorical: bool) -> dict[str, Any]:
        """``split_actions(numpy=True)`` for unbatched layouts of homogeneous groups: one
        ``.numpy()`` per group, the agents' actions are its rows (numbers for scalar actions)."""
        out: list[Any] = [None] * len(self.agent_names)
        plain = type(td) is TensorDict
        for group, _, positions, _ in self._group_items:
            sub = td._tensordict.get(group) if plain else None
            if type(sub) is TensorDict:
                action = sub._tensordict.get("action")
                if action is None:
                    action = td.get((group, "action"))
            else:
                action = td.get((group, "action"))
            if categorical:
                spec = self._action_leaf[group]
                if spec is not None:
                    action = spec.to_categorical(action, safe=False)
            if action.requires_grad:
                action = action.detach()
            if action.device.type != "cpu":
                action = action.cpu()
            for p, part in zip(positions, action.numpy(), strict=True):
                out[p] = part
        return dict(zip(self.agent_names, out, strict=True))

    def agent_action(
        self, td: TensorDictBase, agent: str, *, numpy: bool = False, categorical: bool = False
    ) -> Any:
        """One agent's action (turn-based envs: the agent whose turn it is).

        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["player_1", "player_2"],
        ...     observation_specs={p: Unbounded((1,)) for p in ["player_1", "player_2"]},
        ...     action_specs={p: Categorical(9) for p in ["player_1", "player_2"]})
        >>> td = layout.full_action_spec.zero()
        >>> td["player", "action"][1] = 4
        >>> layout.agent_action(td, "player_2", numpy=True)
        np.int64(4)
        """
        try:
            group, index = self.agent_group[agent]
        except KeyError:
            raise KeyError(
                f"MarlLayout: unknown agent {agent!r} (agents: {self.agent_names})"
            ) from None
        part = self._group_actions(td, group, categorical)[index]
        return _to_numpy(part) if numpy else part

    # ------------------------------------------------------------------ direct array I/O
    @property
    def supports_arrays(self) -> bool:
        """Whether :meth:`output_into` can write every output of this layout: unbatched,
        homogeneous groups with leaf observations, per-agent rewards and done flags, no infos
        or action masks (the direct path of :mod:`torchenv.envs._direct`)."""
        return self._supports_arrays

    def output_into(
        self,
        out: Mapping[Any, np.ndarray],
        per_agent: Mapping[str, Mapping[str, Any]],
        terminated: Mapping[str, Any],
        truncated: Mapping[str, Any],
        root: Mapping[str, Any] | None = None,
        acting: Collection[str] | None = None,
    ) -> bool:
        """:meth:`output`, written into the numpy arrays ``out`` (keyed ``(group, name)`` and by
        root name) instead of new tensors; returns the root done flag.

        Args:
            out: an array for every observation, done (and, for a step, reward) entry.
            per_agent: ``"observation"`` (and ``"reward"``) -> dict agent -> value (absent
                agents read 0).
            terminated: dict agent -> flag (absent agents are done).
            truncated: dict agent -> flag (absent agents are done).
            root: ``{"state": value}`` when the layout has a state.
            acting: the agents marked in ``(group, "mask")`` (default: all).

        >>> import numpy as np
        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["a_0", "a_1"], observation_specs={"a_0": Unbounded((2,)),
        ...     "a_1": Unbounded((2,))}, action_specs={"a_0": Categorical(3), "a_1": Categorical(3)})
        >>> out = {("a", "observation"): np.empty((2, 2), np.float32), ("a", "reward"):
        ...     np.empty((2, 1), np.float32), "done": np.empty(1, bool),
        ...     "terminated": np.empty(1, bool), "truncated": np.empty(1, bool)}
        >>> out.update({("a", k): np.empty((2, 1), bool) for k in ("done", "terminated", "truncated")})
        >>> layout.output_into(out, {"observation": {"a_0": [1.0, 2.0]}, "reward": {"a_0": 0.5}},
        ...     terminated={"a_0": False}, truncated={"a_0": False})  # a_1 has left
        True
        >>> out[("a", "observation")].tolist(), out[("a", "done")].flatten().tolist()
        ([[1.0, 2.0], [0.0, 0.0]], [False, True])
        """
        if not self._supports_arrays:
            raise ValueError(
                "MarlLayout.output_into: this layout has batch dims, heterogeneous groups, "
                "Composite observations, infos, action masks or another done/reward layout "
                "(supports_arrays is False); build the outputs with MarlLayout.output"
            )
        return write_output(self, out, per_agent, terminated, truncated, root, acting)

    def tensordict_of_arrays(self, arrays: Mapping[Any, np.ndarray]) -> TensorDict:
        """The TensorDict of arrays filled by :meth:`output_into` (sharing their memory): what
        :meth:`output` would have returned.

        >>> import numpy as np
        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["a_0"], observation_specs={"a_0": Unbounded((2,))},
        ...     action_specs={"a_0": Categorical(3)})
        >>> td = layout.tensordict_of_arrays({("a", "observation"): np.ones((1, 2), np.float32),
        ...     "done": np.zeros(1, bool)})
        >>> td["a"].batch_size, td["done"].shape
        (torch.Size([1]), torch.Size([1]))
        """
        return tensordict_of_arrays(self, arrays)

    def split_action_tensors(
        self, action: torch.Tensor | Mapping[Any, torch.Tensor], *, categorical: bool = False
    ) -> dict[str, Any]:
        """The agents' numpy actions from the group action tensors (the direct path's
        ``action``): the tensor of the one group's ``(group, "action")``, or a dict
        ``(group, "action") -> tensor``.

        >>> import torch
        >>> from torchenv.specs import Categorical, Unbounded
        >>> layout = MarlLayout(["a_0", "a_1"], observation_specs={"a_0": Unbounded((1,)),
        ...     "a_1": Unbounded((1,))}, action_specs={"a_0": Categorical(3), "a_1": Categorical(3)})
        >>> layout.split_action_tensors(torch.tensor([2, 0]))
        {'a_0': np.int64(2), 'a_1': np.int64(0)}
        """
        return split_action_tensors(self, action, categorical)


def _to_numpy(value: torch.Tensor) -> Any:
    array = value.detach().cpu().numpy()
    return array[()] if array.ndim == 0 else array
