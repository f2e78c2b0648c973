"""MuJoCo's compiler warnings, once per process instead of once per env.

gymnasium's MuJoCo tasks compile their model in ``make``; MuJoCo prints each compiler warning
(e.g. HalfCheetah's deprecated ``settotalmass``) to stdout from C, for every env made: a vector
env of 64 prints it 64 times. While torchenv makes a gymnasium MuJoCo env, a handler turns each
distinct message into one :class:`RuntimeWarning` for the whole process; the user's own handler,
if any, is put back right after.
"""

from __future__ import annotations

import contextlib
import importlib.util
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["mujoco_warnings_once"]

_seen: set[str] = set()


def _once(message: str) -> None:
    if message not in _seen:
        _seen.add(message)
        warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)


def _uses_mujoco(module: Any, env_id: str) -> bool:
    try:
        entry_point = module.spec(env_id).entry_point
    except Exception:  # an unknown id: make raises its own error
        return False
    return isinstance(entry_point, str) and ".mujoco" in entry_point


@contextlib.contextmanager
def mujoco_warnings_once(module: Any, env_id: str) -> Iterator[None]:
    """Within: MuJoCo's warnings, each message once per process, if ``env_id`` is a MuJoCo task
    of ``module`` (gym or gymnasium) and MuJoCo is installed; else nothing changes."""
    if not _uses_mujoco(module, env_id) or importlib.util.find_spec("mujoco") is None:
        yield
        return
    import mujoco

    previous = mujoco.get_mju_user_warning()
    if previous is not None:  # the user chose: leave it
        yield
        return
    mujoco.set_mju_user_warning(_once)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)
