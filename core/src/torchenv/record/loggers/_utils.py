"""Helpers to name experiments and build loggers by type."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from torchenv.record.loggers._common import Logger
from torchenv.record.loggers._csv import CSVLogger

__all__ = ["generate_exp_name", "get_logger"]


def generate_exp_name(model_name: str, experiment_name: str) -> str:
    """A unique experiment name: ``<model>_<experiment>_<8 hex>_<yy_mm_dd-HH_MM_SS>``.

    >>> generate_exp_name("ppo", "cartpole").startswith("ppo_cartpole_")
    True
    """
    stamp = datetime.now().strftime("%y_%m_%d-%H_%M_%S")
    return f"{model_name}_{experiment_name}_{uuid.uuid4().hex[:8]}_{stamp}"


def get_logger(
    logger_type: str | None, logger_name: str, experiment_name: str, **kwargs: Any
) -> Logger | None:
    """Builds a logger by type: ``"csv"`` (a :class:`CSVLogger` writing mp4 videos by default).

    Args:
        logger_type: ``"csv"``, or ``""`` / ``None`` for no logger. Service-backed loggers
            (tensorboard, wandb, mlflow) are not part of torchenv.
        logger_name: the root folder (``log_dir``).
        experiment_name: the experiment's name.
        **kwargs: for ``"csv"``, ``video_format`` and ``video_fps``.

    >>> import tempfile
    >>> get_logger("csv", tempfile.mkdtemp(), "exp").video_format
    'mp4'
    """
    if logger_type in ("", None):
        return None
    if logger_type == "csv":
        kwargs.setdefault("video_format", "mp4")
        return CSVLogger(exp_name=experiment_name, log_dir=logger_name, **kwargs)
    raise NotImplementedError(
        f"get_logger: unsupported logger_type {logger_type!r}; torchenv provides 'csv' "
        "(subclass torchenv.record.loggers.Logger for other backends)"
    )
