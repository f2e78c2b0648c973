"""torchenv-openspiel: OpenSpiel's games as multi-agent torchenv envs.

``OpenSpielEnv`` and ``OpenSpielWrapper`` follow TorchRL 0.14.1's names and arguments
(``group_map``, ``categorical_actions``, ``return_state``, ``chance_sampler``); the backend
``openspiel`` makes them by name, listing every game OpenSpiel registers. Names are imported
lazily, so that loading the plugin's hook module imports neither torch nor OpenSpiel.

>>> import torchenv
>>> env = torchenv.make("openspiel:tic_tac_toe", categorical_actions=True)
>>> env.reset()["agents", "action_mask"].shape
torch.Size([2, 9])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "OpenSpielEnv": "torchenv_openspiel._env",
    "OpenSpielWrapper": "torchenv_openspiel._env",
    "game_names": "torchenv_openspiel._games",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_openspiel' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_openspiel._env import OpenSpielEnv, OpenSpielWrapper  # noqa: F401
    from torchenv_openspiel._games import game_names  # noqa: F401
