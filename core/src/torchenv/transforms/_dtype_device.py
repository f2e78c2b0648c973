"""Dtype and device transforms: DTypeCastTransform, DoubleToFloat, DeviceCastTransform."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Composite, TensorSpec
from torchenv.transforms._base import Transform

__all__ = ["DTypeCastTransform", "DeviceCastTransform", "DoubleToFloat"]

_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")


def _auto_keys_property(name: str, cache: str, forward: bool) -> property:
    """An inner key list that, left unset, is found by ``_auto_keys(forward)`` and cached."""
    attr = "_" + name

    def fget(self: DTypeCastTransform) -> list[NestedKey] | None:
        keys = self.__dict__.get(attr)
        if keys is None:
            keys = self._auto_keys(forward)
            if keys is not None:
                self.__dict__[attr] = keys
                self.__dict__.pop(cache, None)
        return keys

    return property(fget, getattr(Transform, name).fset)


def _outer_keys_property(name: str, inner: str) -> property:
    """An outer key list defaulting to (a copy of) the inner one, ``[]`` while that is unknown."""
    attr = "_" + name

    def fget(self: DTypeCastTransform) -> list[NestedKey] | None:
        keys = self.__dict__.get(attr)
        return list(getattr(self, inner) or []) if keys is None else keys

    return property(fget, getattr(Transform, name).fset)


class DTypeCastTransform(Transform):
    """Casts entries from ``dtype_in`` (the env's) to ``dtype_out`` (the outside's) and back.

    Without keys, inside an env, every observation and reward entry of ``dtype_in`` is cast
    forward and every action and state entry of ``dtype_in`` is exposed as ``dtype_out`` and
    cast back before the base env's step. Without keys and without an env, every entry of
    ``dtype_in`` is cast. With ``in_keys`` but no ``in_keys_inv``, nothing is cast back.

    Args:
        dtype_in: the dtype of the env's entries.
        dtype_out: the dtype seen outside.
        in_keys: the entries cast forward.
        out_keys: where the cast entries are written (default: ``in_keys``).
        in_keys_inv: the entries cast back (inner names).
        out_keys_inv: their outer names (default: ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DTypeCastTransform(torch.float64, torch.float32, in_keys=["obs"])
        >>> t(TensorDict(obs=torch.zeros(2, dtype=torch.float64)))["obs"].dtype
        torch.float32
    """

    invertible = True

    def __init__(
        self,
        dtype_in: torch.dtype,
        dtype_out: torch.dtype,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        if in_keys is None and out_keys is not None:
            raise ValueError(f"{type(self).__name__}: out_keys were given without in_keys")
        if in_keys_inv is None and out_keys_inv is not None:
            raise ValueError(f"{type(self).__name__}: out_keys_inv were given without in_keys_inv")
        if in_keys is not None and in_keys_inv is None:
            in_keys_inv = []
        self.dtype_in = dtype_in
        self.dtype_out = dtype_out
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)

    # Keys left to None are found in the parent's specs (and cached) or, with no parent,
    # mean "every entry of dtype_in". Keys found from a previous parent are kept by
    # empty_cache: only the cached parent is dropped.
    def _auto_keys(self, forward: bool) -> list[NestedKey] | None:
        parent = self.parent
        if parent is None:
            return None
        keys = []
        parts = (
            (parent.full_observation_spec, parent.full_reward_spec)
            if forward
            else (parent.full_action_spec, parent.full_state_spec)
        )
        for part in parts:
            for key, spec in part.items(True, True):
                if spec.dtype == self.dtype_in:
                    keys.append(key)
        return keys

    in_keys = _auto_keys_property("in_keys", "_pairs", True)
    out_keys = _outer_keys_property("out_keys", "in_keys")
    in_keys_inv = _auto_keys_property("in_keys_inv", "_pairs_inv", False)
    out_keys_inv = _outer_keys_property("out_keys_inv", "in_keys_inv")

    @property
    def _has_inverse(self) -> bool:
        keys = self.in_keys_inv
        return keys is None or bool(keys)

    @property
    def _is_step_noop(self) -> bool:
        keys = self.in_keys
        return keys is not None and not keys

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.to(self.dtype_out)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return state.to(self.dtype_in)

    def _cast_all(self, tensordict: TensorDictBase, src: torch.dtype, fn) -> TensorDictBase:
        for key, value in list(tensordict.items(True, True)):
            if isinstance(value, torch.Tensor) and value.dtype == src:
                tensordict.set(key, fn(value))
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.in_keys is None:
            return self._cast_all(tensordict, self.dtype_in, self._apply_transform)
        return super().forward(tensordict)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.in_keys is None:
            return self._cast_all(next_tensordict, self.dtype_in, self._apply_transform)
        return super()._call(next_tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.in_keys_inv is None:
            return self._cast_all(tensordict, self.dtype_out, self._inv_apply_transform)
        return super()._inv_call(tensordict)

    def _cast_spec(self, spec: TensorSpec) -> TensorSpec:
        if spec.dtype != self.dtype_in:
            raise TypeError(
                f"{type(self).__name__}: expected a spec of dtype {self.dtype_in}, got {spec.dtype}"
            )
        return spec.to(self.dtype_out)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_output_specs(output_spec, self._cast_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._map_input_specs(input_spec, self._cast_spec)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(in_keys={self.__dict__.get('_in_keys')}, "
            f"in_keys_inv={self.__dict__.get('_in_keys_inv')})"
        )


class DoubleToFloat(DTypeCastTransform):
    """Casts float64 entries to float32 (and float32 actions back to float64 for the env).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> DoubleToFloat()(TensorDict(obs=torch.zeros(2, dtype=torch.float64)))["obs"].dtype
        torch.float32
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(torch.float64, torch.float32, in_keys, out_keys, in_keys_inv, out_keys_inv)


class DeviceCastTransform(Transform):
    """Moves the env's outputs to ``device`` and its inputs back to ``orig_device``.

    Without keys the whole TensorDict moves and the transformed env's device is ``device``.
    With keys only those entries move: the env and its specs then have no device (``None``),
    as in TorchRL.

    Args:
        device: the device seen outside.
        orig_device: the base env's device. Defaults to the parent env's device.

    Keyword Args:
        in_keys: move only these entries (forward).
        out_keys: where to write them (default: ``in_keys``).
        in_keys_inv: move only these input entries (inverse).
        out_keys_inv: their outer names (default: ``in_keys_inv``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> DeviceCastTransform("cpu")(TensorDict(a=torch.zeros(1))).device
        device(type='cpu')
    """

    def __init__(
        self,
        device: torch.device | str,
        orig_device: torch.device | str | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        self.device = torch.device(device)
        self._orig_device = None if orig_device is None else torch.device(orig_device)
        self._whole = in_keys is None and in_keys_inv is None

    @property
    def orig_device(self) -> torch.device | None:
        if self._orig_device is None:
            parent = self.parent
            if parent is not None:
                self._orig_device = parent.device
        return self._orig_device

    def transform_env_device(self, device):
        if self._orig_device is None:
            self._orig_device = device
        # some entries moved, others not: the env has no single device (TorchRL's rule)
        return self.device if self._whole else None

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.to(self.device, non_blocking=True)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        orig = self.orig_device
        return state if orig is None else state.to(orig, non_blocking=True)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self._whole:
            return next_tensordict.to(self.device, non_blocking=True)
        if next_tensordict.device is not None:  # it will hold entries on several devices
            next_tensordict.clear_device_()
        return super()._call(next_tensordict)

    forward = _call

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self._whole:
            return tensordict_reset.to(self.device, non_blocking=True)
        if tensordict_reset.device is not None:
            tensordict_reset.clear_device_()
        return self._call_tolerant(tensordict_reset)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._whole:
            orig = self.orig_device
            return tensordict if orig is None else tensordict.to(orig, non_blocking=True)
        if tensordict.device is not None:
            tensordict.clear_device_()
        return super()._inv_call(tensordict)

    @property
    def _has_inverse(self) -> bool:
        return True

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self._whole:
            return output_spec.to(self.device)
        output_spec.clear_device_()  # the parts hold leaves on several devices
        return self._map_output_specs(output_spec, self._to_device, _OUTPUT_PARTS)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self._whole:
            return input_spec.to(self.device)
        input_spec.clear_device_()
        return self._map_input_specs(input_spec, self._to_device)

    def _to_device(self, spec: TensorSpec) -> TensorSpec:
        return spec.to(self.device)

    def __repr__(self) -> str:
        return f"DeviceCastTransform(device={self.device}, orig_device={self._orig_device})"
