"""``AsyncEnvPoolEnv``: envpool's async mode (``batch_size < num_envs``) as a batched env.

envpool steps ``num_envs`` envs in its threads and hands back the first ``batch_size`` that
finish; the caller acts for exactly those. Here a reset or step output holds ``batch_size`` rows,
one per env that stepped, and ``"env_id"`` names it; the next step sends the action of row ``j``
to env ``env_id[j]`` of the previous output. Rows are not sub-envs: row ``j`` of two outputs
usually belongs to different envs (group by ``"env_id"`` to follow one env).

An env that ended is reset by envpool when it is next sent an action (that action is ignored;
its output is the first observation, reward 0, done False): a ``"_reset"`` mask over ended rows
(what ``step_and_maybe_reset`` and ``rollout`` send) changes nothing but their done flags.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from torchenv.specs import Categorical
from torchenv_envpool._env import MultiThreadedEnvWrapper
from torchenv_envpool._tasks import build_pool, normalize_task_id

__all__ = ["AsyncEnvPoolEnv"]


class AsyncEnvPoolEnv(MultiThreadedEnvWrapper):
    """``num_envs`` envpool envs in async mode, ``batch_size`` of them per step.

    ``torchenv.make("envpool:<task>", num_envs=N, batch_size=B)`` with ``B < N`` builds one.
    The batch size is ``(batch_size,)``; outputs carry ``"env_id"`` (int64, the envs that
    stepped, as envpool's ``info["env_id"]``). Seeding: as :class:`MultiThreadedEnv` (the pool is
    rebuilt with the seed at the next reset).

    Args:
        env_name: an envpool task id.
        num_envs: envs in the pool.
        batch_size: envs per step (``<= num_envs``).
        create_env_kwargs: envpool options (``seed``, ``num_threads``, ...).

    Keyword Args:
        categorical_action_encoding (bool): as for :class:`MultiThreadedEnvWrapper`.
        device (torch.device): as for :class:`MultiThreadedEnvWrapper`.

    >>> env = AsyncEnvPoolEnv("CartPole-v1", num_envs=6, batch_size=2, create_env_kwargs={"seed": 0})
    >>> td = env.rollout(4)
    >>> td.batch_size, td["next", "env_id"].shape
    (torch.Size([2, 4]), torch.Size([2, 4]))
    >>> env.close()
    """

    _async = True

    def __init__(
        self,
        env_name: str,
        num_envs: int,
        batch_size: int,
        *,
        create_env_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        env_name = normalize_task_id(env_name)
        create_env_kwargs = dict(create_env_kwargs or {})
        pool = build_pool(env_name, num_envs, batch_size, create_env_kwargs)
        super().__init__(pool, **kwargs)
        d = self.__dict__
        d["env_name"] = env_name
        d["create_env_kwargs"] = create_env_kwargs
        d["_ids"] = None  # env ids of the last output's rows
        d["_last_obs"] = None

    def _make_specs(self) -> None:
        super()._make_specs()
        b = self._rows
        self.observation_spec["env_id"] = Categorical(
            int(self._pool.config["num_envs"]), shape=(b,), dtype=torch.int64, device=self.device
        )

    def _array_step(self, action: np.ndarray, out: dict) -> Any:
        ids = self._ids
        if ids is None:
            raise RuntimeError("AsyncEnvPoolEnv: reset the env before stepping it.")
        self._check_action(action)
        self._pool.send(self._write_action(action), ids)
        obs, reward, terminated, truncated, info = self._pool.recv()
        b = self._rows
        self._write_rows(obs, info, out)
        out["reward"] = np.asarray(reward, dtype=np.float32).reshape(b, 1)
        terminated = np.asarray(terminated, dtype=bool).reshape(b, 1)
        truncated = np.asarray(truncated, dtype=bool).reshape(b, 1)
        out["terminated"] = terminated
        out["truncated"] = truncated
        out["done"] = terminated | truncated
        return info

    def _write_rows(self, obs: Any, info: dict, out: dict) -> None:
        read = self._read_obs(obs)
        ids = np.asarray(info["env_id"], dtype=np.int32)
        self.__dict__["_ids"] = ids
        self.__dict__["_last_obs"] = read
        out.update(read)
        out["env_id"] = ids.astype(np.int64)

    def _array_reset(self, out: dict, mask: np.ndarray | None, seed: int | None) -> Any:
        if mask is not None:  # rows that ended: envpool resets their envs on the next send
            if seed is not None:
                raise ValueError(
                    "seed: envpool seeds its envs only when the pool is built; reseed with a "
                    "full reset (no '_reset' mask)."
                )
            if self._last_obs is None:
                raise RuntimeError("AsyncEnvPoolEnv: reset the env before a partial reset.")
            for key, value in self._last_obs.items():
                out[key][mask] = value[mask]
            out["env_id"][mask] = self._ids[mask]
            return None
        if seed is not None:
            self._reseed(seed)
        self._pool.async_reset()
        obs, _, _, _, info = self._pool.recv()
        self._write_rows(obs, info, out)
        return info

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={self.env_name}, num_envs={self.num_workers}, "
            f"batch_size={self._rows}, device={self.device})"
        )
