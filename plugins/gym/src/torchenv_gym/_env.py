"""``GymWrapper`` and ``GymEnv``: gym and gymnasium envs as torchenv envs.

The specs and the value converters are built once, at construction; ``_step`` then calls the
simulator, turns arrays into tensors with ``torch.from_numpy`` and builds one TensorDict, with no
validation (what the env returns is trusted, as in TorchRL). Vectorised gymnasium envs are
handled by :mod:`torchenv_gym._vector` and exposed with ``batch_size=[num_envs]``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs import BaseInfoDictReader, EnvBase, default_info_dict_reader
from torchenv.spaces import gym_space_to_spec, make_direct_obs_writer, make_reader, make_writer
from torchenv.specs import Bounded, Categorical, Composite, Unbounded
from torchenv_gym._backend import gym_backend, registered_ids
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


class GymWrapper(EnvBase):
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

    Attributes not found on the wrapper are looked up on the gym env.

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
        self.from_pixels = from_pixels
        self.pixels_only = pixels_only
        self.frame_skip = frame_skip or 1
        self.info_dict_reader: list[BaseInfoDictReader] = []
        self._next_seed: int | None = None
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
        read = make_reader(obs_space, obs_spec, batch)
        if isinstance(obs_spec, Composite):
            obs_entries = {k: obs_spec[k] for k in obs_spec}
            self._read_obs: Callable[[Any], dict] = read
        else:
            obs_entries = {"observation": obs_spec}
            self._read_obs = lambda obs: {"observation": read(obs)}
        if self.from_pixels:
            frame = self._first_frame()
            pixels = Bounded(0, 255, frame.shape, dtype=torch.uint8, device=device)
            obs_entries = {"pixels": pixels} | ({} if self.pixels_only else obs_entries)
            read_state = self._read_obs
            render, env, pixels_only = self._api.render_env, self._env, self.pixels_only

            def read_pixels(obs: Any) -> dict:
                out = {} if pixels_only else read_state(obs)
                out["pixels"] = torch.from_numpy(np.array(render(env), dtype=np.uint8))
                return out

            self._read_obs = read_pixels
        self._flat_obs = all(not isinstance(s, Composite) for s in obs_entries.values())
        self._obs_entries = obs_entries
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
        # direct array I/O (torchenv.envs._direct): observations copied straight into arrays
        self._direct_obs = (
            None
            if self.from_pixels
            else make_direct_obs_writer(obs_space, self.observation_spec, batch)
        )
        self._write_action = make_writer(act_space, act_spec, batch)
        self._action_key = "action"
        self._to_device = device is not None and torch.device(device).type != "cpu"
        self._cpu = None if device is None else torch.device("cpu")

    def _first_frame(self) -> np.ndarray:
        self._api.reset_env(self._env, None, None)
        frame = self._api.render_env(self._env)
        if frame is None:
            raise ValueError(
                "from_pixels=True needs an env that renders rgb_array frames: create it with "
                "render_mode='rgb_array' (GymEnv does this for you)."
            )
        return np.asarray(frame)

    # ------------------------------------------------------------------ info dicts
    def set_info_dict_reader(
        self,
        info_dict_reader: BaseInfoDictReader | Callable | None = None,
        ignore_private: bool = True,
    ) -> GymWrapper:
        """Add a reader that copies ``info`` entries into the outputs, and add its specs.

        Without ``info_dict_reader``, a :class:`default_info_dict_reader` reading every numeric
        entry is used. A default reader whose specs are not given finds them by running one reset
        and one random step (see :meth:`auto_register_info_dict`). Returns the env.

        >>> env = GymEnv("CartPole-v1").set_info_dict_reader()
        """
        reader = info_dict_reader or default_info_dict_reader(ignore_private=ignore_private)
        if isinstance(reader, default_info_dict_reader) and not reader.complete:
            reader.infer(self._probe_info(), tuple(self._bs))
        self.info_dict_reader.append(reader)
        spec = getattr(reader, "info_spec", None)
        if spec is not None:
            self._add_info_specs(spec)
        return self

    def auto_register_info_dict(
        self, ignore_private: bool = True, info_dict_reader: BaseInfoDictReader | None = None
    ) -> GymWrapper:
        """Register a reader for every numeric info entry (or ``info_dict_reader``).

        The entries are found by running one reset and one random step; the env is reset again
        before its next use. Needed for infos to flow through ``ParallelEnv``, whose buffers come
        from the specs.
        """
        reader = info_dict_reader or default_info_dict_reader(ignore_private=ignore_private)
        if isinstance(reader, default_info_dict_reader):
            reader.infer(self._probe_info(), tuple(self._bs))
        return self.set_info_dict_reader(reader)

    def _probe_info(self) -> dict:
        """The info dicts of one reset and one random step, merged."""
        _, info = self._api.reset_env(self._env, None, None)
        spec = self.full_action_spec if self._action_is_td else self.action_spec
        action = self._write_action(spec.rand())
        step = (
            self._env.step if self._vec is not None else lambda a: self._api.step_env(self._env, a)
        )
        step_info = step(action)[-1]
        self._api.reset_env(self._env, None, None)
        if self._vec is not None:
            self._vec.last_obs = None  # the next reset is a full one
        return dict(info or {}) | dict(step_info or {})

    def _add_info_specs(self, spec: Composite) -> None:
        batch = tuple(self._bs)
        locked = getattr(self, "spec_locked", False)
        if locked:
            self.set_spec_lock_(False)
        obs = self.observation_spec.clone()
        for key in spec:
            leaf = spec[key]
            if leaf.shape[: len(batch)] != batch or not batch:
                leaf = leaf.expand(*batch, *leaf.shape) if batch else leaf
            obs[key] = leaf.to(self.device) if self.device is not None else leaf
        self.observation_spec = obs
        if locked:
            self.set_spec_lock_(True)
        self._flat_obs = False

    def _read_info(self, info: Any, td: TensorDictBase) -> TensorDictBase:
        for reader in self.info_dict_reader:
            out = reader(info, td)
            if out is not None:
                td = out
        return td

    # ------------------------------------------------------------------ EnvBase hooks
    def _set_seed(self, seed: int | None) -> None:
        self._next_seed = seed

    def _make_td(self, out: dict) -> TensorDictBase:
        """The output TensorDict, built without validation (the converters made it right)."""
        if self._to_device:  # arrays come from the simulator on the cpu
            return TensorDict(out, batch_size=self._bs).to(self.device, non_blocking=True)
        if self._flat_obs:
            return TensorDict._new_unsafe(out, batch_size=self._bs, device=self._cpu, nested=False)
        return TensorDict(out, batch_size=self._bs, device=self._cpu)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if self._vec is not None:
            return self._vec.reset(tensordict, kwargs)
        seed = kwargs.pop("seed", None)
        if seed is None and self._next_seed is not None:  # (nn.Module setattr is slow)
            seed, self._next_seed = self._next_seed, None
        for reader in self.info_dict_reader:
            getattr(reader, "reset", lambda: None)()
        obs, info = self._api.reset_env(self._env, seed, kwargs.pop("options", None))
        out = self._read_obs(obs)
        false = np.zeros(1, dtype=bool)
        out["done"] = torch.from_numpy(false)
        out["terminated"] = torch.from_numpy(false.copy())
        out["truncated"] = torch.from_numpy(false.copy())
        td = self._make_td(out)
        if self.info_dict_reader:
            td = self._read_info(info or {}, td)
        return td

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._vec is not None:
            return self._vec.step(tensordict)
        obs, reward, terminated, truncated, info = self._step_raw(self._action_of(tensordict))
        out = self._read_obs(obs)
        out["reward"] = torch.from_numpy(np.array([reward], dtype=np.float32))
        # one small array, three views: fewer allocations than three arrays
        flags = np.zeros((3, 1), dtype=bool)
        if terminated or truncated:
            flags[:, 0] = (True, terminated, truncated)
        out["done"] = torch.from_numpy(flags[0])
        out["terminated"] = torch.from_numpy(flags[1])
        out["truncated"] = torch.from_numpy(flags[2])
        td = self._make_td(out)
        if self.info_dict_reader:
            td = self._read_info(info, td)
        return td

    def _action_of(self, tensordict: TensorDictBase) -> Any:
        """The action of ``tensordict`` in the form ``env.step`` takes."""
        if self._action_is_td:
            return self._write_action(tensordict)
        if type(tensordict) is TensorDict:
            return self._write_action(tensordict._tensordict[self._action_key])
        return self._write_action(tensordict.get(self._action_key))

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

    # ------------------------------------------------------------------ direct array I/O
    def _direct_io_supported(self) -> bool:
        """Plain observations, no info reader, no pixels, ``_step``/``_reset`` not overridden."""
        cls = type(self)
        return (
            self._direct_obs is not None
            and not self.info_dict_reader
            and not self._action_is_td
            and not self._to_device
            and cls._step is GymWrapper._step
            and cls._reset is GymWrapper._reset
        )

    def _step_into(self, action: torch.Tensor, out: dict) -> bool:
        if self._vec is not None:
            return self._vec.step_into(action, out)
        obs, reward, terminated, truncated, _ = self._step_raw(self._write_action(action))
        self._direct_obs(obs, out)
        out["reward"][...] = reward
        done = bool(terminated or truncated)
        out["done"][...] = done
        out["terminated"][...] = terminated
        out["truncated"][...] = truncated
        return done

    def _reset_into(self, out: dict, mask: Any = None) -> None:
        if self._vec is not None:
            self._vec.reset_into(out, mask)
            return
        seed = self._next_seed
        if seed is not None:  # (nn.Module setattr is slow)
            self._next_seed = None
        obs, _ = self._api.reset_env(self._env, seed, None)
        self._direct_obs(obs, out)
        out["done"][...] = False
        out["terminated"][...] = False
        out["truncated"][...] = False

    # ------------------------------------------------------------------ misc
    def read_obs(self, observation: Any) -> dict:
        """Convert a raw observation of the simulator to a dict of tensors (TorchRL's name)."""
        return self._read_obs(observation)

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


class GymEnv(GymWrapper):
    """Make a gym or gymnasium env by id, with the current backend (see ``set_gym_backend``).

    Args:
        env_name: the registered id, e.g. ``"CartPole-v1"``.
        num_envs: with gymnasium, build a vector env of this many copies, exposed as one env with
            ``batch_size=[num_envs]`` (default ``0``: a single env).
        vectorization_mode: gymnasium's ``"sync"`` (default), ``"async"`` or
            ``"vector_entry_point"`` (the env's own batched implementation, e.g. CartPole's).
        **kwargs: the :class:`GymWrapper` arguments; every other keyword goes to ``make``.

    >>> env = GymEnv("CartPole-v1")
    >>> env.action_spec.shape
    torch.Size([2])
    >>> GymEnv("CartPole-v1", num_envs=4).batch_size
    torch.Size([4])
    """

    def __init__(self, env_name: str, **kwargs: Any) -> None:
        wrapper_kwargs = {k: kwargs.pop(k) for k in _WRAPPER_KWARGS if k in kwargs}
        num_envs = int(kwargs.pop("num_envs", 0) or 0)
        mode = kwargs.pop("vectorization_mode", None)
        backend = gym_backend()
        api = GymApi.of(backend)
        make_kwargs = api.render_kwargs(wrapper_kwargs.get("from_pixels", False)) | kwargs
        if num_envs:
            env = api.make_vec(backend, env_name, num_envs, mode, make_kwargs)
        else:
            if mode is not None:
                raise ValueError("vectorization_mode needs num_envs > 0.")
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
