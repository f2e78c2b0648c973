"""The plugin's hook module: declares the ``gymnasium`` and ``gym`` backends.

Imports no simulator: gym/gymnasium are imported only when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-gym"
_LIBRARIES = ("gymnasium", "gym")


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="gymnasium",
            distribution=_DIST,
            simulator="gymnasium",
            supported=">=0.29",
            install='pip install "torchenv[gymnasium]"',
            description="Gymnasium envs (classic control, Box2D, MuJoCo, Atari, ...), "
            "single or vectorised (num_envs=N).",
        ),
        Backend(
            name="gym",
            distribution=_DIST,
            simulator="gym",
            supported=">=0.23,<0.27",
            install='pip install "torchenv[gym]"',
            description="Legacy OpenAI gym envs (gym 0.23 to 0.26).",
        ),
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._backend import registered_ids, set_gym_backend

    with set_gym_backend(backend) as chosen:
        return registered_ids(chosen.backend)


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._backend import registered_ids, set_gym_backend
    from torchenv_gym._env import GymEnv

    with set_gym_backend(backend) as chosen:
        known = registered_ids(chosen.backend)
        if env_id not in known:
            from torchenv.registry import UnknownEnvError

            raise UnknownEnvError(backend, env_id, known)
        return GymEnv(env_id, **kwargs)


@hookimpl
def torchenv_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._raw import make_raw_loop

    return make_raw_loop(backend, env_id, kwargs)
