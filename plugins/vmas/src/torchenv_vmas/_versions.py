"""Per-version behaviour of VMAS, chosen once with :class:`~torchenv.versions.implement_for`.

The supported versions (1.4.3 to 1.5.x) share the env API this plugin uses (``make_env`` with
``terminated_truncated=True``, ``reset``, ``reset_at(index)``, ``get_from_scenario``, ``step``,
``seed``). What differs is randomness:

- up to 1.5.0, VMAS draws from the process's global generators (torch, numpy, random) and
  ``env.seed(s)`` reseeds them all;
- from 1.5.1, every public call runs on a private random state that VMAS keeps in ONE list shared
  by every VMAS env of the process (``Environment.vmas_random_state``), so two envs draw from one
  stream.

:func:`rng_binding` returns the pair of functions the env calls around each VMAS call. From 1.5.1
it swaps the env's own state into VMAS's shared list and the previous one back after (list
copies of three references, no generator state is copied), so each env has its own stream, the
same seed gives the same trajectory whatever other VMAS envs do, and plain VMAS envs of the same
process are not disturbed by ours. Up to 1.5.0 there is nothing to isolate without
copying the global generators at every call, so both functions do nothing (documented in
``docs/vmas.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchenv.versions import implement_for

__all__ = ["rng_binding"]

Enter = Callable[[], None]
Exit = Callable[[], None]


def _noop() -> None:
    return None


@implement_for("vmas", "1.4.3", "1.5.1")
def rng_binding(vmas_env: Any) -> tuple[Enter, Exit]:
    """``(enter, leave)`` around VMAS calls: nothing to do, VMAS uses the global generators."""
    return _noop, _noop


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
