"""Specs of a PettingZoo env's agents, from its spaces and a first reset, computed once.

PettingZoo gives action masks in two places: inside a ``Dict`` observation (classic games:
``{"observation": ..., "action_mask": ...}``) or in the agent's info dict. Either way the mask
is taken out of the observation / info specs and becomes ``(group, "action_mask")``, as in
TorchRL's ``PettingZooWrapper``. Infos become ``(group, "info", key)`` (float32, the shape of
the first reset's value) for their numeric entries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from torchenv.spaces import make_writer, numpy_to_torch_dtype, space_to_spec
from torchenv.specs import Composite, TensorSpec, Unbounded

__all__ = ["AgentSpecs", "agent_specs", "info_spec", "state_spec"]

MASK = "action_mask"


@dataclass
class AgentSpecs:
    """What :func:`agent_specs` found: per-agent specs, writers and where masks come from."""

    observation: dict[str, TensorSpec] = field(default_factory=dict)
    action: dict[str, TensorSpec] = field(default_factory=dict)
    writers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    info: dict[str, Composite] = field(default_factory=dict)
    # agent -> "observation" | "info": where its action mask is read
    mask_source: dict[str, str] = field(default_factory=dict)


def _is_numeric(value: Any) -> bool:
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except Exception:  # anything numpy cannot read is not an info entry
        return False


def info_spec(info: Mapping[str, Any]) -> Composite:
    """The ``info`` Composite of one agent: its numeric entries (not the action mask), float32.

    >>> list(info_spec({"distance": 1.5, "name": "a", "action_mask": [1, 0]}).keys())
    ['distance']
    """
    return Composite(
        {
            key: Unbounded(shape=np.shape(value), dtype=torch.float32)
            for key, value in info.items()
            if key != MASK and isinstance(key, str) and _is_numeric(value)
        }
    )


def agent_specs(
    env: Any,
    agents: Sequence[str],
    infos: Mapping[str, Mapping[str, Any]],
    categorical_actions: bool,
) -> AgentSpecs:
    """Specs, action writers and mask sources of ``agents`` of the PettingZoo ``env``.

    Args:
        env: a PettingZoo parallel or AEC env (``observation_space(agent)``, ``action_space(agent)``).
        agents: its ``possible_agents``.
        infos: the agents' info dicts of a first reset.
        categorical_actions: discrete actions as indices (``Categorical``) or ``OneHot``.
    """
    out = AgentSpecs()
    for agent in agents:
        obs = space_to_spec(env.observation_space(agent), remap_state_to_observation=False)
        if isinstance(obs, Composite) and MASK in obs.keys():  # noqa: SIM118 - a spec, not a dict
            obs = obs.clone()
            del obs[MASK]
            out.mask_source[agent] = "observation"
        elif MASK in infos.get(agent, {}):
            out.mask_source[agent] = "info"
        out.observation[agent] = obs
        space = env.action_space(agent)
        out.action[agent] = space_to_spec(space, categorical_action_encoding=categorical_actions)
        # actions reach the writer as indices (one-hot is turned into indices first)
        out.writers[agent] = make_writer(
            space, space_to_spec(space, categorical_action_encoding=True)
        )
    infos_specs = {agent: info_spec(infos.get(agent, {})) for agent in agents}
    if any(len(spec.keys()) for spec in infos_specs.values()):
        out.info = infos_specs
    return out


def state_spec(env: Any) -> TensorSpec:
    """The spec of ``env.state()``: from ``env.state_space`` if it has one, else the shape and
    dtype of one ``state()`` (TorchRL's fallback)."""
    try:
        space = env.state_space
    except AttributeError:
        space = None
    if space is not None:
        return space_to_spec(space, remap_state_to_observation=False)
    try:
        state = np.asarray(env.state())
    except NotImplementedError as err:
        raise ValueError(
            f"return_state=True but {type(env).__name__} has no global state (state() is not "
            "implemented)"
        ) from err
    return Unbounded(shape=state.shape, dtype=numpy_to_torch_dtype(state.dtype))
