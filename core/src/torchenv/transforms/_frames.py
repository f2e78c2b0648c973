"""Time transforms: CatFrames, TimeMaxPool, FrameSkipTransform, NoopResetEnv."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Bounded, TensorSpec, Unbounded
from torchenv.transforms._base import ObservationTransform, Transform
from torchenv.transforms._frames_offline import unfold_frames
from torchenv.transforms._utils import flat_name, mask_like

__all__ = ["CatFrames", "FrameSkipTransform", "NoopResetEnv", "TimeMaxPool"]

_MAX_NOOP_TRIALS = 10


class _FrameBuffer(ObservationTransform):
    """Keeps, per in_key, a buffer of the last frames, reset where the env resets."""

    def __init__(self, in_keys, out_keys, reset_key: NestedKey | None) -> None:
        super().__init__(in_keys, out_keys)
        self._given_reset_key = reset_key
        self._buffers_by_key: dict[NestedKey, str] = {
            k: "_frames_" + flat_name(k) for k in self.in_keys
        }
        for name in self._buffers_by_key.values():
            self.register_buffer(name, None)

    @property
    def reset_key(self) -> NestedKey:
        return self._only_reset_key(self._given_reset_key)

    def _buffer(self, in_key: NestedKey, like: torch.Tensor) -> tuple[torch.Tensor, bool]:
        """The buffer of ``in_key`` and whether it was (re)created for ``like``'s shape."""
        name = self._buffers_by_key[in_key]
        buffer = getattr(self, name)
        shape = self._buffer_shape(like)
        if buffer is None or buffer.shape != shape or buffer.dtype != like.dtype:
            buffer = torch.zeros(shape, dtype=like.dtype, device=like.device)
            setattr(self, name, buffer)
            return buffer, True
        return buffer, False

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        reset = tensordict.get(self.reset_key, None) if tensordict is not None else None
        for in_key, out_key in self._key_pairs:
            data = tensordict_reset.get(in_key, None)
            if data is None:
                continue
            buffer, fresh = self._buffer(in_key, data)
            self._fill(buffer, data, None if fresh or reset is None else reset)
            tensordict_reset.set(out_key, self._output(buffer))
        return tensordict_reset

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in self._key_pairs:
            data = self._require(next_tensordict, in_key)
            if data is None:
                continue
            buffer, fresh = self._buffer(in_key, data)
            if fresh:
                self._fill(buffer, data, None)
            else:
                self._push(buffer, data)
            next_tensordict.set(out_key, self._output(buffer))
        return next_tensordict


