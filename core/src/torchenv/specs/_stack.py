"""``torch.stack`` (and a few other torch functions) on specs.

Stacking specs of the same type, dtype, device and shape gives a dense spec with a new dim (the
shape-following tensors, e.g. bounds and masks, are stacked). Leaf specs whose shapes differ give a lazy
:class:`~torchenv.specs.Stacked`; Composites whose keys or entries cannot be stacked densely give a
:class:`~torchenv.specs.StackedComposite` (the multi-agent case with heterogeneous agents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchenv.specs._base import TensorSpec
from torchenv.specs._choice import Choice
from torchenv.specs._errors import SpecShapeError, SpecStackError
from torchenv.specs._utils import normalize_dim


def _common_device(specs: Sequence[TensorSpec]) -> Any:
    devices = {s.device for s in specs}
    if len(devices) == 1:
        return devices.pop()
    devices.discard(None)
    return devices.pop() if len(devices) == 1 else None


def _stack_leaves(specs: Sequence[TensorSpec], dim: int) -> TensorSpec:
    from torchenv.specs._stacked import Stacked

    first = specs[0]
    for spec in specs[1:]:
        if type(spec) is not type(first):
            raise SpecStackError(
                "Stacking specs cannot occur: Found more than one type of specs in the list "
                f"(different types: {type(first).__name__} and {type(spec).__name__})."
            )
        if spec.dtype != first.dtype:
            raise SpecStackError(
                f"cannot stack specs: Dtypes differ (different dtypes: {first.dtype} and {spec.dtype})"
            )
        if spec.device != first.device:
            raise SpecShapeError(
                f"cannot stack specs on different devices: {first.device} and {spec.device}"
            )
        if spec.ndim != first.ndim:
            raise SpecStackError(
                f"cannot stack specs: Ndims differ (different ndims: {first.shape} and {spec.shape})"
            )
    d = normalize_dim(dim, first.ndim + 1)
    if d > first.ndim - first._protected_dims:
        raise SpecShapeError(
            f"cannot stack {type(first).__name__} specs along their protected last dim"
        )
    same_shape = all(s.shape == first.shape for s in specs)
    same_meta = all(getattr(s, a) == getattr(first, a) for s in specs for a in first._meta_attrs)
    if not (same_shape and same_meta):
        return Stacked(*specs, dim=d)
    new = first._copy()
    for name, _extra in first._tensor_attrs.items():
        values = [getattr(s, name) for s in specs]
        if all(v is None for v in values):
            continue
        ref = next(v for v in values if v is not None)
        values = [torch.ones_like(ref) if v is None else v for v in values]
        new._set_tensor(name, torch.stack(values, d))
    shape = list(first.shape)
    shape.insert(d, len(specs))
    new._set_shape(torch.Size(shape))
    new._refresh()
    return new


def _stack_composites(specs: Sequence[Any], dim: int) -> Any:
    from torchenv.specs._composite import Composite
    from torchenv.specs._stacked import Stacked, StackedComposite

    first = specs[0]
    for spec in specs:
        if not isinstance(spec, Composite):
            raise SpecShapeError(f"cannot stack a Composite with a {type(spec).__name__}")
    d = normalize_dim(dim, first.ndim + 1)
    lazy = any(type(s) is not Composite for s in specs)
    lazy = lazy or any(s.shape != first.shape for s in specs)
    lazy = lazy or any(list(s._specs) != list(first._specs) for s in specs)
    if not lazy:
        entries = {}
        for key in first._specs:
            values = [s._specs[key] for s in specs]
            if any(v is None for v in values):
                if all(v is None for v in values):
                    entries[key] = None
                    continue
                lazy = True
                break
            stacked = torch.stack(values, d)
            if isinstance(stacked, (Stacked, StackedComposite)):
                lazy = True
                break
            entries[key] = stacked
    if lazy:
        return StackedComposite(*specs, dim=d)
    shape = list(first.shape)
    shape.insert(d, len(specs))
    out = Composite(shape=shape, device=_common_device(specs), data_cls=first.data_cls)
    out._specs.update(entries)
    names = first._names
    if names is not None and all(spec == first for spec in specs[1:]):
        # TorchRL stacks equal Composites (names aside) as first.unsqueeze(d).expand(...): the
        # first one's names, the new dim unnamed; other stacks are unnamed
        out._set_names([*names[:d], None, *names[d:]])
    return out


def stack_specs(specs: Sequence[TensorSpec], dim: int = 0, *, out: Any = None) -> TensorSpec:
    """Stacks specs along a new dim ``dim`` (what ``torch.stack(specs, dim)`` calls).

    >>> import torch
    >>> from torchenv.specs import Bounded
    >>> spec = torch.stack([Bounded(0, 1, shape=(2,)), Bounded(0, 2, shape=(2,))], 0)
    >>> spec.shape, spec.high[:, 0].tolist()
    (torch.Size([2, 2]), [1.0, 2.0])
    """
    from torchenv.specs._composite import Composite

    if out is not None:
        raise NotImplementedError("torch.stack(specs, out=...) is not supported for specs.")
    specs = list(specs)
    if not specs:
        raise ValueError("Cannot stack an empty list of specs.")
    if isinstance(specs[0], Composite):
        return _stack_composites(specs, dim)
    if isinstance(specs[0], Choice):
        return _stack_choices(specs, dim)
    return _stack_leaves(specs, dim)


def _stack_choices(specs: Sequence[Any], dim: int) -> TensorSpec:
    """Equal Choices stack into one Choice with a new dim; others into a lazy ``Stacked``."""
    from torchenv.specs._stacked import Stacked

    first = specs[0]
    d = normalize_dim(dim, first.ndim + 1)
    if all(spec == first for spec in specs[1:]):
        shape = list(first.shape)
        shape.insert(d, len(specs))
        return first.unsqueeze(d).expand(shape)
    return Stacked(*specs, dim=d)


def _squeeze(spec: TensorSpec, dim: int | None = None) -> TensorSpec:
    return spec.squeeze(dim)


def _unsqueeze(spec: TensorSpec, dim: int) -> TensorSpec:
    return spec.unsqueeze(dim)


def _unbind(spec: TensorSpec, dim: int = 0) -> tuple[TensorSpec, ...]:
    return spec.unbind(dim)


_DOMAIN_LAST_DIM = ("OneHot", "MultiOneHot", "Binary")


def index_select_spec(input: TensorSpec, dim: int, index: torch.Tensor) -> TensorSpec:
    """The spec of ``torch.index_select(value, dim, index)`` for a value of ``input``.

    Args:
        input: the spec (a leaf spec or a Composite).
        dim: the dim to select along (negative dims count from the end).
        index: the indices to keep (a 0-d or 1-d integer tensor).

    Returns:
        A spec of the same class whose ``dim`` has ``index.numel()`` entries; the shape-following
        tensors (bounds, masks, ``nvec``) are selected too.

    Raises:
        IndexError: if an index is negative or not below ``input.shape[dim]``.
        ValueError: if ``dim`` is the last dim of a OneHot, MultiOneHot or Binary spec (their
            domain).
        NotImplementedError: for a lazy ``Stacked`` spec.

    >>> import torch
    >>> from torchenv.specs import Bounded
    >>> spec = Bounded(torch.arange(4.0), 10.0, shape=(4,))
    >>> torch.index_select(spec, 0, torch.tensor([0, 2])).low
    tensor([0., 2.])
    """
    from torchenv.specs._composite import Composite
    from torchenv.specs._stacked import Stacked, StackedComposite

    ndim = len(input.shape)
    d = normalize_dim(dim, ndim)
    index = torch.as_tensor(index).reshape(-1)
    if index.numel() and (bool((index < 0).any()) or bool((index >= input.shape[d]).any())):
        raise IndexError(
            f"index {index} is out of bounds for dimension {d} with size {input.shape[d]}"
        )
    if isinstance(input, (Stacked, StackedComposite)):
        raise NotImplementedError(
            f"index_select is not supported for {type(input).__name__} specs. Consider building "
            "a dense spec first (torch.stack of identical specs gives one)."
        )
    if isinstance(input, Composite):
        shape = list(input.shape)
        shape[d] = index.numel()
        entries = {
            key: None if value is None else index_select_spec(value, d, index)
            for key, value in input._specs.items()
        }
        return Composite(entries, shape=shape, device=input.device, data_cls=input.data_cls)
    last = d == ndim - 1
    if last and any(cls.__name__ in _DOMAIN_LAST_DIM for cls in type(input).__mro__[:2]):
        raise ValueError(
            f"Cannot index_select along the last dimension of {type(input).__name__} spec, as it "
            "represents the domain."
        )
    if last and input._protected_dims:  # MultiCategorical: pick variables
        return _select_variables(input, index)
    return input[(slice(None),) * d + (index,)]


def _select_variables(spec: Any, index: torch.Tensor) -> TensorSpec:
    """A MultiCategorical that keeps the variables ``index`` (its last dim)."""
    nvec = spec.nvec.index_select(-1, index.to(spec.nvec.device))
    mask = spec.mask
    if mask is not None:
        starts = [0, *torch.tensor(spec._row).cumsum(0).tolist()]
        cols = [c for i in index.tolist() for c in range(starts[i], starts[i + 1])]
        mask = mask[..., cols]
    shape = (*spec.shape[:-1], index.numel())
    return type(spec)(nvec, shape=shape, device=spec.device, dtype=spec.dtype, mask=mask)


SPEC_TORCH_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    torch.stack: stack_specs,
    torch.index_select: index_select_spec,
    torch.squeeze: _squeeze,
    torch.unsqueeze: _unsqueeze,
    torch.unbind: _unbind,
}
