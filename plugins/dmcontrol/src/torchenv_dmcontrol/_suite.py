"""The suite's task ids (``"domain/task"``) and the one place that imports dm_control.

``import_suite`` picks a headless OpenGL backend before dm_control is first imported (dm_control
chooses its renderer at import time): when ``MUJOCO_GL`` is unset and there is no display, it is
set to ``"egl"``. Set ``MUJOCO_GL`` yourself (``egl``, ``osmesa``, ``glfw``) to choose.
"""

from __future__ import annotations

import logging
import os
import sys
from types import ModuleType

__all__ = ["choose_headless_gl", "import_suite", "task_ids", "split_task_id"]


def choose_headless_gl() -> str | None:
    """Set ``MUJOCO_GL=egl`` on Linux without a display when it is unset; return its value.

    Effective only before dm_control is first imported (it picks its renderer then).
    """
    if "MUJOCO_GL" not in os.environ and sys.platform.startswith("linux"):
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ["MUJOCO_GL"] = "egl"
    return os.environ.get("MUJOCO_GL")


def import_suite() -> ModuleType:
    """Import ``dm_control.suite`` after checking the installed dm_control / mujoco pair.

    >>> import_suite().__name__
    'dm_control.suite'
    """
    module = sys.modules.get("dm_control.suite")
    if module is not None:  # imported already, maybe by someone else: the filter all the same
        _once_per_process("settotalmass")
        return module
    from torchenv_dmcontrol._versions import check_pair

    check_pair()
    choose_headless_gl()
    from dm_control import suite

    _once_per_process("settotalmass")
    return suite


class _Once(logging.Filter):
    """Lets a log record whose message holds ``word`` through once, then drops its repeats."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word, self.seen = word, False

    def filter(self, record: logging.LogRecord) -> bool:
        if self.word not in record.getMessage():
            return True
        if self.seen:
            return False
        self.seen = True
        return True


def _once_per_process(word: str) -> None:
    """MuJoCo's compiler warns through absl each time a model with a deprecated attribute is
    compiled (dm_control's cheetah uses ``settotalmass``): once per process is enough."""
    logger = logging.getLogger("absl")
    if not any(isinstance(f, _Once) and f.word == word for f in logger.filters):
        logger.addFilter(_Once(word))


def task_ids() -> list[str]:
    """``"domain/task"`` of the suite's benchmarking and extra sets, sorted.

    >>> ids = task_ids()
    >>> "cheetah/run" in ids and "walker/walk" in ids
    True
    """
    suite = import_suite()
    pairs = tuple(suite.BENCHMARKING) + tuple(suite.EXTRA)
    return sorted({f"{domain}/{task}" for domain, task in pairs})


def split_task_id(env_id: str) -> tuple[str, str]:
    """``"cheetah/run"`` → ``("cheetah", "run")``; raise ``UnknownEnvError`` for unknown ids.

    >>> split_task_id("cheetah/run")
    ('cheetah', 'run')
    """
    known = task_ids()
    if env_id not in known:
        from torchenv.registry import UnknownEnvError

        raise UnknownEnvError("dmcontrol", env_id, known)
    domain, task = env_id.split("/", 1)
    return domain, task
