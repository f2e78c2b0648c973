"""Action transforms: ActionMask, DiscreteActionProjection, ActionDiscretizer, MultiAction."""

from __future__ import annotations

import enum
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
)
from torchenv.transforms._base import Transform, _normalize_keys
from torchenv.transforms._utils import as_tuple

__all__ = ["ActionDiscretizer", "ActionMask", "DiscreteActionProjection", "MultiAction"]


class ActionMask(Transform):
    """Keeps the env's action spec masked with the latest ``"action_mask"`` observation.

    After every reset and step, the mask is written into the action spec of the env, so
    that ``rand_action`` (and policies reading the spec) only pick allowed actions.

    Args:
        action_key: the masked action. Defaults to ``"action"``.
        mask_key: the mask entry. Defaults to ``"action_mask"``.

    Examples:
        >>> from torchenv.envs import TicTacToeEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(TicTacToeEnv(), ActionMask())
        >>> td = env.rollout(9)  # random moves are always legal
        >>> bool(td["next", "done"][-1])
        True
    """

    def __init__(
        self, action_key: NestedKey = "action", mask_key: NestedKey = "action_mask"
    ) -> None:
        super().__init__(in_keys=[action_key, mask_key], out_keys=[])
        self.action_key, self.mask_key = _normalize_keys([action_key, mask_key])

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        env = self.container
        if env is None:
            raise RuntimeError("ActionMask needs an env (it updates the env's action spec)")
        mask = next_tensordict.get(self.mask_key, None)
        if mask is None:
            if self.missing_tolerance:
                return next_tensordict
            raise KeyError(f"ActionMask: the mask entry {self.mask_key!r} is missing")
        spec = env.full_action_spec[self.action_key]
        if not hasattr(spec, "update_mask"):
            raise TypeError(
                f"ActionMask: the action spec of {self.action_key!r} is a {type(spec).__name__}, "
                "which has no mask (use Categorical, OneHot, MultiCategorical or MultiOneHot)"
            )
        spec.update_mask(mask.to(spec.device) if spec.device is not None else mask)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("ActionMask runs in an env only (it updates the env's action spec)")

    def __repr__(self) -> str:
        return f"ActionMask(action_key={self.action_key!r}, mask_key={self.mask_key!r})"


class DiscreteActionProjection(Transform):
    """Lets a policy with ``max_actions`` one-hot actions act in an env with fewer of them.

    The inverse maps a one-hot action of size ``max_actions`` to one of size
    ``num_actions_effective``; indices beyond the env's range are replaced by a random
    valid action. With ``include_forward``, the forward map pads the env's actions back.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DiscreteActionProjection(2, 4)
        >>> t.inv(TensorDict(action=torch.tensor([0, 1, 0, 0])))["action"]
        tensor([0, 1])
    """

    def __init__(
        self,
        num_actions_effective: int,
        max_actions: int,
        action_key: NestedKey = "action",
        include_forward: bool = True,
    ) -> None:
        if num_actions_effective > max_actions:
            raise ValueError(
                f"DiscreteActionProjection: num_actions_effective ({num_actions_effective}) must "
                f"not exceed max_actions ({max_actions})"
            )
        in_keys = [action_key] if include_forward else []
        super().__init__(in_keys, in_keys, [action_key], [action_key])
        self.num_actions_effective = num_actions_effective
        self.max_actions = max_actions
        self.include_forward = include_forward

    def _apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        pad = self.max_actions - action.shape[-1]
        if pad < 0:
            raise ValueError(
                f"DiscreteActionProjection: expected {self.num_actions_effective} actions, "
                f"got a last dim of {action.shape[-1]}"
            )
        return torch.nn.functional.pad(action, (0, pad))

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if action.shape[-1] != self.max_actions:
            raise ValueError(
                f"DiscreteActionProjection: expected one-hot actions of size {self.max_actions}, "
                f"got shape {tuple(action.shape)}"
            )
        index = action.long().argmax(-1)
        invalid = index >= self.num_actions_effective
        if invalid.any():
            random = torch.randint(self.num_actions_effective, index.shape, device=index.device)
            index = torch.where(invalid, random, index)
        out = torch.nn.functional.one_hot(index, self.num_actions_effective)
        return out.to(action.dtype)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        # step outputs hold no action: the forward map only applies where one is present
        for in_key, out_key in self._key_pairs:
            value = next_tensordict.get(in_key, None)
            if value is not None:
                next_tensordict.set(out_key, self._apply_transform(value))
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        def outer(spec: TensorSpec) -> TensorSpec:
            if not isinstance(spec, OneHot):
                raise TypeError(
                    f"DiscreteActionProjection needs a OneHot action spec, got {type(spec).__name__}"
                )
            return OneHot(
                self.max_actions,
                shape=(*spec.shape[:-1], self.max_actions),
                dtype=spec.dtype,
                device=spec.device,
            )

        self._map_inv_specs(input_spec["full_action_spec"], outer)
        return input_spec

    def __repr__(self) -> str:
        return f"DiscreteActionProjection(num_actions_effective={self.num_actions_effective}, max_actions={self.max_actions})"


