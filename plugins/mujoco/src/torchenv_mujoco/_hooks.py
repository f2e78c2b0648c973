"""The plugin's hook module: declares the ``mujoco`` backend. Imports no simulator."""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

TASK_NAMES = ("Ant", "HalfCheetah", "Hopper", "Humanoid", "InvertedPendulum", "Reacher", "Walker2d")


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="mujoco",
            distribution="torchenv-mujoco",
            simulator="mujoco",
            supported=">=3.0",
            install='pip install "torchenv[mujoco]"',
            description="MuJoCo directly, natively batched (mujoco.batch, threads): "
            "gymnasium's -v5 locomotion tasks and any MJCF model.",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "mujoco":
        return None
    return list(TASK_NAMES)


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "mujoco":
        return None
    if env_id not in TASK_NAMES:
        from torchenv.registry import UnknownEnvError

        raise UnknownEnvError(backend, env_id, TASK_NAMES)
    from torchenv_mujoco._env import MujocoEnv

    return MujocoEnv(env_id, **kwargs)
