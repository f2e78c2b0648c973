"""The multi-agent conformance tests: the env contract plus the multi-agent layout.

:class:`MultiAgentConformanceTests` extends :class:`EnvConformanceTests` with what multi-agent
envs share (TorchRL's layout, which :class:`~torchenv.envs.MarlLayout` builds): agents grouped
under nested keys with an agent dim, per-group reward and done entries consistent with the root
done, valid action masks that random policies can follow, lazily stacked heterogeneous groups.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

from torchenv.testing._conformance import EnvConformanceTests, _values

__all__ = ["MultiAgentConformanceTests"]


def _tkey(key: Any) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


class MultiAgentConformanceTests(EnvConformanceTests):
    """Contract tests of multi-agent envs; subclass it and implement :meth:`make_env`.

    Every test of :class:`EnvConformanceTests` runs too. A plugin proves the multi-agent
    contract with one class::

        from torchenv.testing import MultiAgentConformanceTests

        class TestMyMarlEnv(MultiAgentConformanceTests):
            done_aggregation = "any"

            def make_env(self):
                return MyMarlEnv(num_envs=4)

    Extra class attributes:

    - ``done_aggregation`` (``None``): how the root ``"done"`` follows the agents' done flags
      (``(group, "done")``): ``"any"``, ``"all"``, or ``None`` to accept either, as long as the
      env sticks to one. Groups without done flags (root-only layouts) are not checked.
    - ``expected_groups`` (``None``): the group names the env must have, if given.

    The multi-agent tests: ``test_marl_group_keys`` (every action is ``(group, ..., "action")``,
    each group a Composite of shape ``(*batch, n_agents)`` whose entries start with that shape,
    matching ``env.group_map`` when the env has one), ``test_marl_reward_and_done_layout``
    (per-group rewards and done flags have the agent dim; a root ``"done"`` exists),
    ``test_marl_done_consistent_with_root``, ``test_marl_masks_valid`` (``"action_mask"``
    entries are boolean, one-hot shaped, and leave every agent at least one action;
    ``"mask"`` entries are boolean ``(*batch, n)``), ``test_marl_random_actions_follow_masks``
    (with the ``ActionMask`` transform per group, a random rollout takes only allowed actions)
    and ``test_marl_heterogeneous_groups_are_lazy``.
    """

    done_aggregation: str | None = None
    expected_groups: Any = None

    # ------------------------------------------------------------------ helpers
    def _groups(self, env: Any) -> dict[tuple[str, ...], int]:
        """Group prefix -> number of agents, from the action keys."""
        groups: dict[tuple[str, ...], int] = {}
        nb = len(env.batch_size)
        for key in env.action_keys:
            tkey = _tkey(key)
            assert len(tkey) >= 2, (
                f"multi-agent env: the action key {key!r} is not nested under a group "
                "(expected (group, 'action'))"
            )
            prefix = tkey[:-1]
            spec = env.full_action_spec[prefix]
            assert spec.ndim == nb + 1, (
                f"group {prefix!r}: its action Composite has shape {tuple(spec.shape)}, expected "
                f"(*batch, n_agents) with batch {tuple(env.batch_size)}"
            )
            groups[prefix] = spec.shape[-1]
        return groups

    @contextlib.contextmanager
    def _masked_env(self) -> Iterator[Any]:
        from torchenv.transforms import ActionMask, Compose, TransformedEnv

        with self._env() as env:
            transforms = []
            for prefix in self._groups(env):
                mask_key = (*prefix, "action_mask")
                action_key = (*prefix, "action")
                if mask_key not in env.full_observation_spec.keys(True, True):
                    continue
                if hasattr(env.full_action_spec[action_key], "update_mask"):
                    transforms.append(ActionMask(action_key, mask_key))
            if not transforms:
                self._skip("no group has an 'action_mask' entry with a maskable action spec")
            yield TransformedEnv(env, Compose(*transforms)), transforms

    def _rollout_data(self, env: Any) -> TensorDictBase:
        env.set_seed(self.seed)
        with self._global_seed(self.seed):
            return self._rollout(env, max(self.rollout_steps, 32))

    # ------------------------------------------------------------------ tests
    def test_marl_group_keys(self) -> None:
        """Agents sit under group keys, with the agent dim right after the batch dims."""
        with self._env() as env:
            groups = self._groups(env)
            batch = tuple(env.batch_size)
            names = {prefix[0] if len(prefix) == 1 else prefix for prefix in groups}
            if self.expected_groups is not None:
                assert names == set(self.expected_groups), (
                    f"groups {sorted(map(str, names))}, expected {sorted(self.expected_groups)}"
                )
            group_map = getattr(env, "group_map", None)
            if isinstance(group_map, dict):
                assert set(group_map) == names, (
                    f"env.group_map has groups {sorted(group_map)}, the action keys "
                    f"{sorted(map(str, names))}"
                )
                for prefix, n in groups.items():
                    members = group_map[prefix[0]]
                    assert len(members) == n, (
                        f"group {prefix[0]!r}: {len(members)} agents in env.group_map, "
                        f"{n} along the agent dim of its specs"
                    )
            for parent_name in ("full_observation_spec", "full_reward_spec", "full_done_spec"):
                parent = getattr(env, parent_name)
                for prefix, n in groups.items():
                    if prefix not in parent.keys(True):
                        continue
                    node = parent[prefix]
                    assert tuple(node.shape) == (*batch, n), (
                        f"{parent_name}[{prefix!r}] has shape {tuple(node.shape)}, expected "
                        f"{(*batch, n)} (batch + agents)"
                    )
                    for key in node.keys(True, True):
                        shape = tuple(node[key].shape)
                        assert shape[: len(batch) + 1] == (*batch, n), (
                            f"{parent_name}[{(*prefix, *_tkey(key))!r}] has shape {shape}, "
                            f"expected it to start with {(*batch, n)}"
                        )
            for prefix in groups:
                assert prefix in env.full_observation_spec.keys(True), (
                    f"group {prefix!r} has actions but no observation entry"
                )

    def test_marl_reward_and_done_layout(self) -> None:
        """Rewards and done flags are per agent ``(*batch, n, 1)`` in a group, or at the root."""
        with self._env() as env:
            groups = self._groups(env)
            batch = tuple(env.batch_size)
            assert "done" in env.done_keys, (
                f"multi-agent env without a root 'done' (done keys: {env.done_keys}); TorchRL's "
                "layout always has one"
            )
            for kind, keys in (("reward", env.reward_keys), ("done", env.done_keys)):
                parent = env.full_reward_spec if kind == "reward" else env.full_done_spec
                for key in keys:
                    tkey = _tkey(key)
                    shape = tuple(parent[key].shape)
                    if len(tkey) == 1:
                        assert shape[: len(batch)] == batch, f"{key!r}: shape {shape}"
                        continue
                    n = groups.get(tkey[:-1])
                    assert n is not None, (
                        f"{kind} key {key!r} is under {tkey[:-1]!r}, which is not a group "
                        f"(groups: {sorted(map(str, groups))})"
                    )
                    assert shape == (*batch, n, 1), (
                        f"{kind} key {key!r} has shape {shape}, expected {(*batch, n, 1)}"
                    )
                    if kind == "done":
                        assert parent[key].dtype == torch.bool, f"{key!r} is not boolean"

    def test_marl_done_consistent_with_root(self) -> None:
        """The root done is the ``any`` (or ``all``) of the agents' done flags, at every step;
        after a reset no agent is done."""
        with self._env() as env:
            groups = [p for p in self._groups(env) if (*p, "done") in env.done_keys]
            if not groups:
                self._skip("no per-group done flags (root-only done layout)")
            data = self._rollout_data(env)
            seen: set[str] = set()
            for where, td in (("reset/rollout input", data), ("rollout 'next'", data.get("next"))):
                root = td.get("done").reshape(*td.batch_size, -1).any(-1)
                parts = [
                    value.reshape(*td.batch_size, -1)
                    for p in groups
                    for value in _values(td, (*p, "done"))
                ]
                agents = torch.cat(parts, -1)
                ok = {
                    "any": bool((agents.any(-1) == root).all()),
                    "all": bool((agents.all(-1) == root).all()),
                }
                wanted = [self.done_aggregation] if self.done_aggregation else ["any", "all"]
                matching = {mode for mode in wanted if ok[mode]}
                assert matching, (
                    f"{where}: the root 'done' is not the {' nor the '.join(wanted)} of the "
                    f"agents' done flags of groups {groups}"
                )
                seen = matching if not seen else seen & matching
                assert seen, (
                    f"{where}: the root 'done' follows 'any' at some steps, 'all' at others"
                )
            with self._env() as fresh:
                fresh.set_seed(self.seed)
                td = fresh.reset()
                for p in groups:
                    for value in _values(td, (*p, "done")):
                        assert not value.any(), f"reset: {(*p, 'done')!r} is set after reset"

    def test_marl_masks_valid(self) -> None:
        """``action_mask`` entries: boolean, one entry per one-hot action, at least one allowed;
        ``mask`` entries: boolean ``(*batch, n)``."""
        with self._env() as env:
            groups = self._groups(env)
            batch = tuple(env.batch_size)
            obs_keys = set(env.full_observation_spec.keys(True, True))
            found = False
            for prefix, n in groups.items():
                mask_key, agent_key = (*prefix, "action_mask"), (*prefix, "mask")
                if agent_key in obs_keys:
                    found = True
                    spec = env.full_observation_spec[agent_key]
                    assert spec.dtype == torch.bool and tuple(spec.shape) == (*batch, n), (
                        f"{agent_key!r}: {spec.dtype} {tuple(spec.shape)}, expected bool {(*batch, n)}"
                    )
                if mask_key not in obs_keys:
                    continue
                found = True
                spec = env.full_observation_spec[mask_key]
                action = env.full_action_spec[(*prefix, "action")]
                assert spec.dtype == torch.bool, f"{mask_key!r} has dtype {spec.dtype}, not bool"
                assert tuple(spec.shape[: len(batch) + 1]) == (*batch, n), (
                    f"{mask_key!r} has shape {tuple(spec.shape)}; it should start with {(*batch, n)}"
                )
                # the one-hot width: a categorical spec's one-hot twin, a one-hot spec itself
                if hasattr(action, "to_one_hot_spec"):
                    width = action.to_one_hot_spec().shape[-1]
                else:
                    width = action.shape[-1]
                assert spec.shape[-1] == width, (
                    f"{mask_key!r} has {spec.shape[-1]} entries per agent, the action "
                    f"{(*prefix, 'action')!r} has {width} one-hot entries"
                )
            if not found:
                self._skip("no 'action_mask' or 'mask' entry in any group")
            data = self._rollout_data(env)
            for prefix in groups:
                mask_key = (*prefix, "action_mask")
                if mask_key not in obs_keys:
                    continue
                for td, where in ((data, "rollout"), (data.get("next"), "rollout 'next'")):
                    for value in _values(td, mask_key):
                        assert value.any(-1).all(), (
                            f"{where}: {mask_key!r} allows no action at all for some agent"
                        )

    def test_marl_random_actions_follow_masks(self) -> None:
        """With ``ActionMask`` per group, a random rollout takes allowed actions only."""
        with self._masked_env() as (env, transforms):
            data = self._rollout_data(env)
            for transform in transforms:
                action_key, mask_key = transform.action_key, transform.mask_key
                spec = env.full_action_spec[action_key]
                for action, mask in zip(
                    _values(data, action_key), _values(data, mask_key), strict=True
                ):
                    if action.shape == mask.shape:  # one-hot
                        allowed = ~(action.bool() & ~mask).any(-1)
                    else:
                        allowed = mask.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)
                    assert allowed.all(), (
                        f"{action_key!r}: a random action ({type(spec).__name__} spec, updated "
                        f"by ActionMask from {mask_key!r}) is not allowed by the mask"
                    )

    def test_marl_heterogeneous_groups_are_lazy(self) -> None:
        """Groups whose agents differ (lazily stacked specs) give lazily stacked data."""
        from torchenv.specs import StackedComposite

        with self._env() as env:
            nb = len(env.batch_size)
            lazy = [
                p
                for p in self._groups(env)
                if isinstance(env.full_observation_spec[p], StackedComposite)
            ]
            if not lazy:
                self._skip("no heterogeneous group")
            env.set_seed(self.seed)
            td = env.reset()
            for prefix in lazy:
                group = td.get(prefix)
                assert isinstance(group, LazyStackedTensorDict) and group.stack_dim == nb, (
                    f"group {prefix!r} has heterogeneous specs but its data is a "
                    f"{type(group).__name__} (expected a LazyStackedTensorDict along dim {nb})"
                )
