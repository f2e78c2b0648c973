"""torchenv-gym: gym and gymnasium envs for torchenv.

Names are imported lazily, so that loading the plugin's hook module (at plugin discovery) imports
neither torch nor any simulator.

>>> from torchenv_gym import GymEnv
>>> env = GymEnv("CartPole-v1")
>>> env.rollout(3).batch_size
torch.Size([3])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BaseInfoDictReader": "torchenv.envs",
    "GymEnv": "torchenv_gym._env",
    "GymWrapper": "torchenv_gym._env",
    "default_info_dict_reader": "torchenv.envs",
    "gym_backend": "torchenv_gym._backend",
    "gym_space_to_spec": "torchenv.spaces",
    "register_gym_spec_conversion": "torchenv.spaces",
    "set_gym_backend": "torchenv_gym._backend",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv.envs import BaseInfoDictReader, default_info_dict_reader  # noqa: F401
    from torchenv.spaces import gym_space_to_spec, register_gym_spec_conversion  # noqa: F401
    from torchenv_gym._backend import gym_backend, set_gym_backend  # noqa: F401
    from torchenv_gym._env import GymEnv, GymWrapper  # noqa: F401
