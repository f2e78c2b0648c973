"""Exact conversion of specs between torchenv and TorchRL (``torchrl.data``).

Both libraries have the same spec family under the same names and attributes, so one walk
serves both directions: read the leaf's attributes, build the other side's class of that name.
Used where the two meet in one tree (a TorchRL transform adding its spec to a torchenv
``Composite``: :meth:`Composite.set` converts it) and by the env adapters of
:mod:`torchenv.interop`. Nothing here imports torchrl until a conversion to TorchRL is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

__all__ = ["from_torchrl_spec", "is_torchrl_spec", "to_torchrl_spec"]


def is_torchrl_spec(obj: Any) -> bool:
    """Whether ``obj`` is a spec of TorchRL's (decided from its class, without importing torchrl).

    >>> from torchenv.specs import OneHot
    >>> is_torchrl_spec(OneHot(2))
    False
    """
    return any(cls.__module__.startswith("torchrl.data") for cls in type(obj).__mro__[:-1])


def to_torchrl_spec(spec: Any) -> Any:
    """A ``torchrl.data`` spec equal to torchenv ``spec`` (needs torchrl installed).

    >>> from torchenv.specs import Bounded
    >>> theirs = to_torchrl_spec(Bounded(-1.0, 1.0, shape=(2,)))  # doctest: +SKIP
    >>> type(theirs).__module__  # doctest: +SKIP
    'torchrl.data.tensor_specs'
    """
    return _convert(spec, importlib.import_module("torchrl.data"))


def from_torchrl_spec(spec: Any) -> Any:
    """The torchenv spec equal to ``torchrl.data`` spec ``spec``.

    Its argument can be any object with TorchRL's spec attributes; a torchenv spec comes back as
    an equal copy:

    >>> from torchenv.specs import Categorical
    >>> from_torchrl_spec(Categorical(3)) == Categorical(3)
    True
    """
    return _convert(spec, importlib.import_module("torchenv.specs"))


def _kind(spec: Any) -> str:
    """The shared class name of ``spec`` (the first base class both libraries name)."""
    for cls in type(spec).__mro__:
        if cls.__name__ in _BUILDERS:
            return cls.__name__
    raise TypeError(f"cannot convert a spec of type {type(spec).__name__}")


def _convert(spec: Any, lib: Any) -> Any:
    if spec is None:
        return None
    return _BUILDERS[_kind(spec)](spec, lib)


def _composite(spec: Any, lib: Any) -> Any:
    entries = {key: _convert(value, lib) for key, value in spec.items()}
    return lib.Composite(entries, shape=spec.shape, device=spec.device)


def _stacked(spec: Any, lib: Any) -> Any:
    return torch.stack([_convert(part, lib) for part in spec.unbind(spec.dim)], dim=spec.dim)


def _mask(spec: Any) -> Any:
    mask = getattr(spec, "mask", None)
    return None if mask is None else mask.clone()


def _choice(spec: Any, lib: Any) -> Any:
    choices = [_convert(c, lib) if hasattr(c, "cardinality") else c.clone() for c in spec._choices]
    return lib.Choice(choices)


_BUILDERS = {
    "Choice": _choice,
    "StackedComposite": _stacked,
    "Stacked": _stacked,
    "Composite": _composite,
    "NonTensor": lambda s, lib: lib.NonTensor(shape=s.shape, device=s.device, dtype=s.dtype),
    "Bounded": lambda s, lib: lib.Bounded(
        low=s.space.low.clone(),
        high=s.space.high.clone(),
        shape=s.shape,
        device=s.device,
        dtype=s.dtype,
    ),
    "Unbounded": lambda s, lib: lib.Unbounded(shape=s.shape, device=s.device, dtype=s.dtype),
    "Binary": lambda s, lib: lib.Binary(
        n=s.shape[-1], shape=s.shape, device=s.device, dtype=s.dtype
    ),
    "OneHot": lambda s, lib: lib.OneHot(
        n=s.space.n, shape=s.shape, device=s.device, dtype=s.dtype, mask=_mask(s)
    ),
    "MultiOneHot": lambda s, lib: lib.MultiOneHot(
        nvec=list(s.nvec), shape=s.shape, device=s.device, dtype=s.dtype, mask=_mask(s)
    ),
    "MultiCategorical": lambda s, lib: lib.MultiCategorical(
        nvec=s.nvec.clone(), shape=s.shape, device=s.device, dtype=s.dtype, mask=_mask(s)
    ),
    "Categorical": lambda s, lib: lib.Categorical(
        n=s.space.n, shape=s.shape, device=s.device, dtype=s.dtype, mask=_mask(s)
    ),
}
