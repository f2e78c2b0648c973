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
import sys
import tempfile
from typing import Any

from torchenv.cli._format import progress

__all__ = ["cmd_record"]


def _has_pixels(env: Any) -> bool:
    return "pixels" in env.full_observation_spec.keys(True, True)


def _env_with_pixels(name: str, kwargs: dict) -> Any:
    from torchenv.cli._commands import make_for_cli
    from torchenv.registry import make

    with progress(f"making {name}"):
        env, kwargs = make_for_cli(name, kwargs)
        if _has_pixels(env):
            return env
        if "from_pixels" not in kwargs:
            try:
                pixel_env = make(name, **kwargs, from_pixels=True, pixels_only=False)
            except (TypeError, ValueError, NotImplementedError):  # no from_pixels: render below
                pixel_env = None
            if pixel_env is not None and _has_pixels(pixel_env):
                env.close()
                return pixel_env
        if "render_mode" not in kwargs and _render_is_none(env):
            # gymnasium-style envs (PettingZoo) render only when made with render_mode
            try:
                rendering = make(name, **kwargs, render_mode="rgb_array")
            except (TypeError, ValueError):
                rendering = None
            if rendering is not None:
                env.close()
                env = rendering
        from torchenv.record import PixelRenderTransform
        from torchenv.transforms import TransformedEnv

        return TransformedEnv(env, PixelRenderTransform())


def _render_is_none(env: Any) -> bool:
    """Whether ``env.render()`` gives nothing after a reset (the env needs a render mode)."""
    try:
        env.reset()
        return env.render() is None
    except Exception:  # the render fallback reports the env's own error
        return False


_GL_WORDS = ("opengl", "gl context", "glgeterror", "egl", "osmesa", "mjr_makecontext", "glfw")


def _headless_gl_default() -> str | None:
    """Set ``MUJOCO_GL=egl`` on a Linux machine without a display, unless the user chose one.

    MuJoCo picks its OpenGL backend when it is imported (by the plugin, when the env is made);
    without a display its default (GLFW) cannot render. Returns what was set, else ``None``.
    """
    if (
        os.environ.get("MUJOCO_GL")
        or os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
    ):
        return None
    if not sys.platform.startswith("linux"):
        return None
    os.environ["MUJOCO_GL"] = "egl"
    return "egl"


def _gl_hint(err: BaseException, name: str, chosen: str | None) -> str | None:
    """The fix for an OpenGL error of a headless render, or ``None`` for other errors."""
    text = f"{type(err).__name__}: {err}".lower()
    if not any(word in text for word in _GL_WORDS):
        return None
    current = os.environ.get("MUJOCO_GL")
    other = "osmesa" if current == "egl" else "egl"
    tried = f" (MUJOCO_GL={current} was {'set by torchenv record' if chosen else 'set'})"
    return (
        f"{name} could not create an OpenGL context{tried if current else ''}. On a machine "
        f"without a display, choose MuJoCo's headless backend: MUJOCO_GL={other} torchenv "
        f"record {name} ... (egl needs a GPU driver's libEGL, osmesa the libosmesa package)"
    )


def cmd_record(args: argparse.Namespace) -> int:
    """Roll ``NAME`` out for ``--steps`` steps and write its frames to ``--out``.

    Without a display (Linux), ``MUJOCO_GL`` defaults to ``egl`` so that MuJoCo-based envs can
    render; an OpenGL error names the fix (``MUJOCO_GL=egl`` or ``osmesa``).
    """
    from torchenv.record.loggers._video import VIDEO_FORMATS

    video_format = os.path.splitext(args.out)[1].lstrip(".").lower()
    if video_format not in VIDEO_FORMATS:
        raise ValueError(
            f"--out {args.out!r}: the file extension picks the format, one of {VIDEO_FORMATS}"
        )
    chosen = _headless_gl_default()
    try:
        return _record(args, video_format)
    except Exception as err:
        hint = _gl_hint(err, args.name, chosen)
        if hint is None:
            raise
        raise RuntimeError(f"{hint}. The error was: {type(err).__name__}: {err}") from err


def _record(args: argparse.Namespace, video_format: str) -> int:
    from torchenv.record import CSVLogger, VideoRecorder
    from torchenv.transforms import TransformedEnv

    env = _env_with_pixels(args.name, dict(args.kwargs or ()))
    log_dir = tempfile.mkdtemp(prefix="torchenv-record-")
    try:
        logger = CSVLogger("record", log_dir=log_dir, video_format=video_format, video_fps=args.fps)
        recorder = VideoRecorder(logger, tag="video", in_keys=["pixels"], skip=1)
        recorded = TransformedEnv(env, recorder)
        if args.seed is not None:
            recorded.set_seed(args.seed)
        progress = f"recording {args.name}" if args.progress else False
        recorded.rollout(args.steps, break_when_any_done=False, progress=progress)
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
