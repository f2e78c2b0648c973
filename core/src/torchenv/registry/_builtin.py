"""Hook module of the ``builtin`` backend: the pure-torch envs that need no simulator.

Declared by the core's own entry point (``builtin = "torchenv.registry._builtin"``). It lives in
the registry layer, not in ``torchenv.envs``, so that loading it imports neither torch nor the envs
layer: ``torchenv backends`` stays fast. The env classes are imported only inside the hooks.
"""

from __future__ import annotations

import importlib
from typing import Any

import pluggy

hookimpl = pluggy.HookimplMarker("torchenv")

BACKEND = "builtin"
# env id -> name of the class in torchenv.envs
ENVS: dict[str, str] = {
    "CartPole": "CartPoleEnv",
    "Pendulum": "PendulumEnv",
    "TicTacToe": "TicTacToeEnv",
}


@hookimpl
def torchenv_backends() -> list[Any]:
    from torchenv.registry import Backend

    return [
        Backend(
            name=BACKEND,
            distribution="torchenv",
            simulator=None,
            description="pure-torch envs shipped with torchenv (no simulator)",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != BACKEND:
        return None
    return sorted(ENVS)


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != BACKEND:
        return None
    class_name = ENVS.get(env_id)
    if class_name is None:
        from torchenv.registry import UnknownEnvError

        raise UnknownEnvError(BACKEND, env_id, ENVS)
    env_class = getattr(importlib.import_module("torchenv.envs"), class_name)
    return env_class(**kwargs)