class CatFrames(_FrameBuffer):
    """Concatenates the last ``N`` observations along ``dim`` (frame stacking).

    In an env, a buffer keeps the last frames; at reset it is filled with the first frame
    (``padding="same"``) or ``padding_value`` (``padding="constant"``); called before any reset,
    the buffer starts as ``padding_value`` whatever the padding, as TorchRL's. Standalone (e.g. on a
    sampled trajectory of batch shape ``[..., T]``), :meth:`forward` stacks each step with its
    ``N - 1`` predecessors in the same trajectory (trajectories end where ``("next", "done")``).

    Args:
        N: the number of frames.
        dim: the (negative) dim along which frames are concatenated.
        in_keys: the observations. Defaults to ``["pixels"]``.
        out_keys: where to write them. Defaults to ``in_keys``.
        padding: ``"same"`` or ``"constant"``.
        padding_value: the value used with ``padding="constant"``.
        reset_key: the reset entry. Defaults to the env's only reset key.
        done_key: the done entry marking trajectory ends in :meth:`forward`.
        future: stack each step with the ``N - 1`` steps after it, ``[t, ..., t + N - 1]``
            (offline only: an env step raises ``RuntimeError``).
        mask_key: where :meth:`forward` writes, per window, ``True`` at the padded slots
            (shape ``[*batch, time, N]``).

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), CatFrames(N=4, dim=-1, in_keys=["observation"]))
        >>> env.reset()["observation"].shape
        torch.Size([12])
    """

    ACCEPTED_PADDING = ("same", "constant")

    def __init__(
        self,
        N: int,
        dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        padding: str = "same",
        padding_value: float = 0,
        as_inverse: bool = False,
        reset_key: NestedKey | None = None,
        done_key: NestedKey | None = None,
        future: bool = False,
        mask_key: NestedKey | None = None,
    ) -> None:
        if dim >= 0:
            raise ValueError(
                "CatFrames: dim must be < 0 to accommodate for tensordict leading dims "
                f"(a negative dim, counted from the end), got {dim}"
            )
        if N < 1:
            raise ValueError(f"CatFrames: N must be >= 1, got {N}")
        if padding == "zeros":
            raise RuntimeError("CatFrames: padding 'zeros' is deprecated: use padding='constant'")
        if padding not in self.ACCEPTED_PADDING:
            raise ValueError(
                f"CatFrames: padding must be one of {self.ACCEPTED_PADDING}, got {padding!r}"
            )
        super().__init__(in_keys or ["pixels"], out_keys, reset_key)
        self.N = N
        self.dim = dim
        self.padding = padding
        self.padding_value = padding_value
        self.as_inverse = as_inverse
        self.done_key = done_key or "done"
        self.future = bool(future)
        self.mask_key = mask_key

    def _buffer_shape(self, like: torch.Tensor) -> torch.Size:
        shape = list(like.shape)
        shape[self.dim] *= self.N
        return torch.Size(shape)

    def _output(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.clone()

    def _check_online(self) -> None:
        if self.future:
            raise RuntimeError(
                "CatFrames(future=True) needs whole trajectories: use it offline (forward on "
                "stored data), not in an env."
            )
        if self.mask_key is not None:
            raise RuntimeError(
                "CatFrames(mask_key=...) runs offline only (forward on stored data), not in an env."
            )

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self.as_inverse and self.parent is not None:
            raise RuntimeError(
                "CatFrames as inverse is not supported as a transform for environments, only for "
                "replay buffers: CatFrames(as_inverse=True) runs on their inverse path"
            )
        return super()._reset(tensordict, tensordict_reset)

    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        if self.future:
            self._check_online()
        return super().transform_observation_spec(observation_spec)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.future or self.mask_key is not None:
            self._check_online()
        # fast path: one cat per key; the result is both the output and the new buffer content
        buffers = self._buffers
        dim = self.dim
        seen = self.__dict__.setdefault("_data_shapes", {})
        for in_key, out_key in self._key_pairs:
            data = self._require(next_tensordict, in_key)
            if data is None:
                continue
            name = self._buffers_by_key[in_key]
            buffer = buffers[name]
            if buffer is None or data.shape != seen.get(in_key) or buffer.dtype != data.dtype:
                buffer, fresh = self._buffer(in_key, data)
                seen[in_key] = data.shape
                if fresh:
                    # no reset seen yet (standalone use): TorchRL's buffer starts as
                    # padding_value whatever the padding, the first frame comes last
                    self._fill(buffer, data, None, padding="constant")
                    next_tensordict.set(out_key, buffer.clone())
                    continue
            d = data.shape[dim]
            out = torch.cat((buffer.narrow(dim, d, buffer.shape[dim] - d), data), dim)
            buffer.copy_(out)
            next_tensordict.set(out_key, out)
        return next_tensordict

    def _fill(
        self,
        buffer: torch.Tensor,
        data: torch.Tensor,
        reset: torch.Tensor | None,
        padding: str | None = None,
    ) -> None:
        if (padding or self.padding) == "same":
            reps = [1] * data.ndim
            reps[self.dim] = self.N
            fresh = data.repeat(reps)
        else:
            fresh = torch.full_like(buffer, self.padding_value)
            d = data.shape[self.dim]
            fresh.narrow(self.dim, buffer.shape[self.dim] - d, d).copy_(data)
        if reset is None:
            buffer.copy_(fresh)
        else:
            buffer.copy_(torch.where(mask_like(reset, buffer), fresh, buffer))

    def _push(self, buffer: torch.Tensor, data: torch.Tensor) -> None:
        d = data.shape[self.dim]
        size = buffer.shape[self.dim]
        buffer.narrow(self.dim, 0, size - d).copy_(buffer.narrow(self.dim, d, size - d).clone())
        buffer.narrow(self.dim, size - d, d).copy_(data)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stacks frames within each trajectory of stored data (see
        :mod:`torchenv.transforms._frames_offline`); unchanged with ``as_inverse=True``."""
        if self.as_inverse:
            return tensordict
        return unfold_frames(self, tensordict)

    unfolding = forward

    @property
    def _has_inverse(self) -> bool:
        return self.as_inverse

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        """With ``as_inverse=True``, the stacking of :meth:`forward`, on the inverse path."""
        return unfold_frames(self, tensordict) if self.as_inverse else tensordict

    def _transform_leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = list(spec.shape)
        shape[self.dim] *= self.N
        if isinstance(spec, Bounded):
            low = torch.cat([spec.space.low] * self.N, self.dim)
            high = torch.cat([spec.space.high] * self.N, self.dim)
            if self.padding == "constant":
                low = low.clamp_max(self.padding_value)
                high = high.clamp_min(self.padding_value)
            return Bounded(low, high, shape=shape, dtype=spec.dtype, device=spec.device)
        if isinstance(spec, Unbounded):
            return Unbounded(shape=shape, dtype=spec.dtype, device=spec.device)
        raise NotImplementedError(f"CatFrames cannot stack a {type(spec).__name__} spec")

    def __repr__(self) -> str:
        return f"CatFrames(N={self.N}, dim={self.dim}, keys={self.in_keys})"


class TimeMaxPool(_FrameBuffer):
    """Outputs the element-wise maximum of the last ``T`` observations.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), TimeMaxPool(in_keys=["observation"], T=3))
        >>> env.rollout(3)["next", "observation"].shape
        torch.Size([3, 3])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        T: int = 1,
        reset_key: NestedKey | None = None,
    ) -> None:
        if T < 1:
            raise ValueError(f"TimeMaxPool: T must be >= 1, got {T}")
        super().__init__(in_keys or ["observation"], out_keys, reset_key)
        self.T = T

    def _buffer_shape(self, like: torch.Tensor) -> torch.Size:
        return torch.Size((self.T, *like.shape))

    def _output(self, buffer: torch.Tensor) -> torch.Tensor:
        return buffer.max(0).values

    def _fill(self, buffer: torch.Tensor, data: torch.Tensor, reset: torch.Tensor | None) -> None:
        fresh = data.unsqueeze(0).expand_as(buffer)
        if reset is None:
            buffer.copy_(fresh)
        else:
            buffer.copy_(torch.where(mask_like(reset, data).unsqueeze(0), fresh, buffer))

    def _push(self, buffer: torch.Tensor, data: torch.Tensor) -> None:
        buffer[:-1] = buffer[1:].clone()
        buffer[-1] = data

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise NotImplementedError("TimeMaxPool runs in an env only")

    def __repr__(self) -> str:
        return f"TimeMaxPool(T={self.T}, keys={self.in_keys})"


