"""Lazy stacks of specs that cannot be stacked densely: ``Stacked`` (leaves) and ``StackedComposite``.

They keep the stacked specs and present a shape where differing dims are ``-1``. ``StackedComposite``
is a :class:`Composite` whose entries are the stacks of its members' shared entries; ``rand``/``zero``
return a ``LazyStackedTensorDict``. Indexing an integer along the stack dim returns a member spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

from torchenv.specs._base import TensorSpec, _normalize_index
from torchenv.specs._composite import Composite
from torchenv.specs._errors import SpecShapeError
from torchenv.specs._utils import batch_shape, normalize_dim, to_size


def _stacked_shape(specs: Sequence[TensorSpec], dim: int) -> torch.Size:
    first = specs[0].shape
    shape = [s if all(sp.shape[i] == s for sp in specs) else -1 for i, s in enumerate(first)]
    shape.insert(dim, len(specs))
    return torch.Size(shape)


def _unbind_value(val: Any, dim: int, ndim: int) -> Sequence[Any]:
    """Splits ``val`` along the stack dim (``dim`` counted from the spec's first dim)."""
    if isinstance(val, (list, tuple)):
        return val
    if isinstance(val, LazyStackedTensorDict):
        offset = val.batch_dims - ndim
        if val.stack_dim == dim + offset:
            return val.tensordicts
        return val.unbind(dim + offset)
    if isinstance(val, torch.Tensor) and val.is_nested:
        return val.unbind(0)
    shape = val.batch_size if isinstance(val, TensorDictBase) else val.shape
    return val.unbind(dim + len(shape) - ndim)


class _LazyStack:
    """Shared behaviour of the two lazy stacks (kept in ``self._stacked`` along ``self.dim``)."""

    _stacked: list[Any]
    dim: int

    @property
    def stack_dim(self) -> int:
        return self.dim

    def _member_index(self, idx: Any) -> Any:
        idx = _normalize_index(idx, self.ndim)  # type: ignore[attr-defined]
        rest = [i for j, i in enumerate(idx) if j != self.dim]
        if len(idx) > self.dim and all(isinstance(i, slice) and i == slice(None) for i in rest):
            sel = idx[self.dim]
            if isinstance(sel, int):
                return self._stacked[sel]
            if isinstance(sel, slice):
                return type(self)(*self._stacked[sel], dim=self.dim)
        if len(idx) <= self.dim:
            inner = tuple(idx)
            return type(self)(*[s[inner] for s in self._stacked], dim=self.dim - _consumed(inner))
        raise IndexError(
            f"{type(self).__name__} can only be indexed along its stack dim {self.dim}, got {idx}"
        )

    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        d = normalize_dim(dim, self.ndim)  # type: ignore[attr-defined]
        if d != self.dim:
            raise SpecShapeError(
                f"{type(self).__name__} can only be unbound along its stack dim {self.dim}"
            )
        return tuple(self._stacked)

    def _expand_members(self, shape: Sequence[int]) -> Any:
        new_shape = to_size(shape if len(shape) != 1 or isinstance(shape[0], int) else shape[0])
        nd = self.ndim  # type: ignore[attr-defined]
        lead = list(new_shape[: len(new_shape) - nd])
        tail = list(new_shape[len(new_shape) - nd :])
        if tail[self.dim] not in (-1, len(self._stacked)):
            raise SpecShapeError(
                f"cannot expand {type(self).__name__} along its stack dim to {list(new_shape)}"
            )
        del tail[self.dim]
        members = []
        for spec in self._stacked:
            sub_tail = [s if s != -1 else own for s, own in zip(tail, spec.shape)]
            members.append(spec.expand(*lead, *sub_tail, *spec.shape[len(sub_tail) :]))
        return type(self)(*members, dim=self.dim + len(lead))

    def clear_device_(self) -> Any:
        for spec in self._stacked:
            spec.clear_device_()
        return self

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` splits along the stack dim into one value per member, each in its member."""
        if val is None:
            return False
        try:
            parts = _unbind_value(val, self.dim, self.ndim)  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError, IndexError):
            return False
        return len(parts) == len(self._stacked) and all(
            s.is_in(v) for s, v in zip(self._stacked, parts)
        )

    def to_numpy(self, val: Any, safe: bool | None = None) -> list:
        """One numpy value per member (``val`` split along the stack dim)."""
        parts = _unbind_value(val, self.dim, self.ndim)  # type: ignore[attr-defined]
        return [s.to_numpy(v, safe) for s, v in zip(self._stacked, parts)]

    def clone(self) -> Any:
        """A stack of clones of the members."""
        return type(self)(*[s.clone() for s in self._stacked], dim=self.dim)

    def to(self, dest: Any) -> Any:
        """The stack of the members moved to a device (or cast to a dtype)."""
        return type(self)(*[s.to(dest) for s in self._stacked], dim=self.dim)

    def _check_dim(self, dim: int, ndim: int, op: str) -> int:
        """``dim`` made non-negative; an IndexError naming the spec if out of ``[-ndim, ndim)``."""
        if not -ndim <= dim < ndim:
            raise IndexError(
                f"cannot {op} {self._short()} at dim {dim}: "  # type: ignore[attr-defined]
                f"expected a dim in [{-ndim}, {ndim - 1}]"
            )
        return dim + ndim if dim < 0 else dim

    def _free_member_dims(self) -> int:
        """How many leading dims of the members can be squeezed / unsqueezed (not protected)."""
        first = self._stacked[0]
        return first.ndim - getattr(first, "_protected_dims", 0)

    def squeeze(self, dim: int | None = None) -> Any:
        """Removes dims of size 1 (all of them, or ``dim``), as TorchRL's lazy stacks do.

        A dim other than the stack dim is squeezed in every member (the stack dim moves down
        when it came after it); squeezing the stack dim of a one-member stack returns that member.
        A dim that is not a singleton (or differs between members) is left as is.

        Raises:
            IndexError: ``dim`` is out of range.
            SpecShapeError: ``dim`` is a protected dim of the members (e.g. the one-hot dim).
        """
        if dim is None:
            out, free = self, self._free_member_dims()
            for d in reversed(range(self.ndim)):  # type: ignore[attr-defined]
                member_dim = d if d < self.dim else d - 1
                if self.shape[d] == 1 and (d == self.dim or member_dim < free):  # type: ignore[attr-defined]
                    out = out.squeeze(d)
            return out
        d = self._check_dim(dim, self.ndim, "squeeze")  # type: ignore[attr-defined]
        if self.shape[d] != 1:  # type: ignore[attr-defined]
            return self
        if d == self.dim:
            return self._stacked[0]
        member_dim = d if d < self.dim else d - 1
        if member_dim >= self._free_member_dims():
            raise SpecShapeError(
                f"cannot squeeze dim {dim} of {self._short()}: "  # type: ignore[attr-defined]
                "it is a protected dim of its members"
            )
        members = [s.squeeze(member_dim) for s in self._stacked]
        return torch.stack(members, self.dim if d > self.dim else self.dim - 1)

    def unsqueeze(self, dim: int) -> Any:
        """Inserts a dim of size 1 at ``dim`` in every member; the stack dim moves up when needed.

        Raises:
            IndexError: ``dim`` is out of range (``-ndim - 1 <= dim <= ndim``).
            SpecShapeError: ``dim`` falls within the protected dims of the members.
        """
        d = self._check_dim(dim, self.ndim + 1, "unsqueeze")  # type: ignore[attr-defined]
        member_dim, stack_dim = (d - 1, self.dim) if d > self.dim else (d, self.dim + 1)
        if member_dim > self._free_member_dims():
            raise SpecShapeError(
                f"cannot unsqueeze {self._short()} at dim {dim}: "  # type: ignore[attr-defined]
                "it falls within the protected dims of its members"
            )
        return torch.stack([s.unsqueeze(member_dim) for s in self._stacked], stack_dim)

    def reshape(self, *shape: Any) -> Any:
        """Reshapes the dims before and after the stack dim, which is kept as one dim.

        TorchRL does not reshape lazy stacks at all; this supports the reshapes that keep the
        stack dim whole: the dims before it and the dims after it are reshaped separately in
        every member. Dims whose size differs between members (``-1``) must be kept as they are.

        Raises:
            SpecShapeError: the new shape splits or merges the stack dim, changes a dim whose
                size differs between members, or does not keep the number of elements.
        """
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        target = [int(s) for s in shape]
        old = list(self.shape)  # type: ignore[attr-defined]
        if -1 not in old:  # dense sizes: resolve an inferred -1 as torch does
            try:
                target = list(torch.empty(old, device="meta").reshape(target).shape)
            except RuntimeError as err:
                raise SpecShapeError(f"cannot reshape {self._short()} to {target}: {err}") from err  # type: ignore[attr-defined]
        lead, tail = old[: self.dim], old[self.dim + 1 :]
        candidates = [self.dim] + [p for p in range(len(target)) if p != self.dim]
        for p in candidates:
            if p >= len(target) or target[p] != len(self._stacked):
                continue
            new_lead, new_tail = target[:p], target[p + 1 :]
            if _segment_fits(lead, new_lead) and _segment_fits(tail, new_tail):
                return self._reshape_members(new_lead, new_tail, p, target)
        raise SpecShapeError(
            f"cannot reshape {self._short()} to {target}: a lazy stack keeps its stack dim "  # type: ignore[attr-defined]
            f"{self.dim} (size {len(self._stacked)}) whole and can only reshape the dims before "
            "and after it separately, keeping the dims whose size differs between members (-1)"
        )

    def _reshape_members(self, new_lead: list, new_tail: list, p: int, target: list) -> Any:
        members = []
        for spec in self._stacked:
            own_lead, own_tail = list(spec.shape[: self.dim]), list(spec.shape[self.dim :])
            lead = own_lead if -1 in new_lead else new_lead
            tail = own_tail if -1 in new_tail else new_tail
            try:
                members.append(spec.reshape(*lead, *tail))
            except (SpecShapeError, RuntimeError) as err:
                raise SpecShapeError(
                    f"cannot reshape {self._short()} to {target}: {err}"  # type: ignore[attr-defined]
                ) from err
        return torch.stack(members, p)

    view = reshape

    def _same_members(self, other: Any) -> bool:
        """Whether ``other`` (a lazy stack) has the same stack dim and equal members."""
        return (
            self.dim == other.dim
            and len(self._stacked) == len(other._stacked)
            and all(a == b for a, b in zip(self._stacked, other._stacked))
        )


def _segment_fits(old: list[int], new: list[int]) -> bool:
    """Whether ``old`` dims can become ``new``: same numel, or kept as is where sizes differ."""
    if -1 in old or -1 in new:
        return old == new
    return torch.Size(old).numel() == torch.Size(new).numel()


def _consumed(idx: tuple) -> int:
    return sum(1 for i in idx if isinstance(i, int))


class Stacked(_LazyStack, TensorSpec):
    """A lazy stack of leaf specs of one type whose shapes differ (differing dims show as ``-1``).

    >>> import torch
    >>> from torchenv.specs import Unbounded
    >>> spec = torch.stack([Unbounded(shape=(2,)), Unbounded(shape=(3,))], 0)
    >>> spec.shape
    torch.Size([2, -1])
    >>> spec[1].shape
    torch.Size([3])
    """

    def __init__(self, *specs: TensorSpec, dim: int = 0) -> None:
        if not specs:
            raise ValueError("Stacked needs at least one spec.")
        self._stacked = list(specs)
        self.dim = normalize_dim(dim, specs[0].ndim + 1)
        self._set_shape(_stacked_shape(specs, self.dim))
        self.dtype = specs[0].dtype
        self.device = specs[0].device
        self.domain = specs[0].domain  # type: ignore[misc]

    @property
    def space(self) -> None:
        return None

    def __getitem__(self, idx: Any) -> TensorSpec:
        return self._member_index(idx)

    def _samples(self, fn: str, shape: Any, generator: torch.Generator | None = None) -> Any:
        bshape = batch_shape(shape)
        kwargs = {} if generator is None else {"generator": generator}
        samples = [getattr(s, fn)(bshape, **kwargs) for s in self._stacked]
        if all(t.shape == samples[0].shape for t in samples):
            return torch.stack(samples, self.dim + len(bshape))
        if self.dim + len(bshape) != 0:
            raise RuntimeError(
                "Stacked specs of different shapes can only be sampled along dim 0 (nested tensor)."
            )
        return torch.nested.nested_tensor(samples)

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        return self._samples("rand", shape, generator)

    def zero(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        return self._samples("zero", shape)

    def one(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        return self._samples("one", shape)

    def _explain(self, val: Any) -> str:
        parts = _unbind_value(val, self.dim, self.ndim)
        for i, (s, v) in enumerate(zip(self._stacked, parts)):
            if not s.is_in(v):
                return f"member {i}: {s._explain(v)}"
        return f"expected {len(self._stacked)} members along dim {self.dim}, got {len(parts)}"

    def _project(self, val: Any) -> Any:
        parts = _unbind_value(val, self.dim, self.ndim)
        return [s.project(v) for s, v in zip(self._stacked, parts)]

    def type_check(self, value: Any, key: Any = None) -> None:
        for s, v in zip(self._stacked, _unbind_value(value, self.dim, self.ndim)):
            s.type_check(v, key)

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        parts = [s.encode(v, ignore_device=ignore_device) for s, v in zip(self._stacked, val)]
        if all(p.shape == parts[0].shape for p in parts):
            return torch.stack(parts, self.dim)
        return torch.nested.nested_tensor(parts)

    def expand(self, *shape: Any) -> Stacked:
        return self._expand_members(shape)

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        return torch.stack([s.enumerate(use_mask) for s in self._stacked], self.dim + 1)

    def __len__(self) -> int:
        return len(self._stacked)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stacked) and self._same_members(other)

    __hash__ = None  # type: ignore[assignment]

    def _short(self) -> str:
        return f"Stacked(shape={list(self.shape)}, dim={self.dim}, n={len(self._stacked)})"

    def __repr__(self) -> str:
        members = ",\n".join(repr(s) for s in self._stacked).replace("\n", "\n        ")
        return f"Stacked(\n    specs=[\n        {members}],\n    dim={self.dim})".replace(
            "\n\n", "\n"
        )


class StackedComposite(_LazyStack, Composite):
    """A lazy stack of Composites (e.g. heterogeneous agents): its entries are the stacks of shared keys.

    >>> import torch
    >>> from torchenv.specs import Composite, Unbounded
    >>> a = Composite(obs=Unbounded(shape=(2,)))
    >>> b = Composite(obs=Unbounded(shape=(3,)), extra=Unbounded(shape=(1,)))
    >>> spec = torch.stack([a, b], 0)
    >>> type(spec).__name__, spec.shape, list(spec.keys())
    ('StackedComposite', torch.Size([2]), ['obs'])
    >>> spec.rand()[1]["extra"].shape
    torch.Size([1])
    """

    def __init__(self, *specs: Composite, dim: int = 0) -> None:
        if not specs:
            raise ValueError("StackedComposite needs at least one Composite.")
        first = specs[0]
        for spec in specs[1:]:
            if spec.ndim != first.ndim:
                raise SpecShapeError(
                    f"cannot stack Composites with different batch dims: {first.shape} and {spec.shape}"
                )
        self._stacked = list(specs)
        self.dim = normalize_dim(dim, first.ndim + 1)
        devices = {s.device for s in specs}
        Composite.__init__(
            self,
            shape=_stacked_shape(specs, self.dim),
            device=devices.pop() if len(devices) == 1 else None,
        )
        self._rebuild()

    def _rebuild(self) -> None:
        common = [
            k for k in self._stacked[0]._specs if all(k in s._specs for s in self._stacked[1:])
        ]
        entries = {}
        for key in common:
            values = [s._specs[key] for s in self._stacked]
            entries[key] = None if any(v is None for v in values) else torch.stack(values, self.dim)
        self._specs = entries

    # keys in some members only
    def exclusive_keys(self) -> list[list[str]]:
        """For each member, the top-level keys that not every member has."""
        return [[k for k in s._specs if k not in self._specs] for s in self._stacked]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) or (
            isinstance(key, tuple) and key and all(isinstance(k, str) for k in key)
        ):
            return Composite.__getitem__(self, key)
        return self._member_index(key)

    def set(self, name: Any, spec: TensorSpec | None) -> StackedComposite:
        self._check_unlocked("set an entry of")
        if spec is None:
            members = [None] * len(self._stacked)
        else:
            if spec.ndim <= self.dim or spec.shape[self.dim] not in (len(self._stacked), -1):
                raise SpecShapeError(
                    f"cannot set {name!r} on a StackedComposite of {len(self._stacked)} members: its dim "
                    f"{self.dim} must have that size, got shape {list(spec.shape)}"
                )
            members = list(spec.unbind(self.dim))
        for member, value in zip(self._stacked, members):
            was_locked = member.is_locked
            member.unlock_()
            member.set(name, value)
            if was_locked:
                member.lock_()
        self._rebuild()
        return self

    def __delitem__(self, key: Any) -> None:
        self._check_unlocked("delete an entry of")
        for member in self._stacked:
            member.unlock_()
            del member[key]
        self._rebuild()

    def lock_(self, recurse: bool = True) -> StackedComposite:
        Composite.lock_(self, recurse)
        for member in self._stacked:
            member.lock_(recurse)
        return self

    def unlock_(self, recurse: bool = True) -> StackedComposite:
        Composite.unlock_(self, recurse)
        for member in self._stacked:
            member.unlock_(recurse)
        return self

    def _build(
        self, fn_name: str, shape: Any, generator: torch.Generator | None = None
    ) -> TensorDictBase:
        bshape = batch_shape(shape)
        kwargs = {} if generator is None else {"generator": generator}
        tds = [getattr(s, fn_name)(bshape, **kwargs) for s in self._stacked]
        return LazyStackedTensorDict(*tds, stack_dim=self.dim + len(bshape))

    def _first_mismatch(self, val: Any, prefix: tuple = ()) -> Any:
        for s, v in zip(self._stacked, _unbind_value(val, self.dim, self.ndim)):
            found = s._first_mismatch(v, prefix)
            if found is not None:
                return found
        return None

    def project(self, val: TensorDictBase) -> TensorDictBase:
        parts = _unbind_value(val, self.dim, self.ndim)
        for s, v in zip(self._stacked, parts):
            s.project(v)
        return val

    def encode(self, vals: Any, *, ignore_device: bool = False) -> TensorDictBase:
        tds = [s.encode(v, ignore_device=ignore_device) for s, v in zip(self._stacked, vals)]
        return LazyStackedTensorDict(*tds, stack_dim=self.dim)

    def type_check(self, value: Any, selected_keys: Any = None) -> None:
        for s, v in zip(self._stacked, _unbind_value(value, self.dim, self.ndim)):
            s.type_check(v, selected_keys)

    def expand(self, *shape: Any) -> StackedComposite:
        return self._expand_members(shape)

    def empty(self) -> StackedComposite:
        return StackedComposite(*[s.empty() for s in self._stacked], dim=self.dim)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StackedComposite) and self._same_members(other)

    __hash__ = None  # type: ignore[assignment]

    def _short(self) -> str:
        return (
            f"StackedComposite(keys={list(self._specs)}, shape={list(self.shape)}, "
            f"dim={self.dim}, n={len(self._stacked)})"
        )

    def __repr__(self) -> str:
        shared = ",\n".join(f"{k}: {v!r}" for k, v in self._specs.items())
        exclusive = ",\n".join(
            f"{i} ->\n    "
            + ",\n".join(f"{k}: {s._specs[k]!r}" for k in keys).replace("\n", "\n    ")
            for i, (s, keys) in enumerate(zip(self._stacked, self.exclusive_keys()))
            if keys
        )
        shared = shared.replace("\n", "\n    ")
        exclusive = exclusive.replace("\n", "\n    ")
        body = (
            f"fields={{\n    {shared}}},\nexclusive_fields={{\n    {exclusive}}},\n"
            f"device={self._device},\nshape={self.shape},\nstack_dim={self.dim}"
        ).replace("\n", "\n    ")
        return f"StackedComposite(\n    {body})"
