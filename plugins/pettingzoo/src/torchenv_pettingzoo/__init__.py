"""torchenv-pettingzoo: PettingZoo's parallel and turn-based (AEC) envs as torchenv envs.

``PettingZooEnv`` and ``PettingZooWrapper`` follow TorchRL 0.14.1's names and defaults, on every
PettingZoo from 1.24.3 to 1.27 (MPE from ``mpe2`` where PettingZoo dropped it); the backend
``pettingzoo`` makes them by name. Names are imported lazily, so that loading the plugin's hook
module imports neither torch nor PettingZoo.

>>> import torchenv
>>> env = torchenv.make("pettingzoo:mpe/simple_spread_v3", seed=0)
>>> env.rollout(5)["next", "agent", "observation"].shape
torch.Size([5, 3, 18])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "PettingZooEnv": "torchenv_pettingzoo._env",
    "PettingZooWrapper": "torchenv_pettingzoo._env",
    "task_names": "torchenv_pettingzoo._tasks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_pettingzoo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_pettingzoo._env import PettingZooEnv, PettingZooWrapper  # noqa: F401
    from torchenv_pettingzoo._tasks import task_names  # noqa: F401
