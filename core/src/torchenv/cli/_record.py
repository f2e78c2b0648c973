"""``torchenv record``: roll an env out and write what it shows as a video file.

The frames are the env's ``"pixels"`` entry: the env's own when it has one, else asked for with
``from_pixels=True`` (the keyword that ``GymEnv`` and ``DMControlEnv`` take), else rendered by
:class:`~torchenv.record.PixelRenderTransform` from the env's ``render``. They go through
torchenv's :class:`~torchenv.record.VideoRecorder` and ``CSVLogger``; the encoded formats (mp4,
gif, ...) need the ``video`` extra (``pip install "torchenv[video]"``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from typing import Any

from torchenv.cli._format import progress

__all__ = ["cmd_record"]


def _has_pixels(env: Any) -> bool:
    return "pixels" in env.full_observation_spec.keys(True, True)


def _env_with_pixels(name: str, kwargs: dict) -> Any:
    from torchenv.registry import make

    with progress(f"making {name}"):
        env = make(name, **kwargs)
        if _has_pixels(env):
            return env
        if "from_pixels" not in kwargs:
            try:
                pixel_env = make(name, **kwargs, from_pixels=True, pixels_only=False)
            except TypeError:
                pixel_env = None
            if pixel_env is not None and _has_pixels(pixel_env):
                env.close()
                return pixel_env
        from torchenv.record import PixelRenderTransform
        from torchenv.transforms import TransformedEnv

        return TransformedEnv(env, PixelRenderTransform())


def cmd_record(args: argparse.Namespace) -> int:
    """Roll ``NAME`` out for ``--steps`` steps and write its frames to ``--out``."""
    from torchenv.record import CSVLogger, VideoRecorder
    from torchenv.record.loggers._video import VIDEO_FORMATS
    from torchenv.transforms import TransformedEnv

    video_format = os.path.splitext(args.out)[1].lstrip(".").lower()
    if video_format not in VIDEO_FORMATS:
        raise ValueError(
            f"--out {args.out!r}: the file extension picks the format, one of {VIDEO_FORMATS}"
        )
    env = _env_with_pixels(args.name, dict(args.kwargs or ()))
    log_dir = tempfile.mkdtemp(prefix="torchenv-record-")
    try:
        logger = CSVLogger("record", log_dir=log_dir, video_format=video_format, video_fps=args.fps)
        recorder = VideoRecorder(logger, tag="video", in_keys=["pixels"], skip=1)
        recorded = TransformedEnv(env, recorder)
        if args.seed is not None:
            recorded.set_seed(args.seed)
        recorded.rollout(args.steps, break_when_any_done=False, progress=f"recording {args.name}")
        recorder.dump()
        videos = os.path.join(log_dir, "record", "videos")
        written = sorted(os.listdir(videos))
        if not written:
            raise RuntimeError(f"no frames were recorded from {args.name}")
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        shutil.move(os.path.join(videos, written[0]), args.out)
    finally:
        env.close()
        shutil.rmtree(log_dir, ignore_errors=True)
    print(f"wrote {args.steps} steps of {args.name} to {args.out}", flush=True)
    return 0
