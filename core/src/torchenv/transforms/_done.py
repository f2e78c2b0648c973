"""Done-signal transforms: StepCounter, TerminateTransform, RandomTruncationTransform."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.specs import Bounded, Composite
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import flag_spec_like, mask_like, replace_last

__all__ = [
    "RandomTruncationTransform",
    "StepCounter",
    "TerminateTransform",
]

_INT64_MAX = torch.iinfo(torch.int64).max


class StepCounter(Transform):
    """Counts the steps since the last reset; optionally truncates after ``max_steps``.

    A ``step_count`` entry (int64, shaped like ``"done"``) is written next to every done entry
    of the env. With ``max_steps``, ``"truncated"`` is set once the count reaches it, and
    ``"done"`` too unless ``update_done=False``.

    Args:
        max_steps: truncate episodes after this many steps (``None``: never).
        truncated_key: the name of the truncated entry. Defaults to ``"truncated"``.
        step_count_key: the name of the counter entry. Defaults to ``"step_count"``.
        update_done: also set ``"done"`` on truncation. Defaults to ``True``.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=5))
        >>> td = env.rollout(100)
        >>> td.shape, td["next", "step_count"][-1].item()
        (torch.Size([5]), 5)
    """

    _cache_keys = ("_levels_cache",)

    def __init__(
        self,
        max_steps: int | None = None,
        truncated_key: str = "truncated",
        step_count_key: str = "step_count",
        update_done: bool = True,
    ) -> None:
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"StepCounter: max_steps must be >= 1, got {max_steps}")
        for name, value in (("truncated_key", truncated_key), ("step_count_key", step_count_key)):
            if not isinstance(value, str):
                raise TypeError(f"StepCounter: {name} must be a string, got {value!r}")
        super().__init__()
        self.max_steps = max_steps
        self.truncated_key = truncated_key
        self.step_count_key = step_count_key
        self.update_done = update_done

    def _levels(self) -> tuple[tuple, ...]:
        """``(reset, step_count, truncated, done)`` keys per done level, cached."""
        levels = self.__dict__.get("_levels_cache")
        if levels is None:
            levels = self._reset_levels(self.step_count_key, self.truncated_key, "done")
            self.__dict__["_levels_cache"] = levels
        return levels

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        max_steps = self.max_steps
        for reset_key, count_key, trunc_key, done_key in self._levels():
            done = tensordict_reset.get(done_key)
            previous = tensordict.get(count_key, None)
            reset = tensordict.get(reset_key, None)
            if previous is None or reset is None:
                count = torch.zeros(done.shape, dtype=torch.int64, device=done.device)
            else:
                count = previous.masked_fill(mask_like(reset, previous), 0)
            tensordict_reset.set(count_key, count)
            if max_steps is not None:
                self._truncate(tensordict_reset, count >= max_steps, trunc_key, done_key, done)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        max_steps = self.max_steps
        for _, count_key, trunc_key, done_key in self._levels():
            count = tensordict.get(count_key, None)
            if count is None:
                raise KeyError(
                    f"StepCounter: the step input has no {count_key!r} entry; reset the env "
                    "first or pass the output of the previous step (step_mdp)"
                )
            count = count + 1
            next_tensordict.set(count_key, count)
            if max_steps is not None:
                self._truncate(next_tensordict, count >= max_steps, trunc_key, done_key)
        return next_tensordict

    def _truncate(
        self,
        tensordict: TensorDictBase,
        truncated: torch.Tensor,
        trunc_key: NestedKey,
        done_key: NestedKey,
        done: torch.Tensor | None = None,
    ) -> None:
        """ORs ``truncated`` into the truncated entry (and the done entry, with ``update_done``).

        ``done`` is the done entry as read before any write (read from ``tensordict`` if not
        given).
        """
        old = tensordict.get(trunc_key, None)
        if old is not None:
            truncated = truncated | old
        tensordict.set(trunc_key, truncated)
        if self.update_done:
            if done is None:
                done = tensordict.get(done_key)
            tensordict.set(done_key, done | truncated)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("StepCounter runs in an env only (it counts env steps)")

    def _count_specs(self, spec: Composite) -> Composite:
        done_spec = self.parent.output_spec["full_done_spec"]
        for _, count_key, _, done_key in self._levels():
            shape = done_spec[done_key].shape
            spec[count_key] = Bounded(
                0, _INT64_MAX, shape=shape, dtype=torch.int64, device=done_spec.device
            )
        return spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._count_specs(observation_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._count_specs(state_spec)

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        if self.max_steps is None:
            return done_spec
        for _, _, trunc_key, done_key in self._levels():
            if trunc_key not in done_spec.keys(True, True):
                done_spec[trunc_key] = flag_spec_like(done_spec[done_key])
        return done_spec

    def __repr__(self) -> str:
        return f"StepCounter(max_steps={self.max_steps}, step_count_key={self.step_count_key!r})"


class TerminateTransform(Transform):
    """Ends episodes when ``stop(next_tensordict)`` holds: it is OR-ed into the done entries.

    After every step, the predicate's boolean (a scalar, or a tensor that broadcasts to the done
    entries) is OR-ed into every ``"terminated"`` entry of the env and, with ``write_done``
    (default), every ``"done"`` entry, so that ``rollout(break_when_any_done=True)`` stops
    there. ``"truncated"`` entries are left alone. TorchRL's transform of the same name.

    Args:
        stop: ``next_tensordict -> bool | tensor``.

    Keyword Args:
        write_done: also set ``"done"`` (default ``True``).

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), TerminateTransform(lambda td: td["th"] > -10))
        >>> env.rollout(50).shape  # the predicate holds at once: one step
        torch.Size([1])
    """

    def __init__(self, stop: Callable[[TensorDictBase], Any], *, write_done: bool = True) -> None:
        if not callable(stop):
            raise ValueError(
                f"TerminateTransform: stop must be callable, got {type(stop).__name__}"
            )
        super().__init__(in_keys=[], out_keys=[])
        self.stop = stop
        self.write_done = write_done

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        flag = self.stop(next_tensordict)
        flag = torch.as_tensor(flag, device=next_tensordict.device).bool()
        parent = self.parent
        for key in parent.done_keys if parent is not None else ["done"]:
            name = key[-1] if isinstance(key, tuple) else key
            if name == "truncated" or (name == "done" and not self.write_done):
                continue
            current = next_tensordict.get(key, None)
            if current is None:
                continue
            extra = flag.reshape(*flag.shape, *((1,) * max(current.ndim - flag.ndim, 0)))
            next_tensordict.set(key, current | extra.expand(current.shape))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("TerminateTransform acts on env steps; it has no standalone use")


def _ends_with(key: NestedKey, name: str) -> bool:
    return (key if isinstance(key, str) else key[-1]) == name


class RandomTruncationTransform(Transform):
    """Truncates episodes at random horizons, to decorrelate the sub-envs of a batched env.

    Reads the counter of a :class:`StepCounter` placed *before* it in the chain. At the first
    reset each sub-env gets a horizon drawn from ``U{1, max_horizon}``; at each later partial
    reset (``"_reset"`` mask) a sub-env gets, with probability ``prob`` (``first_episode_prob``
    for the first episode after that initial spread), a horizon from
    ``U{min_horizon, max_horizon}``, else ``max_horizon``. A step whose count reaches the
    horizon sets ``"truncated"`` and ``"done"`` (written next to the counter; a truncated spec
    is added if the env has none). TorchRL's transform of the same name, drawing the same
    random numbers.

    Args:
        min_horizon: the smallest random horizon (inclusive, >= 1).
        max_horizon: the largest horizon (inclusive), also the horizon when not truncating.
        prob: the probability of a random horizon at each later reset (default ``0.0``: the
            initial spread only).
        first_episode_prob: the probability for each sub-env's first episode after the initial
            spread (default: ``prob``).

    Keyword Args:
        step_count_key: the StepCounter's key; a string matches the last name of any nested
            key. Defaults to ``"step_count"``.
        truncated_key: where truncation is written (a string: next to the counter). Defaults
            to ``"truncated"``.
        done_key: the done entry OR-ed with truncation (resolved likewise). Defaults to
            ``"done"``.

    Raises:
        ValueError: on a probability out of ``[0, 1]`` or horizons not in
            ``1 <= min_horizon <= max_horizon``.
        RuntimeError: when put in an env with no StepCounter before it.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import Compose, StepCounter, TransformedEnv
        >>> env = TransformedEnv(
        ...     PendulumEnv(), Compose(StepCounter(), RandomTruncationTransform(3, 3, prob=1.0))
        ... )
        >>> rollout = env.rollout(10)
        >>> rollout.shape[0] <= 3, bool(rollout["next", "truncated"][-1])
        (True, True)
    """

    def __init__(
        self,
        min_horizon: int,
        max_horizon: int,
        prob: float = 0.0,
        first_episode_prob: float | None = None,
        *,
        step_count_key: NestedKey = "step_count",
        truncated_key: NestedKey = "truncated",
        done_key: NestedKey = "done",
    ) -> None:
        super().__init__()
        if first_episode_prob is None:
            first_episode_prob = prob
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"RandomTruncationTransform: prob must be in [0, 1], got {prob}")
        if not 0.0 <= first_episode_prob <= 1.0:
            raise ValueError(
                "RandomTruncationTransform: first_episode_prob must be in [0, 1], "
                f"got {first_episode_prob}"
            )
        if min_horizon < 1:
            raise ValueError(
                f"RandomTruncationTransform: min_horizon must be >= 1, got {min_horizon}"
            )
        if max_horizon < 1:
            raise ValueError(
                f"RandomTruncationTransform: max_horizon must be >= 1, got {max_horizon}"
            )
        if min_horizon > max_horizon:
            raise ValueError(
                f"RandomTruncationTransform: min_horizon ({min_horizon}) must be <= "
                f"max_horizon ({max_horizon})"
            )
        self.prob = prob
        self.first_episode_prob = first_episode_prob
        self.min_horizon = min_horizon
        self.max_horizon = max_horizon
        self.step_count_key = unravel_key(step_count_key)
        self.truncated_key = unravel_key(truncated_key)
        self.done_key = unravel_key(done_key)
        self._horizons: torch.Tensor | None = None
        self._first_episode: torch.Tensor | None = None
        self._initialized = False

    # ------------------------------------------------------------------ keys
    def set_container(self, container: Transform | Any) -> None:
        self.__dict__.pop("_located_step_count_key", None)
        super().set_container(container)
        parent = self.parent
        if parent is not None and self._match(parent.observation_spec.keys(True, True)) is None:
            raise RuntimeError(
                "RandomTruncationTransform needs a StepCounter earlier in the transform chain "
                f"writing {self.step_count_key!r}, but the env before it has no such "
                "observation: use Compose(StepCounter(), RandomTruncationTransform(...)) "
                "(with the same step_count_key if StepCounter's is not the default)."
            )

    def _match(self, keys: Iterable[NestedKey], target: NestedKey | None = None) -> Any:
        """``target`` if in ``keys``, else the first key whose last name is ``target`` (a str)."""
        target = self.step_count_key if target is None else target
        found = None
        for key in keys:
            if key == target:
                return key
            if found is None and isinstance(target, str) and _ends_with(key, target):
                found = key
        return found

    def _companions(self, count_key: NestedKey) -> tuple[NestedKey, NestedKey]:
        """``(truncated_key, done_key)`` at the counter's level (tuples are kept as they are)."""
        return tuple(
            key if isinstance(key, tuple) else replace_last(count_key, key)
            for key in (self.truncated_key, self.done_key)
        )

    def _count_key(self, tensordict: TensorDictBase) -> NestedKey | None:
        d = self.__dict__
        key = d.get("_located_step_count_key")
        if key is None:
            key = self._match(tensordict.keys(True, True))
            if key is not None:
                d["_located_step_count_key"] = key
        return key

    # ------------------------------------------------------------------ data
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        count_key = self._count_key(next_tensordict)
        if count_key is None or self._horizons is None:
            return next_tensordict
        cut = next_tensordict.get(count_key) >= self._horizons
        truncated_key, done_key = self._companions(count_key)
        for key in (truncated_key, done_key):
            flag = next_tensordict.get(key, None)
            next_tensordict.set(key, cut if flag is None else flag | cut)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        count_key = self._count_key(tensordict_reset)
        if count_key is None:
            return tensordict_reset
        count = tensordict_reset.get(count_key)
        truncated_key, done_key = self._companions(count_key)
        done = tensordict_reset.get(done_key, None)
        if done is not None:
            tensordict_reset.set(truncated_key, torch.zeros_like(done))
        if not self._initialized:  # first reset: spread the horizons over [1, max_horizon]
            self._horizons = torch.randint(
                1, self.max_horizon + 1, count.shape, device=count.device
            )
            self._first_episode = torch.ones(count.shape, dtype=torch.bool, device=count.device)
            self._initialized = True
            return tensordict_reset
        reset_key = replace_last(count_key, "_reset")
        reset = tensordict.get(reset_key, None)
        if reset is None and reset_key != "_reset":
            reset = tensordict.get("_reset", None)
        if reset is None:
            return tensordict_reset
        horizons, first = self._horizons, self._first_episode
        mask = reset.view_as(horizons).bool()
        if not mask.any():
            return tensordict_reset
        if self.prob == 0.0 and self.first_episode_prob == 0.0:
            horizons[mask] = self.max_horizon
            first[mask] = False
            return tensordict_reset
        n = int(mask.sum())
        device = horizons.device
        new = torch.randint(self.min_horizon, self.max_horizon + 1, (n,), device=device)
        prob = torch.where(
            first[mask],
            torch.tensor(self.first_episode_prob, device=device),
            torch.tensor(self.prob, device=device),
        )
        new[torch.rand(n, device=device) > prob] = self.max_horizon
        horizons[mask] = new
        first[mask] = False
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError(
            "RandomTruncationTransform runs in an env only (its step and reset methods); it "
            "cannot be called on a tensordict"
        )

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        done_spec = output_spec["full_done_spec"]
        obs_spec = output_spec.get("full_observation_spec", None)
        count_key = None if obs_spec is None else self._match(obs_spec.keys(True, True))
        if count_key is not None:
            truncated_key, done_key = self._companions(count_key)
        else:
            done_key = self._match(done_spec.keys(True, True), self.done_key) or self.done_key
            truncated_key = (
                self.truncated_key
                if isinstance(self.truncated_key, tuple)
                else replace_last(done_key, self.truncated_key)
            )
        if done_spec.get(truncated_key, None) is None:
            leaf = done_spec.get(done_key, None)
            if leaf is None:
                leaf = next(
                    (done_spec[k] for k in done_spec.keys(True, True) if _ends_with(k, "done")),
                    None,
                )
            if leaf is not None:
                done_spec[truncated_key] = flag_spec_like(leaf)
        return super().transform_output_spec(output_spec)

    def __repr__(self) -> str:
        return (
            f"RandomTruncationTransform(min_horizon={self.min_horizon}, "
            f"max_horizon={self.max_horizon}, prob={self.prob}, "
            f"first_episode_prob={self.first_episode_prob})"
        )
