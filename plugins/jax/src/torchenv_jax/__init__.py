"""torchenv-jax: JAX simulators (Brax, Jumanji) as batched torchenv envs, without copies.

``BraxEnv``/``BraxWrapper`` and ``JumanjiEnv``/``JumanjiWrapper`` follow TorchRL 0.14.1's names
and arguments; the backends ``brax`` and ``jumanji`` make them by name
(``torchenv.make("brax:ant", num_envs=1024)``, ``torchenv.make("jumanji:Snake-v1",
num_envs=64)``). Reset and step are ``jax.jit(jax.vmap(...))`` compiled once per batch size;
data crosses between JAX and torch through DLPack. Names are imported lazily: loading the
plugin's hook module imports neither JAX nor torch.

>>> import torchenv
>>> env = torchenv.make("brax:fast", num_envs=16, seed=0)
>>> env.rollout(5)["next", "observation"].shape
torch.Size([16, 5, 2])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BraxEnv": "torchenv_jax._brax",
    "BraxWrapper": "torchenv_jax._brax",
    "JaxEnv": "torchenv_jax._base",
    "JumanjiEnv": "torchenv_jax._jumanji",
    "JumanjiWrapper": "torchenv_jax._jumanji",
    "brax_env_names": "torchenv_jax._versions",
    "jumanji_env_names": "torchenv_jax._versions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv_jax' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv_jax._base import JaxEnv  # noqa: F401
    from torchenv_jax._brax import BraxEnv, BraxWrapper  # noqa: F401
    from torchenv_jax._jumanji import JumanjiEnv, JumanjiWrapper  # noqa: F401
    from torchenv_jax._versions import brax_env_names, jumanji_env_names  # noqa: F401
