"""torchenv-dmcontrol: the DeepMind Control Suite for torchenv.

Names are imported lazily, so that loading the plugin's hook module (at plugin discovery) imports
neither torch nor dm_control.

>>> from torchenv_dmcontrol import DMControlEnv
>>> env = DMControlEnv("cartpole", "swingup")
>>> env.rollout(3).batch_size
torch.Size([3])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "DMControlEnv": "torchenv_dmcontrol._env",
    "DMControlWrapper": "torchenv_dmcontrol._env",
    "TESTED_PAIRS": "torchenv_dmcontrol._versions",
    "check_pair": "torchenv_dmcontrol._versions",
    "dm_spec_to_spec": "torchenv_dmcontrol._specs",
    "task_ids": "torchenv_dmcontrol._suite",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_dmcontrol' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_dmcontrol._env import DMControlEnv, DMControlWrapper  # noqa: F401
    from torchenv_dmcontrol._specs import dm_spec_to_spec  # noqa: F401
    from torchenv_dmcontrol._suite import task_ids  # noqa: F401
    from torchenv_dmcontrol._versions import TESTED_PAIRS, check_pair  # noqa: F401
