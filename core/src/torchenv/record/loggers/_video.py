"""Writing ``[T, H, W, 3]`` uint8 frames to a video file through imageio (the ``video`` extra)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["FFMPEG_FORMATS", "VIDEO_FORMATS", "import_imageio", "write_video"]

#: container formats written by ffmpeg (through imageio-ffmpeg)
FFMPEG_FORMATS = ("mp4", "mkv", "mov", "avi")
#: every ``video_format`` a :class:`~torchenv.record.CSVLogger` accepts
VIDEO_FORMATS = ("pt", "memmap", *FFMPEG_FORMATS, "gif")

_MISSING = (
    "writing {what} videos needs imageio{extra}, which is not installed: "
    "install the video extra with `pip install 'torchenv[video]'`"
)


def import_imageio(ffmpeg: bool = False) -> Any:
    """Imports ``imageio.v3`` (and checks ``imageio_ffmpeg`` when ``ffmpeg``), or says how to."""
    what = "mp4/mkv/mov/avi" if ffmpeg else "gif"
    try:
        import imageio.v3 as iio
    except ImportError as err:
        extra = " and imageio-ffmpeg" if ffmpeg else ""
        raise ImportError(_MISSING.format(what=what, extra=extra)) from err
    if ffmpeg:
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError as err:
            raise ImportError(_MISSING.format(what=what, extra="-ffmpeg")) from err
    return iio


def _pad_even(frames: np.ndarray) -> np.ndarray:
    """Pads ``[T, H, W, C]`` frames by replicating the last row / column to even H and W.

    H.264 in yuv420p needs even sizes; padding keeps the pixels instead of rescaling them.
    """
    pad_h, pad_w = frames.shape[1] % 2, frames.shape[2] % 2
    if pad_h or pad_w:
        frames = np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    return frames


def _ffmpeg_kwargs(fps: float, kwargs: dict[str, Any]) -> dict[str, Any]:
    """imageio-ffmpeg arguments; TorchRL's ``video_codec`` and ``options`` are translated."""
    out: dict[str, Any] = {"fps": fps, "macro_block_size": 2}
    codec = kwargs.pop("video_codec", None)
    if codec is not None:
        out["codec"] = codec
    options = kwargs.pop("options", None) or {}
    params: list[str] = []
    for name, value in options.items():
        name = "pix_fmt" if name == "pixel_format" else name
        params += [f"-{name}", str(value)]
    if params:
        out["ffmpeg_params"] = params
    out.update(kwargs)
    return out


def write_video(path: str, frames: torch.Tensor | np.ndarray, fps: float, **kwargs: Any) -> None:
    """Writes ``[T, H, W, C]`` uint8 frames (``C`` = 1 or 3) to ``path``; the extension picks the format.

    Args:
        path: the file to write; ``.gif`` goes through Pillow, ``.mp4``/``.mkv``/``.mov``/``.avi``
            through ffmpeg (H.264 for mp4; odd sizes are padded to even ones).
        frames: the frames, uint8, channels last.
        fps: frames per second.
        **kwargs: passed to imageio's writer (e.g. ``codec``, ``quality``, ``ffmpeg_params``
            for ffmpeg; ``loop`` for gif). TorchRL's ``video_codec`` and ``options`` (a dict of
            ffmpeg options such as ``{"crf": "23"}``) are accepted too.
    """
    if isinstance(frames, torch.Tensor):
        frames = frames.detach().cpu().numpy()
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] not in (1, 3):
        raise ValueError(
            f"write_video: expected frames of shape [T, H, W, C] with C in (1, 3), "
            f"got shape {tuple(frames.shape)}"
        )
    if frames.dtype != np.uint8:
        raise ValueError(f"write_video: expected uint8 frames, got {frames.dtype}")
    if frames.shape[-1] == 1:
        frames = np.repeat(frames, 3, axis=-1)
    ext = str(path).rsplit(".", 1)[-1].lower()
    if ext == "gif":
        iio = import_imageio(ffmpeg=False)
        options = {"duration": 1000.0 / fps, "loop": 0, **kwargs}
        iio.imwrite(path, frames, plugin="pillow", **options)
    elif ext in FFMPEG_FORMATS:
        iio = import_imageio(ffmpeg=True)
        frames = np.ascontiguousarray(_pad_even(frames))
        iio.imwrite(path, frames, plugin="FFMPEG", **_ffmpeg_kwargs(fps, dict(kwargs)))
    else:
        raise ValueError(
            f"write_video: unsupported extension {ext!r} of {path!r}; "
            f"expected one of {('gif', *FFMPEG_FORMATS)}"
        )
