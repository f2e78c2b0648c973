"""``EnvClosedError``: what every env raises when it is stepped, reset or rolled out after ``close``."""

from __future__ import annotations

__all__ = ["EnvClosedError", "closed_error"]


class EnvClosedError(RuntimeError):
    """An env was used after, or while, being closed (e.g. from another thread).

    Every env raises it from ``reset``, ``step``, ``step_and_maybe_reset`` and ``rollout`` once
    closed (the check is in :class:`~torchenv.envs.EnvBase`); batched envs also when a worker
    finds its parent closed.

    >>> from torchenv.envs import PendulumEnv
    >>> env = PendulumEnv()
    >>> env.close()
    >>> env.rollout(3)
    Traceback (most recent call last):
    ...
    torchenv.envs._closed.EnvClosedError: PendulumEnv is closed: make a new env to step again
    """


def closed_error(env: object) -> EnvClosedError:
    """The error for a use of the closed ``env`` (``closed_env_id``: which env, for a batched env
    that must tell its own closing from a closed sub-environment's)."""
    error = EnvClosedError(f"{type(env).__name__} is closed: make a new env to step again")
    error.closed_env_id = id(env)
    return error
