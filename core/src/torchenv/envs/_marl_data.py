"""Multi-agent data: per-agent values -> group tensors, and group actions -> per-agent actions.

Two input forms, decided per leaf at run time:

* a torch tensor for every agent of a group (VMAS: lists of ``(num_envs, ...)`` tensors in agent
  order): one ``torch.stack`` along the agent dim, then a free ``reshape``/dtype fix when needed;
* anything else (numpy arrays, Python numbers, missing agents; PettingZoo's dicts): one tensor
  per group and key, created filled with the key's default (0, or ``True`` for masks and done
  flags), written agent by agent through its numpy view.

Heterogeneous groups (agents whose specs differ) get one TensorDict per agent, lazily stacked.

Outputs are fresh tensors, never buffers reused from step to step: rollouts, replay buffers and
``step_mdp`` keep references to them. Both paths copy each agent's value exactly once (into the
group tensor), and actions are handed back as views of the group tensor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from torchenv.specs import Composite, TensorSpec

__all__ = [
    "MISSING",
    "fill_value",
    "group_leaf",
    "het_leaf",
    "make_plan",
    "to_root_tensor",
    "wrap_group",
]


class _Missing:
    """Marks an agent that has no value at this step (e.g. a PettingZoo agent that left)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_TRUE_KEYS = frozenset({"action_mask", "done", "terminated", "truncated"})


def fill_value(key: tuple[str, ...]) -> bool | int:
    """What a missing agent reads at ``key``: ``True`` for masks and done flags, else 0."""
    return True if key[-1] in _TRUE_KEYS else 0


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else repr(value)


def _sub(value: Any, sub: str, key: tuple[str, ...], agent: str) -> Any:
    if value is MISSING:
        return MISSING
    if not isinstance(value, Mapping):
        raise TypeError(
            f"agent {agent!r}, key {key}: expected a dict with the entries {sub!r}, ... "
            f"(the spec is a Composite), got {_describe(value)}"
        )
    if sub not in value:
        return MISSING
    return value[sub]


def make_plan(spec: TensorSpec, batch: torch.Size) -> Any:
    """What the conversions need of a spec, computed once: ``("leaf", shape, dtype)`` with the
    batch dims in front, or ``("node", ((sub, plan), ...))`` for a Composite."""
    if isinstance(spec, Composite):
        return ("node", tuple((sub, make_plan(spec[sub], batch)) for sub in spec))
    return ("leaf", torch.Size((*batch, *spec.shape)), spec.dtype)


def group_leaf(
    plan: Any,
    values: Sequence[Any],
    members: Sequence[str],
    key: tuple[str, ...],
    nb: int,
    device: Any,
) -> Any:
    """The group value at ``key`` from the agents' ``values``: a tensor ``(*batch, n, *leaf)``,
    or for a Composite a dict of them. ``plan`` comes from :func:`make_plan` of the unbatched
    group spec; ``device`` is ``None`` for cpu (or no device)."""
    if plan[0] == "node":
        return {
            sub: group_leaf(
                sub_plan,
                [_sub(v, sub, key, a) for v, a in zip(values, members, strict=True)],
                members,
                (*key, sub),
                nb,
                device,
            )
            for sub, sub_plan in plan[1]
        }
    _, shape, dtype = plan
    tensor = torch.Tensor
    if nb == 0 and device is None and type(values[0]) is not tensor:
        fast = _stack_numpy(values, shape, dtype)
        if fast is not None:
            return fast
    if all(type(v) is tensor for v in values):
        out = torch.stack(values, dim=nb)
        if out.shape != shape:
            try:
                out = out.reshape(shape)
            except RuntimeError:
                raise ValueError(
                    f"key {key}: the agents {list(members)} gave tensors of shapes "
                    f"{[tuple(v.shape) for v in values]}; expected {tuple(shape[:nb] + shape[nb + 1 :])} "
                    f"each (batch + the spec's shape)"
                ) from None
        if out.dtype != dtype:
            out = out.to(dtype)
        return out if device is None or out.device == device else out.to(device)
    out = torch.full(shape, fill_value(key), dtype=dtype)
    view = out.numpy()
    lead = (slice(None),) * nb
    for i, (value, agent) in enumerate(zip(values, members, strict=True)):
        if value is MISSING:
            continue
        try:
            view[(*lead, i)] = value.cpu() if type(value) is tensor else value
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"agent {agent!r}, key {key}: cannot write {_describe(value)} into the spec's "
                f"shape {tuple(shape[:nb] + shape[nb + 1 :])} ({dtype}): {err}"
            ) from None
    return out if device is None else out.to(device)


