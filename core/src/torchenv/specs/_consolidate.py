"""Helpers for lazy stacks of Composites whose members have different keys (``torchrl.data.utils``).

A :class:`~torchenv.specs.StackedComposite` of heterogeneous agents only exposes the keys that all
its members share; the others are *exclusive*. :func:`consolidate_spec` gives every member every
key, filling the missing ones with empty (0-sized) specs, so that the stack can be used where a
complete set of keys is needed (e.g. ``check_env_specs``, dense buffers).
"""

from __future__ import annotations

from typing import Any

from torchenv.specs._base import TensorSpec
from torchenv.specs._composite import Composite
from torchenv.specs._stacked import Stacked, StackedComposite

__all__ = ["check_no_exclusive_keys", "consolidate_spec", "contains_lazy_spec"]


def consolidate_spec(
    spec: Any,
    recurse_through_entries: bool = True,
    recurse_through_stack: bool = True,
) -> Any:
    """A copy of ``spec`` whose lazy stacks have no exclusive keys (missing ones get empty specs).

    A key that only some members of a :class:`StackedComposite` have is added to the others: a
    Composite entry as an empty Composite; a leaf as a spec of the same class whose non-batch
    dims are 0 (or, where the members' shapes differ, 0 in the dims that differ).

    Args:
        spec: the spec; anything but a Composite comes back as a clone.
        recurse_through_entries: also consolidate the Composite entries of ``spec``.
        recurse_through_stack: also consolidate each member of a lazy stack first.

    Returns:
        The consolidated copy (``spec`` itself is left unchanged).

    Raises:
        ValueError: if members hold the same exclusive key with specs of different classes.

    >>> import torch
    >>> from torchenv.specs import Composite, Unbounded
    >>> a = Composite(obs=Unbounded(shape=(2,)))
    >>> b = Composite(obs=Unbounded(shape=(2,)), extra=Unbounded(shape=(3,)))
    >>> spec = torch.stack([a, b], 0)
    >>> check_no_exclusive_keys(spec)
    False
    >>> full = consolidate_spec(spec)
    >>> sorted(full.keys()), full[0]["extra"].shape
    (['extra', 'obs'], torch.Size([0]))
    """
    spec = spec.clone()
    if not isinstance(spec, Composite):
        return spec
    if isinstance(spec, StackedComposite):
        _fill_exclusive_keys(spec, recurse_through_entries, recurse_through_stack)
    if recurse_through_entries:
        for key, value in list(spec.items()):
            if isinstance(value, Composite):
                spec.set(
                    key, consolidate_spec(value, recurse_through_entries, recurse_through_stack)
                )
    return spec


def _fill_exclusive_keys(spec: StackedComposite, entries: bool, stack: bool) -> None:
    members = spec._stacked
    if stack:
        members[:] = [consolidate_spec(m, entries, stack) for m in members]
    shared = set(spec._specs)
    examples: dict[str, list[Any]] = {}
    for member in members:
        for key, value in member._specs.items():
            if key not in shared:
                examples.setdefault(key, []).append(value)
    for member in members:
        missing = [key for key in examples if key not in member._specs]
        if not missing:
            continue
        was_locked = member.is_locked
        member.unlock_()
        for key in missing:
            member.set(key, _empty_like(examples[key], member.shape))
        if was_locked:
            member.lock_()
    spec._rebuild()


def _empty_like(specs: list[Any], shape: Any) -> Any:
    """An empty stand-in for an exclusive key, built from the members that have it."""
    first = specs[0]
    for other in specs[1:]:
        if type(other) is not type(first):
            raise ValueError(
                "Found same key in lazy specs corresponding to entries with different classes: "
                f"{type(first).__name__} and {type(other).__name__}"
            )
    if first is None:
        return None
    if isinstance(first, Composite):
        return first.empty()
    if isinstance(first, Stacked):
        inner = list(shape[: first.dim]) + list(shape[first.dim + 1 :])
        return Stacked(*[_empty_like(first._stacked, inner) for _ in first._stacked], dim=first.dim)
    new_shape = [
        0 if any(s.shape[i] != size for s in specs) else size for i, size in enumerate(first.shape)
    ]
    if 0 not in new_shape:  # same shapes everywhere: keep the batch dims, empty the rest
        new_shape = [size if i < len(shape) else 0 for i, size in enumerate(new_shape)]
    free = first.ndim - first._protected_dims
    return first[(0,) * free].expand(new_shape)


def check_no_exclusive_keys(spec: TensorSpec, recurse: bool = True) -> bool:
    """Whether no lazy stack in ``spec`` has keys that only some of its members hold.

    Args:
        spec: any spec; leaves have no exclusive keys.
        recurse: also look inside the entries of Composites and the members of stacks.

    Returns:
        ``False`` if a :class:`StackedComposite` (at the top, or below with ``recurse``) has
        members with different keys.

    >>> import torch
    >>> from torchenv.specs import Composite, Unbounded
    >>> a, b = Composite(x=Unbounded(1)), Composite(x=Unbounded(1), y=Unbounded(1))
    >>> check_no_exclusive_keys(torch.stack([a, b])), check_no_exclusive_keys(a)
    (False, True)
    """
    if isinstance(spec, StackedComposite):
        keys = set(spec.keys())
        for member in spec._stacked:
            if recurse and not check_no_exclusive_keys(member):
                return False
            if set(member.keys()) != keys:
                return False
    elif isinstance(spec, Composite) and recurse:
        return all(check_no_exclusive_keys(value) for value in spec.values())
    return True


def contains_lazy_spec(spec: TensorSpec) -> bool:
    """Whether ``spec`` is, or holds anywhere below, a lazy stack (``Stacked``/``StackedComposite``).

    >>> import torch
    >>> from torchenv.specs import Composite, Unbounded
    >>> contains_lazy_spec(Composite(a=torch.stack([Unbounded(2), Unbounded(3)])))
    True
    """
    if isinstance(spec, (Stacked, StackedComposite)):
        return True
    if isinstance(spec, Composite):
        return any(contains_lazy_spec(value) for value in spec.values() if value is not None)
    return False
