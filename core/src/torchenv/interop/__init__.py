"""torchenv.interop: torchenv envs and specs with TorchRL's collectors, modules and losses.

When torchrl is installed, torchenv registers its env and spec classes with TorchRL's abstract
base classes the moment both are imported, so TorchRL code takes torchenv objects as they are:
``Collector(env, policy)``, ``QValueModule(spec=env.action_spec)``, ``DQNLoss(...)``. TorchRL's own
env wrappers (its ``TransformedEnv`` and batched envs) take ``to_torchrl(env)``; a TorchRL-only env
enters torchenv through ``from_torchrl(env)``; specs convert exactly both ways.

Names load lazily: ``import torchenv`` installs the import hook and nothing else.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TorchRLFactory": "torchenv.interop._adapters",
    "TorchenvView": "torchenv.interop._adapters",
    "from_torchrl": "torchenv.interop._adapters",
    "to_torchrl": "torchenv.interop._adapters",
    "install_torchrl_hook": "torchenv.interop._hook",
    "is_registered_with_torchrl": "torchenv.interop._torchrl",
    "register_with_torchrl": "torchenv.interop._torchrl",
    "from_torchrl_spec": "torchenv.specs._torchrl",
    "is_torchrl_spec": "torchenv.specs._torchrl",
    "to_torchrl_spec": "torchenv.specs._torchrl",
    "to_gymnasium": "torchenv.interop._gymnasium",
    "to_sb3": "torchenv.interop._sb3",
    "spec_to_space": "torchenv.interop._spaces_out",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv.interop' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
