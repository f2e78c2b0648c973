"""Small helpers shared by the transform families."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from tensordict.utils import NestedKey

from torchenv.specs import Categorical, Composite, TensorSpec

__all__ = ["as_tuple", "flag_spec_like", "flat_name", "mask_like", "replace_last", "reset_key_for"]


def as_tuple(key: NestedKey) -> tuple[str, ...]:
    """A key as a tuple of names.

    Examples:
        >>> as_tuple("reward"), as_tuple(("agents", "reward"))
        (('reward',), ('agents', 'reward'))
    """
    return (key,) if isinstance(key, str) else tuple(key)


def flat_name(key: NestedKey) -> str:
    """A key as one identifier-like string (its names joined by ``"_"``).

    Examples:
        >>> flat_name("pixels"), flat_name(("agents", "obs"))
        ('pixels', 'agents_obs')
    """
    return "_".join(as_tuple(key))


def replace_last(key: NestedKey, name: str) -> NestedKey:
    """``("agents", "reward"), "episode_reward"`` -> ``("agents", "episode_reward")``."""
    if isinstance(key, str):
        return name
    return (*key[:-1], name)


def reset_key_for(key: NestedKey) -> NestedKey:
    """The ``"_reset"`` key at the nesting level of ``key``."""
    return replace_last(key, "_reset")


def mask_like(mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Broadcasts a reset or done mask (``[*batch, 1]`` or ``[*batch]``) over ``value``.

    The mask's trailing singleton dims are dropped; what is left must match the leading dims
    of ``value``.
    """
    while mask.ndim and mask.shape[-1] == 1 and mask.ndim > 0:
        mask = mask.squeeze(-1)
    if mask.ndim > value.ndim:
        raise ValueError(
            f"cannot broadcast a mask of shape {tuple(mask.shape)} over a value of shape "
            f"{tuple(value.shape)}"
        )
    return mask.reshape(mask.shape + (1,) * (value.ndim - mask.ndim)).expand_as(value)


def flag_spec_like(done_spec: TensorSpec) -> Categorical:
    """The spec of a boolean flag shaped and placed like ``done_spec`` (e.g. a done entry).

    Examples:
        >>> from torchenv.specs import Categorical
        >>> flag_spec_like(Categorical(2, shape=(1,), dtype=torch.bool)).shape
        torch.Size([1])
    """
    return Categorical(2, shape=done_spec.shape, dtype=torch.bool, device=done_spec.device)


def _apply_to_composite(function: Callable[[Any, TensorSpec], TensorSpec]) -> Callable:
    """Decorates ``transform_observation_spec(self, spec)`` written for one leaf spec.

    TorchRL's helper of the same name, for custom transforms written the TorchRL way: given a
    ``Composite``, the decorated method is applied to a clone of each ``in_keys`` entry present
    and the result stored under the matching ``out_keys`` entry; a leaf spec goes to the
    method as it is.

    >>> import torch
    >>> from torchenv.specs import Composite, Unbounded
    >>> class Doubler:
    ...     in_keys, out_keys = ["obs"], ["obs2"]
    ...     @_apply_to_composite
    ...     def transform_observation_spec(self, spec):
    ...         return Unbounded(shape=(*spec.shape[:-1], 2 * spec.shape[-1]))
    >>> out = Doubler().transform_observation_spec(Composite(obs=Unbounded((3,))))
    >>> out["obs2"].shape, out["obs"].shape
    (torch.Size([6]), torch.Size([3]))
    """

    @functools.wraps(function)
    def apply(self: Any, observation_spec: TensorSpec) -> TensorSpec:
        if not isinstance(observation_spec, Composite):
            return function(self, observation_spec)
        out = observation_spec.clone()
        present = set(observation_spec.keys(True, True))
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key in present:
                out[out_key] = function(self, observation_spec[in_key].clone())
        return out

    return apply
