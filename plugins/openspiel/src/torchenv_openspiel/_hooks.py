"""The plugin's hook module: declares the ``openspiel`` backend.

Imports no simulator (and not torch): OpenSpiel is imported only when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-openspiel"
SUPPORTED = ">=1.3,<2.1"
INSTALL = 'pip install "torchenv[openspiel]"'


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="openspiel",
            distribution=_DIST,
            simulator="open_spiel",
            supported=SUPPORTED,
            install=INSTALL,
            description="OpenSpiel games: turn-based, simultaneous-move and chance games "
            "(poker, go, chess, ...) as multi-agent envs.",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "openspiel":
        return None
    from torchenv_openspiel._games import game_names

    return game_names()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "openspiel":
        return None
    from torchenv_openspiel._env import OpenSpielEnv
    from torchenv_openspiel._games import check_game_name

    check_game_name(env_id)  # UnknownEnvError with suggestions for an unknown game
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", None)
    if num_envs not in (None, 1):
        raise ValueError(
            f"openspiel:{env_id}: num_envs={num_envs!r}; OpenSpiel envs are single envs: "
            "batch them with torchenv.envs.SerialEnv / ParallelEnv(num_workers, make_env)"
        )
    seed = kwargs.pop("seed", None)
    env = OpenSpielEnv(env_id, **kwargs)
    if seed is not None:
        env.set_seed(seed)
    return env


@hookimpl
def torchenv_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "openspiel":
        return None
    from torchenv_openspiel._raw import make_raw_loop

    return make_raw_loop(env_id, kwargs)
