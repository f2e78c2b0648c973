"""The plugin's hook module: declares the ``dmcontrol`` backend.

Imports no simulator (dm_control and mujoco are imported when an env is listed or made); the
dm_control / mujoco pair is checked from installed metadata, so ``torchenv backends`` reports an
unsupported pair, with the pair to install, instead of a crash at first use.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl
from torchenv_dmcontrol._versions import (
    SUPPORTED,
    installed_pair_problem,
)

BACKEND = "dmcontrol"


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name=BACKEND,
            distribution="torchenv-dmcontrol",
            simulator="dm_control",
            supported=SUPPORTED,
            install='pip install "torchenv[dmcontrol]"',
            description="DeepMind Control Suite tasks (domain/task, e.g. cheetah/run), "
            "states or pixels.",
            aliases=("dm_control",),
            extra_distributions=("mujoco",),
            compatibility=installed_pair_problem,
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != BACKEND:
        return None
    from torchenv_dmcontrol._suite import task_ids

    return task_ids()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != BACKEND:
        return None
    from torchenv_dmcontrol._env import DMControlEnv
    from torchenv_dmcontrol._suite import split_task_id

    domain, task = split_task_id(env_id)
    return DMControlEnv(domain, task, **kwargs)
