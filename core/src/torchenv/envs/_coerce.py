"""Actions of another dtype or device than their spec: cast when the value survives, else refuse.

TorchRL 0.14.1 checks nothing at ``step``: its buffers and numpy conversions cast whatever
comes (a ``float64`` action for a ``float32`` spec, an ``int64`` one for an ``int8``
``Categorical``, but also ``0.7`` for a ``uint8`` or a ``bool`` for a float spec, silently).
We cast where the value is represented exactly by the spec's dtype (or, between floating
dtypes, approximately, as TorchRL does) and refuse, naming the key, the expected and the
received dtype, where it is not:

=================  ==================================================================
spec dtype         action dtype accepted (and cast)
=================  ==================================================================
floating           any floating or integer dtype; not ``bool``; a finite value that
                   overflows to ``inf`` is refused
integer            ``bool``; integers within the dtype's range; floats that are whole
                   numbers within that range
``bool``           integers or floats equal to 0 or 1
=================  ==================================================================

Complex actions are refused, and so are actions on the ``meta`` device (they hold no data);
an action on another real device is moved to the env's. This runs only when the cheap check
of ``step`` (exact shape, dtype and device) fails, so well-formed actions pay nothing.
"""

from __future__ import annotations

import torch

__all__: list[str] = []


def _kind(dtype: torch.dtype) -> str:
    if dtype is torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "int"


def _refuse(where: str, key, spec_dtype, value: torch.Tensor, why: str, err=TypeError):
    raise err(
        f"{where}: the action {key!r} has dtype {value.dtype} but the spec expects dtype "
        f"{spec_dtype}; {why}."
    )


def coerce_action(
    where: str,
    key,
    value: torch.Tensor,
    dtype: torch.dtype | None,
    device: torch.device | None,
) -> torch.Tensor:
    """``value`` cast to ``dtype`` and moved to ``device`` where that loses nothing.

    Args:
        where: what to name in errors (``"PendulumEnv.step"``).
        key: the action key.
        value: the action.
        dtype: the spec's dtype (``None``: any).
        device: the env's device (``None``: any real device).

    Returns:
        ``value`` itself when it already conforms, else a new tensor.

    Raises:
        TypeError: the dtype kind cannot be cast (bool to float, complex, float to int with
            fractions...).
        ValueError: the action is on the ``meta`` device, or a value is out of the range of
            the spec's dtype.

    Examples:
        >>> import torch
        >>> coerce_action("env.step", "action", torch.tensor([2]), torch.int8, None)
        tensor([2], dtype=torch.int8)
        >>> coerce_action("env.step", "action", torch.tensor([0.5]), torch.int8, None)
        Traceback (most recent call last):
        ...
        TypeError: env.step: the action 'action' has dtype torch.float32 but the spec expects dtype torch.int8; its values are not whole numbers (e.g. 0.5), so they cannot be cast.
    """
    if value.is_meta:
        raise ValueError(
            f"{where}: the action {key!r} is on the 'meta' device and holds no data; expected "
            f"a tensor on {device if device is not None else 'a real device'}."
        )
    if device is not None and value.device != device:
        value = value.to(device)
    if dtype is None or value.dtype == dtype:
        return value
    src, dst = _kind(value.dtype), _kind(dtype)
    if src == "complex" or dst == "complex":
        _refuse(where, key, dtype, value, "complex values are never cast")
    if dst == "float":
        if src == "bool":
            _refuse(where, key, dtype, value, "a bool action for a floating spec is refused")
        out = value.to(dtype)
        if src == "float" and bool((out.isinf() & value.isfinite()).any()):
            _refuse(
                where,
                key,
                dtype,
                value,
                f"some values overflow {dtype} (max {torch.finfo(dtype).max:g})",
                ValueError,
            )
        return out
    if dst == "bool":
        if not bool(((value == 0) | (value == 1)).all()):
            bad = value[(value != 0) & (value != 1)].flatten()[0].item()
            _refuse(
                where,
                key,
                dtype,
                value,
                f"only 0 and 1 can be cast to bool (got {bad})",
                ValueError,
            )
        return value.to(dtype)
    # an integer spec
    if src == "bool":
        return value.to(dtype)
    if src == "float":
        finite = value.isfinite()
        whole = finite & (value == value.trunc())
        if not bool(whole.all()):
            bad = value[~whole].flatten()[0].item()
            _refuse(
                where,
                key,
                dtype,
                value,
                f"its values are not whole numbers (e.g. {bad}), so they cannot be cast",
            )
    if value.numel():
        info = torch.iinfo(dtype)
        low, high = value.min().item(), value.max().item()
        if low < info.min or high > info.max:
            _refuse(
                where,
                key,
                dtype,
                value,
                f"values in [{low}, {high}] do not fit in [{info.min}, {info.max}]",
                ValueError,
            )
    return value.to(dtype)
