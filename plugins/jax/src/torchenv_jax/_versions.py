"""Importing JAX, Brax and Jumanji: the supported ranges, the install hints, the env lists."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from types import ModuleType

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchenv_jax._hooks import (
    BRAX_INSTALL,
    BRAX_SUPPORTED,
    JUMANJI_INSTALL,
    JUMANJI_SUPPORTED,
)

__all__ = ["import_brax", "import_jumanji", "brax_env_names", "jumanji_env_names"]


def _import(name: str, supported: str, install: str) -> ModuleType:
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        raise ImportError(f"{name} is not installed. Install it with: {install}") from err
    version = Version(getattr(module, "__version__", "0"))
    if version not in SpecifierSet(supported):
        raise ImportError(
            f"{name} {version} is not supported by torchenv-jax (supported: {name}{supported}). "
            f"Install a supported version: {install}"
        )
    return module


def import_brax() -> ModuleType:
    """The ``brax`` module (its ``envs`` loaded), checked against the supported range.

    >>> import_brax().__name__
    'brax'
    """
    if "brax.envs" in sys.modules:
        return _import("brax", BRAX_SUPPORTED, BRAX_INSTALL)
    # mujoco.mjx, which brax imports, prints "Failed to import warp" (its optional GPU backend)
    # to stdout on import: keep that out of the user's output
    with contextlib.redirect_stdout(io.StringIO()):
        module = _import("brax", BRAX_SUPPORTED, BRAX_INSTALL)
        importlib.import_module("brax.envs")
    return module


def import_jumanji() -> ModuleType:
    """The ``jumanji`` module, checked against the supported range.

    >>> import_jumanji().__name__
    'jumanji'
    """
    return _import("jumanji", JUMANJI_SUPPORTED, JUMANJI_INSTALL)


def brax_env_names() -> list[str]:
    """The names of Brax's env registry (``brax.envs._envs``), sorted.

    >>> {"ant", "fast", "humanoid"} <= set(brax_env_names())
    True
    """
    brax = import_brax()
    return sorted(brax.envs._envs)


def jumanji_env_names() -> list[str]:
    """The ids of Jumanji's registry (``jumanji.registered_environments()``), sorted.

    >>> "Snake-v1" in jumanji_env_names()
    True
    """
    return sorted(import_jumanji().registered_environments())
