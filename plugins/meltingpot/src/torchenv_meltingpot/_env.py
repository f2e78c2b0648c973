"""``MeltingpotWrapper`` and ``MeltingpotEnv``: Melting Pot substrates as multi-agent envs.

TorchRL's ``MeltingpotWrapper`` layout, built by :class:`~torchenv.envs.MarlLayout`: players
``player_0`` ... under groups; ``(group, "observation")`` holds each player's own observations
(``"RGB"`` pixels, ``"READY_TO_SHOOT"``, ``"COLLECTIVE_REWARD"``, ... as the substrate gives
them; scalars get shape ``(1,)``), ``(group, "action")``, ``(group, "reward")`` (each player's
reward), root ``"done"``/``"terminated"`` and the global observations without their ``WORLD.``
prefix (``"RGB"``: the whole map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from torchenv.envs import EnvBase, MarlGroupMapType, MarlLayout
from torchenv.specs import Bounded, Categorical, Composite, OneHot, TensorSpec, Unbounded
from torchenv_meltingpot._backend import import_meltingpot
from torchenv_meltingpot._substrates import build_substrate, substrate_config, substrate_names

__all__ = ["MeltingpotEnv", "MeltingpotWrapper"]

GroupMap = MarlGroupMapType | Mapping[str, Sequence[str]] | None
_WORLD = "WORLD."


class _classproperty:
    """A read-only property computed on the class (``MeltingpotEnv.available_envs``)."""

    def __init__(self, fget: Any) -> None:
        self.fget = fget
        self.__doc__ = fget.__doc__

    def __get__(self, obj: Any, owner: type) -> Any:
        return self.fget(owner)


def _torch_dtype(dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype


def _leaf_spec(spec: Any, categorical: bool = True) -> TensorSpec:
    """A torchenv spec of a ``dm_env.specs`` array (scalars get shape ``(1,)``, as in TorchRL)."""
    shape = tuple(spec.shape) or (1,)
    dtype = _torch_dtype(spec.dtype)
    num_values = getattr(spec, "num_values", None)
    if num_values is not None:  # DiscreteArray: an action
        if categorical:
            return Categorical(num_values, dtype=torch.int64)
        return OneHot(num_values, dtype=torch.int64)
    if hasattr(spec, "minimum") and hasattr(spec, "maximum"):
        low = np.broadcast_to(spec.minimum, spec.shape).reshape(shape)
        high = np.broadcast_to(spec.maximum, spec.shape).reshape(shape)
        return Bounded(torch.as_tensor(low), torch.as_tensor(high), shape=shape, dtype=dtype)
    return Unbounded(shape=shape, dtype=dtype)


class MeltingpotWrapper(EnvBase):
    """A Melting Pot substrate as a torchenv env, with TorchRL's ``MeltingpotWrapper`` API.

    Every player acts on every step (one discrete action each). Melting Pot gives no truncation
    signal: ``max_steps`` ends (``"done"`` and ``"terminated"``) an episode after that many
    steps, as TorchRL does.

    Args:
        env: a ``meltingpot.utils.substrates.substrate.Substrate``.
        categorical_actions: actions as indices (default) or one-hot.
        group_map: a :class:`~torchenv.envs.MarlGroupMapType` or a dict group -> players.
            Default ``ALL_IN_ONE_GROUP`` (group ``"agents"``); ``None``: one group per player.
        max_steps: the horizon of an episode (default: the substrate's own).
        from_pixels: add the root ``"pixels"``: the whole map (``WORLD.RGB``), as rendered.
        **kwargs: :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    A wrapped substrate cannot be reseeded (Melting Pot seeds a substrate when it is built):
    :class:`MeltingpotEnv`, which builds it, can.
    """

    def __init__(
        self,
        env: Any = None,
        categorical_actions: bool = True,
        group_map: GroupMap = MarlGroupMapType.ALL_IN_ONE_GROUP,
        max_steps: int | None = None,
        *,
        from_pixels: bool = False,
        **kwargs: Any,
    ) -> None:
        import_meltingpot()
        from meltingpot.utils.substrates.substrate import Substrate

        if not isinstance(env, Substrate):
            raise TypeError(
                "MeltingpotWrapper: expected a meltingpot Substrate as `env` (from "
                f"meltingpot.substrate.build), got {type(env).__name__}"
            )
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise ValueError(
                f"MeltingpotWrapper: max_steps must be a positive int, got {max_steps!r}"
            )
        batch_size = kwargs.pop("batch_size", None)
        if batch_size is not None and len(batch_size):
            raise ValueError(
                f"MeltingpotWrapper: batch_size={tuple(batch_size)}; substrates are single envs "
                "(batch them with SerialEnv / ParallelEnv)"
            )
        if kwargs.pop("pixels_only", False):
            raise NotImplementedError(
                "MeltingpotWrapper: pixels_only=True is not supported: each player's "
                "observation is already its 'RGB' view (from_pixels=True adds the whole map)"
            )
        super().__init__(**kwargs)
        self._env = env
        self.categorical_actions = bool(categorical_actions)
        self.max_steps = max_steps
        self.from_pixels = bool(from_pixels)
        self.num_cycles = 0
        self._build(group_map)

    # ------------------------------------------------------------------ construction
    def _build(self, group_map: GroupMap) -> None:
        env = self._env
        obs_specs = env.observation_spec()
        n = len(obs_specs)
        self.agent_names = [f"player_{i}" for i in range(n)]
        self.agent_names_to_indices_map = {a: i for i, a in enumerate(self.agent_names)}
        self._own_keys = [k for k in obs_specs[0] if not k.startswith(_WORLD)]
        self._world_keys = [k for k in obs_specs[0] if k.startswith(_WORLD)]
        observation = {
            a: Composite({k: _leaf_spec(obs_specs[i][k]) for k in self._own_keys})
            for i, a in enumerate(self.agent_names)
        }
        actions = {
            a: _leaf_spec(spec, self.categorical_actions)
            for a, spec in zip(self.agent_names, env.action_spec(), strict=True)
        }
        rewards = {
            a: _leaf_spec(spec) for a, spec in zip(self.agent_names, env.reward_spec(), strict=True)
        }
        layout = MarlLayout(
            self.agent_names,
            group_map,
            observation_specs=observation,
            action_specs=actions,
            reward_specs=rewards,
            done="root",
            truncated=False,
            device=self.device,
            default_group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map,  # as TorchRL
        )
        layout.set_specs(self)
        self._layout = layout
        self.group_map = layout.group_map
        spec = self.full_observation_spec.clone()
        for key in self._world_keys:
            name = key[len(_WORLD) :]
            if name in self.group_map:
                raise ValueError(f"MeltingpotWrapper: a group named {name!r} clashes with {key}")
            spec[name] = _leaf_spec(obs_specs[0][key]).to(self.device)
        if self.from_pixels:
            if _WORLD + "RGB" not in self._world_keys:
                raise ValueError("MeltingpotWrapper: from_pixels=True needs WORLD.RGB")
            spec["pixels"] = spec["RGB"].clone()
        self.full_observation_spec = spec
        self._shapes = {k: tuple(v.shape) or (1,) for k, v in obs_specs[0].items()}

    # ------------------------------------------------------------------ TorchRL's attributes
    @_classproperty
    def available_envs(cls) -> list[str]:
        """The names of Melting Pot's substrates."""
        return substrate_names()

    @property
    def lib(self) -> Any:
        import meltingpot

        return meltingpot

    @property
    def num_agents(self) -> int:
        return len(self.agent_names)

    @property
    def base_env(self) -> Any:
        """The wrapped Melting Pot substrate."""
        return self._env

    # ------------------------------------------------------------------ outputs
    def _output(self, timestep: Any, done: bool, step: bool) -> TensorDictBase:
        observations = timestep.observation
        own = self._own_keys
        per_agent: dict[str, Any] = {"observation": [{k: o[k] for k in own} for o in observations]}
        if step:
            per_agent["reward"] = list(timestep.reward)
        out = self._layout.output(per_agent, {"done": done, "terminated": done})
        world = observations[0]
        for key in self._world_keys:
            value = torch.from_numpy(np.array(world[key]).reshape(self._shapes[key]))
            out.set(key[len(_WORLD) :], value if self.device is None else value.to(self.device))
        if self.from_pixels:
            out.set("pixels", out.get("RGB").clone())
        return out

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        self.__dict__["num_cycles"] = 0  # not through nn.Module.__setattr__: a hot path
        return self._output(self._env.reset(), False, step=False)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = self._layout.split_actions(tensordict, numpy=True, categorical=True)
        timestep = self._env.step([int(actions[a]) for a in self.agent_names])
        self.__dict__["num_cycles"] = self.num_cycles + 1
        done = bool(timestep.last()) or (
            self.max_steps is not None and self.num_cycles >= self.max_steps
        )
        return self._output(timestep, done, step=True)

    def _set_seed(self, seed: int | None) -> None:
        raise NotImplementedError(
            "MeltingpotWrapper: a built substrate cannot be reseeded (Melting Pot seeds it when "
            "it is built); use MeltingpotEnv(substrate), which rebuilds it on set_seed"
        )

    def get_rgb_image(self) -> torch.Tensor:
        """The whole map as an ``(H, W, 3)`` uint8 image (TorchRL's ``get_rgb_image``)."""
        return torch.from_numpy(np.array(self._env.observation()[0][_WORLD + "RGB"]))

    def render(self) -> np.ndarray:
        """The whole map, ``(H, W, 3)`` uint8."""
        return self.get_rgb_image().numpy()

    def close(self, *, raise_if_closed: bool = False) -> None:
        if not self.is_closed:
            self._env.close()
        super().close(raise_if_closed=raise_if_closed)


class MeltingpotEnv(MeltingpotWrapper):
    """A Melting Pot substrate by name, with TorchRL's ``MeltingpotEnv`` arguments.

    Args:
        substrate: a substrate name (``MeltingpotEnv.available_envs``) or its ``ConfigDict``
            (``meltingpot.substrate.get_config(name)``, possibly customised).
        roles: one role per player (default: the substrate's ``default_player_roles``); their
            number is the number of players.
        max_steps: see :class:`MeltingpotWrapper`.
        categorical_actions: see :class:`MeltingpotWrapper`.
        group_map: see :class:`MeltingpotWrapper`.
        from_pixels: see :class:`MeltingpotWrapper`.
        **kwargs: :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    :meth:`set_seed` rebuilds the substrate with the seed (Melting Pot seeds its world when it
    is built); that pins what the build draws, not every source of randomness of the
    substrate (see ``docs/meltingpot.md``).
    """

    def __init__(
        self,
        substrate: Any,
        *,
        max_steps: int | None = None,
        categorical_actions: bool = True,
        group_map: GroupMap = MarlGroupMapType.ALL_IN_ONE_GROUP,
        roles: Sequence[str] | None = None,
        from_pixels: bool = False,
        **kwargs: Any,
    ) -> None:
        config = substrate_config(substrate)
        roles = list(config.default_player_roles if roles is None else roles)
        env = build_substrate(config, roles, None)
        self.__dict__["_config"] = config
        self.__dict__["_roles"] = roles
        super().__init__(
            env,
            categorical_actions=categorical_actions,
            group_map=group_map,
            max_steps=max_steps,
            from_pixels=from_pixels,
            **kwargs,
        )
        self.substrate = substrate if isinstance(substrate, str) else "<config>"

    def _set_seed(self, seed: int | None) -> None:
        env = build_substrate(self._config, self._roles, seed)
        self._env.close()
        self._env = env

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(substrate={self.substrate}, players={self.num_agents}, "
            f"group_map={self.group_map})"
        )
