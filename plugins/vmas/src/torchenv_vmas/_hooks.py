"""The plugin's hook module: declares the ``vmas`` backend.

Imports no simulator (and not torch): VMAS is imported only when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-vmas"
SUPPORTED = ">=1.4.3,<1.6"
INSTALL = 'pip install "torchenv[vmas]"'


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="vmas",
            distribution=_DIST,
            simulator="vmas",
            supported=SUPPORTED,
            install=INSTALL,
            description="VMAS multi-agent scenarios, natively batched in torch (num_envs=N).",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "vmas":
        return None
    from torchenv_vmas._backend import scenario_names

    return scenario_names()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "vmas":
        return None
    from torchenv_vmas._backend import scenario_names
    from torchenv_vmas._env import VmasEnv

    known = scenario_names()
    if env_id not in known:
        from torchenv.registry import UnknownEnvError

        raise UnknownEnvError(backend, env_id, known)
    if kwargs.get("num_envs") is None:
        raise TypeError(
            f"vmas:{env_id}: num_envs is required (an int >= 1: VMAS envs are natively batched), "
            f"got {kwargs.get('num_envs')!r}; e.g. torchenv.make('vmas:{env_id}', num_envs=32)"
        )
    return VmasEnv(env_id, **kwargs)
