"""Small helpers shared by every spec: shape normalisation, shape matching, dtype defaults."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

ShapeLike = int | Sequence[int] | torch.Size | None
DeviceLike = torch.device | str | int | None
NestedKey = str | tuple[str, ...]


def to_size(shape: ShapeLike, default: Sequence[int] = ()) -> torch.Size:
    """Normalises ``shape`` (int, sequence, Size or None) to a :class:`torch.Size`."""
    if shape is None:
        return torch.Size(default)
    if isinstance(shape, torch.Size):
        return shape
    if isinstance(shape, int):
        return torch.Size((shape,))
    if isinstance(shape, torch.Tensor):
        return torch.Size(shape.tolist())
    return torch.Size([int(s) for s in shape])


def batch_shape(shape: Any) -> tuple[int, ...]:
    """Normalises the ``shape`` argument of ``rand``/``zero`` into a tuple."""
    if shape is None:
        return ()
    if isinstance(shape, int):
        return (shape,)
    return tuple(shape)


def copy_if_negative_strides(val: Any) -> Any:
    """Copies a numpy array with negative strides (``torch.as_tensor`` rejects them).

    Args:
        val: any value about to be passed to ``torch.as_tensor``.

    Returns:
        A contiguous copy of ``val`` if it is such an array, else ``val`` itself.

    >>> import numpy as np
    >>> copy_if_negative_strides(np.arange(3)[::-1]).strides[0] > 0
    True
    """
    if isinstance(val, np.ndarray) and any(s < 0 for s in val.strides):
        return val.copy()
    return val


def safe_shape(shape: torch.Size) -> tuple[int, ...]:
    """The shape with dynamic dims (``-1``) replaced by ``1``: what rand/zero produce."""
    return tuple(1 if s < 0 else s for s in shape)


def to_device(device: DeviceLike) -> torch.device | None:
    """Normalises a device; ``"cuda"`` becomes ``cuda:0`` so that equality is stable."""
    if device is None:
        return None
    device = torch.device(device)
    if device.type != "cpu" and device.index is None and device.type in ("cuda", "mps", "xpu"):
        try:
            index = getattr(torch, device.type).current_device()
        except Exception:  # backend not available: keep the plain device
            return device
        return torch.device(device.type, index)
    return device


def trailing_match(spec_shape: torch.Size, val_shape: torch.Size) -> bool:
    """Whether ``val_shape`` ends with ``spec_shape`` (a ``-1`` in the spec matches any size)."""
    n = len(spec_shape)
    if len(val_shape) < n:
        return False
    tail = val_shape[len(val_shape) - n :]
    if tail == spec_shape:
        return True
    return all(s == v or s == -1 for s, v in zip(spec_shape, tail))


def prefix_match(prefix: torch.Size, shape: torch.Size) -> bool:
    """Whether ``shape`` starts with ``prefix`` (``-1`` on either side matches any size)."""
    n = len(prefix)
    if len(shape) < n:
        return False
    head = shape[:n]
    if head == prefix:
        return True
    return all(p == s or p == -1 or s == -1 for p, s in zip(prefix, head))


def default_float() -> torch.dtype:
    return torch.get_default_dtype()


def is_float_dtype(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def key_str(key: Any) -> str:
    """Readable form of a (nested) key for error messages."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    return repr(key)


def unravel_key(key: Any) -> NestedKey:
    """Flattens nested tuple keys: ``("a", ("b", "c"))`` -> ``("a", "b", "c")``; ``("a",)`` -> ``"a"``."""
    if isinstance(key, str):
        return key
    if not isinstance(key, tuple):
        raise TypeError(
            f"Expected a string or a tuple of strings as key, got {type(key).__name__}: {key!r}."
        )
    out: list[str] = []
    for sub in key:
        sub = unravel_key(sub)
        if isinstance(sub, str):
            out.append(sub)
        else:
            out.extend(sub)
    if len(out) == 1:
        return out[0]
    return tuple(out)


def normalize_dim(dim: int, ndim: int, name: str = "dim") -> int:
    """``dim`` as a non-negative dim of a ``ndim``-dims shape.

    Raises:
        SpecIndexError: (an ``IndexError`` and a ``ValueError``) if ``dim`` is out of range.
    """
    out = dim + ndim if dim < 0 else dim
    if not 0 <= out < ndim:
        from torchenv.specs._errors import SpecIndexError

        raise SpecIndexError(
            f"{name} out of range: expected a value in [{-ndim}, {ndim - 1}], got {dim}."
        )
    return out
