"""The :class:`Logger` base class: what a recorder needs from a logger."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

__all__ = ["Logger"]


def _to_python(value: Any) -> Any:
    """A tensor becomes a Python scalar (one element) or a nested list; the rest is unchanged."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.item() if value.numel() == 1 else value.tolist()
    return value


class Logger(abc.ABC):
    """Base class of loggers: scalars, videos, hyper-parameters.

    A subclass builds its backend object in :meth:`_create_experiment` (stored as
    ``self.experiment``) and implements the ``log_*`` methods. :class:`~torchenv.record.VideoRecorder`
    only calls :meth:`log_video`.

    Args:
        exp_name: the name of the experiment.
        log_dir: where the logger writes.

    Examples:
        >>> class PrintLogger(Logger):
        ...     def _create_experiment(self):
        ...         return None
        ...     def log_scalar(self, name, value, step=None):
        ...         print(name, value, step)
        ...     def log_video(self, name, video, step=None, **kwargs):
        ...         print(name, tuple(video.shape))
        ...     def log_hparams(self, cfg):
        ...         print(dict(cfg))
        ...     def __repr__(self):
        ...         return "PrintLogger()"
        >>> PrintLogger("exp", "logs").log_metrics({"loss": torch.tensor(0.5)}, step=3)
        loss 0.5 3
        {'loss': 0.5}
    """

    def __init__(self, exp_name: str, log_dir: str | None) -> None:
        self.exp_name = exp_name
        self.log_dir = log_dir
        self.experiment = self._create_experiment()

    @abc.abstractmethod
    def _create_experiment(self) -> Any:
        """Builds the backend object of the logger (stored as ``self.experiment``)."""

    @abc.abstractmethod
    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Logs one scalar ``value`` under ``name`` at ``step``."""

    @abc.abstractmethod
    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Logs a uint8 video of shape ``[N, T, C, H, W]`` under ``name`` at ``step``."""

    @abc.abstractmethod
    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Logs the hyper-parameters of the experiment."""

    @abc.abstractmethod
    def __repr__(self) -> str: ...

    def log_histogram(self, name: str, data: Sequence, **kwargs: Any) -> None:
        """Logs a histogram (not supported by default)."""
        raise NotImplementedError(f"{type(self).__name__} cannot log histograms")

    def log_metrics(
        self,
        metrics: Mapping[str, Any] | TensorDictBase,
        step: int | None = None,
        *,
        keys_sep: str = "/",
    ) -> dict[str, Any]:
        """Logs several scalars at once; nested TensorDict keys are joined with ``keys_sep``.

        Returns:
            The logged values, as Python scalars (or lists for tensors of several elements).
        """
        if isinstance(metrics, TensorDictBase):
            metrics = metrics.flatten_keys(keys_sep).to_dict()
        safe = {name: _to_python(value) for name, value in metrics.items()}
        for name, value in safe.items():
            self.log_scalar(name, value, step=step)
        return safe

    def close(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Releases what the logger holds open (no-op by default)."""
