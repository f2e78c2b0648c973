"""The plugin's hook module: declares the ``envpool`` backend. Imports no simulator."""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="envpool",
            distribution="torchenv-envpool",
            simulator="envpool",
            supported=">=0.8.4",
            install='pip install "torchenv[envpool]"',
            description="envpool: Atari, MuJoCo and classic-control envs stepped in C++ threads, "
            "natively batched (num_envs=N; batch_size<N for the async mode).",
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "envpool":
        return None
    from torchenv_envpool._tasks import task_ids

    return task_ids()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "envpool":
        return None
    from torchenv_envpool._tasks import make_env

    return make_env(env_id, kwargs)
