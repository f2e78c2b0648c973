"""Stateless tensor functions behind some transforms: ``cat_frames`` and ``rgb_to_grayscale``.

TorchRL's ``torchrl.envs.transforms.functional``: the same names, arguments and results.

>>> import torch
>>> from torchenv.transforms.functional import cat_frames
>>> cat_frames(torch.arange(3.0).view(3, 1), N=2, dim=-1, time_dim=-2).tolist()
[[0.0, 0.0], [0.0, 1.0], [1.0, 2.0]]
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

__all__ = ["cat_frames", "rgb_to_grayscale"]

_GRAY_WEIGHTS = (0.2989, 0.587, 0.114)


def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    """Turns RGB images (channels at dim ``-3``) into grayscale, keeping the dtype.

    Args:
        img: images of shape ``[..., 3, H, W]``.
        num_output_channels: 1 (default) or 3 (the gray channel repeated).

    Returns:
        ``[..., num_output_channels, H, W]`` images, ``0.2989 R + 0.587 G + 0.114 B``.

    Raises:
        TypeError: if ``img`` has fewer than 3 dims or other than 3 channels.
        ValueError: if ``num_output_channels`` is not 1 or 3.

    Examples:
        >>> import torch
        >>> rgb_to_grayscale(torch.ones(2, 3, 4, 4)).shape
        torch.Size([2, 1, 4, 4])
    """
    if img.ndim < 3:
        raise TypeError(
            f"rgb_to_grayscale: the image should have at least 3 dims ([..., 3, H, W]), "
            f"got {img.ndim} (shape {tuple(img.shape)})"
        )
    if img.shape[-3] != 3:
        raise TypeError(
            f"rgb_to_grayscale: the image should have 3 channels at dim -3, got "
            f"{img.shape[-3]} (shape {tuple(img.shape)})"
        )
    if num_output_channels not in (1, 3):
        raise ValueError(
            f"rgb_to_grayscale: num_output_channels should be 1 or 3, got {num_output_channels}"
        )
    r, g, b = img.unbind(dim=-3)
    w_r, w_g, w_b = _GRAY_WEIGHTS
    gray = (w_r * r + w_g * g + w_b * b).to(img.dtype).unsqueeze(-3)
    return gray.expand(img.shape) if num_output_channels == 3 else gray


def cat_frames(
    tensor: Tensor,
    N: int,
    dim: int,
    *,
    padding: Literal["same", "constant"] = "same",
    padding_value: float = 0.0,
    time_dim: int = -1,
    done_mask: Tensor | None = None,
) -> Tensor:
    """Concatenates, at each time step, the last ``N`` frames along ``dim``.

    The offline (whole-trajectory) computation of :class:`~torchenv.transforms.CatFrames`:
    output step ``t`` holds frames ``t - N + 1, ..., t`` (oldest first) concatenated along
    ``dim``. Window slots before the start of the trajectory, or flagged by ``done_mask``, are
    padded: with ``"same"`` they repeat the window's first frame in the trajectory, with
    ``"constant"`` they hold ``padding_value``.

    Args:
        tensor: the frames; ``time_dim`` is the time axis.
        N: the number of frames per window.
        dim: the (negative) dim along which the frames are concatenated; its size is
            multiplied by ``N``.

    Keyword Args:
        padding: ``"same"`` (default) or ``"constant"``.
        padding_value: the value of padded slots with ``"constant"`` (default ``0``).
        time_dim: the (negative) time dim (default ``-1``).
        done_mask: booleans of shape ``(*batch, time, N)`` (a singleton before ``N`` is
            accepted), ``True`` for the window slots across a trajectory boundary (a prefix of
            each window). By default, the input is one trajectory.

    Returns:
        ``tensor`` with its size along ``dim`` multiplied by ``N``, on its device, with its
        dtype (but for ``"constant"`` padding of integer frames, which TorchRL promotes to the
        default float dtype). Slots before the data's start that ``done_mask`` does not flag
        hold ``padding_value``, as in TorchRL.

    Raises:
        ValueError: on an unknown ``padding`` or a non-negative ``dim`` or ``time_dim``.

    Examples:
        >>> import torch
        >>> frames = torch.arange(8.0).view(4, 2)
        >>> cat_frames(frames, N=3, dim=-1, time_dim=-2, padding="constant")[1].tolist()
        [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]
    """
    if padding not in ("same", "constant"):
        raise ValueError(f"cat_frames: padding must be 'same' or 'constant', got {padding!r}.")
    if time_dim >= 0:
        raise ValueError(f"cat_frames: time_dim must be < 0, got {time_dim}.")
    if dim >= 0:
        raise ValueError(
            f"cat_frames: dim must be < 0 (invariant to leading batch dims), got {dim}."
        )
    time_pos = tensor.ndim + time_dim
    lead = tensor.shape[: time_pos + 1]  # batch dims and time
    device = tensor.device
    steps = torch.arange(lead[-1], device=device)
    slots = torch.arange(N, device=device)
    source = steps[:, None] - (N - 1) + slots  # (time, N): the frame each slot reads
    if done_mask is None:
        padded = (source < 0).expand(*lead, N)
    else:
        padded = done_mask.reshape(*done_mask.shape[: time_pos + 1], N).bool().expand(*lead, N)
    if padding == "same":
        # padded slots form a prefix; they read the window's first slot in the trajectory
        first = padded.sum(-1, keepdim=True)
        source = source + (torch.maximum(slots, first).clamp_max(N - 1) - slots)
    source = source.expand(*lead, N)
    # slots before the data's start read a padding frame (all padding_value), as in TorchRL
    before = source < 0
    source = source.clamp_min(0)
    any_before = bool(before.any())
    tail = (1,) * (tensor.ndim - time_pos - 1)
    fill = torch.full((), padding_value, dtype=tensor.dtype, device=device)
    frames = []
    for j in range(N):
        index = source[..., j].reshape(*lead, *tail).expand(tensor.shape)
        frame = tensor.gather(time_pos, index)
        if any_before:
            frame = torch.where(before[..., j].reshape(*lead, *tail), fill, frame)
        if padding == "constant":
            # a Python scalar, as in TorchRL: integer frames come out as floats
            frame = torch.where(padded[..., j].reshape(*lead, *tail), padding_value, frame)
        frames.append(frame)
    return torch.cat(frames, dim)
