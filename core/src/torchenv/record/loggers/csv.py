"""Import path of TorchRL's ``torchrl.record.loggers.csv`` (re-exports only)."""

from torchenv.record.loggers._csv import CSVExperiment, CSVLogger

__all__ = ["CSVExperiment", "CSVLogger"]
