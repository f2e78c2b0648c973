"""The plugin's hook module: declares the ``pettingzoo`` backend.

Imports no simulator (and not torch): PettingZoo is imported only when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-pettingzoo"
SUPPORTED = ">=1.24.3,<1.28"
INSTALL = 'pip install "torchenv[pettingzoo]"'  # MPE on PettingZoo >= 1.26: pip install mpe2


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="pettingzoo",
            distribution=_DIST,
            simulator="pettingzoo",
            supported=SUPPORTED,
            install=INSTALL,
            description="PettingZoo multi-agent envs, parallel and turn-based (AEC); "
            "MPE from mpe2 on PettingZoo >= 1.26.",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "pettingzoo":
        return None
    from torchenv_pettingzoo._tasks import task_names

    return task_names()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "pettingzoo":
        return None
    from torchenv_pettingzoo._env import PettingZooEnv
    from torchenv_pettingzoo._tasks import find_task

    task = find_task(env_id)  # UnknownEnvError with suggestions for an unknown id
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", None)
    if num_envs not in (None, 1):
        raise ValueError(
            f"pettingzoo:{env_id}: num_envs={num_envs!r}; PettingZoo envs are single envs: "
            "batch them with torchenv.envs.SerialEnv / ParallelEnv(num_workers, make_env)"
        )
    if kwargs.get("parallel") is None:
        kwargs["parallel"] = task.has_parallel()
    if kwargs.get("use_mask") is None:
        kwargs["use_mask"] = not kwargs["parallel"]  # AEC envs need it
    return PettingZooEnv(task.name, **kwargs)


@hookimpl
def torchenv_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "pettingzoo":
        return None
    from torchenv_pettingzoo._raw import make_raw_loop

    return make_raw_loop(env_id, kwargs)
