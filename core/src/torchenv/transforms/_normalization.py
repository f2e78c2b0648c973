"""Normalisation transforms: ObservationNorm (with ``init_stats``) and VecNorm."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Bounded, Composite, TensorSpec, Unbounded
from torchenv.transforms._base import ObservationTransform, Transform
from torchenv.transforms._utils import flat_name

__all__ = ["ObservationNorm", "VecNorm"]


def _as_buffer(value) -> torch.Tensor | None:
    if value is None:
        return None
    if not isinstance(value, torch.Tensor):
        value = torch.as_tensor(value, dtype=torch.get_default_dtype())
    return value


class ObservationNorm(ObservationTransform):
    """Affine transform of observations: ``obs * scale + loc`` (or ``(obs - loc) / scale``).

    ``loc`` and ``scale`` may be left out and estimated from the env with :meth:`init_stats`.

    Args:
        loc: the offset (broadcast over the observation).
        scale: the factor.
        in_keys: the observations. Defaults to ``["observation"]``.
        out_keys: where to write them. Defaults to ``in_keys``.
        in_keys_inv: entries to which the inverse map is applied before the step.
        out_keys_inv: their outer names (default: ``in_keys_inv``).
        standard_normal: compute ``(obs - loc) / scale`` instead (``loc``, ``scale`` then are the
            mean and standard deviation).
        eps: lower bound of ``scale`` estimated by :meth:`init_stats`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ObservationNorm(loc=1.0, scale=2.0, in_keys=["obs"])
        >>> t(TensorDict(obs=torch.ones(2)))["obs"]
        tensor([3., 3.])
    """

    invertible = True

    def __init__(
        self,
        loc: float | torch.Tensor | None = None,
        scale: float | torch.Tensor | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        standard_normal: bool = False,
        eps: float | None = None,
    ) -> None:
        super().__init__(in_keys or ["observation"], out_keys, in_keys_inv, out_keys_inv)
        self.standard_normal = standard_normal
        self.eps = 1e-6 if eps is None else eps
        scale = _as_buffer(scale)
        if scale is not None and not standard_normal and (scale == 0).any():
            raise ValueError("ObservationNorm: scale must be non-zero")
        self.register_buffer("loc", _as_buffer(loc))
        self.register_buffer("scale", scale)

    @property
    def initialized(self) -> bool:
        return self.loc is not None and self.scale is not None

    def _check(self) -> None:
        if not self.initialized:
            raise RuntimeError(
                "ObservationNorm: loc and scale are not set; pass them to the constructor or "
                "call init_stats() once the transform is in an env"
            )

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        buffers = self._buffers
        loc, scale = buffers["loc"], buffers["scale"]
        if loc is None or scale is None:
            self._check()
        if self.standard_normal:
            return (obs - loc) / scale
        return torch.addcmul(loc, obs, scale)

    def _inv_apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        self._check()
        if self.standard_normal:
            return obs * self.scale + self.loc
        return (obs - self.loc) / self.scale

    def init_stats(
        self,
        num_iter: int,
        reduce_dim: int | Sequence[int] = 0,
        cat_dim: int | None = None,
        key: NestedKey | None = None,
        keep_dims: Sequence[int] | None = None,
    ) -> None:
        """Estimates ``loc`` and ``scale`` from ``num_iter`` random steps of the parent env.

        After it, the transform outputs zero-mean, unit-variance observations.

        Args:
            num_iter: the number of samples collected (over rollouts of the parent env).
            reduce_dim: the dims of the collected data averaged over (the time dim is 0).
            cat_dim: the dim along which successive rollouts are concatenated. Defaults to
                ``reduce_dim`` (the first one when several are given).
            key: the entry to estimate from. Defaults to the only in_key.
            keep_dims: dims kept as singletons in the statistics.

        Raises:
            RuntimeError: if the transform has no parent env, or its stats are already set.
        """
        if self.initialized:
            raise RuntimeError("ObservationNorm.init_stats: loc and scale are already set")
        parent = self.parent
        if parent is None:
            raise RuntimeError("ObservationNorm.init_stats needs the transform to be in an env")
        if key is None:
            if len(self.in_keys) > 1:
                raise RuntimeError(
                    f"ObservationNorm.init_stats: several in_keys {self.in_keys}; pass key="
                )
            key = self.in_keys[0]
        if isinstance(reduce_dim, int):
            reduce_dim = [reduce_dim]
        if cat_dim is None:
            cat_dim = reduce_dim[0]
        chunks, collected = [], 0
        while collected < num_iter:
            rollout = parent.rollout(max_steps=num_iter)
            value = rollout.get(key)
            chunks.append(value)
            collected += value.shape[cat_dim]
        data = torch.cat(chunks, cat_dim)
        index = [slice(None)] * data.ndim
        index[cat_dim] = slice(0, num_iter)
        data = data[tuple(index)].to(torch.get_default_dtype())
        loc = data.mean(reduce_dim, keepdim=True)
        scale = data.std(reduce_dim, keepdim=True).clamp_min(self.eps)
        drop = [d for d in reduce_dim if not keep_dims or d not in keep_dims]
        for d in sorted(drop, reverse=True):
            loc, scale = loc.squeeze(d), scale.squeeze(d)
        if not self.standard_normal:
            loc, scale = -loc / scale, 1 / scale
        self.loc, self.scale = loc, scale
        container = self.container
        if container is not None:
            container.empty_cache()

    def _transform_leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        if isinstance(spec, Bounded) and self.initialized:
            low = self._apply_transform(spec.space.low)
            high = self._apply_transform(spec.space.high)
            low, high = torch.minimum(low, high), torch.maximum(low, high)
            shape = torch.broadcast_shapes(low.shape, spec.shape)
            return Bounded(
                low.expand(shape),
                high.expand(shape),
                shape=shape,
                dtype=spec.dtype,
                device=spec.device,
            )
        if isinstance(spec, Unbounded):
            return spec
        return Unbounded(shape=spec.shape, dtype=spec.dtype, device=spec.device)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._map_input_specs(input_spec, self._transform_leaf_spec)

    def __repr__(self) -> str:
        if self.initialized and self.loc.numel() == 1 and self.scale.numel() == 1:
            stats = f"loc={self.loc.item():.4f}, scale={self.scale.item():.4f}"
        else:
            stats = "loc=..., scale=..." if self.initialized else "uninitialized"
        return f"ObservationNorm({stats}, keys={self.in_keys})"


class _VecNormMeta(type):
    """Routes ``VecNorm(..., new_api=True)`` to :class:`VecNormV2` (TorchRL's switch).

    ``new_api=None`` (not given) warns, as TorchRL 0.14.1 does, and builds this class.
    """

    def __call__(cls, *args: Any, new_api: bool | None = None, **kwargs: Any) -> Any:
        if new_api is None:
            warnings.warn(
                "VecNorm: new_api was not given; this builds the old-API VecNorm. TorchRL plans "
                "to make VecNormV2 the default VecNorm: pass new_api=True (or use VecNormV2) for "
                "it, or new_api=False to keep this class.",
                category=FutureWarning,
                stacklevel=2,
            )
        elif new_api:
            from torchenv.transforms._vecnorm_v2 import VecNormV2

            return VecNormV2(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class VecNorm(Transform, metaclass=_VecNormMeta):
    """Normalises entries with running (exponentially decayed) mean and standard deviation.

    Statistics are updated at every step and reset unless the transform is frozen
    (:meth:`freeze`). Running statistics live in buffers; clones share them, so a transform in
    each sub-env of a serial env updates one set of statistics.

    Args:
        in_keys: the entries. Defaults to ``["observation", "reward"]``.
        out_keys: where to write them. Defaults to ``in_keys``.
        decay: the decay of the running sums (1.0: plain averages).
        eps: lower bound of the standard deviation.
        new_api: ``True`` returns a :class:`VecNormV2` built with the other arguments (then
            ``in_keys`` is required, and ``stateful``, ``lock``, ``shared_data`` and
            ``reduce_batch_dims`` are accepted); ``False`` this class; ``None`` (not given) this
            class, with a ``FutureWarning`` (TorchRL 0.14.1's behaviour).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = VecNorm(in_keys=["obs"], decay=1.0, new_api=False)
        >>> _ = t(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
        >>> t.loc["obs"], t.scale["obs"]
        (tensor([2.]), tensor([1.]))
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        decay: float = 0.9999,
        eps: float = 1e-4,
        new_api: bool | None = None,
    ) -> None:
        # new_api is read (and removed) by the metaclass: it never reaches here
        super().__init__(in_keys or ["observation", "reward"], out_keys)
        if not 0 < decay <= 1:
            raise ValueError(f"VecNorm: decay must be in (0, 1], got {decay}")
        self.decay = decay
        self.eps = eps
        self.frozen = False
        self._names = {k: "_vn_" + flat_name(k) for k in self.in_keys}

    def freeze(self) -> VecNorm:
        """Stops updating the statistics."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNorm:
        """Resumes updating the statistics."""
        self.frozen = False
        return self

    def frozen_copy(self) -> VecNorm:
        """A frozen, parentless copy holding a snapshot of the current statistics."""
        new = self.clone()
        for name in list(new._buffers):
            buf = new._buffers[name]
            new._buffers[name] = None if buf is None else buf.clone()
        return new.freeze()

    # The state dict holds the statistics the way TorchRL's VecNorm does: one "_extra_state"
    # entry mapping "<key>_sum" / "<key>_ssq" / "<key>_count" to tensors (the buffers stay
    # buffers, so that EnvCreator can still share them between workers).
    _STATS = ("_sum", "_ssq", "_count")

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        stats = {}
        for key in self._seen():
            for suffix, value in zip(self._STATS, self._raw(key)):
                stats[flat_name(key) + suffix] = value if keep_vars else value.detach()
        destination[prefix + "_extra_state"] = stats

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        stats = state_dict.get(prefix + "_extra_state")
        if stats is None:
            if strict:
                missing_keys.append(prefix + "_extra_state")
            return
        for key in self.in_keys:
            total = stats.get(flat_name(key) + "_sum")
            if total is None:
                continue
            self._init_stats(key, total.shape, total.device)
            for suffix, buffer in zip(self._STATS, self._raw(key)):
                buffer.copy_(stats[flat_name(key) + suffix].reshape(buffer.shape))

    def _init_stats(self, key: NestedKey, shape, device) -> None:
        name = self._names[key]
        if getattr(self, name + "_sum", None) is not None:
            return
        zeros = torch.zeros(shape, dtype=torch.float64, device=device)
        self.register_buffer(name + "_sum", zeros)
        self.register_buffer(name + "_ssq", zeros.clone())
        self.register_buffer(name + "_count", torch.zeros((), dtype=torch.float64, device=device))

    def _normalize(
        self, key: NestedKey, value: torch.Tensor, batch_dims: int, update: bool
    ) -> torch.Tensor:
        self._init_stats(key, value.shape[batch_dims:], value.device)
        total, ssq, count = self._raw(key)
        if update and not self.frozen:
            flat = value.detach().reshape(-1, *total.shape).to(torch.float64)
            total.mul_(self.decay).add_(flat.sum(0))
            ssq.mul_(self.decay).add_(flat.pow(2).sum(0))
            count.mul_(self.decay).add_(flat.shape[0])
        mean, std = self._mean_std(total, ssq, count)
        return ((value - mean.to(value.dtype)) / std.to(value.dtype)).to(value.dtype)

    def _mean_std(self, total, ssq, count):
        count = count.clamp_min(1e-12)
        mean = total / count
        var = (ssq / count - mean.pow(2)).clamp_min(0)
        return mean, var.sqrt().clamp_min(self.eps)

    @property
    def loc(self) -> dict[NestedKey, torch.Tensor]:
        """The current means, per in_key."""
        return {
            k: self._mean_std(*self._raw(k))[0].to(torch.get_default_dtype()) for k in self._seen()
        }

    @property
    def scale(self) -> dict[NestedKey, torch.Tensor]:
        """The current standard deviations, per in_key."""
        return {
            k: self._mean_std(*self._raw(k))[1].to(torch.get_default_dtype()) for k in self._seen()
        }

    def _seen(self):
        return [k for k in self.in_keys if getattr(self, self._names[k] + "_sum", None) is not None]

    def _raw(self, key):
        name = self._names[key]
        return (
            getattr(self, name + "_sum"),
            getattr(self, name + "_ssq"),
            getattr(self, name + "_count"),
        )

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._run(next_tensordict, update=True)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._run(tensordict, update=True)

    def _run(self, tensordict: TensorDictBase, update: bool) -> TensorDictBase:
        for in_key, out_key in self._key_pairs:
            value = self._require(tensordict, in_key)
            if value is None:
                continue
            tensordict.set(out_key, self._normalize(in_key, value, tensordict.batch_dims, update))
        return tensordict

    def to_observation_norm(self) -> Transform:
        """An :class:`ObservationNorm` (one per key, in a Compose) with the current statistics."""
        from torchenv.transforms._compose import Compose

        norms = []
        for in_key, out_key in self._key_pairs:
            mean, std = self._mean_std(*self._raw(in_key))
            norms.append(
                ObservationNorm(
                    loc=mean.to(torch.get_default_dtype()),
                    scale=std.to(torch.get_default_dtype()),
                    in_keys=[in_key],
                    out_keys=[out_key],
                    standard_normal=True,
                )
            )
        return norms[0] if len(norms) == 1 else Compose(*norms)

    def _spec_stats(self, spec: Composite) -> Composite:
        # materialise the statistics from the specs so that clones share them from the start
        batch_dims = len(spec.shape)
        keys = set(spec.keys(True, True))
        for in_key, _ in self._key_pairs:
            if in_key in keys:
                leaf = spec[in_key]
                self._init_stats(in_key, leaf.shape[batch_dims:], leaf.device)
        return self._map_specs(spec, _unbounded)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._spec_stats(observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._spec_stats(reward_spec)

    def __repr__(self) -> str:
        return f"VecNorm(keys={self.in_keys}, decay={self.decay}, eps={self.eps})"


def _unbounded(spec: TensorSpec) -> TensorSpec:
    if isinstance(spec, Unbounded):
        return spec
    return Unbounded(shape=spec.shape, dtype=spec.dtype, device=spec.device)
