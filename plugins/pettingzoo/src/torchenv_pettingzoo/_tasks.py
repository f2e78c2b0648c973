"""PettingZoo's tasks: what is installed, how a name is resolved and how a task is made.

Names are ``"<family>/<task>_v<N>"`` (``"mpe/simple_spread_v3"``, ``"classic/tictactoe_v3"``),
as TorchRL's ``PettingZooEnv`` takes them; the bare task (``"tictactoe_v3"``) and an
unversioned name (``"classic/tictactoe"``: the newest version) are accepted too.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from functools import cache
from typing import Any

from torchenv_pettingzoo._backend import import_pettingzoo
from torchenv_pettingzoo._versions import TASK_MODULE, builtin_tasks, mpe_package, scan_package

__all__ = ["Task", "all_tasks", "find_task", "task_names"]

# Modules a task needs beyond PettingZoo itself (by "family" or "family/name"): tasks whose
# modules are missing are left out of task_names(); making one names what to install.
_REQUIRES: dict[str, tuple[str, ...]] = {
    "atari": ("multi_agent_ale_py", "pygame"),
    "butterfly": ("pygame",),
    "butterfly/pistonball": ("pygame", "pymunk"),
    "classic": ("pygame",),
    "classic/chess": ("chess", "pygame"),
    "classic/hanabi": ("pyspiel",),
    "classic/leduc_holdem": ("rlcard",),
    "classic/texas_holdem": ("rlcard",),
    "classic/texas_holdem_no_limit": ("rlcard",),
    "sisl": ("pygame", "pymunk", "scipy"),
    "sisl/multiwalker": ("Box2D", "pygame"),
    "mpe": ("pygame",),
}


@dataclass(frozen=True)
class Task:
    """One PettingZoo task of the installed versions and how to make it.

    Attributes:
        name: ``"family/name_vN"``.
        module: the module with ``env()``/``parallel_env()`` (``None`` when made through the
            registry of PettingZoo >= 1.27).
        registry_id: the id in PettingZoo's registry (>= 1.27), else ``None``.
        parallel: whether the task has a parallel API, when known without importing it.
    """

    name: str
    module: str | None = None
    registry_id: str | None = None
    parallel: bool | None = None

    @property
    def family(self) -> str:
        return self.name.partition("/")[0]

    def requirements(self) -> tuple[str, ...]:
        """The modules the task needs beyond PettingZoo (best effort, from a table)."""
        base = TASK_MODULE.match(self.name.partition("/")[2])
        key = f"{self.family}/{base['name']}" if base else self.name
        return _REQUIRES.get(key, _REQUIRES.get(self.family, ()))

    def missing(self) -> list[str]:
        """The required modules that are not installed."""
        return [m for m in self.requirements() if importlib.util.find_spec(m) is None]

    def has_parallel(self) -> bool:
        """Whether the task has a parallel API (``parallel_env``); AEC exists for every task."""
        if self.parallel is not None:
            return self.parallel
        return hasattr(self._module(), "parallel_env")

    def _module(self) -> Any:
        try:
            return importlib.import_module(self.module)  # type: ignore[arg-type]
        except ImportError as err:
            raise ImportError(self._import_hint(err)) from err

    def _import_hint(self, err: BaseException) -> str:
        missing = self.missing()
        extra = "mpe2" if self.module and self.module.startswith("mpe2") else self.family
        need = f" (missing: {', '.join(missing)})" if missing else ""
        return (
            f"pettingzoo:{self.name} cannot be imported{need}: {err}. Install its "
            f"dependencies, e.g. pip install 'pettingzoo[{extra}]'"
            if extra != "mpe2"
            else f"pettingzoo:{self.name} cannot be imported{need}: {err}. pip install mpe2"
        )

    def make(self, parallel: bool, kwargs: dict[str, Any]) -> Any:
        """The PettingZoo env: ``parallel_env(**kwargs)`` or the AEC ``env(**kwargs)``."""
        if parallel and not self.has_parallel():
            raise ValueError(
                f"pettingzoo:{self.name} has no parallel API (it is turn-based): use "
                "parallel=False (AEC) with use_mask=True"
            )
        if self.registry_id is not None:
            pettingzoo = import_pettingzoo()
            try:
                return pettingzoo.make(
                    "parallel" if parallel else "aec", self.registry_id, **kwargs
                )
            except Exception as err:  # 1.27: FailedToImport (not an ImportError)
                if type(err).__name__ != "FailedToImport":
                    raise
                raise ImportError(self._import_hint(err.__cause__ or err)) from err
        module = self._module()
        return module.parallel_env(**kwargs) if parallel else module.env(**kwargs)


@cache
def _tasks(version: str) -> dict[str, Task]:
    tasks = {name: Task(name, **how) for name, how in builtin_tasks().items()}
    mpe = mpe_package()
    if mpe is not None:
        for module in scan_package(mpe):
            name = f"mpe/{module}"
            tasks.setdefault(name, Task(name, module=f"{mpe}.{module}"))
    return dict(sorted(tasks.items()))


def all_tasks() -> dict[str, Task]:
    """Every task of the installed PettingZoo (and mpe2), installed dependencies or not.

    >>> all_tasks()["classic/tictactoe_v3"].has_parallel()
    False
    """
    return _tasks(import_pettingzoo().__version__)


def task_names() -> list[str]:
    """The tasks that can be made with what is installed (``torchenv.list_envs("pettingzoo")``).

    >>> {"mpe/simple_spread_v3", "classic/tictactoe_v3"} <= set(task_names())
    True
    """
    return [name for name, task in all_tasks().items() if not task.missing()]


def _version_of(task: Task) -> int:
    match = TASK_MODULE.match(task.name.rpartition("/")[2])
    return int(match["version"]) if match else -1


def find_task(name: str) -> Task:
    """The task called ``name``: ``"family/task_vN"``, ``"task_vN"`` or unversioned.

    Raises:
        UnknownEnvError: no such task (with close matches).

    >>> find_task("tictactoe_v3").name
    'classic/tictactoe_v3'
    >>> find_task("mpe/simple_spread").name
    'mpe/simple_spread_v3'
    """
    tasks = all_tasks()
    key = name.strip().replace("-v", "_v")
    if key in tasks:
        return tasks[key]
    family, _, task = key.rpartition("/")
    match = TASK_MODULE.match(task)
    candidates = []
    for full, entry in tasks.items():
        f, _, t = full.rpartition("/")
        if family and f != family:
            continue
        if match is not None:  # versioned bare name: "tictactoe_v3"
            if t == task:
                candidates.append(entry)
        else:  # unversioned: the newest version
            m = TASK_MODULE.match(t)
            if m is not None and m["name"] == task:
                candidates.append(entry)
    if match is None and candidates:
        candidates = [max(candidates, key=_version_of)]
    if len(candidates) == 1:
        return candidates[0]
    from torchenv.registry import UnknownEnvError

    if family == "mpe" and mpe_package() is None:
        raise ImportError(
            f"pettingzoo:{name}: PettingZoo {import_pettingzoo().__version__} has no MPE (it moved "
            "to the mpe2 package in 1.26): pip install mpe2"
        )
    if len(candidates) > 1:
        raise ValueError(
            f"pettingzoo: {name!r} is ambiguous: {[c.name for c in candidates]}; "
            "name the family too ('family/task_vN')"
        )
    raise UnknownEnvError("pettingzoo", name, list(tasks))
