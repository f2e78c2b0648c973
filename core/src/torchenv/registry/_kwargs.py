"""The conventional keyword arguments of ``make``, checked before any plugin sees them.

Every backend reads some of the same keywords (``device``, ``batch_size``, ``num_envs``,
``max_episode_steps``, ``frame_skip``, ``seed``, ``from_pixels``, ``pixels_only``). A wrong type
used to reach the simulator and come back as its own error (``'<' not supported between 'str'
and 'int'`` for ``max_episode_steps="10"``, ``IndexError`` for ``num_envs=-1``). ``make``
checks those few names here, whatever the backend, and leaves every other keyword to it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from torchenv.registry._errors import InvalidKwargError

__all__ = ["check_make_kwargs"]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _count(minimum: int) -> tuple[Callable[[Any], bool], str]:
    def ok(value: Any) -> bool:
        v = _int(value)
        return v is not None and v >= minimum

    return ok, f"an int >= {minimum}"


def _optional_count(minimum: int) -> tuple[Callable[[Any], bool], str]:
    check, what = _count(minimum)
    return (lambda v: v is None or check(v)), f"None or {what}"


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _seed(value: Any) -> bool:
    return value is None or _int(value) is not None


def _device(value: Any) -> bool:
    import torch  # not at module level: the registry imports no torch until an env is made

    if value is None or isinstance(value, torch.device):
        return True
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return False
    try:
        torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def _batch_size(value: Any) -> bool:
    v = _int(value)
    if v is not None:
        return v >= 0
    if isinstance(value, (list, tuple)):  # torch.Size is a tuple
        return all((d := _int(x)) is not None and d >= 0 for x in value)
    return False


_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "num_envs": _count(1),
    "max_episode_steps": _optional_count(1),
    "frame_skip": _count(1),
    "seed": (_seed, "None or an int"),
    "device": (_device, "None, a torch.device or a device string such as 'cpu'"),
    "batch_size": (_batch_size, "an int >= 0 or a sequence of them"),
    "from_pixels": (_bool, "a bool"),
    "pixels_only": (_bool, "a bool"),
}


def check_make_kwargs(name: str, kwargs: dict[str, Any]) -> None:
    """Raise :class:`InvalidKwargError` for a conventional keyword of the wrong type or range.

    Examples:
        >>> check_make_kwargs("gymnasium:CartPole-v1", {"num_envs": 4, "bogus": object()})
        >>> check_make_kwargs("gymnasium:CartPole-v1", {"num_envs": -1})
        Traceback (most recent call last):
        ...
        torchenv.registry._errors.InvalidKwargError: make('gymnasium:CartPole-v1'): num_envs must be an int >= 1; got -1 (int).
    """
    for key, value in kwargs.items():
        rule = _RULES.get(key)
        if rule is not None and not rule[0](value):
            raise InvalidKwargError(
                f"make({name!r}): {key} must be {rule[1]}; got {value!r} ({type(value).__name__})."
            )
