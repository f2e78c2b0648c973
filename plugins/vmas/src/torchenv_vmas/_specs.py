"""VMAS's spaces (legacy ``gym.spaces``, read by duck typing: no gym import) as torchenv specs.

Same mapping as TorchRL 0.14.1's VMAS wrapper: ``Box`` -> ``Bounded``, or ``Unbounded`` when
every bound is infinite (a scalar box gets shape ``(1,)``); ``Discrete`` -> ``Categorical``
(``categorical_actions=True``) or ``OneHot``; ``MultiDiscrete`` -> ``MultiCategorical`` or
``MultiOneHot``; ``Dict`` -> ``Composite``.
"""

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

__all__ = ["space_to_spec", "info_spec"]


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype


def space_to_spec(space: Any, *, categorical: bool = True, what: str = "space") -> TensorSpec:
    """The unbatched spec of one agent's VMAS space.

    Args:
        space: a ``gym.spaces`` Box, Discrete, MultiDiscrete or Dict.
        categorical: discrete spaces as category indices (else one-hot).
        what: named in the error for an unsupported space.

    >>> Discrete = type("Discrete", (), {})
    >>> space = Discrete(); space.n = 9; space.dtype = np.int64
    >>> space_to_spec(space).n
    9
    >>> space_to_spec(space, categorical=False).shape
    torch.Size([9])
    """
    kind = type(space).__name__
    if kind == "Discrete":
        if categorical:
            return Categorical(int(space.n), dtype=_torch_dtype(space.dtype))
        return OneHot(int(space.n), dtype=torch.long)
    if kind == "MultiDiscrete":
        nvec = torch.as_tensor(np.asarray(space.nvec))
        if categorical:
            return MultiCategorical(nvec, dtype=_torch_dtype(space.dtype))
        return MultiOneHot(nvec, dtype=torch.long)
    if kind == "Box":
        shape = tuple(space.shape) or (1,)
        dtype = _torch_dtype(space.dtype)
        low = torch.as_tensor(np.asarray(space.low), dtype=dtype).reshape(shape)
        high = torch.as_tensor(np.asarray(space.high), dtype=dtype).reshape(shape)
        if low.isinf().all() and high.isinf().all():
            return Unbounded(shape, dtype=dtype)
        return Bounded(low, high, shape, dtype=dtype)
    if kind == "Dict":
        return Composite(
            {
                key: space_to_spec(sub, categorical=categorical, what=f"{what}[{key!r}]")
                for key, sub in space.spaces.items()
            }
        )
    raise NotImplementedError(
        f"torchenv-vmas: {what} is a {kind}; expected a Box, Discrete, MultiDiscrete or Dict space"
    )


def info_spec(info: dict[str, torch.Tensor], num_envs: int) -> Composite | None:
    """The unbatched Composite of one agent's info dict (float32 entries; ``(num_envs,)`` -> ``(1,)``).

    >>> info_spec({"pos_rew": torch.zeros(4), "xy": torch.zeros(4, 2)}, 4)["xy"].shape
    torch.Size([2])
    >>> info_spec({}, 4) is None
    True
    """
    if not info:
        return None
    return Composite(
        {
            key: Unbounded(tuple(value.shape[1:]) or (1,), dtype=torch.float32)
            for key, value in info.items()
        }
    )
