"""``JumanjiWrapper`` and ``JumanjiEnv``: Jumanji envs, jit+vmap batched, TorchRL's arguments."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from torchenv.specs import Composite
from torchenv_jax._base import JaxEnv
from torchenv_jax._jumanji_specs import is_nested, observation_as_dict, to_spec
from torchenv_jax._versions import import_jumanji

__all__ = ["JumanjiWrapper", "JumanjiEnv"]


def _jumanji_functions(env: Any, obs_spec: Any, action_spec: Any, categorical: bool) -> tuple:
    import jax.numpy as jnp
    from jumanji import specs

    nvec = None
    if not categorical and isinstance(action_spec, specs.MultiDiscreteArray):
        nvec = [int(v) for v in np.asarray(action_spec.num_values).reshape(-1)]

    def decode(action):  # one-hot (bool) -> indices, inside the jitted step
        if categorical:
            return action
        if nvec is None:
            return jnp.argmax(action, axis=-1).astype(action_spec.dtype)
        parts, start = [], 0
        for size in nvec:
            parts.append(jnp.argmax(action[start : start + size]))
            start += size
        return jnp.stack(parts).astype(action_spec.dtype)

    def init(key):
        state, timestep = env.reset(key)
        return state, timestep.observation

    def step(carry, action):
        state, timestep = env.step(carry[0], decode(action))
        last = timestep.last()
        ended = jnp.all(timestep.discount == 0)
        return (state, timestep.observation), timestep.reward, last & ended, last & ~ended

    def observation(carry):
        return observation_as_dict(carry[1], obs_spec)

    return init, step, observation


class JumanjiWrapper(JaxEnv):
    """A Jumanji env object (``jumanji.make(...)``) as a batched torchenv env.

    Every sub-env of ``batch_size`` is one Jumanji state; reset and step are ``jax.vmap`` of the
    env's ``reset``/``step``, compiled once per batch size (:attr:`compile_seconds`). Keys follow
    TorchRL's ``JumanjiEnv``: the observation's fields at the root (Snake: ``"grid"``,
    ``"step_count"``, ``"action_mask"``; nested fields as sub-tensordicts; an array observation as
    ``"observation"``), ``"action"``, ``"reward"``, ``"done"``, ``"terminated"`` (the episode ended
    with discount 0) and ``"truncated"`` (ended with a non-zero discount: a time limit). Specs come
    from Jumanji's: ``DiscreteArray`` -> ``Categorical``, ``MultiDiscreteArray`` ->
    ``MultiCategorical``, boolean arrays (``"action_mask"``) -> ``Categorical(2, bool)``,
    ``BoundedArray`` -> ``Bounded``, ``Array`` -> ``Unbounded``. Append
    ``torchenv.transforms.ActionMask()`` to sample only allowed actions.

    Args:
        env: the Jumanji env (``jumanji.make(...)``).
        batch_size: the sub-envs' batch shape (``(num_envs,)``); ``()`` is one env.
        categorical_action_encoding: action indices (default) or one-hot.
        max_episode_steps: truncation after this many steps (default: the env's own limit).
        seed: the first seed (default: drawn from torch's global generator).
        device: where the data lives and JAX runs.

    >>> import jumanji
    >>> env = JumanjiWrapper(jumanji.make("Game2048-v1"), batch_size=(4,), seed=0)
    >>> env.rollout(3)["next", "board"].shape
    torch.Size([4, 3, 4, 4])
    """

    def __init__(
        self,
        env: Any = None,
        *,
        batch_size: Any = (),
        categorical_action_encoding: bool = True,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        device: Any = None,
        cache_key: Hashable | None = None,
        **kwargs: Any,
    ) -> None:
        jumanji = import_jumanji()
        if env is None:
            raise TypeError("JumanjiWrapper: expected a Jumanji env (jumanji.make(...))")
        if not isinstance(env, jumanji.env.Environment):
            raise TypeError(
                f"JumanjiWrapper: `env` must be a jumanji Environment, got {type(env).__name__}"
            )
        if kwargs.pop("from_pixels", False):
            raise NotImplementedError(
                "JumanjiWrapper: from_pixels=True is not supported (Jumanji renders one state "
                "at a time with matplotlib); use env.base_env.render(state) for frames"
            )
        kwargs.pop("pixels_only", None)
        super().__init__(batch_size=batch_size, device=device, **kwargs)
        self._env = env
        self.categorical_action_encoding = bool(categorical_action_encoding)
        obs_spec, action_spec = env.observation_spec, env.action_spec
        self._make_specs(env, obs_spec, action_spec)
        init, step, observation = _jumanji_functions(
            env, obs_spec, action_spec, self.categorical_action_encoding
        )
        action = self.action_spec
        self._setup(
            init=init,
            step=step,
            observation=observation,
            action_shape=tuple(action.shape[len(self.batch_size) :]),
            action_dtype=str(action.dtype).replace("torch.", ""),
            reward_shape=tuple(self.reward_spec.shape[len(self.batch_size) :]),
            cache_key=cache_key,
            max_episode_steps=max_episode_steps,
            seed=seed,
        )

    def _make_specs(self, env: Any, obs_spec: Any, action_spec: Any) -> None:
        batch, device = tuple(self.batch_size), self.device
        if is_nested(action_spec):
            raise NotImplementedError(
                f"JumanjiWrapper: nested action specs are not supported ({action_spec})"
            )
        observation = to_spec(obs_spec, batch, device, what="observation_spec")
        if not isinstance(observation, Composite):
            observation = Composite(observation=observation, shape=batch, device=device)
        self.observation_spec = observation
        self.action_spec = to_spec(
            action_spec,
            batch,
            device,
            categorical=self.categorical_action_encoding,
            what="action_spec",
        )
        reward = env.reward_spec
        self.reward_spec = to_spec(reward, batch, device, what="reward_spec")
        if not reward.shape:
            self.reward_spec = self.reward_spec.unsqueeze(-1)

    @property
    def lib(self) -> Any:
        """The ``jumanji`` module."""
        return import_jumanji()

    @property
    def base_env(self) -> Any:
        """The wrapped Jumanji env."""
        return self._env


class JumanjiEnv(JumanjiWrapper):
    """A Jumanji env by id (``torchenv.list_envs("jumanji")``), with TorchRL's arguments.

    Args:
        env_name: an id of Jumanji's registry (``"Snake-v1"``, ``"Game2048-v1"``...).
        batch_size: the sub-envs' batch shape; ``torchenv.make("jumanji:Snake-v1", num_envs=N)``
            gives ``(N,)``.
        categorical_action_encoding: see :class:`JumanjiWrapper`.
        max_episode_steps: see :class:`JumanjiWrapper`.
        seed: see :class:`JumanjiWrapper`.
        device: see :class:`JumanjiWrapper`.
        from_pixels: not supported (raises).
        **kwargs: the env's own arguments, passed to ``jumanji.make``.

    >>> env = JumanjiEnv("Snake-v1", batch_size=(2,), seed=0)
    >>> sorted(env.observation_keys)
    ['action_mask', 'grid', 'step_count']
    """

    def __init__(
        self,
        env_name: str,
        *,
        batch_size: Any = (),
        categorical_action_encoding: bool = True,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        device: Any = None,
        from_pixels: bool = False,
        **kwargs: Any,
    ) -> None:
        jumanji = import_jumanji()
        from torchenv_jax._versions import jumanji_env_names

        known = jumanji_env_names()
        if env_name not in known:
            raise ValueError(
                f"JumanjiEnv: unknown env {env_name!r}; Jumanji has {', '.join(known)}"
            )
        env_kwargs = {
            k: kwargs.pop(k) for k in ("pixels_only", "allow_done_after_reset") if k in kwargs
        }
        try:
            cache_key = (
                "jumanji",
                env_name,
                tuple(sorted(kwargs.items())),
                bool(categorical_action_encoding),
                max_episode_steps,
            )
            hash(cache_key)
        except TypeError:
            cache_key = None
        self.env_name = env_name
        super().__init__(
            jumanji.make(env_name, **kwargs),
            batch_size=batch_size,
            categorical_action_encoding=categorical_action_encoding,
            max_episode_steps=max_episode_steps,
            seed=seed,
            device=device,
            cache_key=cache_key,
            from_pixels=from_pixels,
            **env_kwargs,
        )

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, env_name={self.env_name!r})"
