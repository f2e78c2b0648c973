"""Reward transforms: RewardSum, RewardScaling, RewardClipping, BinarizeReward,
LineariseRewards, Reward2GoTransform, TargetReturn."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Binary, Bounded, Composite, TensorSpec, Unbounded
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import as_tuple, mask_like, replace_last, reset_key_for

__all__ = [
    "BinarizeReward",
    "LineariseRewards",
    "Reward2GoTransform",
    "RewardClipping",
    "RewardScaling",
    "RewardSum",
    "SuccessReward",
    "TargetReturn",
]


class RewardScaling(Transform):
    """Affine transform of the reward: ``reward * scale + loc``.

    Args:
        loc: the offset.
        scale: the factor.
        in_keys: reward entries to scale. Defaults to ``["reward"]``.
        out_keys: where to write them. Defaults to ``in_keys``.
        standard_normal: if ``True``, computes ``(reward - loc) / scale`` instead.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> RewardScaling(loc=1.0, scale=2.0)(TensorDict(reward=torch.ones(1)))["reward"]
        tensor([3.])
    """

    def __init__(
        self,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
    ) -> None:
        super().__init__(in_keys or ["reward"], out_keys)
        self.standard_normal = standard_normal
        self.register_buffer("loc", torch.as_tensor(loc, dtype=torch.get_default_dtype()))
        scale = torch.as_tensor(scale, dtype=torch.get_default_dtype())
        if (scale == 0).any():
            raise ValueError("RewardScaling: scale must be non-zero")
        self.register_buffer("scale", scale)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if self.standard_normal:
            return (reward - self.loc) / self.scale
        return reward * self.scale + self.loc

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        return self._map_specs(reward_spec, self._leaf_spec)

    def _leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        if isinstance(spec, Unbounded):
            return spec
        raise NotImplementedError(
            f"RewardScaling maps unbounded rewards only, got a {type(spec).__name__} spec"
        )


class RewardClipping(Transform):
    """Clips the reward to ``[clamp_min, clamp_max]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> RewardClipping(-1.0, 1.0)(TensorDict(reward=torch.tensor([3.0])))["reward"]
        tensor([1.])
    """

    def __init__(
        self,
        clamp_min: float | None = None,
        clamp_max: float | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or ["reward"], out_keys)
        if clamp_min is None and clamp_max is None:
            raise ValueError("RewardClipping needs clamp_min, clamp_max or both")
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        return reward.clamp(self.clamp_min, self.clamp_max)

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        return self._map_specs(reward_spec, self._leaf_spec)

    def _leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        low = -torch.inf if self.clamp_min is None else self.clamp_min
        high = torch.inf if self.clamp_max is None else self.clamp_max
        return Bounded(low, high, shape=spec.shape, device=spec.device, dtype=spec.dtype)

    def __repr__(self) -> str:
        return f"RewardClipping(clamp_min={self.clamp_min}, clamp_max={self.clamp_max}, keys={self.in_keys})"


class BinarizeReward(Transform):
    """Maps the reward to 1 where it is positive and 0 elsewhere (``int8``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> BinarizeReward()(TensorDict(reward=torch.tensor([[0.5], [-1.0]]), batch_size=[2]))["reward"]
        tensor([[1],
                [0]], dtype=torch.int8)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or ["reward"], out_keys)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        if not reward.shape or reward.shape[-1] != 1:
            raise ValueError(
                f"BinarizeReward: the reward's last dim must be 1, got shape {tuple(reward.shape)}"
            )
        return (reward > 0).to(torch.int8)

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        return self._map_specs(
            reward_spec,
            lambda s: Binary(n=1, shape=s.shape, device=s.device, dtype=torch.int8),
        )


