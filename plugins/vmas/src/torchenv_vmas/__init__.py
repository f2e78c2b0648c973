"""torchenv-vmas: VMAS multi-agent scenarios as natively batched torchenv envs.

``VmasEnv`` and ``VmasWrapper`` follow TorchRL 0.14.1's names and defaults; the backend
``vmas`` makes them by name (``torchenv.make("vmas:balance", num_envs=1024)``). Names are
imported lazily, so that loading the plugin's hook module imports neither torch nor VMAS.

>>> import torchenv
>>> env = torchenv.make("vmas:balance", num_envs=16, seed=0)
>>> env.rollout(5)["next", "agents", "observation"].shape
torch.Size([16, 5, 3, 16])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "VmasEnv": "torchenv_vmas._env",
    "VmasWrapper": "torchenv_vmas._env",
    "scenario_names": "torchenv_vmas._backend",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_vmas' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_vmas._backend import scenario_names  # noqa: F401
    from torchenv_vmas._env import VmasEnv, VmasWrapper  # noqa: F401
