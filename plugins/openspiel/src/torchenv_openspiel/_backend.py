"""Importing OpenSpiel (``pyspiel``): the supported range and the install hint."""

from __future__ import annotations

import importlib
import importlib.metadata
from types import ModuleType

from packaging.version import Version

from torchenv_openspiel._hooks import INSTALL, SUPPORTED

__all__ = ["check_supported", "import_pyspiel", "openspiel_version"]

_LOW, _HIGH = Version("1.3"), Version("2.1")


def openspiel_version() -> Version:
    """The installed ``open_spiel`` distribution's version.

    >>> openspiel_version() >= Version("1.3")
    True
    """
    return Version(importlib.metadata.version("open_spiel"))


def check_supported(version: Version) -> None:
    """Raise an ``ImportError`` naming the supported range if ``version`` is outside it.

    >>> check_supported(Version("2.0.2"))
    >>> check_supported(Version("1.2"))
    Traceback (most recent call last):
    ...
    ImportError: open_spiel 1.2 is not supported by torchenv-openspiel (supported: open_spiel>=1.3,<2.1). Install a supported version: pip install "torchenv[openspiel]"
    """
    if not _LOW <= version < _HIGH:
        raise ImportError(
            f"open_spiel {version} is not supported by torchenv-openspiel (supported: "
            f"open_spiel{SUPPORTED}). Install a supported version: {INSTALL}"
        )


def import_pyspiel() -> ModuleType:
    """The ``pyspiel`` module, checked against the supported range.

    >>> import_pyspiel().__name__
    'pyspiel'
    """
    try:
        module = importlib.import_module("pyspiel")
        version = openspiel_version()
    except ImportError as err:  # PackageNotFoundError is an ImportError too
        raise ImportError(f"OpenSpiel is not installed. Install it with: {INSTALL}") from err
    check_supported(version)
    return module
