"""Multi-agent specs: per-agent specs and a group map -> the nested ``Composite`` specs of an env.

Each group becomes one nested entry whose Composite has the shape ``(*batch, n_agents_in_group)``:
its agents' specs are stacked along that agent dim (densely when the agents are alike, lazily as a
:class:`~torchenv.specs.StackedComposite` when their shapes differ), the way TorchRL's VMAS and
PettingZoo wrappers lay them out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from torchenv.specs import (
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    StackedComposite,
    TensorSpec,
    Unbounded,
)

__all__ = [
    "DONE_LAYOUTS",
    "REWARD_LAYOUTS",
    "action_mask_spec",
    "agent_leaf_specs",
    "build_group_specs",
]

DONE_LAYOUTS = ("per_agent", "shared", "root")
REWARD_LAYOUTS = ("per_agent", "shared")


def action_mask_spec(action_spec: TensorSpec, *, agent: str = "?") -> Categorical:
    """The boolean spec of an action mask for ``action_spec`` (one entry per one-hot action).

    Raises:
        TypeError: if the action spec is not discrete (no mask applies to it).

    >>> action_mask_spec(Categorical(4)).shape
    torch.Size([4])
    """
    if isinstance(action_spec, (Categorical, MultiCategorical)) and not isinstance(
        action_spec, (OneHot, MultiOneHot)
    ):
        shape = action_spec.to_one_hot_spec().shape
    elif isinstance(action_spec, (OneHot, MultiOneHot)):
        shape = action_spec.shape
    else:
        raise TypeError(
            f"agent {agent!r}: an action mask needs a discrete action spec (Categorical, OneHot, "
            f"MultiCategorical, MultiOneHot), got {type(action_spec).__name__}"
        )
    return Categorical(2, shape=shape, dtype=torch.bool)


def _flag() -> Categorical:
    return Categorical(2, shape=(1,), dtype=torch.bool)


def agent_leaf_specs(
    agent: str,
    *,
    observation: TensorSpec,
    action: TensorSpec,
    reward: TensorSpec | None,
    info: Composite | None,
    action_mask: bool,
    agent_mask: bool,
    done_keys: Sequence[str],
) -> dict[str, Composite]:
    """The unbatched per-agent Composites of one agent: ``"observation"``, ``"action"``,
    ``"reward"`` and ``"done"`` parts (each a Composite whose entries land in the group)."""
    if not isinstance(observation, TensorSpec):
        raise TypeError(
            f"agent {agent!r}: the observation spec must be a TensorSpec, got {type(observation).__name__}"
        )
    if not isinstance(action, TensorSpec) or isinstance(action, Composite):
        raise TypeError(
            f"agent {agent!r}: the action spec must be a leaf TensorSpec (Composite actions are not "
            f"supported), got {type(action).__name__}"
        )
    obs = Composite(observation=observation)
    if info is not None:
        if not isinstance(info, Composite):
            raise TypeError(
                f"agent {agent!r}: the info spec must be a Composite, got {type(info).__name__}"
            )
        obs["info"] = info
    if action_mask:
        obs["action_mask"] = action_mask_spec(action, agent=agent)
    if agent_mask:
        obs["mask"] = Categorical(2, shape=(), dtype=torch.bool)
    rew = reward if reward is not None else Unbounded(shape=(1,), dtype=torch.float32)
    if not isinstance(rew, TensorSpec) or isinstance(rew, Composite):
        raise TypeError(
            f"agent {agent!r}: the reward spec must be a leaf TensorSpec, got {type(rew).__name__}"
        )
    return {
        "observation": obs,
        "action": Composite(action=action),
        "reward": Composite(reward=rew),
        "done": Composite({key: _flag() for key in done_keys}),
    }


def build_group_specs(
    group_map: Mapping[str, Sequence[str]],
    per_agent: Mapping[str, Mapping[str, Composite]],
    *,
    done: str,
    done_keys: Sequence[str],
    shared_reward: TensorSpec | None,
    state_spec: TensorSpec | None,
    batch_size: torch.Size,
    device: Any,
) -> tuple[dict[str, TensorSpec], dict[str, bool]]:
    """Stacks the agents' Composites group by group; returns the four batched full specs
    (``observation``, ``action``, ``reward``, ``done``) and which groups are heterogeneous.
    With ``shared_reward``, the reward is that one root entry instead of one per agent."""
    full = {part: Composite() for part in ("observation", "action", "reward", "done")}
    heterogeneous: dict[str, bool] = {}
    for group, members in group_map.items():
        het = False
        for part in ("observation", "action", "reward", "done"):
            if (part == "done" and done == "root") or (
                part == "reward" and shared_reward is not None
            ):
                continue
            stacked = torch.stack([per_agent[name][part] for name in members], dim=0)
            het = het or isinstance(stacked, StackedComposite)
            full[part][group] = stacked
        heterogeneous[group] = het
    for key in done_keys:
        full["done"][key] = _flag()
    if shared_reward is not None:
        full["reward"]["reward"] = shared_reward
    for root_key in ("reward", *done_keys):
        if root_key in group_map:
            raise ValueError(f"a group named {root_key!r} clashes with the root {root_key!r} entry")
    if state_spec is not None:
        if "state" in group_map:
            raise ValueError("a group named 'state' clashes with the root 'state' entry")
        full["observation"]["state"] = state_spec
    specs: dict[str, TensorSpec] = {}
    for part, spec in full.items():
        spec = spec.expand(*batch_size) if len(batch_size) else spec
        specs[part] = spec.to(device) if device is not None else spec
    return specs, heterogeneous
