"""Turning image entries (torch or numpy, HWC or CHW, uint8 / float / bool) into video frames."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack
from tensordict.utils import NestedKey

__all__ = ["as_tensor", "center_crop", "make_grid", "to_video_frames"]

_CHANNELS = (1, 3, 4)


def as_tensor(value: Any) -> torch.Tensor:
    """A tensor from a tensor, a numpy array, a (nested) list of them or non-tensor data."""
    if isinstance(value, torch.Tensor) and not isinstance(value, (NonTensorData, NonTensorStack)):
        return value
    if isinstance(value, NonTensorStack):
        value = value.tolist()
    elif isinstance(value, NonTensorData):
        value = value.data
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        return torch.stack([as_tensor(v) for v in value])
    return torch.from_numpy(np.ascontiguousarray(value))


def _channels_first(x: torch.Tensor, key: NestedKey) -> torch.Tensor:
    """``[..., C, H, W]`` from an HWC or CHW image (or a 2-d grayscale one)."""
    if x.ndim == 2:
        return x.unsqueeze(0)
    if x.ndim >= 3:
        if x.shape[-1] in _CHANNELS:
            return x.movedim(-1, -3)
        if x.shape[-3] in _CHANNELS:
            return x
    raise ValueError(
        f"VideoRecorder: entry {key!r} is not an image: expected a shape [..., H, W, C] or "
        f"[..., C, H, W] with C in {_CHANNELS}, or [H, W]; got {tuple(x.shape)}"
    )


def _as_uint8(x: torch.Tensor) -> torch.Tensor:
    """A new uint8 tensor: floats in ``[0, 1]`` are scaled by 255, others are clamped."""
    if x.dtype == torch.uint8:
        return x.clone()
    if x.dtype == torch.bool:
        return x.to(torch.uint8) * 255
    if x.is_floating_point():
        if x.numel() and float(x.max()) <= 1.0:
            x = x * 255.0
        return x.round().clamp_(0, 255).to(torch.uint8)
    return x.clamp(0, 255).to(torch.uint8)


def to_video_frames(value: Any, key: NestedKey = "pixels") -> torch.Tensor:
    """Frames ``[..., C, H, W]`` (C = 1 or 3), uint8, on the CPU, not sharing memory with ``value``.

    Layouts: channels last (numpy / gym convention) or first (torch convention) are detected
    from where a dimension of size 1, 3 or 4 sits (channels last wins); an alpha channel is
    dropped. Floats whose maximum is at most 1 are taken as ``[0, 1]`` images.
    """
    x = _channels_first(as_tensor(value), key)
    if x.shape[-3] == 4:
        x = x[..., :3, :, :]
    return _as_uint8(x.detach().cpu())


def center_crop(frames: torch.Tensor, size: int | tuple[int, int]) -> torch.Tensor:
    """The central ``size`` (an int for a square) of ``[..., H, W]`` frames."""
    crop_h, crop_w = (size, size) if isinstance(size, int) else size
    height, width = frames.shape[-2:]
    if crop_h > height or crop_w > width:
        raise ValueError(
            f"VideoRecorder: center_crop={size} is larger than the frames ({height}x{width})"
        )
    top, left = (height - crop_h) // 2, (width - crop_w) // 2
    return frames[..., top : top + crop_h, left : left + crop_w]


def make_grid(frames: torch.Tensor) -> torch.Tensor:
    """Tiles ``[N, C, H, W]`` frames into one ``[C, rows * H, cols * W]`` image (row major)."""
    n, channels, height, width = frames.shape
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    if rows * cols != n:
        pad = frames.new_zeros(rows * cols - n, channels, height, width)
        frames = torch.cat([frames, pad])
    grid = frames.reshape(rows, cols, channels, height, width).permute(2, 0, 3, 1, 4)
    return grid.reshape(channels, rows * height, cols * width)
