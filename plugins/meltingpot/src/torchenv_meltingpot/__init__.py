"""torchenv-meltingpot: Melting Pot's substrates as multi-agent torchenv envs.

``MeltingpotEnv`` and ``MeltingpotWrapper`` follow TorchRL 0.14.1's names and arguments
(``max_steps``, ``categorical_actions``, ``group_map``); the backend ``meltingpot`` makes
substrates by name. Names are imported lazily, so that loading the plugin's hook module imports
neither torch nor Melting Pot (which imports tensorflow).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "MeltingpotEnv": "torchenv_meltingpot._env",
    "MeltingpotWrapper": "torchenv_meltingpot._env",
    "substrate_names": "torchenv_meltingpot._substrates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_meltingpot' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_meltingpot._env import MeltingpotEnv, MeltingpotWrapper  # noqa: F401
    from torchenv_meltingpot._substrates import substrate_names  # noqa: F401
