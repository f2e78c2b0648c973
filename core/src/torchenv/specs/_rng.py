"""Sampling from a given ``torch.Generator``: every spec's ``rand`` takes ``generator=``.

TorchRL's ``rand(shape)`` draws from torch's global generator; torchenv's specs take an optional
keyword ``generator`` too (``None``: the global one, as TorchRL), which the envs use for their
seeded random actions. A spec class written against TorchRL's signature (``rand(self, shape)``)
still takes it: :class:`~torchenv.specs.TensorSpec` wraps such a ``rand`` so that it draws with
``generator``'s state in place of the global generator's (the global state is put back after).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["takes_generator", "with_generator_kwarg"]


def takes_generator(fn: Callable) -> bool:
    """Whether ``fn`` accepts a ``generator`` keyword (or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "generator" or p.kind is p.VAR_KEYWORD for p in params)


def _draw_with(generator: torch.Generator, draw: Callable[[], Any]) -> Any:
    """``draw()`` with ``generator``'s state swapped into torch's global generator of its
    device; ``generator`` then holds the state after the draw, the global one is unchanged."""
    device = generator.device
    if device.type == "cpu":
        get_state, set_state = torch.get_rng_state, torch.set_rng_state
    elif device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()

        def get_state() -> torch.Tensor:
            return torch.cuda.get_rng_state(index)

        def set_state(state: torch.Tensor) -> None:
            torch.cuda.set_rng_state(state, index)

    else:
        raise TypeError(
            f"rand(generator=...): a spec whose rand() takes no generator can only draw from a "
            f"cpu or cuda generator, got one on {device}."
        )
    saved = get_state()
    set_state(generator.get_state())
    try:
        out = draw()
        generator.set_state(get_state())
    finally:
        set_state(saved)
    return out


def with_generator_kwarg(rand: Callable) -> Callable:
    """``rand(self, shape)`` as ``rand(self, shape=None, *, generator=None)``."""

    @functools.wraps(rand)
    def wrapped(self: Any, shape: Any = None, *, generator: torch.Generator | None = None) -> Any:
        if generator is None:
            return rand(self, shape)
        return _draw_with(generator, lambda: rand(self, shape))

    wrapped._torchenv_generator_wrapped = True  # type: ignore[attr-defined]
    return wrapped
