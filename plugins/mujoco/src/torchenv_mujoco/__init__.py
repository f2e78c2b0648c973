"""torchenv-mujoco: MuJoCo directly, natively batched and multi-threaded.

Names are imported lazily, so that loading the plugin's hook module (at plugin discovery) imports
neither torch nor MuJoCo.

>>> import torchenv
>>> env = torchenv.make("mujoco:HalfCheetah", num_envs=8, num_threads=2)
>>> env.batch_size
torch.Size([8])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "MujocoEnv": "torchenv_mujoco._env",
    "TASKS": "torchenv_mujoco._tasks",
    "Task": "torchenv_mujoco._tasks",
    "batch_available": "torchenv_mujoco._versions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_mujoco' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_mujoco._env import MujocoEnv  # noqa: F401
    from torchenv_mujoco._tasks import TASKS, Task  # noqa: F401
    from torchenv_mujoco._versions import batch_available  # noqa: F401
