"""``PettingZooWrapper`` and ``PettingZooEnv``: PettingZoo envs as multi-agent torchenv envs.

Agents are grouped under nested keys by :class:`~torchenv.envs.MarlLayout`, with TorchRL's
``PettingZooWrapper`` layout: ``(group, "observation")``, ``(group, "action")``,
``(group, "reward")``, per-agent ``(group, "done" | "terminated" | "truncated")``, root flags
aggregated with ``done_on_any``, ``(group, "action_mask")``, ``(group, "mask")`` (``use_mask``),
``(group, "info", ...)`` and ``"state"`` (``return_state``). PettingZoo's numpy dicts are written
straight into one tensor per group and key (no per-agent TensorDict on a step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tensordict import TensorDictBase

from torchenv.envs import (
    EnvBase,
    MarlGroupMapType,
    MarlLayout,
    group_map_by_prefix,
    resolve_group_map,
)
from torchenv_pettingzoo._backend import import_pettingzoo
from torchenv_pettingzoo._specs import MASK, agent_specs, state_spec

__all__ = ["PettingZooEnv", "PettingZooWrapper"]

GroupMap = MarlGroupMapType | Mapping[str, Sequence[str]] | None

# EnvBase's own keywords; PettingZooEnv hands every other keyword to the task
_ENV_KWARGS = (
    "device",
    "batch_size",
    "run_type_checks",
    "allow_done_after_reset",
    "spec_locked",
    "auto_reset",
    "auto_reset_replace",
)


def _parallel_default_group_map(agents: Sequence[str]) -> dict[str, list[str]]:
    # TorchRL: "<name>_<int>" agents grouped by <name>, any other agent in its own group
    return group_map_by_prefix(agents, fallback="own_group")


def _aec_default_group_map(agents: Sequence[str]) -> dict[str, list[str]]:
    return MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(list(agents))


class PettingZooWrapper(EnvBase):
    """A PettingZoo env (parallel or AEC) as a torchenv env, with TorchRL's ``PettingZooWrapper`` API.

    Parallel envs: every live agent acts on each step; agents that left the episode are absent
    from PettingZoo's dicts and read zeros, done flags ``True`` and ``(group, "mask")`` ``False``
    (``use_mask=True`` is needed once agents can leave without ending the episode).

    AEC (turn-based) envs: only the agent whose turn it is acts; its action is read from its
    group's ``"action"`` entry, the others' are ignored, and ``(group, "mask")`` marks it
    (``use_mask=True`` is required, as in TorchRL). Turns of agents that are already done are
    passed with PettingZoo's ``None`` action before the step returns, so the marked agent is
    always one that can act while any can.

    Action masks (from a ``Dict`` observation's ``"action_mask"`` or from the infos) are given
    for the acting agents (the others read all ``True``) at ``(group, "action_mask")``, and are
    written into the action spec's mask on every reset and step, so ``rand_action`` follows them.

    Args:
        env: the ``pettingzoo.ParallelEnv`` or ``pettingzoo.AECEnv`` to wrap.
        return_state: add the root ``"state"`` (``env.state()``).
        group_map: a :class:`~torchenv.envs.MarlGroupMapType` or a dict group -> agents.
            Default: parallel envs group ``"<name>_<int>"`` agents by ``<name>`` (others get
            their own group); AEC envs get one group per agent.
        use_mask: add ``(group, "mask")``: which agents act (alive / whose turn it is).
        categorical_actions: discrete actions as indices (default) or one-hot.
        seed: the seed of the first reset.
        done_on_any: the root done flag is set when any agent is done (``True``) or when all
            are (``False``). Default: ``True`` for parallel envs, ``False`` for AEC envs.
        **kwargs: :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    Its attributes: ``group_map``, ``parallel``, ``use_mask``, ``return_state``,
    ``done_on_any``, ``categorical_actions``, ``seed``, ``has_action_mask`` (group -> bool),
    ``possible_agents``, ``agents``, ``agent_selection`` (AEC).

    >>> from pettingzoo.classic import tictactoe_v3
    >>> env = PettingZooWrapper(tictactoe_v3.env(), use_mask=True, seed=0)
    >>> env.group_map
    {'player_1': ['player_1'], 'player_2': ['player_2']}
    >>> env.rollout(4)["next", "player_1", "reward"].shape
    torch.Size([4, 1, 1])
    """

    def __init__(
        self,
        env: Any = None,
        return_state: bool = False,
        group_map: GroupMap = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        **kwargs: Any,
    ) -> None:
        pettingzoo = import_pettingzoo()
        base = pettingzoo.utils.env
        if env is None:
            raise TypeError(
                "PettingZooWrapper: expected a PettingZoo env as `env` (a pettingzoo.ParallelEnv "
                "or pettingzoo.AECEnv, e.g. tictactoe_v3.env())"
            )
        if not isinstance(env, (base.ParallelEnv, base.AECEnv)):
            raise TypeError(
                "PettingZooWrapper: `env` must be a pettingzoo.ParallelEnv or pettingzoo.AECEnv, "
                f"got {type(env).__name__}"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"PettingZooWrapper: seed must be an int or None, got {seed!r}")
        batch_size = kwargs.pop("batch_size", None)
        if batch_size is not None and len(batch_size):
            raise ValueError(
                f"PettingZooWrapper: batch_size={tuple(batch_size)}; PettingZoo envs are single "
                "envs (batch them with SerialEnv / ParallelEnv)"
            )
        for key in ("from_pixels", "pixels_only"):
            if kwargs.pop(key, False):
                raise NotImplementedError(
                    f"PettingZooWrapper: {key}=True is not supported; render with env.render()"
                )
        self.parallel = isinstance(env, base.ParallelEnv)
        if not self.parallel and not use_mask:
            raise ValueError(
                "PettingZooWrapper: AEC (turn-based) envs need use_mask=True: (group, 'mask') "
                "says whose turn it is"
            )
        kwargs.setdefault("allow_done_after_reset", True)
        super().__init__(**kwargs)
        self._env = env
        self.return_state = bool(return_state)
        self.use_mask = bool(use_mask)
        self.categorical_actions = bool(categorical_actions)
        self.done_on_any = self.parallel if done_on_any is None else bool(done_on_any)
        self.seed = seed
        self._build(group_map)

    # ------------------------------------------------------------------ construction
    def _build(self, group_map: GroupMap) -> None:
        env = self._env
        self.possible_agents = list(env.possible_agents)
        # one reset to learn the infos (their keys and shapes, masks given in infos), as TorchRL
        _, infos = self._raw_reset(self.seed, None)
        specs = agent_specs(env, self.possible_agents, infos, self.categorical_actions)
        self._writers = specs.writers
        self._mask_source = specs.mask_source
        default = _parallel_default_group_map if self.parallel else _aec_default_group_map
        groups = resolve_group_map(group_map, self.possible_agents, default=default)
        group_of = {a: g for g, members in groups.items() for a in members}
        masked = [g for g in groups if any(group_of[a] == g for a in specs.mask_source)]
        layout = MarlLayout(
            self.possible_agents,
            groups,
            observation_specs=specs.observation,
            action_specs=specs.action,
            info_specs=specs.info or None,
            action_mask=masked,
            agent_mask=self.use_mask,
            done="per_agent",
            done_on_any=self.done_on_any,
            state_spec=state_spec(env) if self.return_state else None,
            device=self.device,
        )
        layout.set_specs(self)
        self._layout = layout
        self.group_map = layout.group_map
        self.has_action_mask = {g: g in masked for g in layout.group_map}
        self._has_info = bool(specs.info)
        self._masked = bool(masked)
        self._mask_keys = [(g, (g, MASK)) for g in layout.masked_groups]
        # the construction's reset used the seed: later resets continue (TorchRL's convention)
        self._pending_seed = None
        self._last: TensorDictBase | None = None

    # ------------------------------------------------------------------ TorchRL's attributes
    @property
    def lib(self) -> Any:
        return import_pettingzoo()

    @property
    def base_env(self) -> Any:
        """The wrapped PettingZoo env."""
        return self._env

    @property
    def agents(self) -> list[str]:
        """The agents still in the episode (PettingZoo's ``env.agents``)."""
        return list(self._env.agents)

    @property
    def agent_selection(self) -> str:
        """AEC envs: the agent whose turn it is."""
        if self.parallel:
            raise AttributeError("agent_selection: parallel envs have no turns")
        return self._env.agent_selection

    @property
    def num_agents(self) -> int:
        return len(self.possible_agents)

    # ------------------------------------------------------------------ PettingZoo calls
    def _raw_reset(self, seed: int | None, options: Any) -> tuple[dict, dict]:
        env = self._env
        if self.parallel:
            return env.reset(seed=seed, options=options)
        env.reset(seed=seed, options=options)
        return {a: env.observe(a) for a in env.agents}, env.infos

    def _parallel_step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """``ParallelEnv.step`` with the live agents' actions (``actions``: agent -> numpy
        action); refuses agents leaving without ``use_mask``."""
        env = self._env
        writers = self._writers
        result = env.step({a: writers[a](actions[a]) for a in env.agents})
        obs = result[0]
        if not self.use_mask and len(obs) != len(self.possible_agents):
            gone = [a for a in self.possible_agents if a not in obs]
            raise ValueError(
                f"PettingZooWrapper: the agents {gone} have left the episode; use "
                "use_mask=True for envs whose agents can leave (or done_on_any=True)"
            )
        return result

    def _skip_dead_turns(self, values: list[dict]) -> list[dict]:
        """AEC: pass the turns of agents that are done (PettingZoo's ``None`` action) while a
        live agent remains, so that the next agent to act can. ``values`` (PettingZoo's own
        dicts, which those steps modify in place) are copied first when needed."""
        env = self._env
        term, trunc = env.terminations, env.truncations
        selected = env.agent_selection
        if not (term.get(selected) or trunc.get(selected)):
            return values
        if all(term.get(a) or trunc.get(a) for a in env.agents):
            return values  # the episode is over for everyone: nothing to skip to
        values = [dict(v) for v in values]
        while env.agents:
            selected = env.agent_selection
            if not (env.terminations[selected] or env.truncations[selected]):
                break
            env.step(None)
        return values

    # ------------------------------------------------------------------ outputs
    def _output(
        self,
        obs: Mapping[str, Any],
        infos: Mapping[str, Any],
        terminated: Mapping[str, Any],
        truncated: Mapping[str, Any],
        rewards: Mapping[str, Any] | None,
        acting: Sequence[str],
    ) -> TensorDictBase:
        per_agent: dict[str, Any] = {
            "observation": obs,
            "terminated": terminated,
            "truncated": truncated,
        }
        if rewards is not None:
            per_agent["reward"] = rewards
        if self._has_info:
            per_agent["info"] = infos
        if self._masked:
            masks = {}
            source = self._mask_source
            for agent in acting:
                where = source.get(agent)
                if where == "observation":
                    masks[agent] = obs[agent][MASK]
                elif where == "info":
                    info = infos.get(agent)
                    if info is not None and MASK in info:
                        masks[agent] = info[MASK]
            per_agent[MASK] = masks
        root = {"state": self._env.state()} if self.return_state else None
        out = self._layout.output(per_agent, root, acting=acting)
        if self._masked:
            # TorchRL keeps the action specs masked, so that rand_action follows the masks
            spec = self.full_action_spec
            for group, key in self._mask_keys:
                spec[group, "action"].update_mask(out.get(key))
        self.__dict__["_last"] = out  # not through nn.Module.__setattr__: a step's hot path
        self.__dict__["_last_arrays"] = None
        return out

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        if tensordict is not None and not self._layout.reset_rows(tensordict):
            # only some agents are done (group "_reset"), not the episode: keep going
            last = self._last_output()
            if last is not None:
                return last.exclude(*self.reward_keys)
        obs, infos, live = self._new_episode(kwargs.get("options"))
        env = self._env
        acting = env.agents if self.parallel else [env.agent_selection]
        return self._output(obs, infos, live, live, None, acting)

    def _new_episode(self, options: Any) -> tuple[dict, dict, dict]:
        """PettingZoo's reset (seeded once after ``set_seed``): observations, infos, and the
        agents' done flags (all ``False``)."""
        seed, self._pending_seed = self._pending_seed, None
        obs, infos = self._raw_reset(seed, options)
        return obs, infos, {a: False for a in self._env.agents}

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        env = self._env
        layout = self._layout
        writers = self._writers
        if self.parallel:
            actions = layout.split_actions(tensordict, numpy=True, categorical=True)
            obs, rewards, terminated, truncated, infos = self._parallel_step(actions)
            return self._output(obs, infos, terminated, truncated, rewards, env.agents)
        agent = env.agent_selection
        env.step(
            writers[agent](layout.agent_action(tensordict, agent, numpy=True, categorical=True))
        )
        obs = {a: env.observe(a) for a in env.agents}
        rewards, terminated, truncated, infos = self._skip_dead_turns(
            [env.rewards, env.terminations, env.truncations, env.infos]
        )
        # the agent to act next; nobody once the episode is over for everyone (TorchRL marks
        # the last selected agent, with a mask allowing no action)
        selected = env.agent_selection if env.agents else None
        live = selected is not None and not (terminated.get(selected) or truncated.get(selected))
        return self._output(obs, infos, terminated, truncated, rewards, [selected] if live else [])

    # ------------------------------------------------------------------ direct array I/O
    # Parallel envs in a layout of dense group blocks write PettingZoo's dicts straight into
    # the arrays of the direct path (torchenv.envs._direct): rollouts and step_and_maybe_reset
    # then build no per-step TensorDict of their own.
    _direct_io_nested_keys = True

    def _direct_io_supported(self) -> bool:
        return self.parallel and not self._has_info and self._layout.supports_arrays

    def _step_into(self, action: Any, out: dict) -> bool:
        actions = self._layout.split_action_tensors(action, categorical=True)
        obs, rewards, terminated, truncated, _ = self._parallel_step(actions)
        return self._write(out, obs, terminated, truncated, rewards, self._env.agents)

    def _reset_into(self, out: dict, mask: Any = None) -> None:
        obs, _, live = self._new_episode(None)
        self._write(out, obs, live, live, None, self._env.agents)

    def _write(
        self,
        out: dict,
        obs: Mapping[str, Any],
        terminated: Mapping[str, Any],
        truncated: Mapping[str, Any],
        rewards: Mapping[str, Any] | None,
        acting: Sequence[str],
    ) -> bool:
        per_agent = {"observation": obs}
        if rewards is not None:
            per_agent["reward"] = rewards
        root = {"state": self._env.state()} if self.return_state else None
        done = self._layout.output_into(out, per_agent, terminated, truncated, root, acting)
        # what a reset of some agents (not the episode) hands back, built when asked for
        self.__dict__["_last"] = None
        self.__dict__["_last_arrays"] = out
        return done

    def _last_output(self) -> TensorDictBase | None:
        """The last step's or reset's output (built from the direct path's arrays if it wrote
        last)."""
        last = self._last
        arrays = self.__dict__.get("_last_arrays")
        if last is None and arrays is not None:
            last = self._layout.tensordict_of_arrays(arrays)
        return last

    def _set_seed(self, seed: int | None) -> None:
        # as TorchRL 0.14.1's PettingZooWrapper: the seeded reset happens right away
        self.seed = seed
        self._pending_seed = seed
        self.reset()

    # ------------------------------------------------------------------ rendering, closing
    def render(self) -> Any:
        """PettingZoo's ``env.render()`` (needs ``render_mode`` given to the task)."""
        return self._env.render()

    def close(self, *, raise_if_closed: bool = False) -> None:
        if not self.is_closed:
            self._env.close()
        super().close(raise_if_closed=raise_if_closed)

    def __repr__(self) -> str:
        kind = "parallel" if self.parallel else "AEC"
        return (
            f"{type(self).__name__}({kind}, agents={self.possible_agents}, "
            f"group_map={self.group_map}, device={self.device})"
        )


class PettingZooEnv(PettingZooWrapper):
    """A PettingZoo task by name, with TorchRL's ``PettingZooEnv`` arguments and defaults.

    Works on every supported PettingZoo version (1.24.3 to 1.27): MPE tasks come from PettingZoo
    itself up to 1.25 and from ``mpe2`` after; PettingZoo 1.27's registry is used where present.

    Args:
        task: ``"family/task_vN"`` (``"mpe/simple_spread_v3"``), ``"task_vN"``, or unversioned
            (the newest version). ``torchenv.list_envs("pettingzoo")`` lists them.
        parallel: the parallel API (``parallel_env``) or the AEC one (``env``).
        return_state: see :class:`PettingZooWrapper`.
        group_map: see :class:`PettingZooWrapper`.
        use_mask: see :class:`PettingZooWrapper`.
        categorical_actions: see :class:`PettingZooWrapper`.
        seed: see :class:`PettingZooWrapper`.
        done_on_any: see :class:`PettingZooWrapper`.
        **kwargs: the task's own arguments (``N=3``, ``max_cycles=25``, ``continuous_actions``,
            ...) and :class:`~torchenv.envs.EnvBase` arguments (``device``, ...).

    >>> env = PettingZooEnv("classic/tictactoe_v3", parallel=False, use_mask=True, seed=0)
    >>> env.group_map
    {'player_1': ['player_1'], 'player_2': ['player_2']}
    >>> td = env.reset()
    >>> td["player_1", "mask"].tolist(), td["player_2", "mask"].tolist()
    ([True], [False])
    """

    def __init__(
        self,
        task: str,
        parallel: bool,
        return_state: bool = False,
        group_map: GroupMap = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        **kwargs: Any,
    ) -> None:
        from torchenv_pettingzoo._tasks import find_task

        if not isinstance(task, str):
            raise TypeError(f"PettingZooEnv: task must be a str, got {type(task).__name__}")
        if not isinstance(parallel, bool):
            raise TypeError(f"PettingZooEnv: parallel must be a bool, got {parallel!r}")
        found = find_task(task)
        env_kwargs = {k: kwargs.pop(k) for k in _ENV_KWARGS if k in kwargs}
        for key in ("from_pixels", "pixels_only"):
            if key in kwargs:
                env_kwargs[key] = kwargs.pop(key)
        self.task_name = found.name
        try:
            env = found.make(parallel, kwargs)
        except TypeError as err:
            raise TypeError(
                f"PettingZooEnv: pettingzoo:{found.name} rejected its arguments {sorted(kwargs)}: "
                f"{err}"
            ) from err
        super().__init__(
            env,
            return_state=return_state,
            group_map=group_map,
            use_mask=use_mask,
            categorical_actions=categorical_actions,
            seed=seed,
            done_on_any=done_on_any,
            **env_kwargs,
        )

    def __repr__(self) -> str:
        return f"{super().__repr__()} (task={self.task_name})"
