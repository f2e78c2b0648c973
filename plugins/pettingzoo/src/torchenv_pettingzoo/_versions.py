"""Per-version behaviour of PettingZoo, chosen once with :class:`~torchenv.versions.implement_for`.

What moved between the supported versions is where the tasks live and how they are made:

- 1.24.3 and 1.25 ship every family, MPE included, as modules ``pettingzoo.<family>.<task>``
  (``pettingzoo.mpe.simple_spread_v3``) with an ``env()`` (AEC) and, for most, a
  ``parallel_env()`` constructor;
- 1.26 dropped MPE: it lives on in the separate ``mpe2`` package (``mpe2.simple_spread_v3``,
  same constructors); the other families are unchanged;
- 1.27 leaves an ``ImportError`` stub at ``pettingzoo.mpe`` (TorchRL's task lookup through
  ``pettingzoo.utils.all_modules`` imports it, and every family, and fails) and adds a registry:
  ``pettingzoo.aec_registry`` / ``parallel_registry`` (ids like ``"classic/tictactoe-v3"``,
  filled without importing any env) and ``pettingzoo.make("aec" | "parallel", id, **kwargs)``.

Both functions below are called when tasks are listed or an env is made, never per step.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from typing import Any

from torchenv.versions import implement_for

__all__ = ["TASK_MODULE", "builtin_tasks", "mpe_package"]

# "<name>_v<N>": the modules (and, with "-v", the registry ids) of PettingZoo's tasks
TASK_MODULE = re.compile(r"^(?P<name>[a-z0-9_]+?)[_-]v(?P<version>\d+)$")

_FAMILIES = ("atari", "butterfly", "classic", "sisl")


def scan_package(package: str) -> list[str]:
    """The task modules (``<name>_v<N>``) in ``package``, found without importing them.

    >>> "tictactoe_v3" in scan_package("pettingzoo.classic")
    True
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(
        info.name
        for info in pkgutil.iter_modules(spec.submodule_search_locations)
        if not info.ispkg and TASK_MODULE.match(info.name)
    )


# ----------------------------------------------------------------------------------------- MPE
@implement_for("pettingzoo", "1.24.3", "1.26")
def mpe_package() -> str | None:
    """The package that holds the MPE tasks, or ``None`` when none is installed: PettingZoo's
    own ``pettingzoo.mpe`` up to 1.25, ``mpe2`` from 1.26."""
    return "pettingzoo.mpe"


@implement_for("pettingzoo", "1.26", None)
def mpe_package() -> str | None:  # noqa: F811 - one name, per version
    return "mpe2" if importlib.util.find_spec("mpe2") is not None else None


# ------------------------------------------------------------------------------- other families
@implement_for("pettingzoo", "1.24.3", "1.27")
def builtin_tasks() -> dict[str, dict[str, Any]]:
    """PettingZoo's own tasks (not MPE): ``"family/name_vN" -> how to make it``.

    Up to 1.26: the task modules of each family's package (``{"module": ...}``).
    """
    return {
        f"{family}/{module}": {"module": f"pettingzoo.{family}.{module}"}
        for family in _FAMILIES
        for module in scan_package(f"pettingzoo.{family}")
    }


@implement_for("pettingzoo", "1.27", None)
def builtin_tasks() -> dict[str, dict[str, Any]]:  # noqa: F811 - one name, per version
    """From 1.27: PettingZoo's registry (``{"registry_id": ..., "parallel": bool}``); its ids
    ``"classic/tictactoe-v3"`` become ``"classic/tictactoe_v3"`` (the module names, TorchRL's)."""
    import pettingzoo

    parallel = set(pettingzoo.parallel_registry)
    tasks: dict[str, dict[str, Any]] = {}
    for registry_id in pettingzoo.aec_registry:
        family, _, name = registry_id.rpartition("/")
        if family == "mpe":  # never registered in 1.27; MPE comes from mpe2
            continue
        key = f"{family}/{name.replace('-v', '_v')}" if family else name.replace("-v", "_v")
        tasks[key] = {"registry_id": registry_id, "parallel": registry_id in parallel}
    return tasks