_NUMPY_DTYPES: dict[torch.dtype, Any] = {}


def _numpy_dtype(dtype: torch.dtype) -> Any:
    """The numpy dtype of a torch dtype (``None`` where numpy has none, e.g. bfloat16)."""
    try:
        return _NUMPY_DTYPES[dtype]
    except KeyError:
        try:
            found = torch.empty((), dtype=dtype).numpy().dtype
        except TypeError:
            found = None
        _NUMPY_DTYPES[dtype] = found
        return found


def _strip_ones(shape: tuple[int, ...]) -> tuple[int, ...]:
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return tuple(shape[i:])


def _stack_numpy(values: Sequence[Any], shape: torch.Size, dtype: torch.dtype) -> Any:
    """Unbatched group leaf of numpy arrays / numbers, every agent present: one ``np.asarray``
    (a fresh array; numpy casts as the item-by-item writes would) and a zero-copy
    ``torch.from_numpy``. ``None`` when that does not fit (a missing agent, a tensor, a ragged
    or misshaped value): the general path then fills agent by agent (and words the errors)."""
    np_dtype = _numpy_dtype(dtype)
    if np_dtype is None:
        return None
    for value in values:
        if value is MISSING:
            return None
    try:
        array = np.asarray(values, dtype=np_dtype)
    except (ValueError, TypeError, RuntimeError):
        return None
    if array.shape != shape:
        # what an item write would broadcast: the agents' values and the spec may differ
        # by leading singleton dims only (a number for a (1,) spec, a (1, 3) array for (3,))
        if _strip_ones(array.shape[1:]) != _strip_ones(shape[1:]):
            return None
        array = array.reshape(shape)
    return torch.from_numpy(array)


def het_leaf(
    plan: Any,
    value: Any,
    agent: str,
    key: tuple[str, ...],
    device: Any,
) -> Any:
    """One agent's value at ``key`` as a tensor ``(*batch, *leaf)`` (heterogeneous groups)."""
    if plan[0] == "node":
        return {
            sub: het_leaf(sub_plan, _sub(value, sub, key, agent), agent, (*key, sub), device)
            for sub, sub_plan in plan[1]
        }
    _, shape, dtype = plan
    if value is MISSING:
        return torch.full(shape, fill_value(key), dtype=dtype, device=device)
    if type(value) is not torch.Tensor:
        value = torch.as_tensor(np.asarray(value), dtype=dtype)
    try:
        value = value.reshape(shape)
    except RuntimeError:
        raise ValueError(
            f"agent {agent!r}, key {key}: got {_describe(value)}, expected shape {tuple(shape)}"
        ) from None
    if value.dtype != dtype:
        value = value.to(dtype)
    return value if device is None else value.to(device)


def to_root_tensor(
    spec: TensorSpec, value: Any, key: str, batch: torch.Size, device: Any
) -> torch.Tensor:
    """A root entry (``"done"``, ``"state"``, ...) as a tensor of the spec's shape and dtype."""
    if type(value) is not torch.Tensor:
        value = torch.as_tensor(np.asarray(value), dtype=spec.dtype)
    shape = spec.shape
    if value.shape != shape:
        try:
            value = value.reshape(shape)
        except RuntimeError:
            raise ValueError(
                f"root key {key!r}: got {_describe(value)}, expected shape {tuple(shape)} "
                f"(batch {tuple(batch)})"
            ) from None
    if value.dtype != spec.dtype:
        value = value.to(spec.dtype)
    return value if device is None else value.to(device)


def wrap_group(
    data: Any, batch: torch.Size, n: int, device: Any, heterogeneous: bool
) -> TensorDictBase:
    """The group TensorDict (batch ``(*batch, n)``): dense, or a lazy stack of the agents'.

    The values were shaped from the specs (or rejected) by the conversions above, so the
    TensorDicts are built without validating them again."""
    if not heterogeneous:
        return TensorDict._new_unsafe(data, batch_size=torch.Size((*batch, n)), device=device)
    return LazyStackedTensorDict(
        *[TensorDict._new_unsafe(agent, batch_size=batch, device=device) for agent in data],
        stack_dim=len(batch),
    )
