"""torchenv specs → gymnasium spaces (the direction ``to_gymnasium`` needs).

The inverse of the plugin toolkit's spaces → specs: leaf specs become ``Box``, ``Discrete``,
``MultiDiscrete`` or ``MultiBinary``, a ``Composite`` a ``Dict``. One-hot specs become the
``Discrete``/``MultiDiscrete`` of their index, which is what gymnasium users hand in and read;
:func:`action_encoder` turns such an index back into the one-hot tensor the env expects.
Only batch dims are dropped: ``spec`` is the spec of one (sub-)env.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
)

__all__ = ["action_encoder", "spec_to_space"]


def _np_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty((), dtype=dtype).numpy().dtype


def spec_to_space(spec: TensorSpec, spaces: Any) -> Any:
    """The gymnasium space of ``spec`` (``spaces``: the ``gymnasium.spaces`` module).

    >>> import gymnasium
    >>> from torchenv.specs import Bounded, OneHot
    >>> spec_to_space(OneHot(3), gymnasium.spaces)
    Discrete(3)
    >>> spec_to_space(Bounded(-1.0, 1.0, shape=(2,)), gymnasium.spaces)
    Box(-1.0, 1.0, (2,), float32)
    """
    if isinstance(spec, Composite):
        return spaces.Dict({key: spec_to_space(value, spaces) for key, value in spec.items()})
    if isinstance(spec, NonTensor):
        raise TypeError("a NonTensor spec has no gymnasium space")
    shape = tuple(spec.shape)
    if isinstance(spec, OneHot):
        return _discrete(spec.space.n, shape[:-1], spaces)
    if isinstance(spec, MultiOneHot):
        nvec = np.broadcast_to(np.asarray(spec.nvec), (*shape[:-1], len(spec.nvec)))
        return spaces.MultiDiscrete(nvec.copy())
    if isinstance(spec, Binary):
        return spaces.MultiBinary(list(shape) if len(shape) != 1 else shape[0])
    if isinstance(spec, Categorical):
        return _discrete(spec.space.n, shape, spaces)
    if isinstance(spec, MultiCategorical):
        return spaces.MultiDiscrete(spec.nvec.expand(shape).numpy().astype(np.int64))
    dtype = _np_dtype(spec.dtype)
    if isinstance(spec, Bounded):
        low = spec.space.low.expand(shape).numpy().astype(dtype)
        high = spec.space.high.expand(shape).numpy().astype(dtype)
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    if isinstance(spec, Unbounded):
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return spaces.Box(low=info.min, high=info.max, shape=shape, dtype=dtype)
        return spaces.Box(low=-np.inf, high=np.inf, shape=shape, dtype=dtype)
    raise TypeError(f"no gymnasium space for a spec of type {type(spec).__name__}")


def _discrete(n: int, shape: tuple[int, ...], spaces: Any) -> Any:
    if not shape:
        return spaces.Discrete(n)
    return spaces.MultiDiscrete(np.full(shape, n, dtype=np.int64))


def action_encoder(
    spec: TensorSpec, batch_size: tuple[int, ...] = ()
) -> Callable[[Any], torch.Tensor]:
    """``gymnasium action -> tensor`` for action spec ``spec`` (one-hot specs take indices).

    ``spec`` is the spec of one sub-env; actions come with ``batch_size`` leading dims.

    >>> from torchenv.specs import OneHot
    >>> action_encoder(OneHot(3))(2)
    tensor([False, False,  True])
    >>> action_encoder(OneHot(3), (2,))([2, 0]).int()
    tensor([[0, 0, 1],
            [1, 0, 0]], dtype=torch.int32)
    """
    dtype, device = spec.dtype, spec.device
    batch = tuple(batch_size)
    if isinstance(spec, OneHot):
        n, index_shape = spec.space.n, (*batch, *spec.shape[:-1])

        def encode_one_hot(action: Any) -> torch.Tensor:
            index = torch.as_tensor(np.asarray(action), dtype=torch.long, device=device)
            return torch.nn.functional.one_hot(index.reshape(index_shape), n).to(dtype)

        return encode_one_hot
    if isinstance(spec, MultiOneHot):

        def encode_multi_one_hot(action: Any) -> torch.Tensor:
            return spec.encode(torch.as_tensor(np.asarray(action), device=device))

        return encode_multi_one_hot
    shape = (*batch, *spec.shape)

    def encode(action: Any) -> torch.Tensor:
        return torch.as_tensor(np.asarray(action), device=device).to(dtype).reshape(shape)

    return encode
