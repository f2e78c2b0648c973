"""Importing Melting Pot: the supported range and the install hint."""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from packaging.version import Version

from torchenv_meltingpot._hooks import INSTALL, SUPPORTED

__all__ = ["check_supported", "import_meltingpot"]

_LOW, _HIGH = Version("2.4"), Version("2.5")


def check_supported(version: Version) -> None:
    """Raise an ``ImportError`` naming the supported range if ``version`` is outside it.

    >>> check_supported(Version("2.4.1"))
    """
    if not _LOW <= version < _HIGH:
        raise ImportError(
            f"dm-meltingpot {version} is not supported by torchenv-meltingpot (supported: "
            f"dm-meltingpot{SUPPORTED}). Install a supported version: {INSTALL}"
        )


def import_meltingpot() -> ModuleType:
    """The ``meltingpot.substrate`` module, checked against the supported range.

    >>> import_meltingpot().__name__
    'meltingpot.substrate'
    """
    try:
        version = Version(importlib.metadata.version("dm-meltingpot"))
        module = importlib.import_module("meltingpot.substrate")
    except ImportError as err:  # PackageNotFoundError is an ImportError too
        raise ImportError(
            f"Melting Pot is not installed or does not import ({err}). Install it with: {INSTALL}"
        ) from err
    check_supported(version)
    return module
