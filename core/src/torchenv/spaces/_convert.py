"""Spaces → torchenv specs, through a registry users can extend.

gym, gymnasium, PettingZoo and VMAS describe their envs with the same space classes (``Box``,
``Discrete``, ``MultiDiscrete``, ``MultiBinary``, ``Dict``, ``Tuple``...). They are recognised by
class *name*, so this module imports no simulator. The conversion of a space is looked up by its
class, walking the class's MRO, so a subclass of ``Box`` converts like a ``Box``. Keys are classes
or names relative to ``<library>.spaces`` (``"Box"``, ``"discrete.Discrete"``): a name matches any
class with that name, so one registration covers gym and gymnasium.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import torchenv.specs as specs
from torchenv.specs import Binary, Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded

__all__ = [
    "gym_space_to_spec",
    "numpy_to_torch_dtype",
    "register_gym_spec_conversion",
    "register_space_conversion",
    "space_to_spec",
]

ConversionFn = Callable[..., TensorSpec]
_REGISTRY: dict[type | str, ConversionFn] = {}


def numpy_to_torch_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype of a numpy dtype (``np.float64`` → ``torch.float64``).

    >>> numpy_to_torch_dtype(np.dtype("int8"))
    torch.int8
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return torch.bool
    return torch.from_numpy(np.empty((), dtype=dtype)).dtype


def register_space_conversion(space_type: type | str) -> Callable[[ConversionFn], ConversionFn]:
    """Register how a space class converts to a spec (a decorator).

    ``register_gym_spec_conversion`` is the same function (TorchRL's name).

    The function is called as ``fn(space, dtype=None, device=None, categorical_action_encoding=False,
    remap_state_to_observation=True, batch_size=None)`` and returns a spec; use ``**kwargs`` for the
    arguments it ignores.

    Args:
        space_type: the space class, or its name relative to ``<gym library>.spaces``
            (``"Box"``, ``"discrete.Discrete"``), which matches the class in gym and gymnasium.

    >>> from torchenv.specs import Unbounded
    >>> @register_space_conversion("MyCustomSpace")
    ... def convert_custom(space, device=None, **kwargs):
    ...     return Unbounded(space.shape, device=device)
    """

    def decorator(fn: ConversionFn) -> ConversionFn:
        _REGISTRY[space_type] = fn
        return fn

    return decorator


def _lookup(space: Any) -> ConversionFn:
    for klass in type(space).__mro__:
        fn = _REGISTRY.get(klass)
        if fn is not None:
            return fn
        for key, fn in _REGISTRY.items():
            if isinstance(key, str) and key.rsplit(".", 1)[-1] == klass.__name__:
                return fn
    raise KeyError(
        f"No spec conversion for the space {type(space).__qualname__} ({space!r}); register "
        "one with torchenv.spaces.register_space_conversion (register_gym_spec_conversion)."
    )


def space_to_spec(
    space: Any,
    dtype: torch.dtype | None = None,
    device: Any = None,
    categorical_action_encoding: bool = False,
    remap_state_to_observation: bool = True,
    batch_size: tuple[int, ...] | torch.Size | None = None,
) -> TensorSpec:
    """Convert a space (gym, gymnasium, PettingZoo, VMAS...) to a torchenv spec.

    ``gym_space_to_spec`` is the same function (TorchRL's name).

    Args:
        space: the space.
        dtype: force this dtype on leaf specs (default: the space's).
        device: the specs' device.
        categorical_action_encoding: ``Discrete`` → ``Categorical`` (else ``OneHot``, TorchRL's default).
        remap_state_to_observation: rename a ``Dict`` entry ``"state"`` to ``"observation"``.
        batch_size: expand the spec to these leading dims.

    >>> class Discrete:  # any class named like a space class converts like it
    ...     n, start, dtype = 3, 0, np.int64
    >>> space_to_spec(Discrete(), categorical_action_encoding=True).n
    3
    """
    spec = _lookup(space)(
        space,
        dtype=dtype,
        device=device,
        categorical_action_encoding=categorical_action_encoding,
        remap_state_to_observation=remap_state_to_observation,
        batch_size=None,
    )
    if batch_size:
        spec = spec.expand(*batch_size, *spec.shape)
    return spec


register_gym_spec_conversion = register_space_conversion
gym_space_to_spec = space_to_spec


@register_space_conversion("Box")
def convert_box(space: Any, dtype: torch.dtype | None = None, device: Any = None, **kwargs: Any):
    """``Box`` → ``Unbounded`` when every bound is infinite, else ``Bounded``; dtype kept."""
    shape = tuple(space.shape) or (1,)
    dtype = dtype or numpy_to_torch_dtype(space.dtype)
    low = np.broadcast_to(space.low, space.shape).reshape(shape)
    high = np.broadcast_to(space.high, space.shape).reshape(shape)
    if dtype.is_floating_point and np.isinf(low).all() and np.isinf(high).all():
        return Unbounded(shape, device=device, dtype=dtype)
    if not dtype.is_floating_point and dtype != torch.bool:
        info = np.iinfo(np.dtype(space.dtype))
        if (low <= info.min).all() and (high >= info.max).all():
            return Unbounded(shape, device=device, dtype=dtype)
    low = torch.as_tensor(np.array(low), dtype=dtype, device=device)
    high = torch.as_tensor(np.array(high), dtype=dtype, device=device)
    return Bounded(low, high, shape, device=device, dtype=dtype)


@register_space_conversion("discrete.Discrete")
def convert_discrete(
    space: Any, dtype=None, device=None, categorical_action_encoding=False, **kwargs
) -> TensorSpec:
    """``Discrete(n)`` → ``Categorical(n)`` or ``OneHot(n)`` (a non-zero ``start`` is shifted out)."""
    if categorical_action_encoding:
        return Categorical(int(space.n), device=device, dtype=numpy_to_torch_dtype(space.dtype))
    return OneHot(int(space.n), device=device, dtype=torch.long)


@register_space_conversion("multi_discrete.MultiDiscrete")
def convert_multi_discrete(
    space: Any, dtype=None, device=None, categorical_action_encoding=False, **kwargs
) -> TensorSpec:
    """``MultiDiscrete`` → ``MultiCategorical``/``MultiOneHot`` for mixed sizes, else a stack.

    Equal sizes (``[3, 3]``) mean independent choices of one kind: they become
    ``Categorical(n, shape=nvec.shape)`` or ``OneHot(n, shape=(*nvec.shape, n))``.
    """
    nvec = np.asarray(space.nvec)
    torch_dtype = numpy_to_torch_dtype(space.dtype)
    if nvec.size and (nvec == nvec.flat[0]).all():
        n = int(nvec.flat[0])
        if categorical_action_encoding:
            return Categorical(n, shape=nvec.shape, device=device, dtype=torch_dtype)
        return OneHot(n, shape=(*nvec.shape, n), device=device, dtype=torch.long)
    if categorical_action_encoding or nvec.ndim > 1:
        return specs.MultiCategorical(nvec.tolist(), device=device, dtype=torch_dtype)
    return specs.MultiOneHot(nvec.tolist(), device=device, dtype=torch.long)


@register_space_conversion("multi_binary.MultiBinary")
def convert_multi_binary(space: Any, dtype=None, device=None, **kwargs) -> TensorSpec:
    """``MultiBinary(n)`` → ``Binary`` with the space's shape and dtype."""
    shape = tuple(np.atleast_1d(space.n).tolist())
    return Binary(shape=shape, device=device, dtype=numpy_to_torch_dtype(space.dtype))


@register_space_conversion("dict.Dict")
def convert_dict(space: Any, dtype=None, device=None, remap_state_to_observation=True, **kwargs):
    """``Dict`` → nested ``Composite`` (``"state"`` renamed ``"observation"`` if there is none)."""
    entries = {}
    for key, sub in space.spaces.items():
        name = key
        if remap_state_to_observation and key == "state" and "observation" not in space.spaces:
            name = "observation"
        entries[name] = space_to_spec(
            sub,
            device=device,
            remap_state_to_observation=remap_state_to_observation,
            categorical_action_encoding=kwargs.get("categorical_action_encoding", False),
        )
    return Composite(entries, device=device)


def tuple_is_stacked(leaves: list[TensorSpec]) -> bool:
    """Whether a ``Tuple`` space becomes one stacked spec (equal leaf specs) or a ``Composite``."""
    return bool(leaves) and all(
        not isinstance(s, Composite) and type(s).__name__ != "NonTensor" and s == leaves[0]
        for s in leaves
    )


@register_space_conversion("tuple.Tuple")
def convert_tuple(space: Any, dtype=None, device=None, **kwargs) -> TensorSpec:
    """``Tuple`` → one stacked spec (leading dim = length) when every element converts to the same
    leaf spec, as in TorchRL; otherwise a ``Composite`` with keys ``"0"``, ``"1"``, ...
    """
    subs = [
        space_to_spec(
            sub,
            device=device,
            categorical_action_encoding=kwargs.get("categorical_action_encoding", False),
            remap_state_to_observation=kwargs.get("remap_state_to_observation", True),
        )
        for sub in space.spaces
    ]
    if tuple_is_stacked(subs):
        return subs[0].expand(len(subs), *subs[0].shape)
    return Composite({str(i): s for i, s in enumerate(subs)}, device=device)


@register_space_conversion("Text")
@register_space_conversion("Sequence")
@register_space_conversion("Graph")
def convert_non_tensor(space: Any, dtype=None, device=None, **kwargs) -> TensorSpec:
    """``Text``, ``Sequence`` and ``Graph`` hold variable-size values: ``NonTensor`` specs."""
    return specs.NonTensor(shape=(), device=device)
