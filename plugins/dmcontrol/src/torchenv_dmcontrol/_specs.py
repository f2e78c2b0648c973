"""dm_env specs → torchenv specs, duck-typed on the spec classes (``dm_env`` is not imported).

* ``DiscreteArray`` → :class:`~torchenv.specs.OneHot` (or ``Categorical`` when asked);
* ``BoundedArray`` → :class:`~torchenv.specs.Bounded`;
* ``Array`` → :class:`~torchenv.specs.Unbounded`;
* a mapping (dm_control's ``OrderedDict`` observations) → :class:`~torchenv.specs.Composite`,
  nested mappings as nested keys.

Scalars (shape ``()``) become shape ``(1,)``, as in TorchRL; dtypes are kept (float64 stays
float64: add a ``DoubleToFloat`` transform for float32).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from torchenv.spaces import numpy_to_torch_dtype
from torchenv.specs import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded

__all__ = ["dm_spec_to_spec"]


def _shape(spec: Any) -> tuple[int, ...]:
    return tuple(spec.shape) or (1,)


def _kind(spec: Any) -> str:
    names = {klass.__name__ for klass in type(spec).__mro__}
    for name in ("DiscreteArray", "BoundedArray", "Array"):
        if name in names:
            return name
    raise TypeError(
        f"cannot convert {type(spec).__name__} to a torchenv spec: expected a dm_env "
        "Array, BoundedArray, DiscreteArray or a mapping of them"
    )


def dm_spec_to_spec(
    spec: Any,
    dtype: torch.dtype | None = None,
    device: Any = None,
    categorical_discrete_encoding: bool = False,
) -> TensorSpec:
    """Convert a dm_env spec (or a mapping of them) to a torchenv spec.

    Args:
        spec: a ``dm_env.specs`` array spec, or a mapping of them (observations).
        dtype: force this dtype (default: the spec's own).
        device: device of the spec.
        categorical_discrete_encoding: ``DiscreteArray`` as ``Categorical`` instead of ``OneHot``.

    >>> from dm_env import specs
    >>> dm_spec_to_spec(specs.BoundedArray((2,), np.float64, -1.0, 1.0)).dtype
    torch.float64
    >>> obs = {"position": specs.Array((8,), np.float64), "height": specs.Array((), np.float64)}
    >>> dm_spec_to_spec(obs)["height"].shape
    torch.Size([1])
    """
    if isinstance(spec, Mapping):
        leaves = {
            key: dm_spec_to_spec(value, dtype, device, categorical_discrete_encoding)
            for key, value in spec.items()
        }
        return Composite(leaves, shape=(), device=device)
    kind = _kind(spec)
    if kind == "DiscreteArray":
        if categorical_discrete_encoding:
            return Categorical(
                int(spec.num_values),
                shape=tuple(spec.shape),
                dtype=dtype or numpy_to_torch_dtype(spec.dtype),
                device=device,
            )
        return OneHot(int(spec.num_values), dtype=dtype or torch.long, device=device)
    dtype = dtype or numpy_to_torch_dtype(np.dtype(spec.dtype))
    if kind == "BoundedArray":
        shape = _shape(spec)
        low = np.broadcast_to(np.asarray(spec.minimum), spec.shape).reshape(shape)
        high = np.broadcast_to(np.asarray(spec.maximum), spec.shape).reshape(shape)
        return Bounded(
            low=torch.as_tensor(low.astype(np.float64), dtype=dtype),
            high=torch.as_tensor(high.astype(np.float64), dtype=dtype),
            shape=shape,
            dtype=dtype,
            device=device,
        )
    return Unbounded(shape=_shape(spec), dtype=dtype, device=device)
