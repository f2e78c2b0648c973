"""torchenv.record: recorder transforms and loggers (TorchRL's ``torchrl.record``).

Recorders are transforms that register data as they come in, for logging purposes:
:class:`VideoRecorder` (images to a video through a logger), :class:`TensorDictRecorder`
(step data to disk) and :class:`PixelRenderTransform` (the env's ``render`` as ``"pixels"``).
Encoded videos (mp4, gif, ...) need the ``video`` extra: ``pip install 'torchenv[video]'``.

>>> import tempfile
>>> from torchenv.record import CSVLogger, VideoRecorder
>>> logger = CSVLogger("exp", log_dir=tempfile.mkdtemp(), video_format="pt")
>>> recorder = VideoRecorder(logger, tag="run")
"""

from torchenv.record._recorder import TensorDictRecorder, VideoRecorder
from torchenv.record._render import PixelRenderTransform
from torchenv.record.loggers import CSVLogger, Logger, generate_exp_name, get_logger

__all__ = [
    "CSVLogger",
    "Logger",
    "PixelRenderTransform",
    "TensorDictRecorder",
    "VideoRecorder",
    "generate_exp_name",
    "get_logger",
]
