"""The raw gym/gymnasium loop that ``torchenv bench`` compares ``GymEnv`` with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchenv_gym._backend import EXTERNAL_ENVS, register_external_envs, set_gym_backend

__all__ = ["make_raw_loop"]

# GymEnv's own arguments: they shape the torchenv side only.
_TORCHENV_ONLY = ("device", "categorical_action_encoding", "from_pixels", "pixels_only")


def make_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Callable[[int], int]:
    """``run(steps)``: ``env_id`` made by ``backend`` itself and stepped with random actions.

    ``num_envs=N`` makes gymnasium's own vector env (``make_vec``, its default autoreset); a
    single env is reset by hand when an episode ends, as a gymnasium user's loop does.
    """
    options = {k: v for k, v in kwargs.items() if k not in _TORCHENV_ONLY}
    num_envs = int(options.pop("num_envs", 0) or 0)
    mode = options.pop("vectorization_mode", None) or "sync"
    with set_gym_backend(backend) as chosen:
        gym = chosen.backend
        if env_id.startswith(tuple(EXTERNAL_ENVS)):
            register_external_envs(gym)
        if num_envs:
            if not hasattr(gym, "make_vec"):
                raise NotImplementedError("num_envs needs gymnasium>=1.0 for the raw loop")
            env = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **options)
        else:
            env = gym.make(env_id, **options)
    env.action_space.seed(0)

    def run(steps: int) -> int:
        env.reset(seed=0)
        sample = env.action_space.sample
        if num_envs:
            for _ in range(steps):
                env.step(sample())
            return steps * num_envs
        for _ in range(steps):
            out = env.step(sample())
            if out[2] or (len(out) == 5 and out[3]):
                env.reset()
        return steps

    run.close = env.close  # type: ignore[attr-defined]
    return run
