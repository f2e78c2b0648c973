"""Multi-agent values written into preallocated arrays: ``MarlLayout``'s direct array I/O.

The direct path (:mod:`torchenv.envs._direct`) hands an env numpy arrays to fill, keyed
``(group, name)`` for the agents' entries and by name for the root's. These functions fill them
from a simulator's per-agent dicts as :meth:`MarlLayout.output` would build its tensors (same
values, casts, defaults for agents that left, flag aggregation), and split group actions back
into per-agent numpy actions. They cover the layouts where a group is one dense block: no batch
dims, homogeneous groups, leaf observations, per-agent rewards and done flags, no infos or
action masks (:func:`supports_arrays`); other layouts keep the TensorDict path.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict

from torchenv.envs._direct import nest_entries
from torchenv.envs._marl_data import MISSING, _describe, _strip_ones, fill_value
from torchenv.specs import Composite

__all__ = ["split_action_tensors", "supports_arrays", "tensordict_of_arrays", "write_output"]

_FLAGS = ("done", "terminated", "truncated")


def supports_arrays(layout: Any) -> bool:
    """Whether :func:`write_output` can fill every output entry of ``layout``."""
    if (
        layout.batch_size
        or any(layout.heterogeneous.values())
        or layout.done_layout != "per_agent"
        or tuple(layout.done_keys) != _FLAGS
        or layout.reward_layout != "per_agent"
        or layout.has_action_mask
        or layout._data_device is not None
    ):
        return False
    if layout._state_spec is not None and isinstance(layout._state_spec, Composite):
        return False
    spec = layout.full_observation_spec
    allowed = {"observation", "mask"} if layout.has_agent_mask else {"observation"}
    for group in layout.group_map:
        node = spec[group]
        if set(node.keys()) != allowed or isinstance(node["observation"], Composite):
            return False
    return True


def write_output(
    layout: Any,
    out: Mapping[Any, np.ndarray],
    per_agent: Mapping[str, Mapping[str, Any]],
    terminated: Mapping[str, Any],
    truncated: Mapping[str, Any],
    root: Mapping[str, Any] | None = None,
    acting: Collection[str] | None = None,
) -> bool:
    """Writes a step's (or a reset's) values into the arrays ``out``; returns the root done.

    Args:
        layout: a :class:`~torchenv.envs.MarlLayout` for which :func:`supports_arrays` holds.
        out: ``(group, name)`` and root keys -> numpy arrays of the specs' shapes and dtypes.
        per_agent: ``"observation"`` (and ``"reward"`` for a step) -> dict agent -> value;
            agents absent from a dict read 0.
        terminated: dict agent -> flag; absent agents are done.
        truncated: dict agent -> flag; absent agents are done.
        root: ``{"state": value}`` for a layout with a state.
        acting: the agents marked in ``(group, "mask")`` (default: all).
    """
    known = layout._agent_set
    for name, values in (*per_agent.items(), ("terminated", terminated), ("truncated", truncated)):
        if not known.issuperset(values):
            unknown = [a for a in values if a not in known]
            raise KeyError(
                f"MarlLayout.output_into: {name!r} has values for unknown agents {unknown}"
            )
    all_done: list[bool] = []
    all_term: list[bool] = []
    all_trunc: list[bool] = []
    for group, members in layout.group_map.items():
        for name, values in per_agent.items():
            get = values.get
            _write_leaf(out[(group, name)], [get(a, MISSING) for a in members], members, name)
        term = [bool(terminated.get(a, True)) for a in members]
        trunc = [bool(truncated.get(a, True)) for a in members]
        done = [t or u for t, u in zip(term, trunc, strict=True)]
        out[(group, "done")][:, 0] = done
        out[(group, "terminated")][:, 0] = term
        out[(group, "truncated")][:, 0] = trunc
        all_done += done
        all_term += term
        all_trunc += trunc
        if layout.has_agent_mask:
            out[(group, "mask")][:] = (
                [True] * len(members) if acting is None else [a in acting for a in members]
            )
    if layout.done_on_any:
        flags = (any(all_done), any(all_term), any(all_trunc))
    else:
        # every agent done; "truncated" if any of them was cut short, else "terminated"
        finished = all(all_done)
        cut = finished and any(all_trunc)
        flags = (finished, finished and not cut, cut)
    for key, flag in zip(_FLAGS, flags, strict=True):
        out[key][0] = flag
    if layout._state_spec is not None:
        state = None if root is None else root.get("state")
        if state is None:
            raise KeyError(
                "MarlLayout.output_into: the layout has a state; pass root={'state': ...}"
            )
        _write_root(out["state"], state, "state")
    return flags[0]


def _write_leaf(array: np.ndarray, values: list, members: Sequence[str], name: str) -> None:
    """The agents' ``values`` into the group block ``array`` (``(n, *leaf)``): one conversion
    when every agent has a value of the leaf's shape (leading singleton dims aside), else
    the default and one row per agent present."""
    if not any(v is MISSING for v in values):
        try:
            stacked = np.asarray(values, dtype=array.dtype)
        except (ValueError, TypeError, RuntimeError):
            stacked = None
        if stacked is not None and (
            stacked.shape == array.shape
            or _strip_ones(stacked.shape[1:]) == _strip_ones(array.shape[1:])
        ):
            array[...] = stacked.reshape(array.shape)
            return
    array[...] = fill_value((name,))
    for i, (value, agent) in enumerate(zip(values, members, strict=True)):
        if value is MISSING:
            continue
        try:
            array[i] = value.cpu() if type(value) is torch.Tensor else value
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"agent {agent!r}, key ({name!r},): cannot write {_describe(value)} into the "
                f"spec's shape {tuple(array.shape[1:])} ({array.dtype}): {err}"
            ) from None


def _write_root(array: np.ndarray, value: Any, key: str) -> None:
    value = np.asarray(value.cpu() if type(value) is torch.Tensor else value)
    if value.size != array.size:
        raise ValueError(
            f"root key {key!r}: got {_describe(value)}, expected shape {tuple(array.shape)}"
        )
    array[...] = value.reshape(array.shape)


def split_action_tensors(
    layout: Any, action: torch.Tensor | Mapping[Any, torch.Tensor], categorical: bool
) -> dict[str, Any]:
    """The agents' numpy actions (dict agent -> value, rows of one ``.numpy()`` per group) from
    the group action tensors: ``action`` is the tensor of the one group's ``(group, "action")``
    or a dict ``(group, "action") -> tensor``; ``categorical`` turns one-hot actions into
    indices first."""
    out: dict[str, Any] = {}
    single = isinstance(action, torch.Tensor)
    for group, members, _, _ in layout._group_items:
        value = action if single else action[(group, "action")]
        if categorical:
            spec = layout._action_leaf[group]
            if spec is not None:
                value = spec.to_categorical(value, safe=False)
        if value.requires_grad:
            value = value.detach()
        out.update(zip(members, value.numpy()))
    return out


def tensordict_of_arrays(layout: Any, arrays: Mapping[Any, np.ndarray]) -> TensorDict:
    """The TensorDict of the arrays (``(group, name)`` and root keys) that :func:`write_output`
    filled, sharing their memory; groups of batch ``(*batch, n)``."""
    batch = layout.batch_size
    nodes = {g: torch.Size((*batch, len(m))) for g, m in layout.group_map.items()}
    tensors = {key: torch.from_numpy(array) for key, array in arrays.items()}
    return nest_entries(tensors, batch, nodes, layout.device)
