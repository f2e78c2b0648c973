"""torchenv-toywalk: a third-party-style plugin on a pure-numpy simulator, in one file.

Point masses pushed around a plane, ``num_envs`` of them in one batch of numpy arrays. The
simulator (``_reset_rows`` / ``_advance``) knows nothing of torch; ``ToyWalkEnv`` gives torchenv
its specs and fills arrays in two methods; ``ArrayEnv`` does the rest (TensorDict path, direct
array I/O path, partial resets, seeding).
"""

from __future__ import annotations

import numpy as np

from torchenv.registry import Backend, UnknownEnvError, hookimpl

ENVS = ("Walk-v0",)
_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _uniform(seed: int, index: np.ndarray, episode: np.ndarray, k: int) -> np.ndarray:
    """``(len(index), k)`` uniforms in [-1, 1) from a splitmix64 hash of (seed, sub-env,
    episode): each sub-env draws its own stream, with no loop over sub-envs."""
    x = np.full(len(index), seed % 2**63, np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    x = x + index.astype(np.uint64) * np.uint64(0xD1B54A32D192ED03)
    x = x + episode.astype(np.uint64) * np.uint64(0x8CB92BA72F3D8DD7)
    x = x[:, None] + np.arange(k, dtype=np.uint64) * np.uint64(0xAEF17502108EF2D9)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9) & _M
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB) & _M
    x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) * 2.0**-53) * 2.0 - 1.0


def _make_env_class():
    import torch

    from torchenv.envs import ArrayEnv
    from torchenv.specs import Bounded, Composite, Unbounded

    class ToyWalkEnv(ArrayEnv):
        """``num_envs`` point masses (``None``: a single env); reach the origin within 50 steps.

        >>> env = ToyWalkEnv(num_envs=3)
        >>> env.rollout(4)["next", "observation"].shape
        torch.Size([3, 4, 4])
        """

        max_steps = 50

        def __init__(self, num_envs: int | None = None, **kwargs):
            batch = () if num_envs is None else (num_envs,)
            super().__init__(batch_size=batch, **kwargs)
            n = num_envs or 1
            self.observation_spec = Composite(
                observation=Unbounded((*batch, 4)),  # position, velocity
                steps=Unbounded((*batch, 1), dtype=torch.int64),
                shape=batch,
            )
            self.action_spec = Bounded(-1.0, 1.0, (*batch, 2))
            self.reward_spec = Unbounded((*batch, 1))
            self._state = np.zeros((n, 4), np.float32)
            self._steps = np.zeros((n, 1), np.int64)
            self._episode = np.zeros(n, np.int64)
            self._seed = 0
            self._batch = batch

        def _reset_rows(self, rows: np.ndarray) -> None:
            fresh = _uniform(self._seed, rows, self._episode[rows], 4) * [1.5, 1.5, 0.1, 0.1]
            self._state[rows] = fresh
            self._steps[rows] = 0
            self._episode[rows] += 1

        def _advance(self, action: np.ndarray) -> tuple:
            s = self._state
            s[:, 2:] = 0.9 * s[:, 2:] + 0.1 * action.reshape(-1, 2)
            s[:, :2] += s[:, 2:]
            self._steps += 1
            dist = np.sqrt((s[:, :2] ** 2).sum(-1, keepdims=True))
            return -dist, dist < 0.05, self._steps >= self.max_steps

        # ------------------------------------------------------------- ArrayEnv's two methods
        def _array_reset(self, out, mask, seed):
            if seed is not None:
                self._seed = seed
                self._episode[:] = 0
            flat = np.ones(len(self._state), bool) if mask is None else mask.reshape(-1)
            self._reset_rows(np.flatnonzero(flat))
            rows = (...,) if mask is None else mask
            out["observation"][rows] = self._state.reshape(*self._batch, 4)[rows]
            out["steps"][rows] = self._steps.reshape(*self._batch, 1)[rows]

        def _array_step(self, action, out):
            reward, terminated, truncated = self._advance(action)
            shape = (*self._batch, 1)
            out["observation"][...] = self._state.reshape(*self._batch, 4)
            out["steps"][...] = self._steps.reshape(shape)
            out["reward"][...] = reward.reshape(shape)
            out["terminated"][...] = terminated.reshape(shape)
            out["truncated"][...] = truncated.reshape(shape)
            np.logical_or(out["terminated"], out["truncated"], out=out["done"])

    return ToyWalkEnv


@hookimpl
def torchenv_backends():
    return [
        Backend(
            name="toywalk",
            distribution="torchenv-toywalk",
            simulator="numpy",  # the simulator is numpy itself
            supported=">=1.21",
            install='pip install "torchenv-toywalk"',
            description="point masses on a plane (pure numpy)",
        )
    ]


@hookimpl
def torchenv_list_envs(backend):
    return list(ENVS) if backend == "toywalk" else None


@hookimpl
def torchenv_make_env(backend, env_id, kwargs):
    if backend != "toywalk":
        return None
    if env_id not in ENVS:
        raise UnknownEnvError("toywalk", env_id, ENVS)
    return _make_env_class()(**kwargs)
