"""Importing PettingZoo: the supported range and the install hint."""

from __future__ import annotations

import importlib
from types import ModuleType

from packaging.version import Version

from torchenv_pettingzoo._hooks import INSTALL, SUPPORTED

__all__ = ["check_supported", "import_pettingzoo"]

_LOW, _HIGH = Version("1.24.3"), Version("1.28")


def check_supported(module: ModuleType) -> None:
    """Raise an ``ImportError`` naming the supported range if PettingZoo's version is outside it.

    >>> import pettingzoo
    >>> check_supported(pettingzoo)
    """
    version = Version(module.__version__)
    if not _LOW <= version < _HIGH:
        raise ImportError(
            f"pettingzoo {version} is not supported by torchenv-pettingzoo (supported: "
            f"pettingzoo{SUPPORTED}). Install a supported version: {INSTALL}"
        )


def import_pettingzoo() -> ModuleType:
    """The ``pettingzoo`` module, checked against the supported range.

    >>> import_pettingzoo().__name__
    'pettingzoo'
    """
    try:
        module = importlib.import_module("pettingzoo")
    except ImportError as err:
        raise ImportError(f"PettingZoo is not installed. Install it with: {INSTALL}") from err
    check_supported(module)
    return module
