"""The seeded reset of the exports (gymnasium, SB3): ``reset(seed=s)`` as the simulator's own.

``EnvBase.set_seed`` follows TorchRL (a gym env resets itself inside ``set_seed``), so an export
whose ``reset(seed=s)`` called ``set_seed(s)`` then ``reset()`` would start the simulator's second
episode for ``s``. Envs whose reset takes a seed (every :class:`~torchenv.envs.ArrayEnv`, also
under transforms) are reset with it, which starts the first one, as the raw simulator's
``reset(seed=s)``; other envs are seeded with ``set_seed`` and then reset.
"""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

__all__ = ["seeded_reset"]


def _innermost(env: Any) -> Any:
    while hasattr(env, "base_env"):
        env = env.base_env
    return env


def seeded_reset(env: Any, seed: int | None) -> TensorDictBase:
    """``env.reset()`` starting the episode that the simulator starts for ``seed``."""
    from torchenv.envs import ArrayEnv

    if seed is None:
        return env.reset()
    if isinstance(_innermost(env), ArrayEnv):
        return env.reset(seed=int(seed))
    env.set_seed(int(seed))
    return env.reset()