class RewardSum(Transform):
    """Tracks the cumulative reward of each episode under ``"episode_<reward>"``.

    The sum is reset to 0 where an env is reset. The new entries are registered in the
    observation spec (or the reward spec with ``reward_spec=True``) and in the state spec, so
    that batched envs carry them from step to step.

    Args:
        in_keys: the reward entries. Defaults to the parent env's reward keys.
        out_keys: the sums. Defaults to ``episode_<name>`` next to each reward.
        reset_keys: the ``"_reset"`` key paired with each reward. Defaults to the one at the
            reward's nesting level.

    Keyword Args:
        reward_spec: register the sums in the reward spec instead of the observation spec.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), RewardSum())
        >>> td = env.rollout(3)
        >>> torch.allclose(td["next", "episode_reward"][-1], td["next", "reward"].sum(0))
        True
    """

    _cache_keys = ("_triples_cache",)

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        reset_keys: Sequence[NestedKey] | None = None,
        *,
        reward_spec: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys)
        self._given_reset_keys = reset_keys
        self.reward_spec = reward_spec

    @property
    def in_keys(self) -> list[NestedKey]:
        keys = self.__dict__.get("_in_keys")
        if not keys:
            parent = self.parent
            keys = list(parent.reward_keys) if parent is not None else ["reward"]
            self.__dict__["_in_keys"] = keys
            self.__dict__.pop("_pairs", None)
        return keys

    @in_keys.setter
    def in_keys(self, value) -> None:
        Transform.in_keys.fset(self, value)

    @property
    def out_keys(self) -> list[NestedKey]:
        keys = self.__dict__.get("_out_keys")
        if not keys:
            keys = [
                replace_last(k, "episode_" + (k if isinstance(k, str) else k[-1]))
                for k in self.in_keys
            ]
        return keys

    @out_keys.setter
    def out_keys(self, value) -> None:
        Transform.out_keys.fset(self, value)

    @property
    def reset_keys(self) -> list[NestedKey]:
        given = self._given_reset_keys
        if given is not None:
            if isinstance(given, (str, tuple)):
                given = [given]
            if len(given) == 1:
                given = list(given) * len(self.in_keys)
            return list(given)
        env_resets = self._env_reset_keys()
        keys = []
        for in_key in self.in_keys:
            own = reset_key_for(in_key)
            keys.append(own if own in env_resets else env_resets[0])
        return keys

    def _triples(self):
        triples = self.__dict__.get("_triples_cache")
        if triples is None:
            triples = tuple(zip(self.in_keys, self.out_keys, self.reset_keys))
            self.__dict__["_triples_cache"] = triples
        return triples

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for in_key, out_key, reset_key in self._triples():
            value = tensordict.get(out_key, None)
            reset = tensordict.get(reset_key, None)
            if value is None or reset is None:
                value = self._zero(in_key, tensordict_reset)
            else:
                value = value.masked_fill(mask_like(reset, value), 0)
            tensordict_reset.set(out_key, value)
        return tensordict_reset

    def _zero(self, in_key: NestedKey, tensordict_reset: TensorDictBase) -> torch.Tensor:
        parent = self.parent
        if parent is not None:
            spec = parent.full_reward_spec[in_key]
            shape = spec.shape
            dtype = spec.dtype
        else:
            shape, dtype = (*tensordict_reset.batch_size, 1), torch.get_default_dtype()
        return torch.zeros(shape, dtype=dtype, device=tensordict_reset.device)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key, _ in self._triples():
            reward = next_tensordict.get(in_key, None)
            if reward is None:
                if self.missing_tolerance:
                    continue
                raise KeyError(f"RewardSum: reward entry {in_key!r} missing from the step output")
            previous = tensordict.get(out_key, None)
            next_tensordict.set(out_key, reward if previous is None else previous + reward)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Offline use: cumulative sums along the time dim (the last batch dim), reset on done."""
        time_dim = tensordict.ndim - 1
        if "time" in (tensordict.names or []):
            time_dim = list(tensordict.names).index("time")
        for in_key, out_key, _ in self._triples():
            reward = tensordict.get(("next", in_key), None)
            prefix = ("next",)
            if reward is None:
                reward = tensordict.get(in_key)
                prefix = ()
            done = tensordict.get(("next", replace_last(in_key, "done")), None)
            out = _segmented_cumsum(reward, done, time_dim)
            tensordict.set((*prefix, *as_tuple(out_key)), out)
        return tensordict

    def _episode_specs(self) -> Composite:
        parent = self.parent
        reward_spec = parent.full_reward_spec
        specs = {}
        for in_key, out_key, _ in self._triples():
            if in_key not in reward_spec.keys(True, True):
                raise KeyError(
                    f"RewardSum: in_key {in_key!r} is not a reward of the env "
                    f"(reward keys: {parent.reward_keys})"
                )
            specs[out_key] = reward_spec[in_key].clone()
        return specs

    def _add_episode_specs(self, spec: Composite) -> Composite:
        for key, leaf in self._episode_specs().items():
            spec[key] = leaf
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return observation_spec if self.reward_spec else self._add_episode_specs(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._add_episode_specs(reward_spec) if self.reward_spec else reward_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._add_episode_specs(state_spec)


def _segmented_cumsum(reward: torch.Tensor, done: torch.Tensor | None, dim: int) -> torch.Tensor:
    """Cumulative sum along ``dim`` that restarts after every ``done``."""
    if done is None:
        return reward.cumsum(dim)
    reward = reward.movedim(dim, 0)
    done = mask_like(done.movedim(dim, 0), reward)
    out = torch.empty_like(reward)
    acc = torch.zeros_like(reward[0])
    for t in range(reward.shape[0]):
        acc = acc + reward[t]
        out[t] = acc
        acc = acc.masked_fill(done[t], 0)
    return out.movedim(0, dim)


class LineariseRewards(Transform):
    """Turns a multi-objective reward (last dim ``k``) into one reward: a weighted sum.

    Args:
        in_keys: the multi-objective rewards.
        out_keys: where to write the scalar rewards. Defaults to ``in_keys``.
        weights: one weight per objective. Defaults to ones.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = LineariseRewards(in_keys=["reward"], weights=[1.0, 2.0])
        >>> t(TensorDict(reward=torch.tensor([1.0, 1.0])))["reward"]
        tensor([3.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        weights: Sequence[float] | torch.Tensor | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys)
        if weights is not None:
            weights = torch.as_tensor(weights, dtype=torch.get_default_dtype())
            if weights.ndim != 1:
                raise ValueError(
                    f"LineariseRewards: weights must be 1-d, got shape {tuple(weights.shape)}"
                )
        self.register_buffer("weights", weights)

    def _apply_transform(self, reward: torch.Tensor) -> torch.Tensor:
        weights = self.weights
        if weights is None:
            return reward.sum(-1, keepdim=True)
        if reward.shape[-1] != weights.numel():
            raise ValueError(
                f"LineariseRewards: the reward has {reward.shape[-1]} objectives but "
                f"{weights.numel()} weights were given"
            )
        return (reward * weights.to(reward.dtype)).sum(-1, keepdim=True)

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        return self._map_specs(reward_spec, self._leaf_spec)

    def _leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = (*spec.shape[:-1], 1)
        if isinstance(spec, Bounded) and (self.weights is None or (self.weights >= 0).all()):
            w = torch.ones(spec.shape[-1]) if self.weights is None else self.weights
            low = (spec.space.low.to(w.dtype) * w).sum(-1, keepdim=True)
            high = (spec.space.high.to(w.dtype) * w).sum(-1, keepdim=True)
            return Bounded(low, high, shape=shape, device=spec.device, dtype=spec.dtype)
        return Unbounded(shape=shape, device=spec.device, dtype=spec.dtype)


class Reward2GoTransform(Transform):
    """Discounted reward-to-go of whole trajectories (offline: replay buffers, not envs).

    Args:
        gamma: the discount factor.
        in_keys: the rewards, read under ``"next"``. Defaults to ``[("next", "reward")]``.
        out_keys: where to write. Defaults to ``["reward_to_go"]``.
        done_key: the done entry that ends trajectories. Defaults to ``("next", "done")``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({("next", "reward"): torch.ones(3, 1),
        ...                  ("next", "done"): torch.tensor([[False], [False], [True]])}, [3])
        >>> Reward2GoTransform(gamma=0.5).inv(td)["reward_to_go"].squeeze(-1)
        tensor([1.7500, 1.5000, 1.0000])
    """

    def __init__(
        self,
        gamma: float = 1.0,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        done_key: NestedKey = ("next", "done"),
    ) -> None:
        in_keys = in_keys or [("next", "reward")]
        out_keys = out_keys or ["reward_to_go"]
        super().__init__(in_keys, out_keys, in_keys, out_keys)
        self.gamma = float(gamma)
        self.done_key = done_key

    def _reward_to_go(self, tensordict: TensorDictBase) -> TensorDictBase:
        done = tensordict.get(self.done_key, None)
        time_dim = tensordict.ndim - 1
        for in_key, out_key in self._key_pairs:
            reward = tensordict.get(in_key).movedim(time_dim, 0)
            d = (
                torch.zeros_like(reward, dtype=torch.bool)
                if done is None
                else mask_like(done.movedim(time_dim, 0), reward)
            )
            out = torch.empty_like(reward)
            acc = torch.zeros_like(reward[0])
            for t in range(reward.shape[0] - 1, -1, -1):
                acc = reward[t] + self.gamma * acc.masked_fill(d[t], 0)
                out[t] = acc
            tensordict.set(out_key, out.movedim(0, time_dim))
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._reward_to_go(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._reward_to_go(tensordict)

    @property
    def _has_inverse(self) -> bool:
        return False

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset

    def set_container(self, container) -> None:
        from torchenv.envs import EnvBase

        env = container
        while isinstance(env, Transform):
            env = env._container_ref()
        if isinstance(env, EnvBase):
            raise ValueError(
                "Reward2GoTransform needs whole trajectories and cannot be used in an env; "
                "use it in a replay buffer or call it on collected data"
            )
        super().set_container(container)


class TargetReturn(Transform):
    """Sets a target return, updated at each step from the reward (e.g. for Decision Transformers).

    Args:
        target_return: the return to reach at reset.
        mode: ``"reduce"`` (target minus the reward at each step) or ``"constant"``.
        in_keys: the reward entries. Defaults to ``["reward"]``.
        out_keys: the targets. Defaults to ``["target_return"]``.
        reset_key: the reset entry. Defaults to ``"_reset"``.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), TargetReturn(10.0))
        >>> env.reset()["target_return"]
        tensor([10.])
    """

    MODES = ("reduce", "constant")

    def __init__(
        self,
        target_return: float,
        mode: str = "reduce",
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        reset_key: NestedKey | None = None,
    ) -> None:
        super().__init__(in_keys or ["reward"], out_keys or ["target_return"])
        if mode not in self.MODES:
            raise ValueError(f"TargetReturn: mode must be one of {self.MODES}, got {mode!r}")
        self.target_return = float(target_return)
        self.mode = mode
        self.reset_key = reset_key or "_reset"

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        shape = (*tensordict_reset.batch_size, 1)
        reset = tensordict.get(self.reset_key, None)
        for _, out_key in self._key_pairs:
            fresh = torch.full(shape, self.target_return, device=tensordict_reset.device)
            previous = tensordict.get(out_key, None)
            if reset is not None and previous is not None:
                fresh = torch.where(mask_like(reset, previous), fresh, previous)
            tensordict_reset.set(out_key, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in self._key_pairs:
            target = tensordict.get(out_key)
            if self.mode == "reduce":
                target = target - next_tensordict.get(in_key)
            next_tensordict.set(out_key, target)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("TargetReturn runs in an env only (it needs the previous step)")

    def _specs(self, spec: Composite) -> Composite:
        parent = self.parent
        shape = (*parent.batch_size, 1)
        for _, out_key in self._key_pairs:
            spec[out_key] = Unbounded(
                shape=shape, dtype=torch.get_default_dtype(), device=parent.device
            )
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._specs(observation_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._specs(state_spec)


class SuccessReward(Transform):
    """A sparse reward from a success flag: ``scale`` where ``success_key`` is set, else 0.

    In an env it replaces the step's reward (the reward spec becomes a ``Bounded`` over
    ``{0, scale}`` shaped like the success entry); on sampled data it writes the reward from the
    flag. Nothing is written at reset. TorchRL's transform of the same name.

    Args:
        success_key: the boolean (or 0/1) success entry. Defaults to ``"success"``.
        reward_key: the reward to write. Defaults to ``"reward"``.

    Keyword Args:
        scale: the reward on success (default ``1.0``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(success=torch.tensor([[True], [False]]), batch_size=[2])
        >>> SuccessReward(scale=2.0)(td)["reward"].squeeze(-1).tolist()
        [2.0, 0.0]
    """

    def __init__(
        self,
        success_key: NestedKey = "success",
        reward_key: NestedKey = "reward",
        *,
        scale: float = 1.0,
    ) -> None:
        super().__init__(in_keys=[success_key], out_keys=[reward_key])
        self.scale = float(scale)

    def _apply_transform(self, success: torch.Tensor) -> torch.Tensor:
        return success.to(torch.get_default_dtype()) * self.scale

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        success_key, reward_key = self.in_keys[0], self.out_keys[0]
        leaf = None
        parent = self.parent
        if parent is not None:
            for spec in (parent.full_observation_spec, parent.full_done_spec):
                if success_key in spec.keys(True, True):
                    leaf = spec[success_key]
                    break
        if (
            leaf is None
            and isinstance(reward_spec, Composite)
            and reward_key in reward_spec.keys(True, True)
        ):
            leaf = reward_spec[reward_key]
        if leaf is None:
            raise KeyError(
                f"SuccessReward: cannot shape the reward: {success_key!r} is not an output of "
                f"the env and {reward_key!r} is not one of its rewards"
            )
        low, high = min(0.0, self.scale), max(0.0, self.scale)
        bounded = Bounded(
            low, high, shape=leaf.shape, device=leaf.device, dtype=torch.get_default_dtype()
        )
        if not isinstance(reward_spec, Composite):
            return bounded
        reward_spec[reward_key] = bounded
        return reward_spec
