"""``VmasWrapper`` and ``VmasEnv``: VMAS scenarios as natively batched multi-agent envs.

The env's batch size is ``(num_envs,)``; agents are grouped under nested keys by
:class:`~torchenv.envs.MarlLayout` (TorchRL's layout: ``(group, "observation")``,
``(group, "action")``, ``(group, "reward")``, ``(group, "info", ...)``, root ``"done"``,
``"terminated"``, ``"truncated"``). Tensors stay torch from VMAS to the TensorDict: one
``torch.stack`` per group and key, no numpy, no per-env loop.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from torchenv.envs import EnvBase, MarlGroupMapType, MarlLayout, group_map_by_prefix
from torchenv_vmas._backend import import_vmas
from torchenv_vmas._specs import info_spec, space_to_spec
from torchenv_vmas._versions import rng_binding

__all__ = ["VmasWrapper", "VmasEnv"]

GroupMap = MarlGroupMapType | Mapping[str, Sequence[str]] | None

# TorchRL's default grouping: by "<name>_<int>" prefix; a lone "agent" group is called "agents".
_DEFAULT_GROUP_MAP = functools.partial(group_map_by_prefix, lone_agent_as_agents=True)


class VmasWrapper(EnvBase):
    """A VMAS env (``vmas.make_env(...)``) as a torchenv env, with TorchRL's ``VmasWrapper`` API.

    Args:
        env: the VMAS ``Environment`` to wrap. Made with ``terminated_truncated=True`` it gives
            ``"terminated"`` and ``"truncated"`` apart (``max_steps`` truncates); otherwise
            ``"terminated"`` is a copy of ``"done"`` and ``"truncated"`` is absent (TorchRL's keys).
        categorical_actions: discrete actions as category indices (default) or one-hot.
        group_map: how agents are grouped: a :class:`~torchenv.envs.MarlGroupMapType` or a dict
            group -> agent names. Default: by name prefix (``agent_0``, ``agent_1`` -> group
            ``"agents"``; ``adversary_0``, ``agent_0`` -> groups ``"adversary"`` and ``"agent"``).
        device: must match the VMAS env's device if given.

    Its attributes: ``group_map`` (the resolved group map), ``agent_names``, ``n_agents``,
    ``num_envs``, ``scenario`` (the VMAS scenario object), ``het_specs_map`` (group -> lazily
    stacked).

    >>> import vmas
    >>> env = VmasWrapper(vmas.make_env("balance", num_envs=4, seed=0, terminated_truncated=True))
    >>> env.batch_size, env.group_map
    (torch.Size([4]), {'agents': ['agent_0', 'agent_1', 'agent_2']})
    >>> env.rollout(3)["next", "agents", "reward"].shape
    torch.Size([4, 3, 3, 1])
    """

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_actions: bool = True,
        group_map: GroupMap = None,
        device: Any = None,
        **kwargs: Any,
    ) -> None:
        vmas = import_vmas()
        environment = vmas.simulator.environment.Environment
        if env is None:
            raise TypeError("VmasWrapper: expected a VMAS env (vmas.make_env(...)) as `env`")
        if not isinstance(env, environment):
            raise TypeError(
                f"VmasWrapper: `env` must be a vmas Environment (vmas.make_env(...)), got "
                f"{type(env).__name__}; wrappers made with `wrapper=` are not accepted"
            )
        if device is not None and torch.device(device) != torch.device(env.device):
            raise TypeError(
                f"VmasWrapper: device={device!r} differs from the VMAS env's device {env.device}"
            )
        from_pixels = kwargs.pop("from_pixels", False)
        kwargs.pop("pixels_only", None)
        if from_pixels:
            raise NotImplementedError(
                "VmasWrapper: from_pixels is not supported (VMAS renders one sub-env at a time); "
                "use env.render() or torchenv.record.PixelRenderTransform for frames"
            )
        kwargs.setdefault("allow_done_after_reset", True)
        super().__init__(batch_size=(env.num_envs,), device=env.device, **kwargs)
        self._env = env
        self.categorical_actions = bool(categorical_actions)
        self._enter, self._leave = rng_binding(env)
        self._build(group_map)

    # ------------------------------------------------------------------ construction
    def _build(self, group_map: GroupMap) -> None:
        env = self._env
        self._tt = bool(getattr(env, "terminated_truncated", False))
        self._dict_io = bool(env.dict_spaces)
        names = [agent.name for agent in env.agents]
        act_spaces = [env.action_space[n] for n in names] if self._dict_io else env.action_space
        obs_spaces = (
            [env.observation_space[n] for n in names] if self._dict_io else env.observation_space
        )
        self._enter()
        try:
            infos = [env.scenario.info(agent) for agent in env.agents]
        finally:
            self._leave()
        infos = [info_spec(info, env.num_envs) for info in infos]
        self._has_info = any(spec is not None for spec in infos)
        if self._has_info and any(spec is None for spec in infos):
            missing = [n for n, spec in zip(names, infos, strict=True) if spec is None]
            raise NotImplementedError(
                f"VmasWrapper: the agents {missing} return no info while others do"
            )
        layout = MarlLayout(
            names,
            group_map,
            observation_specs={
                n: space_to_spec(s, what=f"observation space of {n!r}")
                for n, s in zip(names, obs_spaces, strict=True)
            },
            action_specs={
                n: space_to_spec(
                    s, categorical=self.categorical_actions, what=f"action space of {n!r}"
                )
                for n, s in zip(names, act_spaces, strict=True)
            },
            info_specs=dict(zip(names, infos, strict=True)) if self._has_info else None,
            done="root",
            truncated=self._tt,
            batch_size=self.batch_size,
            device=self.device,
            default_group_map=_DEFAULT_GROUP_MAP,
        )
        layout.set_specs(self)
        self._layout = layout
        self.group_map = layout.group_map
        self.agent_names = names
        self.het_specs_map = dict(layout.heterogeneous)
        self.het_specs = any(self.het_specs_map.values())
        # one-hot actions are turned into indices before VMAS sees them
        self._onehot = not env.continuous_actions and not self.categorical_actions

    # ------------------------------------------------------------------ TorchRL's attributes
    @property
    def lib(self) -> Any:
        return import_vmas()

    @property
    def n_agents(self) -> int:
        return self._env.n_agents

    @property
    def num_envs(self) -> int:
        return self._env.num_envs

    @property
    def scenario(self) -> Any:
        return self._env.scenario

    @property
    def continuous_actions(self) -> bool:
        return self._env.continuous_actions

    @property
    def base_vmas_env(self) -> Any:
        """The wrapped VMAS ``Environment``."""
        return self._env

    # ------------------------------------------------------------------ hot path
    def _as_list(self, values: Any) -> Any:
        return [values[n] for n in self.agent_names] if self._dict_io else values

    def _outputs(self, obs: Any, infos: Any, flags: tuple, rewards: Any = None) -> TensorDictBase:
        per_agent = {"observation": self._as_list(obs)}
        if rewards is not None:
            per_agent["reward"] = self._as_list(rewards)
        if self._has_info:
            per_agent["info"] = self._as_list(infos)
        if self._tt:
            terminated, truncated = flags
            root = {
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            }
        else:
            root = {"done": flags[0], "terminated": flags[0].clone()}
        return self._layout.output(per_agent, root)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = self._layout.split_actions(tensordict, categorical=self._onehot)
        self._enter()
        try:
            out = self._env.step(actions)
        finally:
            self._leave()
        obs, rewards, *flags, infos = out
        return self._outputs(obs, infos, tuple(flags), rewards)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        rows = self._layout.reset_rows(tensordict)
        env = self._env
        self._enter()
        try:
            if bool(rows.all()):
                env.reset(return_observations=False)
            elif bool(rows.any()):
                # VMAS resets one index at a time (reset_at(int)); its scenarios draw one
                # sample for an index, so no batched reset by mask exists: loop over the
                # sub-envs to reset only.
                for index in rows.nonzero().flatten().tolist():
                    env.reset_at(index, return_observations=False)
            out = env.get_from_scenario(
                get_observations=True,
                get_rewards=False,
                get_infos=True,
                get_dones=True,
            )
        finally:
            self._leave()
        obs, *flags, infos = out
        return self._outputs(obs, infos, tuple(flags))

    def _set_seed(self, seed: int | None) -> None:
        self._enter(full=True)  # VMAS < 1.5.1 reseeds numpy's and random's generators too
        try:
            self._env.seed(seed)
        finally:
            self._leave()

    # ------------------------------------------------------------------ rendering, devices
    def render(self, mode: str = "rgb_array", env_index: int = 0, **kwargs: Any) -> Any:
        """One frame of the sub-env ``env_index``: an ``(H, W, 3)`` uint8 numpy array.

        Runs VMAS's pyglet renderer (headless where no display is set). For videos, append
        ``torchenv.record.PixelRenderTransform()`` to the env.

        >>> import vmas
        >>> env = VmasWrapper(vmas.make_env("balance", num_envs=2))
        >>> env.render().shape  # doctest: +SKIP
        (700, 700, 3)
        """
        self._enter()
        try:
            frame = self._env.render(mode=mode, env_index=env_index, **kwargs)
        finally:
            self._leave()
        # VMAS flips the GL buffer with a negative stride: torch.as_tensor refuses those
        return np.ascontiguousarray(frame) if isinstance(frame, np.ndarray) else frame

    def to(self, device: Any) -> VmasWrapper:
        device = torch.device(device)
        if device == self.device:
            return self
        self._env.to(device)
        super().to(device)
        self._build(self.group_map)
        return self

    def _close(self) -> None:
        viewer = getattr(self._env, "viewer", None)
        if viewer is not None:
            viewer.close()
            self._env.viewer = None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self.num_envs}, n_agents={self.n_agents}, "
            f"batch_size={self.batch_size}, device={self.device})"
        )


class VmasEnv(VmasWrapper):
    """A VMAS scenario by name, with TorchRL's ``VmasEnv`` arguments and defaults.

    Args:
        scenario: a VMAS scenario name (``torchenv.list_envs("vmas")``) or a ``BaseScenario``.
        num_envs: the number of sub-envs simulated together (the batch size).
        continuous_actions: continuous (default) or discrete actions.
        max_steps: the horizon: sub-envs are ``"truncated"`` after it. ``None``: no horizon.
        categorical_actions: discrete actions as indices (default) or one-hot.
        seed: VMAS's seed.
        group_map: see :class:`VmasWrapper`.
        device: where VMAS simulates (``"cpu"`` by default, ``"cuda"``).
        scenario_kwargs: the scenario's own arguments (merged with ``**kwargs``).
        **kwargs: more scenario arguments (e.g. ``n_agents=5``).

    >>> env = VmasEnv("navigation", num_envs=8, seed=0, n_agents=2)
    >>> env.group_map
    {'agents': ['agent_0', 'agent_1']}
    >>> env.reset()["agents", "observation"].shape
    torch.Size([8, 2, 18])
    """

    def __init__(
        self,
        scenario: Any,
        *,
        num_envs: int,
        continuous_actions: bool = True,
        max_steps: int | None = None,
        categorical_actions: bool = True,
        seed: int | None = None,
        group_map: GroupMap = None,
        device: Any = None,
        scenario_kwargs: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        vmas = import_vmas()
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"VmasEnv: num_envs must be a positive int, got {num_envs!r}")
        if isinstance(scenario, str):
            from torchenv_vmas._backend import scenario_names

            known = scenario_names()
            if scenario not in known:
                raise ValueError(
                    f"VmasEnv: unknown scenario {scenario!r}; VMAS has {', '.join(known)}"
                )
        env_kwargs = {
            k: kwargs.pop(k)
            for k in ("from_pixels", "pixels_only", "allow_done_after_reset")
            if k in kwargs
        }
        scenario_kwargs = {**(scenario_kwargs or {}), **kwargs}
        self.scenario_name = scenario if isinstance(scenario, str) else type(scenario).__name__
        if device is None:
            device = torch.get_default_device()
        env = vmas.make_env(
            scenario=scenario,
            num_envs=num_envs,
            device=device,
            continuous_actions=continuous_actions,
            max_steps=max_steps,
            seed=seed,
            wrapper=None,
            terminated_truncated=True,
            **scenario_kwargs,
        )
        super().__init__(
            env, categorical_actions=categorical_actions, group_map=group_map, **env_kwargs
        )

    def __repr__(self) -> str:
        return f"{super().__repr__()} (scenario={self.scenario_name})"
