"""The plugin's hook module: declares the ``brax`` and ``jumanji`` backends.

Imports neither JAX nor a simulator (nor torch): they are imported when an env is listed or made.
"""

from __future__ import annotations

from typing import Any

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-jax"
BRAX_SUPPORTED = ">=0.13,<0.15"
JUMANJI_SUPPORTED = ">=1.0,<1.2"
BRAX_INSTALL = 'pip install "torchenv[brax]"'
JUMANJI_INSTALL = 'pip install "torchenv[jumanji]"'


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="brax",
            distribution=_DIST,
            simulator="brax",
            supported=BRAX_SUPPORTED,
            install=BRAX_INSTALL,
            description="Brax physics in JAX, jit+vmap batched (num_envs=N), differentiable.",
            extra_distributions=("jax",),
        ),
        Backend(
            name="jumanji",
            distribution=_DIST,
            simulator="jumanji",
            supported=JUMANJI_SUPPORTED,
            install=JUMANJI_INSTALL,
            description="Jumanji's JAX environments (Snake, Sokoban...), jit+vmap batched.",
            extra_distributions=("jax",),
        ),
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend == "brax":
        from torchenv_jax._versions import brax_env_names

        return brax_env_names()
    if backend == "jumanji":
        from torchenv_jax._versions import jumanji_env_names

        return jumanji_env_names()
    return None


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend not in ("brax", "jumanji"):
        return None
    from torchenv.registry import UnknownEnvError

    if backend == "brax":
        from torchenv_jax._brax import BraxEnv as cls
        from torchenv_jax._versions import brax_env_names as names
    else:
        from torchenv_jax._jumanji import JumanjiEnv as cls
        from torchenv_jax._versions import jumanji_env_names as names

    known = names()
    if env_id not in known:
        raise UnknownEnvError(backend, env_id, known)
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", None)
    if num_envs is not None:
        if "batch_size" in kwargs:
            raise TypeError(f"{backend}:{env_id}: give num_envs or batch_size, not both")
        kwargs["batch_size"] = (num_envs,)
    return cls(env_id, **kwargs)
