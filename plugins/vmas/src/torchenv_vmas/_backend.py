"""Importing VMAS: the supported range, the install hint and the scenario list."""

from __future__ import annotations

import importlib
from types import ModuleType

from packaging.version import Version

from torchenv_vmas._hooks import INSTALL, SUPPORTED

__all__ = ["import_vmas", "check_supported", "scenario_names"]

_LOW, _HIGH = Version("1.4.3"), Version("1.6")


def check_supported(module: ModuleType) -> None:
    """Raise an ``ImportError`` naming the supported range if VMAS's version is outside it.

    >>> import vmas
    >>> check_supported(vmas)
    """
    version = Version(module.__version__)
    if not _LOW <= version < _HIGH:
        raise ImportError(
            f"vmas {version} is not supported by torchenv-vmas (supported: vmas{SUPPORTED}). "
            f"Install a supported version: {INSTALL}"
        )


def import_vmas() -> ModuleType:
    """The ``vmas`` module, checked against the supported range.

    >>> import_vmas().__name__
    'vmas'
    """
    try:
        module = importlib.import_module("vmas")
    except ImportError as err:
        raise ImportError(f"VMAS is not installed. Install it with: {INSTALL}") from err
    check_supported(module)
    return module


def scenario_names() -> list[str]:
    """VMAS's own scenarios (its ``scenarios``, ``mpe_scenarios`` and ``debug_scenarios``), sorted.

    >>> {"balance", "navigation", "simple_spread"} <= set(scenario_names())
    True
    """
    vmas = import_vmas()
    return sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios})
