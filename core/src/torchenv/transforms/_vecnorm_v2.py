"""``VecNormV2``: running normalisation with TorchRL 0.14.1's new VecNorm API.

Statistics are exponential moving averages of the data and of its square, bias-corrected as in
Adam: after ``n`` updates with decay ``d``, ``loc = m / (1 - d**n)`` and
``scale = sqrt((s - m**2) / (1 - d**n))`` (floored at ``eps``), where ``m`` and ``s`` are the
running first and second moments. ``decay=1`` gives plain averages (no bias correction).

In *stateful* mode the moments live in the transform (one set per in_key, in buffers, so that
``EnvCreator`` can share them between workers); in *stateless* mode they travel with the data,
under ``"<prefix>_loc"``, ``"<prefix>_var"`` and ``"<prefix>_count"`` (``prefix`` is
``"_vecnorm"``), and are declared in the observation spec so that ``step_mdp`` carries them.
"""

from __future__ import annotations

import math
import uuid
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.specs import Composite, TensorSpec, Unbounded
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import as_tuple, flat_name

__all__ = ["VecNormV2"]

#: the separator of the flattened keys of the ``"_extra_state"`` entry (TorchRL's)
_SEP = ".-|-."
_KINDS = ("loc", "var", "count")


def _float_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


class VecNormV2(Transform):
    """Normalises entries with running, bias-corrected mean and standard deviation.

    ``out = (x - loc) / scale``; the statistics are updated with every ``step`` and ``reset``
    (before the entry is normalised) unless the transform is frozen (:meth:`freeze`).

    Args:
        in_keys: the entries to normalise (e.g. ``["observation", "reward"]``).
        out_keys: where to write them. Defaults to ``in_keys``.
        lock: a lock held while the statistics are updated (e.g. a ``multiprocessing.Lock``).
            Defaults to ``None``: no lock.
        stateful: keep the statistics in the transform (``True``) or in the data (``False``).
        decay: the decay of the moving averages, in ``(0, 1]`` (``1``: plain averages).
        eps: lower bound of the standard deviation.
        shared_data: a TensorDict with entries ``"loc"``, ``"var"`` and ``"count"`` (the layout of
            the ``"_extra_state"`` of :meth:`state_dict`) to start from, e.g. in shared memory;
            stateful mode only.
        reduce_batch_dims: average a batch of data over its batch dimensions before the update
            (one set of statistics for all sub-envs, each element weighing one step); stateful
            mode only.

    Raises:
        RuntimeError: ``reduce_batch_dims=True`` with ``stateful=False`` (as TorchRL).
        NotImplementedError: ``shared_data`` with ``stateful=False`` (as TorchRL).
        ValueError: ``decay`` outside ``(0, 1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], decay=1.0)
        >>> for x in (1.0, 3.0):
        ...     td = t(TensorDict(obs=torch.tensor([x])))
        >>> t.loc["obs"], t.scale["obs"], td["obs_norm"]
        (tensor([2.]), tensor([1.]), tensor([1.]))
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey] | None = None,
        *,
        lock: Any = None,
        stateful: bool = True,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shared_data: TensorDictBase | None = None,
        reduce_batch_dims: bool = False,
    ) -> None:
        self.__dict__["stateful"] = bool(stateful)
        super().__init__(in_keys, out_keys if out_keys is not None else in_keys)
        if reduce_batch_dims and not stateful:
            raise RuntimeError("reduce_batch_dims=True and stateful=False are not supported.")
        if not 0 < decay <= 1:
            raise ValueError(f"VecNormV2: decay must be in (0, 1], got {decay}")
        pairs = self._pairs
        self.lock = lock
        self.decay = decay
        self.eps = eps
        self.frozen = False
        self.reduce_batch_dims = reduce_batch_dims
        self._names = {k: "_vn_" + flat_name(k) for k, _ in pairs}
        self._warned_batch = False
        if self.stateful:
            self.register_buffer("initialized", torch.zeros((), dtype=torch.bool))
            if shared_data is not None:
                self._load_stats(shared_data, share=True)
        else:
            self.__dict__["initialized"] = False
            if shared_data is not None:
                raise NotImplementedError(
                    "VecNormV2: shared_data is not supported with stateful=False"
                )

    # ------------------------------------------------------------------ keys
    @property
    def in_keys(self) -> list[NestedKey]:
        """The entries read; in stateless mode, followed by the three statistics entries."""
        keys = Transform.in_keys.fget(self)
        if self.__dict__.get("stateful", True):
            return keys
        return [*keys, f"{self.prefix}_count", f"{self.prefix}_loc", f"{self.prefix}_var"]

    @in_keys.setter
    def in_keys(self, value: Sequence[NestedKey] | NestedKey | None) -> None:
        Transform.in_keys.fset(self, value)

    @property
    def _in_keys_safe(self) -> list[NestedKey]:
        """The entries normalised (``in_keys`` without the statistics entries)."""
        return Transform.in_keys.fget(self)

    @property
    def _pairs(self) -> tuple[tuple[NestedKey, NestedKey], ...]:
        """``(in_key, out_key)`` pairs of the normalised entries (cached, dropped by the base
        class's key setters)."""
        pairs = self.__dict__.get("_pairs")
        if pairs is None:
            keys, out_keys = self._in_keys_safe, self.out_keys
            if len(keys) != len(out_keys):
                raise ValueError(
                    f"VecNormV2: in_keys and out_keys must have the same length, got "
                    f"in_keys={keys} and out_keys={out_keys}"
                )
            pairs = self.__dict__["_pairs"] = tuple(zip(keys, out_keys))
        return pairs

    _key_pairs = _pairs

    @property
    def prefix(self) -> str:
        """The root of the names of the statistics entries (stateless mode)."""
        return self.__dict__.get("_prefix") or "_vecnorm"

    def _make_prefix(self, output_spec: Composite) -> str:
        prefix = self.__dict__.get("_prefix")
        if prefix is None:
            taken = any(
                "_vecnorm_loc" in output_spec[part]
                for part in ("full_observation_spec", "full_reward_spec")
                if part in output_spec
            )
            # a second stateless VecNormV2 in the chain gets its own entries
            prefix = "_vecnorm" + str(uuid.uuid1()) if taken else "_vecnorm"
            self.__dict__["_prefix"] = prefix
        return prefix

    # ------------------------------------------------------- container/parent
    def set_container(self, container: Any) -> None:
        super().set_container(container)
        if self.container is None:
            return
        parent = self.parent
        if parent is None:
            return
        if not self.stateful:
            self._make_prefix(parent.output_spec)
            return
        if not self._warned_batch:
            self._warned_batch = True
            if not parent.batch_locked:
                warnings.warn(
                    "Support of VecNormV2 for unbatched container is experimental and subject "
                    "to change.",
                    stacklevel=2,
                )
            if parent.batch_size:
                warnings.warn(
                    "Support of VecNormV2 for containers with non-empty batch-size is "
                    "experimental and subject to change.",
                    stacklevel=2,
                )
        self._init_from_specs(parent.output_spec)

    # ------------------------------------------------------------- statistics
    def _stats(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        buffers = self._buffers
        name = self._names[key]
        loc = buffers.get(name + "_loc")
        if loc is None:
            return None
        return loc, buffers[name + "_var"], buffers[name + "_count"]

    def _new_stats(self, key: NestedKey, shape, dtype: torch.dtype, device) -> None:
        name = self._names[key]
        zeros = torch.zeros(shape, dtype=_float_dtype(dtype), device=device)
        self.register_buffer(name + "_loc", zeros)
        self.register_buffer(name + "_var", zeros.clone())
        self.register_buffer(name + "_count", torch.zeros((), dtype=torch.int64, device=device))
        self._buffers["initialized"].fill_(True)

    def _init_from_specs(self, output_spec: Composite) -> None:
        """Zero statistics for every in_key found in the observation or reward specs."""
        for part in ("full_observation_spec", "full_reward_spec"):
            if part not in output_spec:
                continue
            spec = output_spec[part]
            keys = set(spec.keys(True, True))
            batch_dims = len(spec.shape)
            for key, _ in self._pairs:
                if key in keys and self._stats(key) is None:
                    leaf = spec[key]
                    shape = leaf.shape[batch_dims:] if self.reduce_batch_dims else leaf.shape
                    self._new_stats(key, shape, leaf.dtype, leaf.device)

    def _loc_scale(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor]:
        loc, var, count = self._stats(key)
        return _loc_scale(loc, var, count, self.decay, self.eps, loc.dtype)

    def _require_stats(self) -> None:
        if not self.stateful:
            raise RuntimeError(
                "VecNormV2: loc and scale cannot be computed with stateless vecnorm."
            )
        if not bool(self._buffers["initialized"]):
            raise RuntimeError(
                "VecNormV2 has no statistics yet: put it in an env or run it on data first."
            )

    def _per_key(self, pick: int) -> TensorDict:
        self._require_stats()
        out = TensorDict()
        for key, _ in self._pairs:
            if self._stats(key) is not None:
                out.set(key, self._loc_scale(key)[pick])
        return out

    @property
    def loc(self) -> TensorDict:
        """The bias-corrected means, one entry per in_key (stateful mode)."""
        return self._per_key(0)

    @property
    def scale(self) -> TensorDict:
        """The bias-corrected standard deviations (floored at ``eps``), per in_key."""
        return self._per_key(1)

    @property
    def standard_normal(self) -> bool:
        """Always ``True``: ``loc`` and ``scale`` give ``(x - loc) / scale`` (ObservationNorm's)."""
        return True

    def freeze(self) -> VecNormV2:
        """Stops updating the statistics (they are still used)."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNormV2:
        """Resumes updating the statistics."""
        self.frozen = False
        return self

    def frozen_copy(self) -> VecNormV2:
        """A frozen, parentless copy holding a snapshot of the statistics.

        Raises:
            RuntimeError: in stateless mode, or before the statistics exist.
        """
        if not self.stateful:
            raise RuntimeError("Cannot create a frozen copy of a stateless VecNorm.")
        if not bool(self._buffers["initialized"]):
            raise RuntimeError(
                "Make sure the VecNorm has been initialized before creating a frozen copy."
            )
        return self.clone().freeze()

    def clone(self) -> VecNormV2:
        """A parentless copy with its own copy of the statistics (TorchRL's ``clone``)."""
        new = super().clone()
        for name, buf in list(new._buffers.items()):
            if buf is not None:
                new._buffers[name] = buf.clone()
        return new

    def to_observation_norm(self) -> Transform:
        """An :class:`ObservationNorm` (a :class:`Compose` of them for several keys) fixed at the
        current statistics.

        Raises:
            NotImplementedError: in stateless mode (as TorchRL).
        """
        from torchenv.transforms._compose import Compose
        from torchenv.transforms._normalization import ObservationNorm

        if not self.stateful:
            raise NotImplementedError("VecNormV2.to_observation_norm needs stateful=True")
        self._require_stats()
        norms = []
        for in_key, out_key in self._pairs:
            loc, scale = self._loc_scale(in_key)
            norms.append(
                ObservationNorm(
                    loc=loc,
                    scale=scale,
                    in_keys=[in_key],
                    out_keys=[out_key],
                    standard_normal=True,
                    eps=self.eps,
                )
            )
        return norms[0] if len(norms) == 1 else Compose(*norms)

    def denorm(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Inverts the normalisation: ``in_key = out_key * scale + loc`` on a shallow copy.

        Entries whose ``out_key`` is absent are skipped.

        Raises:
            NotImplementedError: in stateless mode.
            RuntimeError: before the statistics exist.
        """
        if not self.stateful:
            raise NotImplementedError("denorm is not implemented for stateless VecNormV2.")
        if not bool(self._buffers["initialized"]):
            raise RuntimeError("VecNormV2 must be initialized before calling denorm.")
        tensordict = tensordict.copy()
        for in_key, out_key in self._pairs:
            value = tensordict.get(out_key, None)
            if value is None or self._stats(in_key) is None:
                continue
            loc, scale = self._loc_scale(in_key)
            tensordict.set(in_key, value * scale + loc)
        return tensordict

    # ----------------------------------------------------------- data flow
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Updates the statistics with ``tensordict`` and normalises it, in place.

        (TorchRL's ``VecNormV2`` runs only inside an env; here it also runs on a TensorDict.)
        """
        return self._run(tensordict, tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._tolerant(lambda td: self._run(td, td), tensordict_reset)

    def _present(self, tensordict: TensorDictBase) -> list[tuple[NestedKey, NestedKey, Any]]:
        present = []
        tolerant = self.__dict__["_missing_tolerance"]
        for in_key, out_key in self._pairs:
            value = tensordict.get(in_key, None)
            if value is None:
                if tolerant:
                    continue
                raise KeyError(
                    f"VecNormV2: expected entry {in_key!r} in the tensordict, but it holds only "
                    f"{sorted(map(str, tensordict.keys(True, True)))}"
                )
            present.append((in_key, out_key, value))
        return present

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._run(tensordict, next_tensordict)

    def _run(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self.stateful:
            # the statistics enter the data even when no entry is there to update them
            self._stateless_stats(tensordict)
        present = self._present(next_tensordict)
        if not present:
            return next_tensordict
        lock = self.lock
        if lock is not None:
            lock.acquire()
        try:
            if self.stateful:
                self._stateful_step(next_tensordict, present)
            else:
                self._stateless_step(tensordict, next_tensordict, present)
        finally:
            if lock is not None:
                lock.release()
        return next_tensordict

    def _stateful_step(self, next_tensordict: TensorDictBase, present) -> None:
        batch_dims = next_tensordict.batch_dims
        reduce = self.reduce_batch_dims and batch_dims > 0
        decay, eps = self.decay, self.eps
        for in_key, _, value in present:
            if self._stats(in_key) is None:
                shape = value.shape[batch_dims:] if self.reduce_batch_dims else value.shape
                self._new_stats(in_key, shape, value.dtype, value.device)
        normed = []
        for in_key, out_key, value in present:
            loc, var, count = self._stats(in_key)
            if not self.frozen:
                x = value.detach().to(loc.dtype)
                if reduce:
                    dims = tuple(range(batch_dims))
                    n = next_tensordict.batch_size.numel()
                    count.add_(n)
                    mean, sq = x.mean(dims), x.pow(2).mean(dims)
                    weight = 1 - decay**n if decay != 1.0 else (n / count).to(loc.dtype)
                else:
                    count.add_(1)
                    mean, sq = x, x.pow(2)
                    weight = 1 - decay if decay != 1.0 else (1 / count).to(loc.dtype)
                loc.lerp_(mean, weight)
                var.lerp_(sq, weight)
            normed.append((out_key, _normalize(value, loc, var, count, decay, eps)))
        for out_key, value in normed:
            next_tensordict.set(out_key, value)

    def _stateless_step(
        self, tensordict: TensorDictBase, next_tensordict: TensorDictBase, present
    ) -> None:
        names = self._stat_names()
        stats = self._stateless_stats(tensordict)
        loc_td, var_td, count_td = (s.copy() for s in stats)
        decay, eps = self.decay, self.eps
        normed = []
        for in_key, out_key, value in present:
            loc, var, count = loc_td.get(in_key), var_td.get(in_key), count_td.get(in_key)
            if not self.frozen:
                x = value.to(loc.dtype)
                count = count + 1
                weight = 1 - decay if decay != 1.0 else (1 / count).to(loc.dtype)
                loc = loc.lerp(x, weight)
                var = var.lerp(x.pow(2), weight)
                loc_td.set(in_key, loc)
                var_td.set(in_key, var)
                count_td.set(in_key, count)
            normed.append((out_key, _normalize(value, loc, var, count, decay, eps)))
        for out_key, value in normed:
            next_tensordict.set(out_key, value)
        for name, td in zip(names, (loc_td, var_td, count_td)):
            next_tensordict.set(name, td)

    def _stat_names(self) -> tuple[str, str, str]:
        prefix = self.prefix
        return f"{prefix}_loc", f"{prefix}_var", f"{prefix}_count"

    def _stateless_stats(self, tensordict: TensorDictBase) -> list[TensorDictBase]:
        """The statistics carried by ``tensordict``, written into it when absent.

        Absent, they are zeros, as in TorchRL (the sub-envs of batched envs step on an input
        that holds their last outputs, these statistics included, so each continues its own).
        """
        names = self._stat_names()
        if names[0] in tensordict:
            return [tensordict.get(name) for name in names]
        self.__dict__["initialized"] = True
        shapes = {}
        specs = None
        for key, _ in self._pairs:
            value = tensordict.get(key, None)
            if value is not None:
                shapes[key] = (value.shape, value.dtype, value.device)
                continue
            if specs is None:
                specs = self._parent_leaf_specs(key, tensordict)
            leaf = specs.get(key)
            shapes[key] = (leaf.shape, leaf.dtype, leaf.device)
        batch = dict(batch_size=tensordict.batch_size, device=tensordict.device)
        loc, var, count = TensorDict(**batch), TensorDict(**batch), TensorDict(**batch)
        for key, (shape, dtype, device) in shapes.items():
            zeros = torch.zeros(shape, dtype=_float_dtype(dtype), device=device)
            loc.set(key, zeros)
            var.set(key, zeros.clone())
            count.set(key, torch.zeros(shape, dtype=torch.int64, device=device))
        for name, td in zip(names, (loc, var, count)):
            tensordict.set(name, td)
        return [loc, var, count]

    def _parent_leaf_specs(self, key: NestedKey, tensordict: TensorDictBase) -> dict:
        parent = self.parent
        if parent is None:
            raise KeyError(
                f"VecNormV2: entry {key!r} is missing from the tensordict (keys "
                f"{sorted(map(str, tensordict.keys(True, True)))}) and the transform has no env "
                "whose specs would give its shape"
            )
        specs = {}
        for part in ("full_observation_spec", "full_reward_spec"):
            spec = parent.output_spec[part]
            for k in spec.keys(True, True):
                specs[k] = spec[k]
        return specs

    # ----------------------------------------------------------------- specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self.stateful:
            self._init_from_specs(output_spec)
        observation_spec = self.transform_observation_spec(output_spec["full_observation_spec"])
        if "full_reward_spec" in output_spec:
            output_spec["full_reward_spec"] = self.transform_reward_spec(
                output_spec["full_reward_spec"], observation_spec
            )
        output_spec["full_observation_spec"] = observation_spec
        if "full_done_spec" in output_spec:
            output_spec["full_done_spec"] = self.transform_done_spec(output_spec["full_done_spec"])
        return output_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._transform_spec(observation_spec)

    def transform_reward_spec(
        self, reward_spec: Composite, observation_spec: Composite | None = None
    ) -> Composite:
        return self._transform_spec(reward_spec, observation_spec)

    def _transform_spec(self, spec: Composite, obs_spec: Composite | None = None) -> Composite:
        keys = set(spec.keys(True, True))
        in_specs = {}
        for in_key, out_key in self._pairs:
            if in_key in keys:
                converted = _continuous(spec[in_key])
                spec[out_key] = converted
                in_specs[in_key] = converted
        if self.stateful or not in_specs:
            return spec
        if obs_spec is None:
            obs_spec = spec
        for kind in _KINDS:
            name = f"{self.prefix}_{kind}"
            stats = obs_spec.get(name, None)
            if stats is None:
                stats = Composite(shape=obs_spec.shape, device=obs_spec.device)
            for key, leaf in in_specs.items():
                if kind == "count":
                    leaf = Unbounded(shape=leaf.shape, dtype=torch.int64, device=leaf.device)
                stats[key] = leaf.clone()
            obs_spec[name] = stats
        return spec

    # ------------------------------------------------------------ state dict
    # TorchRL's layout: an "initialized" buffer and one "_extra_state" entry mapping
    # "loc.-|-.<key>", "var.-|-.<key>", "count.-|-.<key>" to tensors. The statistics stay
    # buffers, so that EnvCreator can share them between workers.
    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        if not self.stateful:
            destination[prefix + "_extra_state"] = {}
            return
        initialized = self._buffers["initialized"]
        destination[prefix + "initialized"] = initialized if keep_vars else initialized.detach()
        extra = {}
        if not bool(initialized):
            warnings.warn(
                "Querying state_dict on an uninitialized VecNorm transform will return a `None` "
                "value for the summary statistics. Loading such a state_dict on an initialized "
                "VecNorm will result in an error.",
                stacklevel=2,
            )
        else:
            for i, kind in enumerate(_KINDS):
                for key, _ in self._pairs:
                    stats = self._stats(key)
                    if stats is not None:
                        value = stats[i]
                        extra[_SEP.join((kind, *as_tuple(key)))] = (
                            value if keep_vars else value.detach()
                        )
        destination[prefix + "_extra_state"] = extra

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        extra = state_dict.get(prefix + "_extra_state")
        if extra is None:
            if strict:
                missing_keys.append(prefix + "_extra_state")
            return
        if not self.stateful:
            return
        if not extra:
            if bool(self._buffers["initialized"]):
                raise RuntimeError(
                    "set_extra_state() called with a void state-dict while the instance is "
                    "initialized."
                )
            return
        stats = TensorDict({tuple(k.split(_SEP)): v for k, v in extra.items()})
        self._load_stats(stats, share=False, unexpected=unexpected_keys, prefix=prefix)

    def _load_stats(
        self, stats: TensorDictBase, share: bool, unexpected: list | None = None, prefix: str = ""
    ) -> None:
        """Sets the statistics from ``stats["loc" | "var" | "count", *key]``.

        ``share``: use the given tensors (``shared_data``); else copy them.
        """
        known = {unravel_key(k) for k, _ in self._pairs}
        for kind in _KINDS:
            if kind not in stats:
                raise KeyError(f"VecNormV2: the statistics lack the {kind!r} entries")
        for key in stats["loc"].keys(True, True):
            key = unravel_key(key)
            if key not in known:
                if unexpected is None:
                    raise KeyError(f"VecNormV2: statistics for {key!r}, which is not an in_key")
                unexpected.append(prefix + "_extra_state." + _SEP.join(("loc", *as_tuple(key))))
                continue
            given = [stats[(kind, *as_tuple(key))] for kind in _KINDS]
            current = self._stats(key)
            name = self._names[key]
            if current is None or share:
                for kind, value in zip(_KINDS, given):
                    self.register_buffer(f"{name}_{kind}", value if share else value.clone())
            else:
                for kind, mine, value in zip(_KINDS, current, given):
                    if mine.shape != value.shape:
                        raise RuntimeError(
                            f"VecNormV2: {kind} of {key!r} has shape {tuple(mine.shape)}, the "
                            f"state dict's has {tuple(value.shape)}"
                        )
                    mine.copy_(value)
            self._buffers["initialized"].fill_(True)

    # ------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        if state.get("lock") is not None:
            state["lock"] = None
            state["_lock_placeholder"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.pop("_lock_placeholder", False):
            import multiprocessing

            state["lock"] = multiprocessing.Lock()
        super().__setstate__(state)

    def __repr__(self) -> str:
        mode = "" if self.stateful else ", stateful=False"
        return f"VecNormV2(keys={self.in_keys}, decay={self.decay}, eps={self.eps}{mode})"


def _bias_correction(count: torch.Tensor, decay: float, dtype: torch.dtype) -> Any:
    if decay < 1.0:
        return (1 - (count * math.log(decay)).exp()).to(dtype)
    return 1


def _loc_scale(loc, var, count, decay: float, eps: float, dtype) -> tuple:
    correction = _bias_correction(count, decay, dtype)
    var = (var - loc.pow(2)) / correction
    return loc / correction, var.sqrt().clamp_min(eps)


def _normalize(value, loc, var, count, decay: float, eps: float) -> torch.Tensor:
    mean, scale = _loc_scale(loc, var, count, decay, eps, _float_dtype(value.dtype))
    return (value - mean) / scale


def _continuous(spec: TensorSpec) -> TensorSpec:
    """The spec of a normalised entry: unbounded, of a floating dtype."""
    if isinstance(spec, Unbounded) and spec.dtype.is_floating_point:
        return spec.clone()
    return Unbounded(shape=spec.shape, dtype=_float_dtype(spec.dtype), device=spec.device)
