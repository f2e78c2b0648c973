"""torchenv-envpool: envpool's C++ multi-threaded envs (Atari, MuJoCo, classic control), batched.

Names are imported lazily, so that loading the plugin's hook module (at plugin discovery) imports
neither torch nor envpool.

>>> import torchenv
>>> env = torchenv.make("envpool:CartPole-v1", num_envs=8, seed=0)
>>> env.batch_size
torch.Size([8])
>>> env.close()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "AsyncEnvPoolEnv": "torchenv_envpool._async",
    "MultiThreadedEnv": "torchenv_envpool._env",
    "MultiThreadedEnvWrapper": "torchenv_envpool._env",
    "task_ids": "torchenv_envpool._tasks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_envpool' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_envpool._async import AsyncEnvPoolEnv  # noqa: F401
    from torchenv_envpool._env import MultiThreadedEnv, MultiThreadedEnvWrapper  # noqa: F401
    from torchenv_envpool._tasks import task_ids  # noqa: F401
