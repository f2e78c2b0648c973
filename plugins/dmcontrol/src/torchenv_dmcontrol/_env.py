"""``DMControlWrapper`` and ``DMControlEnv``: DeepMind Control Suite tasks as torchenv envs.

Both sit on :class:`~torchenv.envs.ArrayEnv`: one reset and one step method copy dm_control's
numpy observations into the arrays the base hands them, which gives the TensorDict path and
the direct path (``rollout``, ``step_and_maybe_reset``, ``SerialEnv``/``ParallelEnv`` workers).

Done flags follow TorchRL 0.14.1: a ``LAST`` time step with discount 1 is *truncated* (the
suite's time limit), with another discount *terminated*; ``done`` is either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from torchenv.envs import ArrayEnv
from torchenv.spaces._codec import to_numpy
from torchenv.specs import Composite, OneHot
from torchenv_dmcontrol._specs import dm_spec_to_spec

__all__ = ["DMControlWrapper", "DMControlEnv"]

_LAST = 2  # dm_env.StepType.LAST
_DISCOUNT_TOL = 1e-8 + 1e-5  # np.isclose(discount, 1) without its per-call cost


def _task_of(env: Any) -> Any:
    """The ``Task`` inside a control ``Environment``, through any wrappers (pixels, ...)."""
    seen = env
    while seen is not None:
        task = getattr(seen, "task", None) or getattr(seen, "_task", None)
        if task is not None:
            return task
        seen = getattr(seen, "_env", None)
    return None


def _check_env(env: Any) -> None:
    missing = [
        m for m in ("reset", "step", "observation_spec", "action_spec") if not hasattr(env, m)
    ]
    if missing:
        raise TypeError(
            "env: expected a dm_control environment (dm_control.rl.control.Environment, e.g. "
            f"from suite.load, or a wrapper of one); got {type(env).__name__}, which lacks "
            f"{', '.join(missing)}"
        )


def _obs_paths(spec: Mapping, prefix: tuple = ()) -> list[tuple[Any, tuple[str, ...]]]:
    """``(out key, path in the observation dict)`` of every leaf (nested dicts → tuple keys)."""
    out = []
    for name, value in spec.items():
        path = (*prefix, name)
        if isinstance(value, Mapping):
            out.extend(_obs_paths(value, path))
        else:
            out.append((path[0] if len(path) == 1 else path, path))
    return out


class DMControlWrapper(ArrayEnv):
    """A dm_control environment as a torchenv env (TorchRL's ``DMControlWrapper``).

    Args:
        env: a ``dm_control.rl.control.Environment`` (``suite.load(...)``) or a pixels wrapper
            of one.

    Keyword Args:
        from_pixels: add rendered frames under ``"pixels"`` (``uint8``, ``H x W x 3``) through
            dm_control's pixels wrapper (needs OpenGL: ``MUJOCO_GL=egl`` or ``osmesa`` when
            headless). Defaults to ``False``.
        pixels_only: with ``from_pixels``, drop the state observations. Defaults to ``False``.
        camera_id: camera to render from (index or name). Defaults to ``0``.
        render_kwargs: more keywords for ``physics.render`` (``height``, ``width``, ...).
        frame_skip: repeat each action this many times, summing the rewards (stops early at
            the episode's end). Defaults to ``1``.
        categorical_action_encoding: ``DiscreteArray`` actions as ``Categorical`` instead of
            ``OneHot`` (the suite's tasks have continuous actions).
        device: device of the outputs. Defaults to the cpu.
        allow_done_after_reset: see :class:`~torchenv.envs.EnvBase`.

    >>> from dm_control import suite
    >>> env = DMControlWrapper(suite.load("cartpole", "balance"), frame_skip=2)
    >>> td = env.rollout(3)
    >>> td["next", "position"].dtype, td["next", "reward"].shape
    (torch.float64, torch.Size([3, 1]))
    """

    def __init__(
        self,
        env: Any = None,
        *,
        from_pixels: bool = False,
        pixels_only: bool = False,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        frame_skip: int | None = None,
        categorical_action_encoding: bool = False,
        device: Any = None,
        allow_done_after_reset: bool = False,
        batch_size: Any = None,
    ) -> None:
        if env is None:
            raise TypeError("DMControlWrapper needs env=: a dm_control environment (suite.load).")
        _check_env(env)
        if batch_size is not None and tuple(batch_size) != ():
            raise ValueError(
                f"batch_size: a dm_control env is a single env, expected () but got "
                f"{tuple(batch_size)}; batch it with SerialEnv or ParallelEnv"
            )
        frame_skip = 1 if frame_skip is None else frame_skip
        if not isinstance(frame_skip, int) or isinstance(frame_skip, bool) or frame_skip < 1:
            raise ValueError(f"frame_skip: expected an int >= 1, got {frame_skip!r}")
        if not isinstance(camera_id, (int, str)) or isinstance(camera_id, bool):
            raise TypeError(f"camera_id: expected an int or a camera name, got {camera_id!r}")
        if render_kwargs is not None and not isinstance(render_kwargs, Mapping):
            raise TypeError(f"render_kwargs: expected a dict, got {type(render_kwargs).__name__}")
        if pixels_only and not from_pixels:
            raise ValueError("pixels_only=True needs from_pixels=True")
        super().__init__(device=device, allow_done_after_reset=allow_done_after_reset)
        task = _task_of(env)
        if task is None:
            raise TypeError(
                f"env: found no dm_control Task in {type(env).__name__} (no .task / ._env.task): "
                "it cannot be seeded"
            )
        d = self.__dict__
        d["from_pixels"] = bool(from_pixels)
        d["pixels_only"] = bool(pixels_only)
        d["render_kwargs"] = {"camera_id": camera_id, **dict(render_kwargs or {})}
        d["frame_skip"] = frame_skip
        if from_pixels:
            from dm_control.suite.wrappers import pixels

            env = pixels.Wrapper(
                env, pixels_only=pixels_only, render_kwargs=dict(self.render_kwargs)
            )
        d["_env"] = env
        d["_task"] = task
        self._make_specs(env, categorical_action_encoding)

    def _make_specs(self, env: Any, categorical: bool) -> None:
        device = self.device
        obs_spec = env.observation_spec()
        observation = dm_spec_to_spec(obs_spec, device=device)
        if not isinstance(observation, Composite):  # a single array observation
            observation = Composite(observation=observation, shape=(), device=device)
            paths = [("observation", None)]
        else:
            paths = _obs_paths(obs_spec)
        self.observation_spec = observation
        self.action_spec = dm_spec_to_spec(
            env.action_spec(), device=device, categorical_discrete_encoding=categorical
        )
        reward = env.reward_spec()
        if isinstance(reward, Mapping):
            raise TypeError(
                f"env: dict rewards ({list(reward)}) are not supported; expected one array reward"
            )
        self.reward_spec = dm_spec_to_spec(reward, device=device)
        d = self.__dict__
        d["_obs_paths"] = paths
        d["_flat_obs"] = [(k, p[0]) for k, p in paths if p is not None and len(p) == 1]
        d["_onehot_action"] = isinstance(self.action_spec, OneHot)

    # ------------------------------------------------------------------ the two array methods
    def _write_obs(self, observation: Any, out: dict) -> None:
        paths = self._obs_paths
        if len(self._flat_obs) == len(paths):
            for key, name in self._flat_obs:
                np.copyto(out[key], observation[name], casting="unsafe")
            return
        for key, path in paths:
            value = observation
            for part in path or ():
                value = value[part]
            np.copyto(out[key], value, casting="unsafe")

    def _set_seed(self, seed: int | None) -> None:
        """As TorchRL 0.14.1's ``DMControlEnv``: the task gets ``np.random.RandomState(seed)``
        and the env is reset once right away (its output dropped); ``None`` does nothing. So
        ``set_seed(s)`` then ``reset()`` gives the second episode of
        ``suite.load(..., task_kwargs={"random": s})``, as in TorchRL."""
        self.__dict__["_next_seed"] = None
        if seed is None:
            return
        self._task._random = np.random.RandomState(seed)
        self.reset()

    def _array_reset(self, out: dict, mask: Any, seed: int | None) -> None:
        if seed is not None:
            self._task._random = np.random.RandomState(seed)
        self._write_obs(self._env.reset().observation, out)

    def _array_step(self, action: np.ndarray, out: dict) -> None:
        if self._onehot_action:
            action = action.argmax(-1)
        step = self._env.step
        timestep = step(action)
        reward = timestep.reward
        for _ in range(self.frame_skip - 1):
            if timestep.step_type == _LAST:
                break
            timestep = step(action)
            reward = reward + timestep.reward
        self._write_obs(timestep.observation, out)
        out["reward"][...] = reward
        last = timestep.step_type == _LAST
        truncated = last and abs(timestep.discount - 1.0) <= _DISCOUNT_TOL
        out["done"][0] = last
        out["terminated"][0] = last and not truncated
        out["truncated"][0] = truncated

    def _step_into(self, action: torch.Tensor, out: dict) -> bool:
        # ArrayEnv's version also copies entries a subclass replaced; this one never replaces
        self._array_step(to_numpy(action), out)
        return bool(out["done"][0])

    # ------------------------------------------------------------------ misc
    @property
    def env(self) -> Any:
        """The wrapped dm_control environment (the pixels wrapper when ``from_pixels``)."""
        return self._env

    @property
    def physics(self) -> Any:
        """The MuJoCo physics of the wrapped environment."""
        env = self._env
        while not hasattr(env, "physics") and hasattr(env, "_env"):
            env = env._env
        return env.physics

    def render(self, **kwargs: Any) -> np.ndarray:
        """An RGB frame of the current state (``physics.render`` with this env's render kwargs).

        Keyword arguments override the env's ``render_kwargs`` (``height``, ``width``, ...).
        """
        return self.physics.render(**{**self.render_kwargs, **kwargs})

    def close(self, *, raise_if_closed: bool = False) -> None:
        env = self.__dict__.get("_env")
        if env is not None and not self.is_closed:
            closer = getattr(env, "close", None)
            if closer is not None:
                closer()
        super().close(raise_if_closed=raise_if_closed)

    @staticmethod
    def available_envs() -> list[str]:
        """The suite's ``"domain/task"`` ids (benchmarking and extra sets)."""
        from torchenv_dmcontrol._suite import task_ids

        return task_ids()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={type(self._env).__name__}, batch_size={self.batch_size})"
        )


class DMControlEnv(DMControlWrapper):
    """A DeepMind Control Suite task by name (TorchRL's ``DMControlEnv``).

    Args:
        env_name: the domain (``"cheetah"``).
        task_name: the task (``"run"``).

    Keyword Args:
        from_pixels: as :class:`DMControlWrapper`.
        pixels_only: as :class:`DMControlWrapper`.
        camera_id: as :class:`DMControlWrapper`.
        render_kwargs: as :class:`DMControlWrapper`.
        frame_skip: as :class:`DMControlWrapper`.
        device: as :class:`DMControlWrapper`.
        categorical_action_encoding: as :class:`DMControlWrapper`.
        allow_done_after_reset: as :class:`DMControlWrapper`.
        environment_kwargs: keywords of the control ``Environment`` (``flat_observation``, ...).
        **task_kwargs: keywords of the task (``time_limit``, ``random``, ...), passed to
            ``suite.load(..., task_kwargs=...)``.

    >>> env = DMControlEnv("cheetah", "run")
    >>> _ = env.set_seed(0)
    >>> sorted(env.rollout(4)["next"].keys())
    ['done', 'position', 'reward', 'terminated', 'truncated', 'velocity']
    """

    def __init__(
        self,
        env_name: str,
        task_name: str,
        *,
        from_pixels: bool = False,
        pixels_only: bool = False,
        camera_id: int | str = 0,
        render_kwargs: dict | None = None,
        frame_skip: int | None = None,
        device: Any = None,
        categorical_action_encoding: bool = False,
        allow_done_after_reset: bool = False,
        batch_size: Any = None,
        environment_kwargs: dict | None = None,
        **task_kwargs: Any,
    ) -> None:
        from torchenv_dmcontrol._suite import import_suite, task_ids

        suite = import_suite()
        for name, value in (("env_name", env_name), ("task_name", task_name)):
            if not isinstance(value, str):
                raise TypeError(f"{name}: expected a str, got {type(value).__name__}")
        env_id = f"{env_name}/{task_name}"
        if (env_name, task_name) not in set(suite.ALL_TASKS):
            from torchenv.registry import UnknownEnvError

            raise UnknownEnvError("dmcontrol", env_id, task_ids())
        env = suite.load(
            env_name,
            task_name,
            task_kwargs=dict(task_kwargs),
            environment_kwargs=environment_kwargs,
        )
        self.__dict__["env_name"] = env_name
        self.__dict__["task_name"] = task_name
        super().__init__(
            env,
            from_pixels=from_pixels,
            pixels_only=pixels_only,
            camera_id=camera_id,
            render_kwargs=render_kwargs,
            frame_skip=frame_skip,
            categorical_action_encoding=categorical_action_encoding,
            device=device,
            allow_done_after_reset=allow_done_after_reset,
            batch_size=batch_size,
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(env={self.env_name}, task={self.task_name}, "
            f"batch_size={self.batch_size})"
        )
