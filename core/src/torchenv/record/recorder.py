"""Import path of TorchRL's ``torchrl.record.recorder`` (re-exports only)."""

from torchenv.record._recorder import TensorDictRecorder, VideoRecorder
from torchenv.record._render import PixelRenderTransform

__all__ = ["PixelRenderTransform", "TensorDictRecorder", "VideoRecorder"]