class FrameSkipTransform(Transform):
    """Repeats each action ``frame_skip`` times in the parent env, summing the rewards.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), FrameSkipTransform(2))
        >>> env.rollout(3).shape
        torch.Size([3])
    """

    def __init__(self, frame_skip: int = 1) -> None:
        if frame_skip < 1:
            raise ValueError(f"FrameSkipTransform: frame_skip must be >= 1, got {frame_skip}")
        super().__init__()
        self.frame_skip = frame_skip

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.frame_skip == 1:
            return next_tensordict
        parent = self.parent
        if parent is None:
            raise RuntimeError("FrameSkipTransform needs a parent env")
        reward_keys = parent.reward_keys
        totals = [next_tensordict.get(k) for k in reward_keys]
        for _ in range(self.frame_skip - 1):
            next_tensordict = parent._step(tensordict)
            totals = [t + next_tensordict.get(k) for t, k in zip(totals, reward_keys)]
        for k, t in zip(reward_keys, totals):
            next_tensordict.set(k, t)
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("FrameSkipTransform can only be used in an env")

    def __repr__(self) -> str:
        return f"FrameSkipTransform(frame_skip={self.frame_skip})"


class NoopResetEnv(Transform):
    """After each reset, takes a random number (up to ``noops``) of random steps.

    Only for envs with a single element (batch size of one element); restarts if the env
    gets done during the no-ops.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv, StepCounter
        >>> env = TransformedEnv(PendulumEnv(), NoopResetEnv(noops=3, random=False))
        >>> "observation" in env.reset().keys()
        True
    """

    def __init__(self, noops: int = 30, random: bool = True) -> None:
        super().__init__()
        if noops < 0:
            raise ValueError(f"NoopResetEnv: noops must be >= 0, got {noops}")
        self.noops = noops
        self.random = random

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("NoopResetEnv needs a parent env")
        if parent.batch_size.numel() > 1:
            raise ValueError(
                f"NoopResetEnv works on envs with one element, got batch size {tuple(parent.batch_size)}; "
                "put it inside the sub-envs of a batched env instead"
            )
        from torchenv.envs import step_mdp

        noops = int(torch.randint(self.noops + 1, ()).item()) if self.random else self.noops
        done_keys = parent.done_keys
        td = tensordict_reset
        for _ in range(_MAX_NOOP_TRIALS):
            for _ in range(noops):
                td = parent.rand_step(td)
                if any(bool(td.get(("next", k)).any()) for k in done_keys):
                    td = parent.reset()
                    break
                td = step_mdp(td, exclude_done=False)
            else:
                return td.exclude(*parent.reward_keys, "action")
        raise RuntimeError(
            f"NoopResetEnv: the env was done before {noops} no-op steps, {_MAX_NOOP_TRIALS} times"
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError("NoopResetEnv can only be used in an env")

    def __repr__(self) -> str:
        return f"NoopResetEnv(noops={self.noops}, random={self.random})"
