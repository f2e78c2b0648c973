"""Process-wide default for ``TransformedEnv(auto_unwrap=None)`` (TorchRL's toggle)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

__all__ = ["auto_unwrap_transformed_env", "set_auto_unwrap_transformed_env"]

_ENV_VAR = "AUTO_UNWRAP_TRANSFORMED_ENV"
_DEFAULT = True
_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


def _parse(value: str) -> bool:
    low = value.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"{_ENV_VAR}: expected a boolean string such as 'True'/'False', got {value!r}")


_mode: bool | None = None if os.environ.get(_ENV_VAR) is None else _parse(os.environ[_ENV_VAR])


def auto_unwrap_transformed_env(allow_none: bool = False) -> bool | None:
    """Whether ``TransformedEnv(TransformedEnv(env))`` unwraps the inner env by default.

    Args:
        allow_none: return ``None`` (instead of the default ``True``) when nothing was set.

    >>> auto_unwrap_transformed_env()
    True
    """
    if _mode is None:
        return None if allow_none else _DEFAULT
    return _mode


class set_auto_unwrap_transformed_env(contextlib.ContextDecorator):
    """Sets the default of ``TransformedEnv(auto_unwrap=None)``: context manager, decorator or ``.set()``.

    The value is mirrored in the ``AUTO_UNWRAP_TRANSFORMED_ENV`` environment variable so that
    worker processes started meanwhile see it too.

    Args:
        mode: ``True`` to unwrap nested ``TransformedEnv`` instances, ``False`` to keep them.

    >>> with set_auto_unwrap_transformed_env(False):
    ...     auto_unwrap_transformed_env()
    False
    >>> auto_unwrap_transformed_env()
    True
    """

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._old: list[bool | None] = []

    def set(self) -> None:
        """Sets the mode for the rest of the process (no restore)."""
        global _mode
        self._old.append(_mode)
        _mode = self.mode
        os.environ[_ENV_VAR] = str(self.mode)

    def __enter__(self) -> set_auto_unwrap_transformed_env:
        self.set()
        return self

    def __exit__(self, *exc: Any) -> None:
        global _mode
        _mode = self._old.pop()
        if _mode is None:
            os.environ.pop(_ENV_VAR, None)
        else:
            os.environ[_ENV_VAR] = str(_mode)
