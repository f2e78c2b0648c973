"""Done-signal transforms: StepCounter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Bounded, Composite
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import flag_spec_like, mask_like

__all__ = [
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
