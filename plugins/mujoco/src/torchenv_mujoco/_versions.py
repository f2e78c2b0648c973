"""Which stepping path the installed MuJoCo gives, chosen once with ``implement_for``.

* MuJoCo >= 3.17: ``mujoco.batch.Batch`` (:class:`~torchenv_mujoco._sim.BatchSim`), threaded.
* MuJoCo 3.0 to 3.16: one ``MjData`` per env in a Python loop (:class:`~torchenv_mujoco._sim.LoopSim`).

MuJoCo 4.0 needs Python >= 3.11 and cannot be installed over 3.x in place (``pip uninstall mujoco``
first): see ``docs/mujoco.md``.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from torchenv.versions import implement_for, installed_version

__all__ = ["SUPPORTED", "INSTALL", "make_sim", "check_supported", "batch_available"]

SUPPORTED = ">=3.0"
INSTALL = 'pip install "torchenv[mujoco]"'


def check_supported() -> Version:
    """The installed MuJoCo version; an ``ImportError`` naming the range when unsupported.

    >>> check_supported() >= Version("3.0")
    True
    """
    version = installed_version("mujoco")
    if version is None:
        raise ImportError(f"MuJoCo is not installed. Install it with: {INSTALL}")
    if version < Version("3.0"):
        raise ImportError(
            f"mujoco {version} is not supported by torchenv-mujoco (supported: mujoco{SUPPORTED}). "
            f"Install a supported version: {INSTALL}"
        )
    return version


def batch_available() -> bool:
    """Whether ``mujoco.batch.Batch`` steps the envs (MuJoCo >= 3.17).

    >>> isinstance(batch_available(), bool)
    True
    """
    return check_supported() >= Version("3.17")


@implement_for("mujoco", "3.17", None)
def make_sim(model: Any, num_envs: int, num_threads: int, fields: tuple = ()) -> Any:
    """The batched simulator of ``num_envs`` envs of ``model``: ``mujoco.batch`` from 3.17."""
    from torchenv_mujoco._sim import BatchSim

    return BatchSim(model, num_envs, num_threads, fields)


@implement_for("mujoco", "3.0", "3.17")
def make_sim(model: Any, num_envs: int, num_threads: int, fields: tuple = ()) -> Any:  # noqa: F811
    """The batched simulator of ``num_envs`` envs of ``model``: a per-env loop before 3.17."""
    from torchenv_mujoco._sim import LoopSim

    return LoopSim(model, num_envs, num_threads, fields)
