"""``CatFrames`` on stored trajectories (its ``forward``): each step's window of ``N`` frames
built from the data, as the env would have built it online.

The time dim is the batch dim named ``"time"``, else the last one. Trajectories end where
``("next", done_key)`` is set. A window reaching before its trajectory's start is padded (the
first frame repeated, or ``padding_value``); a ``("next", key)`` entry whose root counterpart is
also stacked continues the root's frames, so that its window at a trajectory's first step is
``[..., first observation, next observation]``, what the env stacks online. With ``future=True``
the window is ``[t, ..., t + N - 1]``, padded past the trajectory's end (last frame repeated, or
``padding_value``). ``mask_key`` receives, per window, ``True`` at the padded slots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.transforms._frames import CatFrames

__all__ = ["unfold_frames"]


def _time_dim(tensordict: TensorDictBase) -> int:
    names = tensordict.names
    return names.index("time") if "time" in names else tensordict.ndim - 1


def _trajectory_bounds(done: torch.Tensor, future: bool) -> torch.Tensor:
    """Per step (time last), the index of its trajectory's first step (or last, ``future``)."""
    T = done.shape[-1]
    steps = torch.arange(T, device=done.device)
    if future:
        is_end = done.clone()
        is_end[..., -1] = True
        big = torch.full_like(steps, T - 1)
        ends = torch.where(is_end, steps, big)
        return ends.flip(-1).cummin(-1).values.flip(-1)
    is_start = torch.zeros_like(done)
    is_start[..., 1:] = done[..., :-1]
    is_start[..., 0] = True
    return torch.where(is_start, steps, torch.zeros_like(steps)).cummax(-1).values


def _gather(data: torch.Tensor, index: torch.Tensor, time_dim: int) -> torch.Tensor:
    """``data`` at time ``index`` (shape: the batch dims, time last) along ``time_dim``."""
    index = index.movedim(-1, time_dim)
    index = index.reshape(*index.shape, *([1] * (data.ndim - index.ndim))).expand_as(data)
    return data.gather(time_dim, index)


def unfold_frames(t: CatFrames, tensordict: TensorDictBase) -> TensorDictBase:
    """Writes the stacked frames of every in_key (and the mask) into ``tensordict``."""
    if not tensordict.ndim:
        raise ValueError(
            "CatFrames cannot process unbatched tensordict instances: the input needs a time "
            "dim (named 'time', or the last one)."
        )
    time_dim = _time_dim(tensordict)
    T = tensordict.shape[time_dim]
    done = tensordict.get(("next", t.done_key), None)
    if done is None:
        if not t.future:
            raise KeyError(
                f"CatFrames.unfolding requires the {('next', t.done_key)} entry to delimit "
                "trajectories. Make sure the sampled data carries its done state, or use "
                "forward-looking windows (future=True) to treat each batch row as a single "
                "contiguous trajectory."
            )
        done = torch.zeros(tensordict.shape, dtype=torch.bool, device=tensordict.device)
    else:
        done = done.reshape(tensordict.shape)
    done = done.movedim(time_dim, -1)
    bound = _trajectory_bounds(done, t.future)
    steps = torch.arange(T, device=done.device)
    N = t.N
    # slot j of a window (oldest first) reads time steps + offsets[j]
    offsets = range(N) if t.future else range(-(N - 1), 1)
    pairs = list(t._key_pairs)
    stacked_roots = {in_key for in_key, _ in pairs if isinstance(in_key, str)}
    if t.mask_key is not None:
        padded = [(steps + k > bound) if t.future else (steps + k < bound) for k in offsets]
        mask = torch.stack(padded, -1).movedim(-2, time_dim)
        tensordict.set(t.mask_key, mask)
    # read every input before writing any output (an out_key may be an in_key)
    inputs = {in_key: t._require(tensordict, in_key) for in_key, _ in pairs}
    for in_key, out_key in pairs:
        data = inputs[in_key]
        if data is None:
            continue
        root_key = _root_counterpart(in_key, stacked_roots)
        if root_key is not None and t.future:
            raise NotImplementedError(
                "CatFrames(future=True) does not support processing a ('next', key) entry "
                "alongside its root counterpart: the one-step-offset fixup is only implemented "
                "for history (backward) windows."
            )
        root = inputs.get(root_key) if root_key is not None else None
        frames = []
        for k in offsets:
            index = steps + k
            if t.future:
                inside = index <= bound
                frame = _gather(data, torch.minimum(index, bound), time_dim)
            elif root is None:
                inside = index >= bound
                frame = _gather(data, torch.maximum(index, bound), time_dim)
            else:
                # next frames continue the root's: one step before the trajectory's first
                # "next" frame is its first observation (the reset one), found at the root
                inside = index >= bound - 1
                from_next = index >= bound
                first = _gather(root, bound, time_dim)
                frame = _gather(data, torch.maximum(index, bound), time_dim)
                frame = torch.where(_like(from_next, frame, time_dim), frame, first)
            if t.padding == "constant":
                frame = torch.where(_like(inside, frame, time_dim), frame, t.padding_value)
            frames.append(frame)
        tensordict.set(out_key, torch.cat(frames, t.dim))
    return tensordict


def _root_counterpart(in_key, stacked_roots: set) -> str | None:
    """The root key whose frames a ``("next", key)`` entry continues, when it is stacked too."""
    if isinstance(in_key, tuple) and len(in_key) == 2 and in_key[0] == "next":
        return in_key[1] if in_key[1] in stacked_roots else None
    return None


def _like(mask: torch.Tensor, frame: torch.Tensor, time_dim: int) -> torch.Tensor:
    """``mask`` (batch dims, time last) shaped to broadcast against ``frame``."""
    mask = mask.movedim(-1, time_dim)
    return mask.reshape(*mask.shape, *([1] * (frame.ndim - mask.ndim)))
