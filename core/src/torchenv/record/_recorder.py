"""Recorder transforms: :class:`VideoRecorder` and :class:`TensorDictRecorder`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase
from tensordict.utils import NestedKey

from torchenv.record._frames import center_crop as _center_crop
from torchenv.record._frames import make_grid as _make_grid
from torchenv.record._frames import to_video_frames
from torchenv.record.loggers import Logger
from torchenv.transforms import ObservationTransform, Transform

__all__ = ["TensorDictRecorder", "VideoRecorder"]


def _key_name(key: NestedKey) -> str:
    return key if isinstance(key, str) else "_".join(key)


class VideoRecorder(ObservationTransform):
    """Caches the images of ``in_keys`` as they come and writes them as a video on :meth:`dump`.

    Images may be torch tensors, numpy arrays or non-tensor data, channels last (``[H, W, C]``)
    or first (``[C, H, W]``), uint8, bool or float (floats at most 1 are scaled by 255), with
    any leading batch dims. With ``make_grid``, the images of one step are tiled into one
    frame; otherwise each image of the batch is a frame. The data goes through unchanged
    (copied to ``out_keys`` where they differ from ``in_keys``).

    The cache grows until :meth:`dump` is called (see ``max_frames``). ``env.transform.dump()``
    dumps every recorder of a transformed env.

    Args:
        logger: where :meth:`dump` writes (``logger.log_video``); ``None`` drops the frames.
        tag: the video's name in the logger.
        in_keys: the image entries. Defaults to ``["pixels"]``. With several keys, one video is
            written per key, named ``<tag>_<key>``.
        skip: record one call out of ``skip``. Defaults to 2 in a single (unbatched) env and
            to 1 in a batched env or standalone.
        center_crop: keep the central ``center_crop`` square (or ``(h, w)``) of each image.
        make_grid: tile batched images into one frame per step. Defaults to ``True`` in an env
            and ``False`` standalone (where a batch is a sequence of frames).
        out_keys: where to copy the entries. Defaults to ``in_keys``.
        fps: frames per second; overrides the logger's.
        max_frames: stop caching once this many frames are held (until :meth:`dump`).
        dump_on_done: call :meth:`dump` when every ``"done"`` entry of a step is ``True``.
        **kwargs: passed to ``logger.log_video``.

    Examples:
        >>> import tempfile, torch
        >>> from tensordict import TensorDict
        >>> from torchenv.record import CSVLogger, VideoRecorder
        >>> logger = CSVLogger("exp", log_dir=tempfile.mkdtemp(), video_format="pt")
        >>> recorder = VideoRecorder(logger, tag="run")
        >>> _ = recorder(TensorDict(pixels=torch.zeros(5, 8, 8, 3, dtype=torch.uint8)))
        >>> len(recorder.obs)
        5
        >>> recorder.dump()  # writes <log_dir>/exp/videos/run_0.pt, a [1, 5, 3, 8, 8] tensor
        >>> len(recorder.obs)
        0
    """

    def __init__(
        self,
        logger: Logger | None,
        tag: str | None,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        skip: int | None = None,
        center_crop: int | tuple[int, int] | None = None,
        make_grid: bool | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        fps: int | None = None,
        max_frames: int | None = None,
        dump_on_done: bool = False,
        **kwargs: Any,
    ) -> None:
        if in_keys is None:
            in_keys = ["pixels"]
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        if skip is not None and (not isinstance(skip, int) or skip < 1):
            raise ValueError(f"VideoRecorder: skip must be a positive int, got {skip!r}")
        if max_frames is not None and max_frames < 1:
            raise ValueError(f"VideoRecorder: max_frames must be positive, got {max_frames!r}")
        self.logger = logger
        self.tag = tag
        self.center_crop = center_crop
        self.max_frames = max_frames
        self.dump_on_done = dump_on_done
        self.video_kwargs = dict(kwargs)
        if fps is not None:
            self.video_kwargs["fps"] = fps
        self._skip = skip
        self._make_grid = make_grid
        self.iter = 0
        self.count = 0
        self._frames: dict[NestedKey, list[torch.Tensor]] = {key: [] for key in self.in_keys}

    # ------------------------------------------------------------------ options
    @property
    def skip(self) -> int:
        """Record one call out of ``skip`` (resolved from the parent env on first use)."""
        skip = self._skip
        if skip is None:
            parent = self.parent
            skip = 2 if parent is not None and not parent.batch_size else 1
            self._skip = skip
        return skip

    @skip.setter
    def skip(self, value: int | None) -> None:
        self._skip = value

    @property
    def make_grid(self) -> bool:
        """Tile batched images into one frame (resolved from the parent env on first use)."""
        make_grid = self._make_grid
        if make_grid is None:
            make_grid = self._make_grid = self.parent is not None
        return make_grid

    @make_grid.setter
    def make_grid(self, value: bool | None) -> None:
        self._make_grid = value

    @property
    def obs(self) -> list[torch.Tensor]:
        """The cached ``[C, H, W]`` uint8 frames of the first ``in_key``."""
        return self._frames.setdefault(self.in_keys[0], [])

    # ---------------------------------------------------------------- recording
    def _record(self, key: NestedKey, value: Any) -> None:
        cache = self._frames.setdefault(key, [])
        if self.max_frames is not None and len(cache) >= self.max_frames:
            return
        frames = to_video_frames(value, key)
        if self.center_crop:
            frames = _center_crop(frames, self.center_crop)
        if frames.ndim == 3:
            cache.append(frames)
        elif self.make_grid:
            cache.append(_make_grid(frames.flatten(0, -4)))
        else:
            frames = frames.flatten(0, -4)
            if self.max_frames is not None:
                frames = frames[: self.max_frames - len(cache)]
            cache.extend(frames.unbind(0))

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        record = self.count % self.skip == 0
        for in_key, out_key in self._key_pairs:
            value = next_tensordict.get(in_key, None)
            if value is None:
                if not self.missing_tolerance:
                    raise KeyError(
                        f"VideoRecorder: expected the image entry {in_key!r}, but the tensordict "
                        f"holds only {sorted(map(str, next_tensordict.keys(True, True)))}"
                    )
                continue
            if record:
                self._record(in_key, value)
            if out_key != in_key:
                next_tensordict.set(out_key, value)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Records the images of a TensorDict (e.g. a batch from a replay buffer)."""
        return self._call(tensordict)

    def _apply_transform(self, observation: torch.Tensor) -> torch.Tensor:
        """Records one image entry under the first ``in_key``; returns it unchanged."""
        self.count += 1
        if self.count % self.skip == 0:
            self._record(self.in_keys[0], observation)
        return observation

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        next_tensordict = self._call(next_tensordict)
        if self.dump_on_done and self._all_done(next_tensordict):
            self.dump()
        return next_tensordict

    def _all_done(self, next_tensordict: TensorDictBase) -> bool:
        parent = self.parent
        keys = [
            key
            for key in (parent.done_keys if parent is not None else ["done"])
            if (key if isinstance(key, str) else key[-1]) == "done"
        ]
        dones = [d for d in (next_tensordict.get(key, None) for key in keys) if d is not None]
        return bool(dones) and all(bool(d.all()) for d in dones)

    # -------------------------------------------------------------------- dump
    def dump(self, suffix: str | None = None, step: int | None = None) -> None:
        """Writes the cached frames through ``logger.log_video`` and empties the cache.

        The video is a ``[1, T, C, H, W]`` uint8 tensor named ``tag`` (``<tag>_<suffix>`` with a
        suffix), logged at ``step`` (default: the number of previous dumps). No-op without
        frames (the dump counter still advances).
        """
        several = len(self._frames) > 1
        for key, frames in self._frames.items():
            if not frames or self.logger is None:
                continue
            tag = str(self.tag)
            if several:
                tag = f"{tag}_{_key_name(key)}"
            if suffix is not None:
                tag = f"{tag}_{suffix}"
            try:
                video = torch.stack(frames).unsqueeze(0)
            except RuntimeError as err:
                sizes = sorted({tuple(f.shape) for f in frames})
                raise RuntimeError(
                    f"VideoRecorder: the frames of {key!r} have different shapes {sizes} and "
                    "cannot form one video; dump() before the image size changes"
                ) from err
            self.logger.log_video(
                name=tag, video=video, step=self.iter if step is None else step, **self.video_kwargs
            )
        for frames in self._frames.values():
            frames.clear()
        self.iter += 1
        self.count = 0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(tag={self.tag!r}, in_keys={self.in_keys}, "
            f"skip={self._skip}, logger={self.logger!r})"
        )


