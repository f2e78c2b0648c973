"""``check_finite``: report the first NaN or infinity in an env's actions, observations, rewards.

A simulator fed a NaN action (MuJoCo, gymnasium's MuJoCo tasks) goes on returning NaN
observations and rewards with no Python-level sign. Every :class:`~torchenv.envs.EnvBase`
therefore looks at the floating-point actions it receives and the observations and rewards it
returns, on every step path (``step``, ``step_and_maybe_reset``, the direct array paths,
``rollout``, batched envs in the parent), according to its ``check_finite`` mode:

* ``"warn"`` (default): one :class:`RuntimeWarning` per env, for the first non-finite value,
  naming the key and the batch rows concerned; the env then stops looking (it costs nothing).
* ``"raise"``: :class:`NonFiniteError` at every step that has one.
* ``"ignore"``: no look at all.

The look is one reduction per tensor (``x.sum()`` is finite when every element is; an overflow
of the sum to infinity is ruled out by the detailed look that follows a failure), made by numpy
on cpu tensors (half torch's cost on small ones) and on the direct paths' arrays before they
become tensors; details only on failure. It adds about 1-2 us per float entry and step.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
from numpy import ndarray
from tensordict import TensorDict

__all__ = ["NonFiniteError", "check_finite_mode", "check_step", "check_values"]

MODES = ("warn", "raise", "ignore")

_reduce = np.add.reduce


class NonFiniteError(ValueError):
    """An env received or produced a NaN or infinite value (``check_finite="raise"``).

    Attributes:
        key: the entry (an action, observation or reward key).
        rows: the batch indices that hold a non-finite value (empty for an unbatched env).
    """

    def __init__(self, message: str, key: Any, rows: list) -> None:
        super().__init__(message)
        self.key = key
        self.rows = rows


def check_finite_mode(value: Any) -> str:
    """``value`` if it is a ``check_finite`` mode, else ``ValueError`` naming the choices."""
    if value not in MODES:
        raise ValueError(
            f"check_finite must be one of {', '.join(map(repr, MODES))}; got {value!r}."
        )
    return value


def _float_keys(env: Any) -> tuple[list, list]:
    """The floating-point action keys and observation/reward keys of ``env``."""

    def floats(spec: Any) -> list:
        out = []
        for key in spec.keys(True, True):
            dtype = getattr(spec[key], "dtype", None)
            if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
                out.append(key)
        return out

    outputs = floats(env.output_spec["full_observation_spec"])
    outputs += floats(env.output_spec["full_reward_spec"])
    return floats(env.input_spec["full_action_spec"]), outputs


def _finite(value: Any) -> bool:
    return math.isfinite(_total(value))


def _rows(value: torch.Tensor, batch_dims: int) -> list:
    """The batch indices (tuples) of ``value`` that hold a non-finite element."""
    bad = ~torch.isfinite(value)
    if not bool(bad.any()):
        return []
    if batch_dims == 0:
        return [()]
    bad = bad.reshape(*value.shape[:batch_dims], -1).any(-1)
    return [tuple(i) for i in bad.nonzero().tolist()]


def _report(
    env: Any, what: str, key: Any, value: torch.Tensor, batch_dims: int, prefix: tuple = ()
) -> None:
    rows = [(*prefix, *row) for row in _rows(value.detach(), batch_dims)]
    if not rows:  # the sum overflowed: every element is finite
        return
    bad = ~torch.isfinite(value.detach())
    kinds = []
    if bool(torch.isnan(value.detach()).any()):
        kinds.append("NaN")
    if bool(torch.isinf(value.detach()).any()):
        kinds.append("inf")
    where = (
        ""
        if rows == [()]
        else f" at batch index {', '.join(map(str, rows[:8]))}"
        + (f" (and {len(rows) - 8} more rows)" if len(rows) > 8 else "")
    )
    name = type(env).__name__
    message = (
        f"{name}: non-finite {what} {key!r}{where}: {'/'.join(kinds)} in "
        f"{int(bad.sum())} of {value.numel()} values. The simulator's outputs from here on are "
        "not trustworthy. (check_finite='raise' raises this, 'ignore' turns the check off; "
        "'warn' reports once per env.)"
    )
    mode = env.__dict__["_check_finite"]
    if mode == "raise":
        raise NonFiniteError(message, key, rows)
    env.__dict__["_finite_on"] = False  # warn once per env
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def check_values(env: Any, actions: Any, outputs: Any, batch_dims: int) -> None:
    """Look at the float ``actions`` and ``outputs`` (TensorDicts or ``{key: tensor or numpy
    array}`` dicts, ``None`` to skip) of one step of ``env``; report the first non-finite one.

    The common case (all finite) is one reduction per tensor and a dict lookup per key; the
    details (which key, which rows) are computed only when a reduction is not finite."""
    cache = env.__dict__["_cache"]
    keys = cache.get("finite_keys")
    if keys is None:
        keys = cache["finite_keys"] = _float_keys(env)
    action_keys, output_keys = keys
    if (actions is None or _all_finite(actions, action_keys)) and (
        outputs is None or _all_finite(outputs, output_keys)
    ):
        return
    _find_and_report(env, actions, outputs, batch_dims, keys)


def _all_finite(data: Any, keys: list) -> bool:
    """Whether every tensor of ``data`` at ``keys`` sums to a finite number (the fast look)."""
    if type(data) is TensorDict:
        src = data._tensordict
    elif type(data) is dict:
        src = data
    else:
        src = None
    isfinite = math.isfinite
    for key in keys:
        if src is not None and (type(key) is str or src is data):
            value = src.get(key)
        else:
            try:
                value = data.get(key, None)
            except RuntimeError:  # a lazy stack of different shapes: the detailed look
                return False
        if value is None:
            continue
        if not isfinite(_total(value)):
            return False
    return True


def _total(value: Any) -> float:
    """The sum of ``value``'s elements (an array or a tensor; 0.0 for anything else), by the
    cheapest call for its size: a Python sum of the list of a small array or tensor of up to
    two dims (3-4x cheaper than a numpy or torch reduction), the library's reduction otherwise."""
    if type(value) is ndarray:
        dims = value.ndim
        if dims < 3 and value.size <= 64:
            return _list_sum(value.tolist(), dims)
        return _reduce(value, None)
    if not isinstance(value, torch.Tensor):
        return 0.0
    dims = value.dim()
    if dims < 3 and value.numel() <= 64:
        return _list_sum(value.tolist(), dims)
    return value.sum().item()


