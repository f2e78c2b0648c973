"""torchenv.record.loggers: the :class:`Logger` base and :class:`CSVLogger`.

>>> import tempfile
>>> from torchenv.record.loggers import CSVLogger
>>> logger = CSVLogger("exp", log_dir=tempfile.mkdtemp(), video_format="pt")
>>> logger.log_scalar("loss", 0.25)
"""

from torchenv.record.loggers._common import Logger
from torchenv.record.loggers._csv import CSVExperiment, CSVLogger
from torchenv.record.loggers._utils import generate_exp_name, get_logger

__all__ = ["CSVExperiment", "CSVLogger", "Logger", "generate_exp_name", "get_logger"]
