"""The plugin's hook module: declares the ``meltingpot`` backend.

Imports no simulator (and not torch): Melting Pot (which imports tensorflow) is imported only
when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-meltingpot"
SUPPORTED = ">=2.4,<2.5"
INSTALL = 'pip install "torchenv[meltingpot]"'


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="meltingpot",
            distribution=_DIST,
            simulator="dm-meltingpot",
            supported=SUPPORTED,
            install=INSTALL,
            description="Melting Pot substrates: many-agent social dilemmas in pixels.",
            extra_distributions=("dmlab2d",),
        )
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend != "meltingpot":
        return None
    from torchenv_meltingpot._substrates import substrate_names

    return substrate_names()


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend != "meltingpot":
        return None
    from torchenv_meltingpot._env import MeltingpotEnv
    from torchenv_meltingpot._substrates import check_substrate

    check_substrate(env_id)  # UnknownEnvError (or the scenario's reason) for other ids
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", None)
    if num_envs not in (None, 1):
        raise ValueError(
            f"meltingpot:{env_id}: num_envs={num_envs!r}; Melting Pot substrates are single "
            "envs: batch them with torchenv.envs.SerialEnv / ParallelEnv(num_workers, make_env)"
        )
    seed = kwargs.pop("seed", None)
    env = MeltingpotEnv(env_id, **kwargs)
    if seed is not None:
        env.set_seed(seed)
    return env
