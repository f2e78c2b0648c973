"""Primers and trackers: TensorDictPrimer, gSDENoise, InitTracker, TrajCounter."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Composite, TensorSpec, Unbounded
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import flag_spec_like, mask_like

__all__ = ["InitTracker", "TensorDictPrimer", "TrajCounter", "gSDENoise"]


class TensorDictPrimer(Transform):
    """Adds entries (e.g. recurrent states) that the env does not produce, filled at reset.

    The entries are registered in the observation and state specs, set at reset to
    ``default_value`` (or drawn from their spec with ``random=True``) and carried from one step
    to the next unless something (a policy, another transform) writes them.

    Args:
        primers: a dict or ``Composite`` of ``key -> spec``. Shapes may omit the env's batch
            dims; they are then expanded to the env's batch size.
        random: draw the values from the specs at reset.
        default_value: a number, a callable returning a tensor, or a dict of those per key.
            Defaults to 0.
        reset_key: the reset entry. Defaults to the env's only reset key.
        **kwargs: the primers as keyword arguments, when ``primers`` is not given.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.specs import Unbounded
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), TensorDictPrimer(hidden=Unbounded(shape=(4,))))
        >>> env.reset()["hidden"]
        tensor([0., 0., 0., 0.])
    """

    _cache_keys = ("_spec_cache",)

    def __init__(
        self,
        primers: dict | Composite | None = None,
        random: bool | None = None,
        default_value: float | Callable | dict | None = None,
        reset_key: NestedKey | None = None,
        expand_specs: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if primers is not None and kwargs:
            raise TypeError(
                f"TensorDictPrimer: give the primers as a dict or as keywords, not both (got {sorted(kwargs)})"
            )
        primers = primers if primers is not None else kwargs
        if not isinstance(primers, Composite):
            primers = Composite(dict(primers))
        for key, spec in primers.items(True, True):
            if not isinstance(spec, TensorSpec):
                raise TypeError(
                    f"TensorDictPrimer: the primer {key!r} must be a TensorSpec, got {spec!r}"
                )
        if random and _is_zero(default_value):
            default_value = None  # TorchRL's own default (0.0) goes with random=True
        if random and default_value is not None:
            raise ValueError(
                "TensorDictPrimer: Setting random to True and providing a default_value are "
                f"incompatible (got default_value={default_value!r})"
            )
        super().__init__()
        self.primers = primers
        self.random = bool(random)
        keys = list(primers.keys(True, True))
        if isinstance(default_value, dict):
            if set(default_value) != set(keys):
                raise ValueError(
                    f"TensorDictPrimer: default_value keys {sorted(map(str, default_value))} must "
                    f"match the primers {sorted(map(str, keys))}"
                )
            self.default_value = dict(default_value)
        else:
            value = 0.0 if default_value is None else default_value
            self.default_value = {k: value for k in keys}
        self._given_reset_key = reset_key
        self.expand_specs = expand_specs

    @property
    def reset_key(self) -> NestedKey:
        return self._only_reset_key(self._given_reset_key)

    def _specs(self, batch_size: torch.Size) -> Composite:
        """The primers expanded to ``batch_size`` (cached per batch size)."""
        cache = self.__dict__.setdefault("_spec_cache", {})
        specs = cache.get(batch_size)
        if specs is None:
            nb = len(batch_size)
            specs = Composite(shape=batch_size)
            for key, spec in self.primers.items(True, True):
                if tuple(spec.shape[:nb]) != tuple(batch_size):
                    spec = spec.expand((*batch_size, *spec.shape))
                specs[key] = spec
            cache[batch_size] = specs
        return specs

    @property
    def _keys(self) -> list[NestedKey]:
        return list(self.primers.keys(True, True))

    def _value(self, key: NestedKey, spec: TensorSpec, shape: torch.Size) -> torch.Tensor:
        if self.random:
            return spec.rand(shape) if shape else spec.rand()
        value = self.default_value[key]
        if callable(value):
            return value()
        return torch.full((*shape, *spec.shape), value, dtype=spec.dtype, device=spec.device)

    def _fill(
        self, tensordict: TensorDictBase, previous: TensorDictBase | None, reset
    ) -> TensorDictBase:
        parent = self.parent
        batch = parent.batch_size if parent is not None else tensordict.batch_size
        leading = tensordict.batch_size[: tensordict.batch_dims - len(batch)]
        specs = self._specs(batch)
        for key in self._keys:
            spec = specs[key]
            value = self._value(key, spec, leading)
            prev = previous.get(key, None) if previous is not None else None
            if reset is not None and prev is not None and prev.shape == value.shape:
                value = torch.where(mask_like(reset, value), value, prev)
            tensordict.set(key, value)
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        reset = tensordict.get(self.reset_key, None)
        return self._fill(tensordict_reset, tensordict, reset)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self._keys:
            if next_tensordict.get(key, None) is None:
                value = tensordict.get(key, None)
                if value is not None:
                    next_tensordict.set(key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the primers' values into ``tensordict`` (shapes relative to its batch)."""
        for key, spec in self.primers.items(True, True):
            tensordict.set(key, self._value(key, spec, tensordict.batch_size))
        return tensordict

    def _add(self, spec: Composite) -> Composite:
        for key, leaf in self._specs(torch.Size(spec.shape)).items(True, True):
            spec[key] = leaf.clone()
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._add(observation_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        state = input_spec["full_state_spec"]
        actions = set(input_spec["full_action_spec"].keys(True, True))
        for key, leaf in self._specs(torch.Size(state.shape)).items(True, True):
            if key in actions:
                input_spec["full_action_spec"][key] = leaf.clone()
            else:
                state[key] = leaf.clone()
        return input_spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(primers={self._keys}, random={self.random})"


class gSDENoise(TensorDictPrimer):
    """A primer of the ``"_eps_gSDE"`` noise of gSDE policies, drawn at each reset.

    Args:
        state_dim: the size of the state features.
        action_dim: the size of the action.
        shape: extra leading dims of the noise.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), gSDENoise(state_dim=3, action_dim=1))
        >>> env.reset()["_eps_gSDE"].shape
        torch.Size([1, 3])
    """

    def __init__(
        self,
        state_dim: int | None = None,
        action_dim: int | None = None,
        shape: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        shape = tuple(shape) if shape is not None else ()
        if state_dim is not None and action_dim is not None:
            shape = (*shape, action_dim, state_dim)
        super().__init__({"_eps_gSDE": Unbounded(shape=shape)}, random=True, **kwargs)


class InitTracker(Transform):
    """Marks the first step of each episode: ``"is_init"`` is ``True`` right after a reset.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), InitTracker())
        >>> td = env.rollout(3)
        >>> td["is_init"].squeeze(-1).tolist()
        [True, False, False]
    """

    _cache_keys = ("_levels_cache",)

    def __init__(self, init_key: str = "is_init") -> None:
        if not isinstance(init_key, str):
            raise TypeError(f"InitTracker: init_key must be a string, got {init_key!r}")
        super().__init__(out_keys=[init_key])
        self.init_key = init_key

    def _levels(self) -> tuple[tuple[NestedKey, NestedKey, NestedKey], ...]:
        levels = self.__dict__.get("_levels_cache")
        if levels is None:
            levels = self._reset_levels(self.init_key, "done")
            self.__dict__["_levels_cache"] = levels
        return levels

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for reset_key, init_key, done_key in self._levels():
            done = tensordict_reset.get(done_key)
            reset = tensordict.get(reset_key, None)
            if reset is None:
                init = torch.ones_like(done)
            else:
                init = reset.reshape(done.shape).clone()
            tensordict_reset.set(init_key, init)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for _, init_key, done_key in self._levels():
            done = next_tensordict.get(done_key)
            next_tensordict.set(init_key, torch.zeros_like(done))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("InitTracker runs in an env only")

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        done_spec = self.parent.full_done_spec
        for _, init_key, done_key in self._levels():
            observation_spec[init_key] = flag_spec_like(done_spec[done_key])
        return observation_spec

    def __repr__(self) -> str:
        return f"InitTracker(init_key={self.init_key!r})"


class TrajCounter(Transform):
    """Numbers trajectories: each reset gives the reset envs a new, globally unique id.

    The counter is a shared buffer: clones (and copies in serial sub-envs) draw ids from the
    same count.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv, StepCounter
        >>> env = TransformedEnv(PendulumEnv(), StepCounter(2))
        >>> env = env.append_transform(TrajCounter())
        >>> td = env.rollout(6, break_when_any_done=False)
        >>> td["traj_count"].squeeze(-1).tolist()
        [0, 0, 1, 1, 2, 2]
    """

    def __init__(self, out_key: NestedKey = "traj_count", *, repeats: int | None = None) -> None:
        super().__init__(out_keys=[out_key])
        self.out_key = self.out_keys[0]
        self.repeats = repeats
        self.register_buffer("_count", torch.zeros((), dtype=torch.int64))

    @property
    def reset_key(self) -> NestedKey:
        return self._env_reset_keys()[0]

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        batch = tensordict_reset.batch_size
        reset = tensordict.get(self.reset_key, None)
        previous = tensordict.get(self.out_key, None)
        if reset is None or previous is None:
            n = batch.numel()
            ids = self._count + torch.arange(n, device=self._count.device)
            self._count.add_(n)
            value = ids.reshape(*batch, 1)
        else:
            mask = reset.reshape(*batch, 1)
            n = int(mask.sum())
            ids = self._count + torch.arange(n, device=self._count.device)
            self._count.add_(n)
            value = previous.clone()
            value[mask] = ids.to(value.dtype)
        tensordict_reset.set(
            self.out_key, value.to(tensordict_reset.device) if tensordict_reset.device else value
        )
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        value = tensordict.get(self.out_key, None)
        if value is None:
            raise KeyError(
                f"TrajCounter: the step input has no {self.out_key!r} entry; reset first"
            )
        next_tensordict.set(self.out_key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("TrajCounter runs in an env only")

    def _spec(self, spec: Composite) -> Composite:
        spec[self.out_key] = Unbounded(
            shape=(*spec.shape, 1), dtype=torch.int64, device=spec.device
        )
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._spec(observation_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._spec(state_spec)

    def __repr__(self) -> str:
        return f"TrajCounter(out_key={self.out_key!r}, count={int(self._count)})"


def _is_zero(value: Any) -> bool:
    """Whether ``value`` is the number 0 (TorchRL's default ``default_value``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0
