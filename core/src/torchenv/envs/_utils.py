"""Small MDP utilities: key helpers, ``terminated_or_truncated``, ``make_composite_from_td``, ``RandomPolicy``."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey, unravel_key

from torchenv.specs import Composite, TensorSpec, Unbounded

__all__ = [
    "RandomPolicy",
    "make_composite_from_td",
    "terminated_or_truncated",
]

_END_OF_TRAJ = ("done", "terminated", "truncated")


# ----------------------------------------------------------------------------- keys
def _replace_last(key: NestedKey, new: str) -> NestedKey:
    """``("agents", "done") -> ("agents", new)``; ``"done" -> new``."""
    if isinstance(key, str):
        return new
    return (*key[:-1], new) if len(key) > 1 else new


def _prefix(key: NestedKey) -> tuple[str, ...]:
    return () if isinstance(key, str) else tuple(key[:-1])


def _sort_by_depth(keys: Iterable[NestedKey]) -> list[NestedKey]:
    """Sorts keys root first, then by name (the order TorchRL uses for key lists)."""

    def depth(key):
        return (0, key) if isinstance(key, str) else (len(key) - 1, ".".join(key))

    return sorted((unravel_key(k) for k in keys), key=depth)


def _leaf_keys(spec: Composite) -> list[NestedKey]:
    return _sort_by_depth(spec.keys(True, True))


def _fast_get(td: TensorDictBase, key: str):
    """``td.get(key, None)`` for a string key, without the exception path of a miss."""
    if type(td) is TensorDict:
        return td._tensordict.get(key)
    return td._get_str(key, None)


def _get_nested(td: TensorDictBase, key: NestedKey):
    """``td.get(key, None)`` for a string or tuple key (``None`` when any level is missing)."""
    if isinstance(key, str):
        return _fast_get(td, key)
    for k in key:
        if td is None or not is_tensor_collection(td):
            return None
        td = _fast_get(td, k)
    return td


def any_set(td: TensorDictBase, keys: list[NestedKey]) -> bool:
    """Whether any tensor of ``td`` at ``keys`` (string or tuple keys) has a ``True`` element;
    missing keys count as unset. The cheap look before ``terminated_or_truncated`` writes."""
    for key in keys:
        if type(key) is str:
            value = _fast_get(td, key)
        else:
            value = td
            for k in key:
                if type(value) is TensorDict:
                    value = value._tensordict.get(k)
                elif isinstance(value, TensorDictBase):
                    value = value._get_str(k, None)
                else:
                    value = None
                    break
        if isinstance(value, torch.Tensor) and _any_small(value):
            return True
    return False


def _any_small(value: torch.Tensor) -> bool:
    """``bool(value.any())``; small cpu tensors (agents' flags) through ``tolist``, several
    times cheaper than a torch reduction and its ``bool``."""
    n = value.numel()
    if n > 64 or not value.is_cpu:
        return bool(value.any())
    if n == 1:
        return bool(value.item())
    ndim = value.ndim
    flat = value.tolist()
    if ndim == 2:  # (agents, 1): the usual per-agent flags
        return any(map(any, flat))
    for _ in range(ndim - 1):
        flat = [x for row in flat for x in row]
    return any(flat)


def _any(value: torch.Tensor) -> bool:
    """``bool(value.any())`` with a fast path for one-element tensors."""
    if value.numel() == 1:
        return bool(value.item())
    return bool(value.any())


def _align_mask(mask: torch.Tensor, shape: torch.Size, node_ndim: int) -> torch.Tensor:
    """Aligns a boolean mask on the *leading* dims of a value of ``shape``.

    The mask is used elementwise when its shape is a (broadcastable) prefix of ``shape``;
    otherwise it is reduced with ``any`` over the dims after ``node_ndim`` (the batch dims
    of the tensordict that holds it).
    """
    mshape = mask.shape
    if mask.ndim <= len(shape) and all(m == 1 or m == s for m, s in zip(mshape, shape)):
        return mask.reshape(*mshape, *((1,) * (len(shape) - mask.ndim)))
    if mask.ndim > node_ndim:
        mask = mask.reshape(*mshape[:node_ndim], -1).any(-1)
    return mask.reshape(*mask.shape, *((1,) * (len(shape) - mask.ndim)))


# ----------------------------------------------------------------------------- done signals
def terminated_or_truncated(
    data: TensorDictBase,
    full_done_spec: Composite | None = None,
    key: str | None = "_reset",
    write_full_false: bool = False,
) -> bool:
    """Aggregates the done / terminated / truncated entries of each level of ``data``.

    For every level (the root and each nested tensordict) that holds end-of-trajectory
    entries, writes under ``key`` the ``or`` of these entries, in place. This is how the
    ``"_reset"`` signals of partial resets are computed.

    Args:
        data: the data to read, usually the ``"next"`` data of a step.
        full_done_spec: where to look for done leaves. If ``None``, every ``"done"``,
            ``"terminated"`` and ``"truncated"`` entry of ``data`` is used.
        key: the name of the entry written at each level; ``None`` writes nothing.
        write_full_false: if ``False`` (default) and no signal is ``True``, the written
            entries are removed again.

    Returns:
        whether any end-of-trajectory signal was ``True``.

    Examples:
        >>> from tensordict import TensorDict
        >>> data = TensorDict(
        ...     {"done": [[False]], "nested": {"truncated": [[[True]]]}}, batch_size=[1]
        ... )
        >>> terminated_or_truncated(data)
        True
        >>> data["nested", "_reset"]
        tensor([[[True]]])
    """
    written: list[tuple[str, ...]] = []

    def visit(node: TensorDictBase, spec: Composite | None, path: tuple[str, ...]) -> bool:
        found = False
        aggregate = None
        if spec is None:
            for name in list(node.keys()):
                value = node.get(name)
                if name in _END_OF_TRAJ:
                    aggregate = value if aggregate is None else aggregate | value
                elif is_tensor_collection(value):
                    found = visit(value, None, (*path, name)) or found
        else:
            for name, sub in spec.items():
                if isinstance(sub, Composite):
                    child = node.get(name, None)
                    if child is not None:
                        found = visit(child, sub, (*path, name)) or found
                    continue
                value = _fast_get(node, name)
                if value is None:
                    continue
                aggregate = value if aggregate is None else aggregate | value
        if aggregate is not None:
            if key is not None:
                # a single leaf aggregates to itself: do not alias it
                node.set(key, aggregate.clone() if _is_leaf_of(node, aggregate) else aggregate)
                written.append((*path, key))
            found = _any(aggregate) or found
        return found

    any_end = visit(data, full_done_spec, ())
    if not any_end and not write_full_false:
        for k in written:
            data.del_(k if len(k) > 1 else k[0])
    return any_end


def _is_leaf_of(node: TensorDictBase, value: torch.Tensor) -> bool:
    return any(_fast_get(node, name) is value for name in _END_OF_TRAJ)


# ----------------------------------------------------------------------------- specs from data
def make_composite_from_td(
    data: TensorDictBase,
    *,
    unsqueeze_null_shapes: bool = True,
    dynamic_shape: bool = False,
) -> Composite:
    """Builds a :class:`~torchenv.specs.Composite` of ``Unbounded`` leaves matching ``data``.

    Args:
        data: the tensordict to describe.
        unsqueeze_null_shapes: give zero-dimensional entries the shape ``(1,)``.
        dynamic_shape: for a lazy stack of tensordicts with heterogeneous shapes, mark
            the dims that differ across the stack with ``-1``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"obs": torch.zeros(3, 4), "nested": {"x": torch.zeros(3)}}, [3])
        >>> spec = make_composite_from_td(td)
        >>> spec["obs"].shape, spec["nested", "x"].shape
        (torch.Size([3, 4]), torch.Size([3]))
    """
    specs = {}
    for name in data.keys():  # noqa: SIM118 - iterating a TensorDict walks its batch dim
        if dynamic_shape and isinstance(data, LazyStackedTensorDict):
            parts = [td.get(name) for td in data.tensordicts]
            first = parts[0]
            if is_tensor_collection(first):
                specs[name] = make_composite_from_td(
                    data.get(name),
                    unsqueeze_null_shapes=unsqueeze_null_shapes,
                    dynamic_shape=True,
                )
                continue
            shapes = [p.shape for p in parts]
            inner = [d if all(s[i] == d for s in shapes) else -1 for i, d in enumerate(first.shape)]
            stack_dim = data.stack_dim
            shape = [*inner[:stack_dim], len(parts), *inner[stack_dim:]]
            specs[name] = Unbounded(shape=shape, dtype=first.dtype, device=first.device)
            continue
        value = data.get(name)
        if is_tensor_collection(value):
            specs[name] = make_composite_from_td(
                value,
                unsqueeze_null_shapes=unsqueeze_null_shapes,
                dynamic_shape=dynamic_shape,
            )
        else:
            shape = value.shape
            if not shape and unsqueeze_null_shapes:
                shape = torch.Size([1])
            specs[name] = Unbounded(shape=shape, dtype=value.dtype, device=value.device)
    return Composite(specs, shape=data.batch_size, device=data.device)


# ----------------------------------------------------------------------------- random policy
class RandomPolicy:
    """A policy that writes a random sample of ``action_spec`` into the tensordict.

    Args:
        action_spec: a leaf spec (written under ``action_key``) or a Composite (all its
            leaves are sampled and written).
        action_key: where a leaf sample is written. Defaults to ``"action"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from torchenv.specs import Bounded
        >>> policy = RandomPolicy(Bounded(-1.0, 1.0, shape=(2,)))
        >>> policy(TensorDict())["action"].shape
        torch.Size([2])
    """

    def __init__(self, action_spec: TensorSpec, action_key: NestedKey = "action") -> None:
        self.action_spec = action_spec
        self.action_key = action_key

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        if isinstance(self.action_spec, Composite):
            return td.update(self.action_spec.rand())
        return td.set(self.action_key, self.action_spec.rand())
