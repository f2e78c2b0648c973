"""``CSVLogger``: scalars in CSV files, videos in files, no service needed."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import IO, Any

import torch
from tensordict import MemoryMappedTensor

from torchenv.record.loggers._common import Logger
from torchenv.record.loggers._video import FFMPEG_FORMATS, VIDEO_FORMATS, write_video

__all__ = ["CSVExperiment", "CSVLogger"]


class CSVExperiment:
    """The files of one CSV experiment under ``log_dir``.

    ``scalars/<name>.csv`` holds one ``step,value`` line per scalar, ``videos/<tag>_<step>.<ext>``
    one file per video, ``texts/<tag><step>.txt`` the texts (hyper-parameters).

    Args:
        log_dir: the experiment's folder (created).
        video_format: one of ``"pt"``, ``"memmap"``, ``"mp4"``, ``"mkv"``, ``"mov"``, ``"avi"``,
            ``"gif"``.
        video_fps: frames per second of encoded videos.
    """

    def __init__(self, log_dir: str, *, video_format: str = "pt", video_fps: int = 30) -> None:
        if video_format not in VIDEO_FORMATS:
            raise ValueError(
                f"CSVLogger: unknown video_format {video_format!r}; expected one of {VIDEO_FORMATS}"
            )
        self.log_dir = log_dir
        self.video_format = video_format
        self.video_fps = video_fps
        self.scalars: dict[str, list[tuple[int, float]]] = defaultdict(list)
        self.videos_counter: dict[str, int] = defaultdict(int)
        self.text_counter: dict[str, int] = defaultdict(int)
        self.files: dict[str, IO[str]] = {}
        for sub in ("scalars", "videos", "texts"):
            os.makedirs(os.path.join(log_dir, sub), exist_ok=True)

    def _open(self, path: str, mode: str) -> IO[str]:
        fd = self.files.get(path)
        if fd is None or fd.closed:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = self.files[path] = open(path, mode)  # noqa: SIM115 - kept open, closed in close()
        return fd

    def add_scalar(self, name: str, value: float, global_step: int | None = None) -> None:
        """Appends ``global_step,value`` to ``scalars/<name>.csv`` (``name`` may contain ``/``)."""
        if global_step is None:
            global_step = len(self.scalars[name])
        value = float(value)
        self.scalars[name].append((global_step, value))
        fd = self._open(os.path.join(self.log_dir, "scalars", f"{name}.csv"), "a")
        fd.write(f"{global_step},{value}\n")
        fd.flush()

    def add_video(
        self, tag: str, vid_tensor: torch.Tensor, global_step: int | None = None, **kwargs: Any
    ) -> str:
        """Writes a ``[(N), T, C, H, W]`` uint8 video to ``videos/<tag>_<step>.<ext>``.

        ``"pt"`` saves the tensor with :func:`torch.save`, ``"memmap"`` as a
        :class:`~tensordict.MemoryMappedTensor` file; the other formats are encoded (several
        videos ``N`` are written one after the other). ``kwargs`` go to the video writer.

        Returns:
            The path of the file written.
        """
        if global_step is None:
            global_step = self.videos_counter[tag]
            self.videos_counter[tag] += 1
        path = os.path.join(self.log_dir, "videos", f"{tag}_{global_step}.{self.video_format}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if self.video_format == "pt":
            torch.save(vid_tensor, path)
        elif self.video_format == "memmap":
            MemoryMappedTensor.from_tensor(vid_tensor, filename=path)
        else:
            if vid_tensor.ndim < 4 or vid_tensor.shape[-3] not in (1, 3):
                raise ValueError(
                    f"CSVLogger: video {tag!r} must have shape [(N), T, C, H, W] with C in (1, 3), "
                    f"got shape {tuple(vid_tensor.shape)}"
                )
            frames = vid_tensor.reshape(-1, *vid_tensor.shape[-3:]).permute(0, 2, 3, 1)
            kwargs.setdefault("fps", self.video_fps)
            write_video(path, frames.to(torch.uint8), **kwargs)
        return path

    def add_text(self, tag: str, text: str, global_step: int | None = None) -> None:
        """Writes ``text`` to ``texts/<tag><step>.txt``."""
        if global_step is None:
            global_step = self.text_counter[tag]
            self.text_counter[tag] += 1
        fd = self._open(os.path.join(self.log_dir, "texts", f"{tag}{global_step}.txt"), "w")
        fd.write(text)
        fd.flush()

    def close(self) -> None:
        """Closes the open CSV and text files."""
        for fd in self.files.values():
            fd.close()
        self.files.clear()

    def __del__(self) -> None:
        for fd in getattr(self, "files", {}).values():
            fd.close()

    def __repr__(self) -> str:
        return f"CSVExperiment(log_dir={self.log_dir})"


class CSVLogger(Logger):
    """A logger that needs no service: scalars to CSV files, videos to files.

    Files go under ``<log_dir>/<exp_name>/``: ``scalars/<name>.csv`` (``step,value`` lines),
    ``videos/<tag>_<step>.<video_format>``, ``texts/hparams0.txt``.

    Args:
        exp_name: the name of the experiment (its folder under ``log_dir``).
        log_dir: the root folder. Defaults to ``"csv_logs"``.
        video_format: ``"pt"`` (:func:`torch.save` of the ``[N, T, C, H, W]`` uint8 tensor),
            ``"memmap"`` (a :class:`~tensordict.MemoryMappedTensor` file), or an encoded video:
            ``"mp4"`` (H.264), ``"mkv"``, ``"mov"``, ``"avi"`` (ffmpeg) or ``"gif"`` (Pillow).
            Encoded formats need the ``video`` extra (imageio, imageio-ffmpeg). Defaults to
            ``"pt"``.
        video_fps: frames per second of encoded videos. Defaults to 30.

    Examples:
        >>> import tempfile
        >>> logger = CSVLogger("exp", log_dir=tempfile.mkdtemp())
        >>> logger.log_scalar("reward", 1.5, step=0)
        >>> logger.log_scalar("reward", 2.0, step=1)
        >>> with open(f"{logger.log_dir}/exp/scalars/reward.csv") as f:
        ...     print(f.read().split())
        ['0,1.5', '1,2.0']
    """

    experiment: CSVExperiment

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike | None = None,
        video_format: str = "pt",
        video_fps: int = 30,
    ) -> None:
        if video_format not in VIDEO_FORMATS:
            raise ValueError(
                f"CSVLogger: unknown video_format {video_format!r}; expected one of {VIDEO_FORMATS}"
            )
        self.video_format = video_format
        self.video_fps = video_fps
        super().__init__(exp_name=exp_name, log_dir=str(log_dir or "csv_logs"))

    def _create_experiment(self) -> CSVExperiment:
        return CSVExperiment(
            os.path.join(self.log_dir, self.exp_name),
            video_format=self.video_format,
            video_fps=self.video_fps,
        )

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Appends ``step,value`` to ``scalars/<name>.csv``; ``step`` defaults to a counter."""
        self.experiment.add_scalar(name, value, global_step=step)

    def log_video(
        self, name: str, video: torch.Tensor, step: int | None = None, **kwargs: Any
    ) -> None:
        """Writes a ``[N, T, C, H, W]`` video (``C`` = 1 or 3) to ``videos/<name>_<step>.<ext>``.

        Args:
            name: the video tag.
            video: the frames, uint8 for encoded formats.
            step: the step in the file name. Defaults to a per-tag counter.
            **kwargs: passed to the video writer: ``fps`` (overrides ``video_fps``), and imageio's
                options (``codec``, ``quality``, ``loop``...); TorchRL's ``video_codec`` and
                ``options`` work too.
        """
        if video.ndim != 5 or video.shape[2] not in (1, 3):
            raise ValueError(
                f"CSVLogger.log_video: video {name!r} must have shape [N, T, C, H, W] with C in "
                f"(1, 3), got shape {tuple(video.shape)}"
            )
        if self.video_format in (*FFMPEG_FORMATS, "gif") and video.dtype != torch.uint8:
            raise ValueError(
                f"CSVLogger.log_video: video {name!r} must be uint8 to be encoded as "
                f"{self.video_format}, got {video.dtype}"
            )
        self.experiment.add_video(tag=name, vid_tensor=video, global_step=step, **kwargs)

    def log_hparams(self, cfg: Mapping[str, Any]) -> None:
        """Writes ``key: value`` lines, sorted by key, to ``texts/hparams<n>.txt``."""
        text = "\n".join(f"{key}: {value}" for key, value in sorted(cfg.items()))
        self.experiment.add_text("hparams", text)

    def log_histogram(self, name: str, data: Sequence, **kwargs: Any) -> None:
        raise NotImplementedError("CSVLogger cannot log histograms")

    def close(self) -> None:
        """Closes the open files."""
        self.experiment.close()

    def __repr__(self) -> str:
        return f"CSVLogger(exp_name={self.exp_name}, experiment={self.experiment!r})"
