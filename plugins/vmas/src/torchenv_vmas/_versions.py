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
swaps the env's own states into the global generators around the call: torch's always (about
a microsecond), numpy's and ``random``'s (about 100 us) around ``seed`` and, on every call, for
scenarios whose module uses them. CUDA generators are not swapped, as in VMAS.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchenv.versions import implement_for

__all__ = ["rng_binding"]

Enter = Callable[..., None]
Exit = Callable[[], None]


def _uses_module_rngs(scenario: Any) -> bool:
    """Whether the files defining the scenario's class mention numpy's or Python's global random
    generators (or cannot be read): only then are those swapped on every call (about 100 us a
    step), torch's always (about 1 us). VMAS's own code draws from torch only, and seeds all
    three. (VMAS loads its scenarios as anonymous modules: read the methods' files.)"""
    files = {
        value.__code__.co_filename
        for cls in type(scenario).__mro__
        if cls.__module__ != "builtins" and cls.__name__ != "BaseScenario"
        for value in vars(cls).values()
        if hasattr(value, "__code__")
    }
    try:
        sources = [Path(name).read_text() for name in files]
    except OSError:
        return True
    return any(re.search(r"\brandom\b", source) for source in sources)


@implement_for("vmas", "1.4.3", "1.5.1")
def rng_binding(vmas_env: Any) -> tuple[Enter, Exit]:
    """``(enter, leave)`` around VMAS calls: the env's own states in the global generators.

    The global states right now become this env's (call it right after ``make_env``, which
    seeded them). ``enter(full=True)`` swaps numpy's and ``random``'s too whatever the scenario
    (for ``seed``, which reseeds them).
    """
    every_call = _uses_module_rngs(vmas_env.scenario)
    own: list = [torch.random.get_rng_state(), np.random.get_state(), random.getstate()]
    outer: list = [None, None, None]
    swapped = [False]

    def enter(full: bool = False) -> None:
        outer[0] = torch.random.get_rng_state()
        torch.random.set_rng_state(own[0])
        swapped[0] = full or every_call
        if swapped[0]:
            outer[1], outer[2] = np.random.get_state(), random.getstate()
            np.random.set_state(own[1])
            random.setstate(own[2])

    def leave() -> None:
        own[0] = torch.random.get_rng_state()
        torch.random.set_rng_state(outer[0])
        if swapped[0]:
            own[1], own[2] = np.random.get_state(), random.getstate()
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

    def enter(full: bool = False) -> None:
        outer[:] = shared  # whatever other VMAS envs left there, put back on leave
        shared[:] = own

    def leave() -> None:
        own[:] = shared
        shared[:] = outer

    return enter, leave