def _check_intervals(num_intervals: int | Sequence[int] | torch.Tensor) -> int | list[int]:
    """Validates ``num_intervals``: an int, or one int per action dim (list or 1-d tensor)."""
    if isinstance(num_intervals, torch.Tensor):
        if num_intervals.ndim > 1:
            raise ValueError(
                "ActionDiscretizer: num_intervals must be an int or a 1-d sequence, "
                f"got a tensor of shape {tuple(num_intervals.shape)}"
            )
        num_intervals = num_intervals.tolist()
    try:
        values = [num_intervals] if isinstance(num_intervals, int) else list(num_intervals)
    except TypeError:  # not a sequence: reported below
        values = [num_intervals]
    if not values or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in values):
        raise ValueError(
            f"ActionDiscretizer: num_intervals must be >= 2 (an int or one per action dim), "
            f"got {num_intervals!r}"
        )
    return num_intervals if isinstance(num_intervals, int) else values


class ActionDiscretizer(Transform):
    """Exposes a bounded continuous action as ``num_intervals`` discrete choices per dim.

    With ``categorical=True`` the policy writes integer actions: a ``Categorical`` spec of the
    continuous action's shape for an int ``num_intervals``, a ``MultiCategorical`` for one
    count per action dim. With ``categorical=False`` it writes one-hot actions, as in TorchRL: a
    ``OneHot`` spec of size ``n`` for a scalar action, otherwise a ``MultiOneHot`` over the last
    action dim (size ``sum(nvec)``). The inverse maps each choice to the median
    (``sampling="median"``), low or high end of its interval. With ``out_action_key`` different
    from ``action_key``, the discrete entry is the action and the continuous one becomes a state
    entry that each step writes into its input tensordict, as in TorchRL.

    Args:
        num_intervals: choices per action dim: an int for all dims, or one int per element of
            the last action dim (list or 1-d tensor; a single-element list applies to all).
        action_key: the continuous (``Bounded``) action of the parent env.
        out_action_key: where the policy writes the discrete action (default ``action_key``).
        sampling: the point of the chosen interval: ``"median"`` (default), ``"low"``,
            ``"high"``, ``"random"`` (uniform at each step), or the same as
            ``ActionDiscretizer.SamplingStrategy.MEDIAN`` etc. (TorchRL's enum).
        categorical: integer actions if ``True`` (default), one-hot actions otherwise.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), ActionDiscretizer(num_intervals=5))
        >>> env.action_spec.space.n, env.rand_step()["action"].dtype
        (5, torch.int64)
        >>> env = TransformedEnv(PendulumEnv(), ActionDiscretizer(5, categorical=False))
        >>> type(env.action_spec).__name__, env.rand_step()["action"].shape
        ('MultiOneHot', torch.Size([5]))
    """

    class SamplingStrategy(enum.IntEnum):
        """Where in its interval a discrete choice lands (TorchRL's names and values)."""

        MEDIAN = 0
        LOW = 1
        HIGH = 2
        RANDOM = 3

    # the offset of the chosen point within its interval; RANDOM draws it at each step
    SAMPLING = {"median": 0.5, "low": 0.0, "high": 1.0, "random": None}

    def __init__(
        self,
        num_intervals: int | Sequence[int] | torch.Tensor,
        action_key: NestedKey = "action",
        out_action_key: NestedKey | None = None,
        sampling: str | SamplingStrategy | None = None,
        categorical: bool = True,
    ) -> None:
        num_intervals = _check_intervals(num_intervals)
        if isinstance(sampling, int):  # ActionDiscretizer.SamplingStrategy (an IntEnum)
            sampling = self.SamplingStrategy(sampling).name
        sampling = (sampling or "median").lower()
        if sampling not in self.SAMPLING:
            raise ValueError(
                f"ActionDiscretizer: sampling must be one of {list(self.SAMPLING)}, got {sampling!r}"
            )
        out_action_key = out_action_key if out_action_key is not None else action_key
        super().__init__(in_keys_inv=[action_key], out_keys_inv=[out_action_key])
        self.num_intervals = num_intervals
        self.action_key, self.out_action_key = _normalize_keys([action_key, out_action_key])
        self.sampling = sampling
        self.categorical = categorical
        self.register_buffer("_low", None)
        self.register_buffer("_high", None)
        self.register_buffer("_n", None)  # choices per action dim (float64, broadcast on last dim)
        self._nvec: list[int] | None = None  # one-hot chunk sizes (None for a scalar action)
        self._uniform = True  # whether every action dim has the same number of choices
        self._inner_dtype = None

    def _to_index(self, action: torch.Tensor) -> torch.Tensor:
        """The chosen interval of every action dim (the one-hot action is turned into indices)."""
        if self.categorical:
            return action
        if action.dtype == torch.bool:
            action = action.to(torch.uint8)
        nvec = self._nvec
        if nvec is None:
            return action.argmax(-1)
        if self._uniform:
            return action.unflatten(-1, (len(nvec), nvec[0])).argmax(-1)
        return torch.stack([chunk.argmax(-1) for chunk in action.split(nvec, -1)], -1)

    def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
        if self._low is None:
            env = self.container
            if env is not None:  # the specs are built lazily: reading them sets the bounds
                _ = env.full_action_spec
            if self._low is None:
                raise RuntimeError(
                    "ActionDiscretizer needs an env with a Bounded action (none seen yet)"
                )
        index = self._to_index(action).to(self._low.dtype)
        offset = self.SAMPLING[self.sampling]
        if offset is None:  # RANDOM: uniform within the chosen interval
            offset = torch.rand(index.shape, dtype=index.dtype, device=index.device)
        frac = (index + offset) / self._n
        value = self._low + (self._high - self._low) * frac
        return value.to(self._inner_dtype)

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset

    def _action_nvec(self, action_shape: torch.Size) -> list[int]:
        """Choices per element of the last action dim (one entry for a scalar action)."""
        n = self.num_intervals
        count = action_shape[-1] if action_shape else 1
        nvec = [n] * count if isinstance(n, int) else n * count if len(n) == 1 else list(n)
        if len(nvec) != count:
            raise ValueError(
                f"ActionDiscretizer: num_intervals {n} must have one entry per element of the "
                f"last dim of the action {self.action_key!r}, whose shape is {list(action_shape)}"
            )
        return nvec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        batch_dims = input_spec.ndim

        def outer(spec: TensorSpec) -> TensorSpec:
            if not isinstance(spec, Bounded):
                raise TypeError(
                    f"ActionDiscretizer needs a Bounded action spec for {self.action_key!r}, "
                    f"got {type(spec).__name__}"
                )
            scalar = spec.ndim == batch_dims
            nvec = self._action_nvec(spec.shape[batch_dims:])
            self._low = spec.space.low.to(torch.float64).clone()
            self._high = spec.space.high.to(torch.float64).clone()
            n_t = torch.tensor(nvec, dtype=torch.float64, device=spec.device)
            self._n = n_t.squeeze(0) if scalar else n_t
            self._nvec = None if scalar else nvec
            self._uniform = len(set(nvec)) == 1
            self._inner_dtype = spec.dtype
            shape, device = spec.shape, spec.device
            if self.categorical:
                if scalar or isinstance(self.num_intervals, int):
                    return Categorical(nvec[0], shape=shape, dtype=torch.int64, device=device)
                return MultiCategorical(nvec, shape=shape, dtype=torch.int64, device=device)
            if scalar:
                return OneHot(nvec[0], shape=(*shape, nvec[0]), device=device)
            return MultiOneHot(nvec, shape=(*shape[:-1], sum(nvec)), device=device)

        actions = input_spec["full_action_spec"]
        continuous = actions.get(self.action_key, None)
        self._map_inv_specs(actions, outer)
        if continuous is not None and self.out_action_key != self.action_key:
            # TorchRL keeps the continuous action beside the discrete one: a state entry that
            # the step writes into its input tensordict.
            input_spec["full_state_spec"][self.action_key] = continuous.clone()
        return input_spec

    def __repr__(self) -> str:
        return (
            f"ActionDiscretizer(num_intervals={self.num_intervals}, sampling={self.sampling!r}, "
            f"categorical={self.categorical})"
        )


