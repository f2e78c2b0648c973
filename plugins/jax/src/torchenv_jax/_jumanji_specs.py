"""Jumanji specs (``jumanji.specs``) as torchenv specs, and observations as nested dicts."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Unbounded,
)

__all__ = ["to_spec", "observation_as_dict", "is_nested"]


def _dtype(spec: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np.dtype(spec.dtype))).dtype


def is_nested(spec: Any) -> bool:
    """A nested jumanji ``Spec`` (its children in ``_specs``), not an array spec."""
    from jumanji import specs

    return isinstance(spec, specs.Spec) and not isinstance(spec, specs.Array)


def to_spec(
    spec: Any, batch: tuple, device: Any, *, categorical: bool = True, what: str = "spec"
) -> TensorSpec:
    """A torchenv spec of batch shape ``batch`` for a jumanji spec.

    ``DiscreteArray`` -> ``Categorical`` (``OneHot`` if not ``categorical``),
    ``MultiDiscreteArray`` -> ``MultiCategorical`` (``MultiOneHot``), a boolean ``BoundedArray``
    -> ``Categorical(2, dtype=bool)`` (action masks), other ``BoundedArray`` -> ``Bounded``,
    ``Array`` -> ``Unbounded``, a nested ``Spec`` -> ``Composite``.

    >>> import jumanji
    >>> to_spec(jumanji.make("Snake-v1").action_spec, (8,), "cpu").shape
    torch.Size([8])
    """
    from jumanji import specs

    batch = tuple(batch)
    if is_nested(spec):
        return Composite(
            {
                name: to_spec(child, batch, device, categorical=categorical, what=f"{what}.{name}")
                for name, child in spec._specs.items()
            },
            shape=batch,
            device=device,
        )
    shape = (*batch, *spec.shape)
    dtype = _dtype(spec)
    if isinstance(spec, specs.MultiDiscreteArray):
        nvec = torch.as_tensor(np.array(spec.num_values)).reshape(-1)
        if len(spec.shape) > 1:
            raise NotImplementedError(f"{what}: multi-dimensional MultiDiscreteArray {spec}")
        if categorical:
            return MultiCategorical(nvec.tolist(), shape=shape, device=device, dtype=dtype)
        return MultiOneHot(nvec.tolist(), shape=(*batch, int(nvec.sum())), device=device)
    if isinstance(spec, specs.DiscreteArray):
        n = int(spec.num_values)
        if categorical:
            return Categorical(n, shape=shape, device=device, dtype=dtype)
        return OneHot(n, shape=(*shape, n), device=device)
    if dtype == torch.bool:
        return Categorical(2, shape=shape, device=device, dtype=torch.bool)
    if isinstance(spec, specs.BoundedArray):
        low = torch.as_tensor(np.broadcast_to(np.array(spec.minimum), spec.shape).copy())
        high = torch.as_tensor(np.broadcast_to(np.array(spec.maximum), spec.shape).copy())
        low, high = low.expand(shape).clone(), high.expand(shape).clone()
        return Bounded(low.to(dtype), high.to(dtype), shape, device=device, dtype=dtype)
    if isinstance(spec, specs.Array):
        return Unbounded(shape, device=device, dtype=dtype)
    raise TypeError(f"{what}: unsupported jumanji spec {type(spec).__name__}")


def observation_as_dict(value: Any, spec: Any) -> Any:
    """A (nested) observation value (named tuple, dataclass) as nested dicts named after the
    spec's children; an array spec's value as is."""
    if not is_nested(spec):
        return value
    return {
        name: observation_as_dict(getattr(value, name), child)
        for name, child in spec._specs.items()
    }
