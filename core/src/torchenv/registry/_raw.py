"""The raw-simulator baselines that plugins offer to ``torchenv bench`` (``torchenv_raw_loop``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchenv.registry._make import _call_owner, _find_bare, _require, _resolve, split_name

__all__ = ["raw_loop"]


def raw_loop(name: str, /, **kwargs: Any) -> Callable[[int], int] | None:
    """The backend's raw-simulator loop for env ``name``, or ``None`` when it offers none.

    >>> raw_loop("builtin:Pendulum") is None  # the builtin envs have no simulator beneath
    True
    """
    backend_name, env_id = split_name(name)
    if backend_name is None:
        backend, record = _find_bare(env_id)
    else:
        backend, record = _resolve(backend_name)
    _require(backend, record)
    return _call_owner(
        "torchenv_raw_loop", record, backend=backend.name, env_id=env_id, kwargs=dict(kwargs)
    )