class MultiAction(Transform):
    """Executes a sequence of actions (stacked along ``dim``) in one step of the env.

    The policy writes actions with an extra dim; each is run in the parent env in turn, stopping
    early where the env gets done (the remaining sub-steps are skipped). With ``stack_rewards``,
    the reward of every sub-step is returned, stacked along ``dim``; with ``stack_observations``
    the observations of every sub-step are returned under ``("stacked", key)``.
    With ``num_actions`` (the size of the extra dim) the specs describe the stacked actions and
    rewards, so the env passes ``check_env_specs``.

    Examples:
        >>> import torch
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), MultiAction(num_actions=3))
        >>> td = env.reset()
        >>> td["action"] = torch.zeros(3, 1)  # three sub-steps
        >>> env.step(td)["next", "reward"].shape
        torch.Size([3, 1])
    """

    def __init__(
        self,
        *,
        dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        num_actions: int | None = None,
    ) -> None:
        if dim < 1:
            raise ValueError(f"MultiAction: dim must be >= 1 (after the batch dims), got {dim}")
        super().__init__()
        self.dim = dim
        self.stack_rewards = stack_rewards
        self.stack_observations = stack_observations
        self.num_actions = num_actions
        self.__dict__["_stacks"] = None

    @property
    def _has_inverse(self) -> bool:
        return True

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("MultiAction needs an env")
        from torchenv.envs import step_mdp

        nb = tensordict.batch_dims
        axis = nb + self.dim - 1
        actions = {k: tensordict.get(k) for k in parent.action_keys}
        n = next(iter(actions.values())).shape[axis]
        per_step = [{k: v.select(axis, i) for k, v in actions.items()} for i in range(n)]
        rewards, observations = [], []
        td = tensordict
        stepping = torch.ones(tensordict.batch_size, dtype=torch.bool, device=tensordict.device)
        for sub in per_step[:-1]:
            td = td.copy()
            for k, v in sub.items():
                td.set(k, v)
            if not stepping.all():
                td.set("_step", stepping.clone())
            td = parent.step(td)
            nxt = td.get("next")
            rewards.append(nxt.select(*parent.reward_keys))
            observations.append(nxt.select(*parent.observation_keys))
            done = nxt.get("done", None)
            td = step_mdp(td)
            if done is not None:
                stepping = stepping & ~done.reshape(stepping.shape)
        td = td.copy()
        for k, v in per_step[-1].items():
            td.set(k, v)
        if not stepping.all():
            td.set("_step", stepping)
        self.__dict__["_stacks"] = (rewards, observations)
        return td

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        stacks = self.__dict__["_stacks"]
        if stacks is None:
            return next_tensordict
        rewards, observations = stacks
        self.__dict__["_stacks"] = None
        axis = next_tensordict.batch_dims + self.dim - 1
        parent = self.parent
        if self.stack_rewards:
            for key in parent.reward_keys:
                values = [r.get(key) for r in rewards] + [next_tensordict.get(key)]
                next_tensordict.set(key, torch.stack(values, axis))
        if self.stack_observations:
            for key in parent.observation_keys:
                values = [o.get(key) for o in observations] + [next_tensordict.get(key)]
                next_tensordict.set(
                    ("stacked", *as_tuple(key)),
                    torch.stack(values, axis),
                )
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        if not self.stack_observations:
            return tensordict_reset
        # the first observations, repeated, so that every output holds the stacked entries
        parent = self.parent
        axis = tensordict_reset.batch_dims + self.dim - 1
        n = self.num_actions or 1
        for key in parent.observation_keys:
            value = tensordict_reset.get(key, None)
            if value is not None:
                stacked = torch.stack([value] * n, axis)
                tensordict_reset.set(("stacked", *as_tuple(key)), stacked)
        return tensordict_reset

    def _stacked(self, spec: Composite) -> Composite:
        nb = len(spec.shape)
        for key in list(spec.keys(True, True)):
            leaf = spec[key]
            axis = nb + self.dim - 1
            spec[key] = leaf.unsqueeze(axis).expand(
                *leaf.shape[:axis], self.num_actions, *leaf.shape[axis:]
            )
        return spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        return action_spec if self.num_actions is None else self._stacked(action_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        if self.num_actions is None or not self.stack_rewards:
            return reward_spec
        return self._stacked(reward_spec)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        if self.num_actions is None or not self.stack_observations:
            return observation_spec
        parent = self.parent
        stacked = self._stacked(parent.full_observation_spec.clone())
        for key in list(stacked.keys(True, True)):
            observation_spec[("stacked", *as_tuple(key))] = stacked[key]
        return observation_spec

    def __repr__(self) -> str:
        return f"MultiAction(dim={self.dim}, stack_rewards={self.stack_rewards})"
