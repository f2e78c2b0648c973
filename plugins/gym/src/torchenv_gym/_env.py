"""``GymWrapper`` and ``GymEnv``: gym and gymnasium envs as torchenv envs.

``GymWrapper`` is an :class:`~torchenv.envs.ArrayEnv`: it fills numpy arrays from what the
simulator returns (``_array_reset`` / ``_array_step``), and the core derives the TensorDict path
and the direct array I/O path from them. The specs and the value converters
(:mod:`torchenv.spaces`) are built once, at construction. Vectorised gymnasium envs are handled
by :mod:`torchenv_gym._vector` and exposed with ``batch_size=[num_envs]``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from torchenv.envs import ArrayEnv
from torchenv.envs._array import _nest
from torchenv.spaces import gym_space_to_spec, make_obs_array_reader, make_reader, make_writer
from torchenv.specs import Bounded, Categorical, Composite, Unbounded
from torchenv_gym._backend import (
    EXTERNAL_ENVS,
    gym_backend,
    register_external_envs,
    registered_ids,
)
from torchenv_gym._mujoco_warnings import mujoco_warnings_once
from torchenv_gym._vector import VectorAdapter, is_vector_env
from torchenv_gym._versions import GymApi

__all__ = ["GymWrapper", "GymEnv"]

# GymEnv keyword arguments that configure the wrapper; every other one goes to ``make``.
_WRAPPER_KWARGS = (
    "categorical_action_encoding",
    "from_pixels",
    "pixels_only",
    "frame_skip",
    "device",
    "batch_size",
    "allow_done_after_reset",
    "run_type_checks",
    "spec_locked",
    "auto_reset",
    "auto_reset_replace",
)


class _classproperty:
    """A read-only property computed on the class (``GymEnv.available_envs``)."""

    def __init__(self, fget: Callable[[type], Any]) -> None:
        self.fget = fget
        self.__doc__ = fget.__doc__

    def __get__(self, obj: Any, owner: type) -> Any:
        return self.fget(owner)


def is_image_space(space: Any) -> bool:
    """Whether ``space`` holds RGB frames: a ``Box`` of ``H x W x 3`` bounded by 0 and 255 (the
    rule TorchRL's gym wrappers use to name the observation ``"pixels"``)."""
    if type(space).__name__ != "Box" or len(space.shape) != 3 or space.shape[-1] != 3:
        return False
    return bool((np.asarray(space.low) == 0).all() and (np.asarray(space.high) == 255).all())


class GymWrapper(ArrayEnv):
    """A gym or gymnasium env (single or vectorised) as a torchenv env.

    Args:
        env: the gym env (``gym.Env``, ``gymnasium.Env`` or a gymnasium ``VectorEnv``).
        categorical_action_encoding: ``Discrete`` spaces become ``Categorical`` specs instead of
            ``OneHot`` (TorchRL's default).
        from_pixels: add (or only give, see ``pixels_only``) the ``"pixels"`` rendered by the env;
            the env must render ``rgb_array`` frames.
        pixels_only: with ``from_pixels``, drop the state observation.
        frame_skip: repeat each action this many times, summing rewards (stops at the end of an
            episode).
        device: device of the output tensors.
        batch_size: the env batch size; ``[num_envs]`` for vector envs (the default).
        allow_done_after_reset: passed to :class:`~torchenv.envs.EnvBase`.

    Attributes not found on the wrapper are looked up on the gym env. Info entries are read with
    :meth:`~torchenv.envs.ArrayEnv.set_info_dict_reader`.

    >>> import gymnasium
    >>> env = GymWrapper(gymnasium.make("Pendulum-v1"))
    >>> env.rollout(3)["next", "reward"].shape
    torch.Size([3, 1])
    """

    git_url = "https://github.com/Farama-Foundation/Gymnasium"
    libname = "gymnasium"

    def __init__(
        self,
        env: Any = None,
        categorical_action_encoding: bool = False,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        device: Any = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        if env is None:
            raise TypeError("GymWrapper needs a gym env: GymWrapper(env=gymnasium.make(...)).")
        if frame_skip is not None and (not isinstance(frame_skip, int) or frame_skip < 1):
            raise ValueError(f"frame_skip must be a positive int, got {frame_skip!r}.")
        vector = is_vector_env(env)
        env_batch = (int(env.num_envs),) if vector else ()
        if batch_size is None:
            batch_size = env_batch
        if tuple(batch_size) != env_batch:
            raise ValueError(
                f"GymWrapper: batch_size={tuple(batch_size)} does not match the env, which has "
                f"batch_size={env_batch} ({'num_envs' if vector else 'a single env'})."
            )
        if vector and from_pixels:
            raise NotImplementedError("from_pixels is not supported with vectorised envs yet.")
        if vector and (frame_skip or 1) > 1:
            raise NotImplementedError(
                f"frame_skip={frame_skip} is not supported with vectorised envs (sub-envs end at "
                "different steps); use torchenv's FrameSkipTransform."
            )
        super().__init__(
            device=device,
            batch_size=batch_size,
            allow_done_after_reset=allow_done_after_reset,
            **kwargs,
        )
        self._env = env
        self._api = GymApi.for_env(env)
        self.lib = self._api.module
        self._categorical_action_encoding = categorical_action_encoding
        # frames as the observation (ALE's RGB screens): named "pixels", as TorchRL names them
        obs_space = env.single_observation_space if vector else env.observation_space
        self._obs_key = "pixels" if is_image_space(obs_space) else "observation"
        self.from_pixels = from_pixels or self._obs_key == "pixels"
        self.pixels_only = pixels_only
        self.frame_skip = frame_skip or 1
        self._bs = torch.Size(env_batch)
        self._vec = VectorAdapter(self) if vector else None
        self._build()

    # ------------------------------------------------------------------ construction
    @property
    def categorical_action_encoding(self) -> bool:
        """Whether ``Discrete`` spaces map to ``Categorical`` (else ``OneHot``)."""
        return self._categorical_action_encoding

    def _spaces(self) -> tuple[Any, Any]:
        env = self._env
        if self._vec is not None:
            return env.single_observation_space, env.single_action_space
        return env.observation_space, env.action_space

    def _build(self) -> None:
        obs_space, act_space = self._spaces()
        batch = tuple(self._bs)
        device = self.device
        enc = self._categorical_action_encoding
        obs_spec = gym_space_to_spec(obs_space, device=device, categorical_action_encoding=enc)
        act_spec = gym_space_to_spec(act_space, device=device, categorical_action_encoding=enc)
        if isinstance(obs_spec, Composite):
            obs_entries = {k: obs_spec[k] for k in obs_spec}
        else:
            obs_entries = {self._obs_key: obs_spec}
        if self.from_pixels and self._obs_key != "pixels":
            frame = self._first_frame()
            pixels = Bounded(0, 255, frame.shape, dtype=torch.uint8, device=device)
            obs_entries = {"pixels": pixels} | ({} if self.pixels_only else obs_entries)
        self.observation_spec = Composite(
            {k: s.expand(*batch, *s.shape) for k, s in obs_entries.items()},
            shape=batch,
            device=device,
        )
        self.action_spec = act_spec.expand(*batch, *act_spec.shape) if batch else act_spec
        self.reward_spec = Unbounded(shape=(*batch, 1), device=device, dtype=torch.float32)
        self.done_spec = Composite(
            {
                name: Categorical(2, shape=(*batch, 1), dtype=torch.bool, device=device)
                for name in ("done", "terminated", "truncated")
            },
            shape=batch,
            device=device,
        )
        self._action_is_td = isinstance(act_spec, Composite)
        self._write_action = make_writer(act_space, act_spec, batch)
        # one env, Discrete: the writer reads the tensor itself (tolist), skip its numpy view
        self._tensor_action = not batch and type(act_space).__name__ == "Discrete"
        # observations: numpy arrays (zero-copy on the TensorDict path, copied into the caller's
        # arrays on the direct path) where the spaces allow it, else tensors
        rendered = self.from_pixels and self._obs_key != "pixels"
        arrays = make_obs_array_reader(obs_space, self.observation_spec, batch, self._obs_key)
        read = make_reader(obs_space, obs_spec, batch)
        self._array_obs = arrays is not None and not rendered
        key = self._obs_key
        if self.pixels_only and rendered:
            state = None
        elif arrays is not None:
            state = arrays
        elif isinstance(obs_spec, Composite):
            state = lambda obs: _flatten(read(obs))  # noqa: E731
        else:
            state = lambda obs: {key: read(obs)}  # noqa: E731
        self._tensor_read = read
        if rendered:
            render, env = self._api.render_env, self._env

            def read_obs(obs: Any) -> dict:
                out = {} if state is None else state(obs)
                out["pixels"] = np.array(render(env), dtype=np.uint8)
                return out

            self._obs_arrays = read_obs
        else:
            self._obs_arrays = state

    def _first_frame(self) -> np.ndarray:
        self._api.reset_env(self._env, None, None)
        frame = self._api.render_env(self._env)
        if frame is None:
            raise ValueError(
                "from_pixels=True needs an env that renders rgb_array frames: create it with "
                "render_mode='rgb_array' (GymEnv does this for you)."
            )
        return np.asarray(frame)

    # ------------------------------------------------------------------ ArrayEnv methods
    def _set_seed(self, seed: int | None) -> None:
        """As TorchRL 0.14.1's gym wrappers: a seeded reset right away (vector envs: sub-env
        ``i`` gets ``seed + i``, gymnasium's rule), whose output is dropped; the next resets
        continue from the generators it seeded. So ``set_seed(s)`` then ``reset()`` gives the
        episode that follows ``env.reset(seed=s)`` in gymnasium, as in TorchRL."""
        # The seed goes through ``_next_seed``, not ``reset(seed=)``: a subclass's ``_reset`` written
        # for TorchRL takes no ``seed`` keyword.
        self.__dict__["_next_seed"] = seed
        self.reset()

    def _array_reset(
        self, out: dict, mask: np.ndarray | None, seed: int | None, options: Any = None
    ) -> Any:
        if self._vec is not None:
            return self._vec.reset(out, mask, seed, options)
        obs, info = self._api.reset_env(self._env, seed, options)
        out.update(self._obs_arrays(obs))
        return info

    def _array_step(self, action: Any, out: dict) -> Any:
        if self._vec is not None:
            return self._vec.step(action, out)
        if not self._action_is_td:
            action = self._write_action(action)
        else:
            action = self._write_action(_nest(action))
        obs, reward, terminated, truncated, info = self._step_raw(action)
        out.update(self._obs_arrays(obs))
        out["reward"][...] = reward
        out["done"][...] = terminated or truncated
        out["terminated"][...] = terminated
        out["truncated"][...] = truncated
        return info

    def _array_action(self, action: torch.Tensor) -> Any:
        return action if self._tensor_action else super()._array_action(action)

    def _action_of(self, action: Any) -> Any:
        """``action`` (numpy, or a dict of them) in the form ``env.step`` takes."""
        if self._action_is_td:
            return self._write_action(_nest(action))
        return self._write_action(action)

    def _step_raw(self, action: Any) -> tuple:
        """The simulator's ``(obs, reward, terminated, truncated, info)``, frame skip included."""
        env = self._env
        obs, reward, terminated, truncated, info = self._api.step_env(env, action)
        if self.frame_skip > 1:
            for _ in range(self.frame_skip - 1):
                if terminated or truncated:
                    break
                obs, r, terminated, truncated, info = self._api.step_env(env, action)
                reward = reward + r
        return obs, reward, terminated, truncated, info

    def _direct_io_static(self) -> bool:
        """Array observations (no pixels, no one-hot, tuple or text spaces), array actions."""
        return self._array_obs and not self._action_is_td and super()._direct_io_static()

    # ------------------------------------------------------------------ misc
    @staticmethod
    def get_library_name(env: Any) -> str:
        """``"gym"`` or ``"gymnasium"``: the library of a raw gym-like ``env`` (TorchRL's name).

        >>> import gymnasium
        >>> GymWrapper.get_library_name(gymnasium.make("CartPole-v1"))
        'gymnasium'
        """
        return GymApi.for_env(env).library

    def read_obs(self, observation: Any) -> dict:
        """Convert a raw observation of the simulator to a dict of tensors (TorchRL's name)."""
        read = self._tensor_read(observation)
        return read if isinstance(read, dict) else {self._obs_key: read}

    def read_action(self, action: Any) -> Any:
        """Convert an action tensor (or TensorDict) to what ``env.step`` expects (TorchRL's name)."""
        return self._write_action(action)

    def close(self, *, raise_if_closed: bool = False) -> None:
        env = self.__dict__.get("_env")
        if env is not None:
            env.close()
        super().close(raise_if_closed=raise_if_closed)

    @_classproperty
    def available_envs(cls) -> list[str]:
        """Ids of the envs registered in the current gym backend (a class property, as in TorchRL)."""
        return registered_ids(gym_backend())

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            env = self.__dict__.get("_env")
            if env is None or name.startswith("__"):
                raise
            try:
                return getattr(env, name)
            except AttributeError:
                # gymnasium>=1.0 wrappers forward no attributes: ask the wrapper chain
                get_wrapper_attr = getattr(env, "get_wrapper_attr", None)
                if get_wrapper_attr is None:
                    raise
                return get_wrapper_attr(name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self._env}, batch_size={self.batch_size}, device={self.device})"


def _flatten(values: dict, prefix: tuple = ()) -> dict:
    """``{"a": {"b": x}}`` → ``{("a", "b"): x}`` (the keys of ``keys(True, True)``)."""
    out = {}
    for key, value in values.items():
        full = (*prefix, key)
        if isinstance(value, dict):
            out.update(_flatten(value, full))
        else:
            out[full if prefix else key] = value
    return out


class GymEnv(GymWrapper):
    """Make a gym or gymnasium env by id, with the current backend (see ``set_gym_backend``).

    Args:
        env_name: the registered id, e.g. ``"CartPole-v1"``.

    Keyword Args:
        num_envs (int): with gymnasium, build a vector env of this many copies, exposed as one
            env with ``batch_size=[num_envs]`` (default ``0``: a single env).
        vectorization_mode (str): gymnasium's ``"sync"`` (default), ``"async"`` or
            ``"vector_entry_point"`` (the env's own batched implementation, e.g. CartPole's).
        num_workers (int): above 1, TorchRL's shortcut: a
            :class:`~torchenv.batched.ParallelEnv` of that many processes, each running
            ``GymEnv(env_name, **kwargs)`` (specs read from the workers), instead of a
            ``GymEnv``. Default ``1``.
        **kwargs: the :class:`GymWrapper` arguments; every other keyword goes to ``make``.

    >>> env = GymEnv("CartPole-v1")
    >>> env.action_spec.shape
    torch.Size([2])
    >>> GymEnv("CartPole-v1", num_envs=4).batch_size
    torch.Size([4])
    """

    def __new__(cls, *args: Any, num_workers: int = 1, **kwargs: Any) -> Any:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"GymEnv: num_workers must be an int >= 1, got {num_workers!r}.")
        if num_workers > 1 and cls is GymEnv:
            from torchenv.batched import ParallelEnv

            if args:
                env_name, args = args[0], args[1:]
            else:
                env_name = kwargs.pop("env_name")
            make_env = functools.partial(cls, env_name, *args, **kwargs)
            return ParallelEnv(num_workers, make_env, metadata_from_workers=True)
        return super().__new__(cls)

    def __init__(self, env_name: str, **kwargs: Any) -> None:
        kwargs.pop("num_workers", None)  # 1 (checked by __new__)
        wrapper_kwargs = {k: kwargs.pop(k) for k in _WRAPPER_KWARGS if k in kwargs}
        num_envs = int(kwargs.pop("num_envs", 0) or 0)
        mode = kwargs.pop("vectorization_mode", None)
        backend = gym_backend()
        if env_name.startswith(tuple(EXTERNAL_ENVS)):  # e.g. ALE/: ale_py registers on import
            register_external_envs(backend)
        api = GymApi.of(backend)
        make_kwargs = api.render_kwargs(wrapper_kwargs.get("from_pixels", False)) | kwargs
        if mode is not None and not num_envs:
            raise ValueError("vectorization_mode needs num_envs > 0.")
        with mujoco_warnings_once(backend, env_name):
            if num_envs:
                env = api.make_vec(backend, env_name, num_envs, mode, make_kwargs)
            else:
                env = backend.make(env_name, **make_kwargs)
        super().__init__(env, **wrapper_kwargs)
        self._env_name = env_name
        self._constructor_kwargs = {"env_name": env_name, "num_envs": num_envs, **kwargs}

    @property
    def env_name(self) -> str:
        """The id the env was made from."""
        return self._env_name

    def __repr__(self) -> str:
        return (
            f"GymEnv(env={self._env_name}, batch_size={self.batch_size}, device={self.device}, "
            f"backend={self._api.library} {self._api.version})"
        )
