"""Run :func:`~torchenv.interop.register_with_torchrl` as soon as torchrl is imported.

A meta-path finder watches for the top-level ``torchrl`` module; once that module has run, the
registration follows. If torchrl was imported before torchenv, the registration happens at once.
Setting ``TORCHENV_TORCHRL_INTEROP=0`` turns the automatic registration off.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from typing import Any

__all__ = ["install_torchrl_hook"]


class _AfterTorchrlImport:
    """A meta-path finder (duck-typed: ``importlib.abc`` costs milliseconds to import).

    It finds nothing itself; for ``torchrl`` it wraps the loader to register after it runs.
    """

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "torchrl":
            return None
        sys.meta_path.remove(self)  # one shot; also keeps the lookup below from recursing
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            from torchenv.interop._torchrl import register_with_torchrl

            register_with_torchrl()

        loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


def install_torchrl_hook() -> None:
    """Register with torchrl now if it is imported, else when it is (idempotent)."""
    if os.environ.get("TORCHENV_TORCHRL_INTEROP", "1") == "0":
        return
    if "torchrl" in sys.modules:
        from torchenv.interop._torchrl import register_with_torchrl

        register_with_torchrl()
        return
    if not any(isinstance(f, _AfterTorchrlImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTorchrlImport())
