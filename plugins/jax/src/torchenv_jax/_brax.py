"""``BraxWrapper`` and ``BraxEnv``: Brax envs, jit+vmap batched, with TorchRL's arguments."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import torch
from tensordict import TensorDictBase

from torchenv.specs import Bounded, Composite, Unbounded
from torchenv_jax._base import JaxEnv, _torch_dtype
from torchenv_jax._versions import import_brax

__all__ = ["BraxWrapper", "BraxEnv"]


def _brax_functions(env: Any) -> tuple:
    import jax.numpy as jnp

    def init(key):
        return env.reset(key)

    def step(state, action):
        state = env.step(state, action)
        terminated = state.done > 0.5
        return state, state.reward, terminated, jnp.zeros_like(terminated)

    def observation(state):
        return state.obs

    return init, step, observation


class BraxWrapper(JaxEnv):
    """A Brax env object (``brax.envs.Env``) as a batched torchenv env.

    Every sub-env of ``batch_size`` is one Brax state; reset and step are ``jax.vmap`` of the
    env's ``reset``/``step``, compiled once per batch size (:attr:`compile_seconds`). Keys follow
    TorchRL's ``BraxEnv``: ``"observation"`` (float32), ``"action"`` (``Bounded(-1, 1)``),
    ``"reward"``, ``"done"``, ``"terminated"`` (Brax's ``done``), plus ``"truncated"`` (set after
    ``max_episode_steps`` steps; Brax envs have no time limit of their own).

    Args:
        env: the Brax env (``brax.envs.get_environment(...)``).
        batch_size: the sub-envs' batch shape (``(num_envs,)``); ``()`` is one env.
        requires_grad: gradients flow from the outputs (observation, reward, next state) back to
            the actions and to the previous state, through Brax's differentiable physics
            (``jax.vjp`` inside a ``torch.autograd.Function``).
        max_episode_steps: truncation after this many steps (default: none, like TorchRL).
        seed: the first seed (default: drawn from torch's global generator).
        device: where the data lives and JAX runs (``"cpu"``; ``"cuda"`` with a CUDA jax).

    >>> import brax.envs
    >>> env = BraxWrapper(brax.envs.get_environment("fast"), batch_size=(4,), seed=0)
    >>> env.rollout(3)["next", "observation"].shape
    torch.Size([4, 3, 2])
    """

    def __init__(
        self,
        env: Any = None,
        *,
        batch_size: Any = (),
        requires_grad: bool = False,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        device: Any = None,
        categorical_action_encoding: bool = False,
        cache_key: Hashable | None = None,
        **kwargs: Any,
    ) -> None:
        brax = import_brax()
        if env is None:
            raise TypeError("BraxWrapper: expected a Brax env (brax.envs.get_environment(...))")
        if not isinstance(env, brax.envs.Env):
            raise TypeError(f"BraxWrapper: `env` must be a brax.envs.Env, got {type(env).__name__}")
        if kwargs.pop("from_pixels", False):
            raise NotImplementedError("BraxWrapper: from_pixels=True is not supported")
        kwargs.pop("pixels_only", None)
        super().__init__(batch_size=batch_size, device=device, **kwargs)
        self._env = env
        self.requires_grad = bool(requires_grad)
        init, step, observation = _brax_functions(env)
        self._make_specs(env, init)
        self._setup(
            init=init,
            step=step,
            observation=observation,
            action_shape=(env.action_size,),
            action_dtype="float32",
            cache_key=cache_key,
            max_episode_steps=max_episode_steps,
            seed=seed,
        )

    def _make_specs(self, env: Any, init: Any) -> None:
        import jax

        shape = self.batch_size
        obs = jax.eval_shape(init, jax.random.PRNGKey(0)).obs
        if not isinstance(obs, dict):  # one array: "observation"; a dict: one key per entry
            obs = {"observation": obs}
        self.observation_spec = Composite(
            {
                key: Unbounded(
                    (*shape, *leaf.shape), dtype=_torch_dtype(leaf.dtype), device=self.device
                )
                for key, leaf in obs.items()
            },
            shape=shape,
        )
        self.action_spec = Bounded(
            -1.0, 1.0, (*shape, env.action_size), dtype=torch.float32, device=self.device
        )
        self.reward_spec = Unbounded((*shape, 1), dtype=torch.float32, device=self.device)

    @property
    def lib(self) -> Any:
        """The ``brax`` module."""
        return import_brax()

    @property
    def base_env(self) -> Any:
        """The wrapped Brax env."""
        return self._env

    def _after_reset(self, rows: torch.Tensor | None) -> None:
        if self.requires_grad:
            from torchenv_jax._grad import merge_after_reset

            merge_after_reset(self, rows)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.requires_grad:
            from torchenv_jax._grad import differentiable_step

            return differentiable_step(self, tensordict)
        return super()._step(tensordict)


class BraxEnv(BraxWrapper):
    """A Brax env by name (``torchenv.list_envs("brax")``), with TorchRL's ``BraxEnv`` arguments.

    Args:
        env_name: a name of Brax's registry (``"ant"``, ``"halfcheetah"``, ``"fast"``...).
        batch_size: the sub-envs' batch shape; ``torchenv.make("brax:ant", num_envs=N)`` gives
            ``(N,)``.
        requires_grad: see :class:`BraxWrapper`.
        max_episode_steps: see :class:`BraxWrapper`.
        seed: see :class:`BraxWrapper`.
        device: see :class:`BraxWrapper`.
        **kwargs: Brax's own arguments (``backend="positional"``, ...), passed to
            ``brax.envs.get_environment``.

    >>> env = BraxEnv("fast", batch_size=(8,), seed=0)
    >>> env.reset()["observation"].shape
    torch.Size([8, 2])
    """

    def __init__(
        self,
        env_name: str,
        *,
        batch_size: Any = (),
        requires_grad: bool = False,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        device: Any = None,
        **kwargs: Any,
    ) -> None:
        brax = import_brax()
        from torchenv_jax._versions import brax_env_names

        known = brax_env_names()
        if env_name not in known:
            raise ValueError(f"BraxEnv: unknown env {env_name!r}; Brax has {', '.join(known)}")
        env_kwargs = {
            k: kwargs.pop(k)
            for k in ("from_pixels", "pixels_only", "allow_done_after_reset")
            if k in kwargs
        }
        kwargs.pop("categorical_action_encoding", None)
        try:
            cache_key = ("brax", env_name, tuple(sorted(kwargs.items())), max_episode_steps)
            hash(cache_key)
        except TypeError:
            cache_key = None
        self.env_name = env_name
        super().__init__(
            brax.envs.get_environment(env_name, **kwargs),
            batch_size=batch_size,
            requires_grad=requires_grad,
            max_episode_steps=max_episode_steps,
            seed=seed,
            device=device,
            cache_key=cache_key,
            **env_kwargs,
        )

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, env_name={self.env_name!r})"
