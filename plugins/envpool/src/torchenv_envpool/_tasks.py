"""envpool's registry: task ids, and pools built from a task id with clear errors.

envpool validates its arguments with bare ``assert`` statements (an unknown task, ``num_envs=0``)
or ``Config.__new__() got an unexpected keyword argument``; the helpers here check first and name
what was expected instead.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

__all__ = ["build_pool", "make_env", "normalize_task_id", "task_ids"]

INSTALL = 'pip install "torchenv[envpool]"'


def import_envpool() -> Any:
    """``envpool``, or an ``ImportError`` saying how to install it."""
    try:
        return importlib.import_module("envpool")
    except ImportError as err:
        raise ImportError(
            f"The envpool backend needs the envpool package ({err}). Install it with: {INSTALL}"
        ) from err


@functools.cache
def _ids() -> tuple[str, ...]:
    return tuple(sorted(import_envpool().list_all_envs()))


def task_ids() -> list[str]:
    """The task ids envpool registers (``"Pong-v5"``, ``"HalfCheetah-v5"``, ``"CartPole-v1"``, ...)."""
    return list(_ids())


def normalize_task_id(task_id: str) -> str:
    """``task_id`` as envpool names it (``"ALE/Pong-v5"`` → ``"Pong-v5"``, as TorchRL does), or
    :class:`~torchenv.registry.UnknownEnvError` with close matches."""
    if not isinstance(task_id, str):
        raise TypeError(f"env_name: expected an envpool task id (str), got {task_id!r}.")
    name = task_id.removeprefix("ALE/")
    known = _ids()
    if name not in known:
        from torchenv.registry import UnknownEnvError

        raise UnknownEnvError("envpool", task_id, known)
    return name


def _check_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}.")
    return value


def build_pool(
    task_id: str,
    num_envs: int,
    batch_size: int | None = None,
    config: dict[str, Any] | None = None,
) -> Any:
    """``envpool.make(task_id, env_type="gymnasium", num_envs=..., **config)``, checked.

    ``batch_size`` (envpool's, ``<= num_envs``) is given only for the async mode.
    """
    envpool = import_envpool()
    name = normalize_task_id(task_id)
    _check_count("num_envs", num_envs)
    config = dict(config or {})
    for key in ("num_envs", "env_type", "task_id"):
        if key in config:
            raise ValueError(
                f"create_env_kwargs: {key!r} is set by the env itself (num_workers / num_envs, "
                f"env_name); remove it from create_env_kwargs."
            )
    if batch_size is not None:
        _check_count("batch_size", batch_size)
        if batch_size > num_envs:
            raise ValueError(
                f"batch_size: expected at most num_envs={num_envs} (envs stepped per call), "
                f"got {batch_size}."
            )
        config["batch_size"] = batch_size
    fields = _config_keys(envpool, name)
    unknown = sorted(set(config) - set(fields))
    if unknown:
        raise ValueError(
            f"create_env_kwargs: envpool's {name!r} has no option {', '.join(map(repr, unknown))}; "
            f"its options are {', '.join(sorted(fields))}."
        )
    return envpool.make(name, env_type="gymnasium", num_envs=num_envs, **config)


@functools.cache
def _config_keys(envpool: Any, name: str) -> tuple[str, ...]:
    spec = envpool.make_spec(name)
    return tuple(spec.config._fields)


# keyword arguments of make("envpool:...") that are the torchenv env's, not envpool's
_ENV_KWARGS = ("device", "categorical_action_encoding", "allow_done_after_reset", "run_type_checks")


def make_env(env_id: str, kwargs: dict[str, Any]) -> Any:
    """What ``torchenv.make("envpool:<env_id>", **kwargs)`` builds.

    ``num_envs`` (default 1) envs; ``batch_size`` smaller than ``num_envs`` gives the async env
    (:class:`~torchenv_envpool.AsyncEnvPoolEnv`), otherwise a
    :class:`~torchenv_envpool.MultiThreadedEnv`. Other keywords are envpool options (``seed``,
    ``num_threads``, ``max_episode_steps``, ``frame_skip``, ...), also accepted as
    ``create_env_kwargs={...}``.
    """
    kwargs = dict(kwargs)
    num_envs = kwargs.pop("num_envs", kwargs.pop("num_workers", 1))
    batch_size = kwargs.pop("batch_size", None)
    create = dict(kwargs.pop("create_env_kwargs", None) or {})
    env_kwargs = {key: kwargs.pop(key) for key in _ENV_KWARGS if key in kwargs}
    create.update(kwargs)
    normalize_task_id(env_id)
    if batch_size is not None and not isinstance(batch_size, bool) and isinstance(batch_size, int):
        if batch_size != num_envs:
            from torchenv_envpool._async import AsyncEnvPoolEnv

            return AsyncEnvPoolEnv(
                env_id,
                num_envs=num_envs,
                batch_size=batch_size,
                create_env_kwargs=create,
                **env_kwargs,
            )
        batch_size = None
    if batch_size is not None:
        env_kwargs["batch_size"] = batch_size
    from torchenv_envpool._env import MultiThreadedEnv

    return MultiThreadedEnv(num_envs, env_id, create_env_kwargs=create, **env_kwargs)