def _list_sum(values: Any, dims: int) -> float:
    if dims == 1:
        return sum(values)
    if dims == 2:
        return sum(map(sum, values))
    return values


def _find_and_report(env: Any, actions: Any, outputs: Any, batch_dims: int, keys: tuple) -> None:
    action_keys, output_keys = keys
    for what, data, names in (("action", actions, action_keys), ("output", outputs, output_keys)):
        if data is None:
            continue
        for key in names:
            for prefix, value, dims in _parts(data, key, batch_dims):
                if value is not None and not _finite(value):
                    if type(value) is ndarray:
                        value = torch.from_numpy(value)
                    kind = what if what == "action" else _output_kind(env, key)
                    _report(env, kind, key, value, dims, prefix)
                    if not env.__dict__["_finite_on"]:
                        return


def _parts(data: Any, key: Any, batch_dims: int) -> list:
    """``[(row prefix, value, batch dims)]``: one part, or one per member of a lazy stack whose
    members hold ``key`` with different shapes."""
    try:
        return [((), data.get(key, None), batch_dims)]
    except RuntimeError:  # a lazy stack of different shapes (along dim 0 here)
        members = getattr(data, "tensordicts", None)
        if members is None or getattr(data, "stack_dim", 0) != 0:
            return []
        return [((i,), td.get(key, None), batch_dims - 1) for i, td in enumerate(members)]


def _output_kind(env: Any, key: Any) -> str:
    return (
        "reward" if key in env.output_spec["full_reward_spec"].keys(True, True) else "observation"
    )


def check_step(env: Any, tensordict: Any, next_td: Any) -> None:
    """:func:`check_values` for a step: actions from ``tensordict``, outputs from ``next_td``."""
    check_values(env, tensordict, next_td, next_td.batch_dims)
