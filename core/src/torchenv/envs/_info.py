"""Info dict readers: copy entries of gym's ``info`` dict into the output TensorDict.

A reader declares the specs of what it writes (``info_spec``); the env adds them to its
observation spec, so info entries have buffers in ``ParallelEnv`` and pass ``check_env_specs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from torchenv.spaces._convert import numpy_to_torch_dtype
from torchenv.specs import Categorical, Composite, TensorSpec, Unbounded

__all__ = ["default_info_dict_reader", "BaseInfoDictReader"]


class BaseInfoDictReader:
    """Base class of info dict readers: ``reader(info_dict, tensordict) -> tensordict``."""

    def __call__(self, info_dict: Mapping[str, Any], tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        """Whether the keys and all their specs are known."""
        return self.keys is not None and all(k in self._specs for k in self.keys)

    @property
    def info_spec(self) -> Composite | None:
        """Specs of the entries this reader writes (without batch dims), ``None`` if unknown yet."""
        raise NotImplementedError

    def reset(self) -> None:
        """Called when the env resets (for stateful readers)."""


def _infer_spec(value: Any, batch: tuple[int, ...]) -> TensorSpec | None:
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "biuf":
        return None
    shape = array.shape[len(batch) :]  # a scalar info stays a scalar per env, as in TorchRL
    dtype = numpy_to_torch_dtype(array.dtype)
    if dtype == torch.bool:
        return Categorical(2, shape=shape, dtype=torch.bool)
    return Unbounded(shape=shape, dtype=dtype)


class default_info_dict_reader(BaseInfoDictReader):
    """Write selected (or all numeric) entries of the info dict as tensors.

    Entries missing from an info dict (e.g. at reset) are written as zeros, so every step and reset
    output holds every key.

    Args:
        keys: the info keys to read; ``None`` reads every numeric entry of the first info dict seen
            (names starting with ``"_"`` skipped when ``ignore_private``).
        spec: the specs of the keys (a ``Composite``, a dict, or a list aligned with ``keys``);
            inferred from the first values seen when omitted.
        ignore_private: skip keys starting with ``"_"`` when inferring keys.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> reader = default_info_dict_reader(["x"])
    >>> td = reader({"x": 3.0}, TensorDict({}, []))
    >>> td["x"]
    tensor(3., dtype=torch.float64)
    """

    def __init__(
        self,
        keys: Iterable[str] | None = None,
        spec: Composite | Mapping[str, TensorSpec] | list[TensorSpec] | None = None,
        ignore_private: bool = True,
    ) -> None:
        self.keys = list(keys) if keys is not None else None
        self.ignore_private = ignore_private
        self._specs: dict[str, TensorSpec] = {}
        if spec is not None:
            if isinstance(spec, (list, tuple)):
                if self.keys is None or len(self.keys) != len(spec):
                    raise ValueError(
                        f"default_info_dict_reader: a list of specs needs as many keys; got "
                        f"keys={self.keys} and {len(spec)} specs"
                    )
                spec = dict(zip(self.keys, spec))
            self._specs = {k: spec[k] for k in spec}
            if self.keys is None:
                self.keys = list(self._specs)
        self.batch: tuple[int, ...] = ()
        self._zeros: dict[str, torch.Tensor] = {}

    def infer(self, info_dict: Mapping[str, Any], batch: tuple[int, ...] = ()) -> None:
        """Fix the keys and specs from one info dict (called by ``auto_register_info_dict``)."""
        self.batch = tuple(batch)
        keys = self.keys
        if keys is None:
            keys = [
                k
                for k in info_dict
                if isinstance(k, str) and not (self.ignore_private and k.startswith("_"))
            ]
        found = []
        for key in keys:
            if key not in self._specs:
                if key not in info_dict:
                    continue
                spec = _infer_spec(info_dict[key], self.batch)
                if spec is None:
                    continue
                self._specs[key] = spec
            found.append(key)
        self.keys = found
        self._zeros = {}

    @property
    def complete(self) -> bool:
        """Whether the keys and all their specs are known."""
        return self.keys is not None and all(k in self._specs for k in self.keys)

    @property
    def info_spec(self) -> Composite | None:
        if self.keys is None:
            return None
        return Composite({k: self._specs[k] for k in self.keys if k in self._specs})

    def __call__(self, info_dict: Mapping[str, Any], tensordict: TensorDictBase) -> TensorDictBase:
        if not self.complete:
            self.infer(info_dict, self.batch)
        batch = self.batch
        for key in self.keys:
            spec = self._specs[key]
            shape = (*batch, *spec.shape)
            value = info_dict.get(key)
            if value is None:
                zero = self._zeros.get(key)
                if zero is None:
                    zero = self._zeros[key] = torch.zeros(shape, dtype=spec.dtype)
                tensordict.set(key, zero.clone())
                continue
            tensordict.set(key, torch.as_tensor(np.asarray(value), dtype=spec.dtype).reshape(shape))
        return tensordict

    def __repr__(self) -> str:
        return f"default_info_dict_reader(keys={self.keys})"
