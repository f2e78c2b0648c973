"""Per-version behaviour of VMAS, chosen once with :class:`~torchenv.versions.implement_for`.

The supported versions (1.4.3 to 1.5.x) share the env API this plugin uses (``make_env`` with
``terminated_truncated=True``, ``reset``, ``reset_at(index)``, ``get_from_scenario``, ``step``,
``seed``). What differs is randomness:

- up to 1.5.0, VMAS draws from the process's global generators (torch's CPU generator, numpy's,
  ``random``'s) and ``env.seed(s)`` reseeds them all;
- from 1.5.1, every public call runs on a private random state that VMAS keeps in ONE list shared
  by every VMAS env of the process (``Environment.vmas_random_state``), so two envs draw from one
  stream.

:func:`rng_binding` returns the pair of functions the env calls around each VMAS call, so that
on every version each env has its own stream: the same seed gives the same trajectory whatever
other VMAS envs, or other users of the global generators, do, and they are not disturbed by ours.
From 1.5.1 it swaps the env's own state into VMAS's shared list and the previous one back after
(list assignments of three references). Up to 1.5.0 it does what VMAS 1.5.1 does itself: it
swaps the env's own states into the three global generators around the call (a few
microseconds; CUDA generators are not swapped, as in VMAS).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from torchenv.versions import implement_for

__all__ = ["rng_binding"]

Enter = Callable[[], None]
Exit = Callable[[], None]


@implement_for("vmas", "1.4.3", "1.5.1")
def rng_binding(vmas_env: Any) -> tuple[Enter, Exit]:
    """``(enter, leave)`` around VMAS calls: the env's own states in the global generators.

    The global states right now become this env's (call it right after ``make_env``, which
    seeded them).
    """
    own = [torch.random.get_rng_state(), np.random.get_state(), random.getstate()]
    outer: list = [None, None, None]

    def enter() -> None:
        outer[:] = torch.random.get_rng_state(), np.random.get_state(), random.getstate()
        torch.random.set_rng_state(own[0])
        np.random.set_state(own[1])
        random.setstate(own[2])

    def leave() -> None:
        own[:] = torch.random.get_rng_state(), np.random.get_state(), random.getstate()
        torch.random.set_rng_state(outer[0])
        np.random.set_state(outer[1])
        random.setstate(outer[2])

    return enter, leave


@implement_for("vmas", "1.5.1", None)
def rng_binding(vmas_env: Any) -> tuple[Enter, Exit]:  # noqa: F811 - one name, per version
    """``(enter, leave)`` around VMAS calls: the env's own random state in VMAS's shared slot.

    The state VMAS holds right now becomes this env's (call it right after ``make_env``, which
    seeded it).
    """
    shared: list = type(vmas_env).vmas_random_state
    own = list(shared)
    outer = list(shared)

    def enter() -> None:
        outer[:] = shared  # whatever other VMAS envs left there, put back on leave
        shared[:] = own

    def leave() -> None:
        own[:] = shared
        shared[:] = outer

    return enter, leave
