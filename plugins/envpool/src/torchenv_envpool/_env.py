"""``MultiThreadedEnvWrapper`` / ``MultiThreadedEnv``: an envpool pool (sync mode) as one batched env.

envpool resets an env that ended by itself on the *next* step (ignoring that step's action and
returning the first observation with reward 0). torchenv's contract is that the caller resets
finished envs with a ``"_reset"`` mask; here that partial reset is ``pool.reset(env_ids)``, which
resets those envs at once (the same reset envpool would run: same random stream, same first
observation), so trajectories hold no reset transition. A step on an env that ended and was not
reset runs envpool's own auto-reset.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from torchenv.envs import ArrayEnv
from torchenv.spaces import make_obs_array_reader, make_writer, space_to_spec
from torchenv.specs import Composite, Unbounded
from torchenv_envpool._tasks import build_pool, normalize_task_id

__all__ = ["MultiThreadedEnv", "MultiThreadedEnvWrapper"]


def _is_pool(env: Any) -> bool:
    return any(klass.__name__ == "EnvPoolMixin" for klass in type(env).__mro__)


def _env_type(env: Any) -> str:
    names = {klass.__name__ for klass in type(env).__mro__}
    if "GymnasiumEnvPoolMixin" in names:
        return "gymnasium"
    if "GymEnvPoolMixin" in names:
        return "gym"
    return "dm"


class MultiThreadedEnvWrapper(ArrayEnv):
    """An envpool pool in sync mode (``batch_size == num_envs``) as a batched env of ``num_envs``.

    Arguments follow TorchRL's ``MultiThreadedEnvWrapper``. The pool must be made with
    ``env_type="gymnasium"`` (or ``"gym"``); the specs come from its spaces
    (:func:`torchenv.spaces.space_to_spec`), batched: a ``Box`` observation is
    ``"observation"`` (Atari frames stay ``uint8``), a ``Dict`` gives one key per entry; rewards
    are ``(num_envs, 1)`` float32; ``done``/``terminated``/``truncated`` ``(num_envs, 1)``.

    A ``"_reset"`` mask resets only its envs (``pool.reset(env_ids)``). envpool seeds its envs
    when the pool is built (env ``i`` gets ``seed + i``; envpool's default seed is 42), so
    :meth:`set_seed` rebuilds the pool with the new seed on the next reset (a full reset).

    Args:
        env: the pool, ``envpool.make(task_id, env_type="gymnasium", num_envs=N, ...)``.
        categorical_action_encoding: discrete actions as ``Categorical`` indices (default
            ``True``: what TorchRL's wrapper builds, whatever its argument says); ``False``
            gives ``OneHot``.
        disable_env_checker: accepted for TorchRL compatibility (there is no checker).
        frame_skip: only ``None`` or 1: envpool repeats actions itself
            (``create_env_kwargs={"frame_skip": k}`` for Atari and MuJoCo tasks).

    Keyword Args:
        device (torch.device): as for any env.
        allow_done_after_reset (bool): as for any env.

    >>> import envpool
    >>> pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, seed=0)
    >>> env = MultiThreadedEnvWrapper(pool)
    >>> env.rollout(3)["next", "observation"].shape
    torch.Size([4, 3, 4])
    """

    _async = False  # AsyncEnvPoolEnv: a pool with batch_size < num_envs

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_action_encoding: bool = True,
        disable_env_checker: bool | None = None,
        frame_skip: int | None = None,
        device: Any = None,
        batch_size: Any = None,
        **kwargs: Any,
    ) -> None:
        if env is None or not _is_pool(env):
            raise TypeError(
                "env: expected an envpool pool (envpool.make(task_id, env_type='gymnasium', "
                f"num_envs=N)), got {type(env).__name__}."
            )
        env_type = _env_type(env)
        if env_type == "dm":
            raise TypeError(
                "env: expected a pool made with env_type='gymnasium' (or 'gym'), got a dm_env "
                "pool (env_type='dm')."
            )
        config = env.config
        num_envs = int(config["num_envs"])
        rows = int(config["batch_size"]) or num_envs  # envs per step
        if rows != num_envs and not self._async:
            raise ValueError(
                f"env: expected a sync pool (batch_size == num_envs == {num_envs}), got "
                f"batch_size={config['batch_size']}; use torchenv_envpool.AsyncEnvPoolEnv for "
                "envpool's async mode."
            )
        if frame_skip not in (None, 1):
            raise ValueError(
                f"frame_skip: expected None or 1, got {frame_skip!r}; envpool repeats actions "
                "itself: pass create_env_kwargs={'frame_skip': k} (Atari, MuJoCo tasks)."
            )
        if batch_size is not None and tuple(batch_size) != (rows,):
            raise ValueError(
                f"batch_size: expected ({rows},) (envs per step) or None, got {tuple(batch_size)}."
            )
        super().__init__(device=device, batch_size=(rows,), **kwargs)
        d = self.__dict__
        d["_pool"] = env
        d["num_workers"] = num_envs
        d["_rows"] = rows
        d["_env_type"] = env_type
        d["_categorical"] = bool(categorical_action_encoding)
        self._make_specs()

    # ------------------------------------------------------------------ specs
    def _make_specs(self) -> None:
        pool, n, device = self._pool, self._rows, self.device
        obs_space, act_space = pool.spec.observation_space, pool.spec.action_space
        if type(act_space).__name__ in ("Dict", "Tuple"):
            raise NotImplementedError(
                f"{pool.spec.config.task if hasattr(pool.spec.config, 'task') else 'this task'}: "
                f"envpool action spaces of type {type(act_space).__name__} are not supported."
            )
        obs_spec = space_to_spec(obs_space, device=device, batch_size=(n,))
        if not isinstance(obs_spec, Composite):
            obs_spec = Composite(observation=obs_spec, shape=(n,), device=device)
        self.observation_spec = obs_spec
        self.action_spec = space_to_spec(
            act_space,
            device=device,
            categorical_action_encoding=self._categorical,
            batch_size=(n,),
        )
        self.reward_spec = Unbounded((n, 1), dtype=torch.float32, device=device)
        read = make_obs_array_reader(obs_space, self.observation_spec, (n,))
        if read is None:
            raise NotImplementedError(
                f"envpool observation space {obs_space!r} is not supported (Box, or Dict of Box)."
            )
        d = self.__dict__
        d["_obs_space"] = obs_space
        d["_read_obs"] = read
        d["_write_action"] = make_writer(act_space, self.action_spec, (n,))
        d["_action_shape"] = tuple(self.action_spec.shape)

    # ------------------------------------------------------------------ simulator side
    @property
    def pool(self) -> Any:
        """The envpool pool (envpool's own API: ``step``, ``reset``, ``config``, ``spec``)."""
        return self._pool

    @property
    def lib(self) -> Any:
        """The ``envpool`` module (TorchRL's ``lib``)."""
        import envpool

        return envpool

    def _check_action(self, action: np.ndarray) -> None:
        if action.shape != self._action_shape:
            raise ValueError(
                f"action: expected shape {self._action_shape} ((num_envs, ...) as "
                f"action_spec), got {tuple(action.shape)}."
            )

    def _split(self, result: tuple) -> tuple:
        if len(result) == 5:
            return result
        obs, reward, done, info = result  # gym < 0.26 step API
        truncated = np.asarray(info.get("TimeLimit.truncated", np.zeros_like(done)), bool)
        return obs, reward, np.logical_and(done, ~truncated), truncated, info

    def _array_step(self, action: np.ndarray, out: dict) -> Any:
        self._check_action(action)
        obs, reward, terminated, truncated, info = self._split(
            self._pool.step(self._write_action(action))
        )
        n = self._rows
        out.update(self._read_obs(obs))
        out["reward"] = np.asarray(reward, dtype=np.float32).reshape(n, 1)
        terminated = np.asarray(terminated, dtype=bool).reshape(n, 1)
        truncated = np.asarray(truncated, dtype=bool).reshape(n, 1)
        out["terminated"] = terminated
        out["truncated"] = truncated
        out["done"] = terminated | truncated
        return info

    def _array_reset(self, out: dict, mask: np.ndarray | None, seed: int | None) -> Any:
        if seed is not None:
            if mask is not None:
                raise ValueError(
                    "seed: envpool seeds its envs only when the pool is built; reseed with a "
                    "full reset (no '_reset' mask)."
                )
            self._reseed(seed)
        pool = self._pool
        if mask is None:
            obs, info = self._reset_output(pool.reset())
            out.update(self._read_obs(obs))
            return info
        ids = np.flatnonzero(mask).astype(np.int32)
        obs, info = self._reset_output(pool.reset(ids))
        got = np.asarray(info["env_id"]) if "env_id" in info else ids
        read = make_obs_array_reader(self._obs_space, self.observation_spec[ids], (len(ids),))
        for key, value in read(obs).items():
            out[key][got] = value
        return info

    @staticmethod
    def _reset_output(result: Any) -> tuple[Any, dict]:
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return result
        return result, {}

    def _reseed(self, seed: int) -> None:
        if not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**31:
            raise ValueError(f"seed: expected an int in [0, 2**31), got {seed!r}.")
        pool = self._pool
        config = pool.spec.config._replace(seed=int(seed))
        new = type(pool)(type(pool.spec)(config))
        self._close_pool()
        self.__dict__["_pool"] = new

    def _close_pool(self) -> None:
        pool = self.__dict__.get("_pool")
        if pool is not None:
            close = getattr(pool, "close", None)
            if close is not None:
                close()
            self.__dict__["_pool"] = None

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Close the env and its pool (the pool's threads end; idempotent)."""
        if self.is_closed:
            return super().close(raise_if_closed=raise_if_closed)
        self._close_pool()
        super().close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_workers={self.num_workers}, device={self.device})"


class MultiThreadedEnv(MultiThreadedEnvWrapper):
    """``num_workers`` envs of the envpool task ``env_name``, stepped in C++ threads.

    TorchRL's ``MultiThreadedEnv`` arguments; ``torchenv.make("envpool:<task>", num_envs=N)``
    builds one. ``"ALE/Pong-v5"`` is accepted for ``"Pong-v5"``.

    Args:
        num_workers: the number of envs (the batch size).
        env_name: an envpool task id (``torchenv.list_envs("envpool")``).
        create_env_kwargs: envpool options (``seed``, ``num_threads``, ``max_episode_steps``,
            Atari's ``frame_skip``/``stack_num``/``episodic_life``/``img_height``...).
        **kwargs: as for :class:`MultiThreadedEnvWrapper`.

    >>> env = MultiThreadedEnv(3, "Pendulum-v1", create_env_kwargs={"seed": 0})
    >>> env.rollout(5).batch_size
    torch.Size([3, 5])
    >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        env_name: str,
        *,
        create_env_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        env_name = normalize_task_id(env_name)
        create_env_kwargs = dict(create_env_kwargs or {})
        pool = build_pool(env_name, num_workers, None, create_env_kwargs)
        super().__init__(pool, **kwargs)
        d = self.__dict__
        d["env_name"] = env_name
        d["create_env_kwargs"] = create_env_kwargs

    def _reseed(self, seed: int) -> None:
        super()._reseed(seed)
        self.create_env_kwargs["seed"] = int(seed)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={self.env_name}, num_workers={self.num_workers}, "
            f"device={self.device})"
        )
