"""Argument checks of the spec constructors: nonsense is refused with the argument's name.

TorchRL 0.14.1 accepts ``Categorical(n=-1)``, ``Binary(n=-1)``, ``MultiCategorical([2.5, 3])``
(truncated to 2) or ``Bounded(low=1e40, high=nan)``, and fails later, or answers a wrong
``is_in``; torch's own errors ("Attempting to broadcast a dimension of length 2") do not say
which argument was wrong. Here each constructor checks its arguments once, at construction:

* ``shape``: ints (Python, numpy or 0-d integer tensors, not bools), each ``>= 0`` or ``-1``
  (a dynamic dim);
* ``n`` / ``nvec``: positive whole numbers;
* ``dtype``: a ``torch.dtype`` or the name of one (``"float32"``);
* ``device``: anything ``torch.device`` accepts;
* ``low`` / ``high``: numbers or tensors, no NaN, whole numbers within the dtype's range for
  an integer dtype, broadcastable to the shape, ``low <= high``.

Every error is a :class:`~torchenv.specs.SpecArgumentError` (a ``ValueError``) or a
``TypeError`` whose message starts with ``"<Class>: <argument>"``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import torch

from torchenv.specs._errors import SpecArgumentError

__all__ = [
    "as_count",
    "as_device",
    "as_dtype",
    "as_shape",
    "check_bounds",
    "check_categories_fit",
]


def _index(value: Any) -> int:
    """``value`` as an int when it is an integer (not a bool), else ``TypeError``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("a bool")
    if isinstance(value, torch.Tensor):
        if value.ndim or value.dtype.is_floating_point or value.dtype.is_complex:
            raise TypeError("not a 0-d integer tensor")
        if value.dtype is torch.bool:
            raise TypeError("a bool")
        return int(value)
    return operator.index(value)