class TensorDictRecorder(Transform):
    """Collects the step outputs of an env and saves them, stacked, on :meth:`dump`.

    Every ``skip``-th call of the transform records a copy of the data (``in_keys`` only, if
    given). :meth:`dump` saves the stack with :func:`torch.save` to
    ``<out_file_base>[_<suffix>]_tensordict.t`` (or, with ``memmap=True``, as a memory-mapped
    TensorDict in the folder ``<out_file_base>[_<suffix>]_tensordict``, read back with
    ``TensorDict.load_memmap``).

    Args:
        out_file_base: the path prefix of the saved file.
        skip_reset: do not record the outputs of ``reset`` (their keys differ from those of
            ``step``: no reward). Defaults to ``True``.
        skip: record one call out of ``skip``. Defaults to 4.
        in_keys: the entries to record. Defaults to all.

    Keyword Args:
        memmap: save as a memory-mapped TensorDict folder instead of a ``torch.save`` file.

    Examples:
        >>> import os, tempfile, torch
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> base = os.path.join(tempfile.mkdtemp(), "pendulum")
        >>> env = TransformedEnv(PendulumEnv(), TensorDictRecorder(base, skip=2))
        >>> _ = env.rollout(10)
        >>> path = env.transform[0].dump()
        >>> torch.load(path, weights_only=False).batch_size
        torch.Size([5])
    """

    def __init__(
        self,
        out_file_base: str | os.PathLike,
        skip_reset: bool = True,
        skip: int = 4,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        *,
        memmap: bool = False,
    ) -> None:
        if not isinstance(skip, int) or skip < 1:
            raise ValueError(f"TensorDictRecorder: skip must be a positive int, got {skip!r}")
        super().__init__(in_keys=in_keys or [])
        self.out_file_base = str(out_file_base)
        self.skip_reset = skip_reset
        self.skip = skip
        self.memmap = memmap
        self.iter = 0
        self.count = 0
        self.td: list[TensorDictBase] = []

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.count += 1
        if self.count % self.skip == 0:
            data = next_tensordict.select(*self.in_keys) if self.in_keys else next_tensordict
            self.td.append(data.clone())
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if not self.skip_reset:
            self._call(tensordict_reset)
        return tensordict_reset

    def dump(self, suffix: str | None = None) -> str | None:
        """Saves the recorded TensorDicts, stacked along a new first dim, and empties the cache.

        Returns:
            The path written, or ``None`` when nothing was recorded.
        """
        tds, self.td = self.td, []
        self.count = 0
        self.iter += 1
        if not tds:
            return None
        base = self.out_file_base if suffix is None else f"{self.out_file_base}_{suffix}"
        stacked = LazyStackedTensorDict.maybe_dense_stack(tds, 0)
        directory = os.path.dirname(base)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.memmap:
            path = f"{base}_tensordict"
            stacked.memmap(prefix=path, existsok=True)
        else:
            path = f"{base}_tensordict.t"
            torch.save(stacked, path)
        return path

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(out_file_base={self.out_file_base!r}, skip={self.skip}, "
            f"skip_reset={self.skip_reset}, in_keys={self.in_keys})"
        )