def as_count(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum``; else an error naming ``owner`` and ``name``.

    Examples:
        >>> as_count("Categorical", "n", 3)
        3
        >>> as_count("Categorical", "n", -1)
        Traceback (most recent call last):
        ...
        torchenv.specs._errors.SpecArgumentError: Categorical: n must be an int >= 1; got -1.
    """
    try:
        out = _index(value)
    except TypeError:
        raise TypeError(
            f"{owner}: {name} must be an int >= {minimum}; got {value!r} ({type(value).__name__})."
        ) from None
    if out < minimum:
        raise SpecArgumentError(f"{owner}: {name} must be an int >= {minimum}; got {value!r}.")
    return out


def as_shape(owner: str, shape: Any, name: str = "shape", default: Any = ()) -> torch.Size:
    """``shape`` (an int, a sequence of ints or a ``torch.Size``) as a ``torch.Size``.

    Dims must be ``>= 0``, or ``-1`` for a dynamic dim.

    Examples:
        >>> as_shape("Unbounded", (2, -1))
        torch.Size([2, -1])
        >>> as_shape("Unbounded", (2.5,))
        Traceback (most recent call last):
        ...
        TypeError: Unbounded: shape must be a sequence of ints (>= 0, or -1 for a dynamic dim); got (2.5,).
    """
    if shape is None:
        return torch.Size(default)
    if isinstance(shape, torch.Size):
        dims = list(shape)
    elif isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        dims = [int(shape)]
    else:
        if isinstance(shape, torch.Tensor):
            shape = shape.tolist() if shape.ndim == 1 else shape
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise TypeError(
                f"{owner}: {name} must be a sequence of ints (>= 0, or -1 for a dynamic dim); "
                f"got {shape!r} ({type(shape).__name__})."
            )
        try:
            dims = [_index(d) for d in shape]
        except TypeError:
            raise TypeError(
                f"{owner}: {name} must be a sequence of ints (>= 0, or -1 for a dynamic dim); "
                f"got {shape!r}."
            ) from None
    if any(d < -1 for d in dims):
        raise SpecArgumentError(
            f"{owner}: {name} dims must be >= 0, or -1 for a dynamic dim; got {tuple(dims)}."
        )
    return torch.Size(dims)


def as_dtype(owner: str, dtype: Any) -> torch.dtype:
    """``dtype`` (a ``torch.dtype`` or its name) as a ``torch.dtype``.

    Examples:
        >>> as_dtype("Unbounded", "float64")
        torch.float64
    """
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        found = getattr(torch, dtype.removeprefix("torch."), None)
        if isinstance(found, torch.dtype):
            return found
    raise TypeError(f"{owner}: dtype must be a torch.dtype (or its name); got {dtype!r}.")


def as_device(owner: str, device: Any) -> torch.device:
    """``device`` as a ``torch.device``; an error naming the argument when torch refuses it.

    Examples:
        >>> as_device("Unbounded", "cpu")
        device(type='cpu')
    """
    if isinstance(device, torch.device):
        return device
    if isinstance(device, (bool, float)) or not isinstance(device, (str, int)):
        raise TypeError(f"{owner}: device must be a torch.device, a str or an int; got {device!r}.")
    try:
        return torch.device(device)
    except (RuntimeError, ValueError, TypeError) as err:
        raise SpecArgumentError(f"{owner}: device {device!r} is not a device ({err}).") from None


def check_categories_fit(owner: str, n: int, dtype: torch.dtype) -> None:
    """Refuse ``n`` categories (values ``0 .. n - 1``) that ``dtype`` cannot hold.

    Examples:
        >>> check_categories_fit("Categorical", 2, torch.bool)
        >>> check_categories_fit("Categorical", 300, torch.int8)
        Traceback (most recent call last):
        ...
        torchenv.specs._errors.SpecArgumentError: Categorical: n=300 categories (values 0 to 299) do not fit in dtype torch.int8 (max 127).
    """
    if dtype is torch.bool:
        top = 1
    elif dtype.is_floating_point or dtype.is_complex:
        return
    else:
        top = torch.iinfo(dtype).max
    if n - 1 > top:
        raise SpecArgumentError(
            f"{owner}: n={n} categories (values 0 to {n - 1}) do not fit in dtype {dtype} "
            f"(max {top})."
        )


def check_bounds(owner: str, name: str, value: Any, dtype: torch.dtype, device) -> torch.Tensor:
    """A ``low`` / ``high`` bound as a tensor of ``dtype``; no NaN, and for integer dtypes whole
    numbers within the dtype's range (``±inf`` is fine for floating dtypes).

    Examples:
        >>> check_bounds("Bounded", "low", -1, torch.float32, "cpu")
        tensor(-1.)
        >>> check_bounds("Bounded", "high", float("nan"), torch.float32, "cpu")
        Traceback (most recent call last):
        ...
        torchenv.specs._errors.SpecArgumentError: Bounded: high must not be NaN; got nan.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{owner}: {name} must be a number or a tensor; got {value!r}.")
    try:
        raw = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"{owner}: {name} must be a number or a tensor; got {value!r} ({err})."
        ) from None
    if (
        raw.dtype.is_complex
        or raw.dtype is torch.bool
        or not raw.dtype.is_floating_point
        and (raw.dtype not in _INT_DTYPES)
    ):
        raise TypeError(f"{owner}: {name} must hold real numbers; got dtype {raw.dtype}.")
    if raw.dtype.is_floating_point and bool(raw.isnan().any()):
        raise SpecArgumentError(f"{owner}: {name} must not be NaN; got {value!r}.")
    if not (dtype.is_floating_point or dtype.is_complex) and dtype is not torch.bool:
        info = torch.iinfo(dtype)
        if raw.numel():
            if raw.dtype.is_floating_point and not bool((raw == raw.trunc()).all()):
                raise SpecArgumentError(
                    f"{owner}: {name} must hold whole numbers (finite, within [{info.min}, "
                    f"{info.max}]) for dtype {dtype}; got {value!r}."
                )
            low, high = raw.min().item(), raw.max().item()
            if low < info.min or high > info.max:
                raise SpecArgumentError(
                    f"{owner}: {name} must lie within [{info.min}, {info.max}] for dtype "
                    f"{dtype}; got {value!r}."
                )
    return raw.to(dtype=dtype, device=device)


_INT_DTYPES = {
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint16,
    torch.uint32,
    torch.uint64,
}
