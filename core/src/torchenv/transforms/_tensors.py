"""Element-wise and tensor-combining transforms: CatTensors, Stack, ClipTransform,
SignTransform, UnaryTransform, Hash, ExpandAs."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.specs import Binary, Bounded, Categorical, Composite, TensorSpec, Unbounded
from torchenv.transforms._base import Transform, _normalize_keys

__all__ = [
    "CatTensors",
    "ClipTransform",
    "ExpandAs",
    "Hash",
    "SignTransform",
    "Stack",
    "UnaryTransform",
]

_OUT_PARTS = ("full_observation_spec", "full_reward_spec")


def _combine_specs(
    specs: list[TensorSpec], fn: Callable[[list[torch.Tensor]], torch.Tensor]
) -> TensorSpec:
    """The spec of ``fn([x_1, ..., x_n])`` for ``x_i`` in ``specs[i]``."""
    first = specs[0]
    dtype, device = first.dtype, first.device
    if all(isinstance(s, Bounded) for s in specs):
        low = fn([s.space.low for s in specs])
        high = fn([s.space.high for s in specs])
        return Bounded(low, high, shape=low.shape, dtype=dtype, device=device)
    shape = fn([s.zero() for s in specs]).shape
    if all(isinstance(s, Categorical) and s.space.n == first.space.n for s in specs):
        return Categorical(first.space.n, shape=shape, dtype=dtype, device=device)
    if all(isinstance(s, Binary) for s in specs):
        return Binary(shape=shape, dtype=dtype, device=device)
    return Unbounded(shape=shape, dtype=dtype, device=device)


def _gather(
    transform: Transform, tensordict: TensorDictBase, keys: Sequence[NestedKey]
) -> list[torch.Tensor] | None:
    """The entries ``keys`` of ``tensordict``; ``None`` if one is missing and tolerated."""
    values = []
    for key in keys:
        value = transform._require(tensordict, key)
        if value is None:
            return None
        values.append(value)
    return values


class CatTensors(Transform):
    """Concatenates entries into one along ``dim`` (and removes them, unless ``del_keys=False``).

    Args:
        in_keys: the entries. Defaults, in an env, to all observation entries.
        out_key: the result. Defaults to ``"observation_vector"``.
        dim: the (negative) dim of the concatenation.

    Keyword Args:
        del_keys: remove the concatenated entries. Defaults to ``True``.
        unsqueeze_if_needed: add a trailing dim to entries of batch shape only.
        sort: concatenate in sorted key order. Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = CatTensors(["a", "b"], "ab")
        >>> t(TensorDict(a=torch.zeros(2), b=torch.ones(1)))["ab"]
        tensor([0., 0., 1.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey = "observation_vector",
        dim: int = -1,
        *,
        del_keys: bool = True,
        unsqueeze_if_needed: bool = True,
        sort: bool = True,
    ) -> None:
        if dim >= 0:
            raise ValueError(f"CatTensors: dim must be negative, got {dim}")
        keys = _normalize_keys(in_keys)
        if keys is not None and sort:
            keys = sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)
        super().__init__(keys, [out_key])
        self.__dict__["_out_keys"] = _normalize_keys([out_key])
        self.out_key = self.out_keys[0]
        self.dim = dim
        self.del_keys = del_keys
        self.unsqueeze_if_needed = unsqueeze_if_needed
        self.sort = sort

    @property
    def in_keys(self) -> list[NestedKey]:
        keys = self.__dict__.get("_in_keys")
        if keys is None:
            parent = self.parent
            if parent is None:
                return []
            keys = [k for k in parent.full_observation_spec.keys(True, True)]
            if self.sort:
                keys = sorted(keys, key=lambda k: (k,) if isinstance(k, str) else k)
            self.__dict__["_in_keys"] = keys
        return keys

    @in_keys.setter
    def in_keys(self, value) -> None:
        self.__dict__["_in_keys"] = _normalize_keys(value)

    def _gather(self, tensordict: TensorDictBase) -> list[torch.Tensor] | None:
        values = _gather(self, tensordict, self.in_keys)
        if values is not None and self.unsqueeze_if_needed:
            batch_dims = tensordict.batch_dims
            values = [v.unsqueeze(-1) if v.ndim == batch_dims else v for v in values]
        return values

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = self._gather(next_tensordict)
        if values is None:
            return next_tensordict
        next_tensordict.set(self.out_key, torch.cat(values, self.dim))
        if self.del_keys:
            next_tensordict = next_tensordict.exclude(
                *[k for k in self.in_keys if k != self.out_key]
            )
        return next_tensordict

    forward = _call

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        keys = set(observation_spec.keys(True, True))
        missing = [k for k in self.in_keys if k not in keys]
        if missing:
            raise KeyError(f"CatTensors: entries {missing} are not in the observation spec")
        batch_dims = len(observation_spec.shape)
        specs = []
        for key in self.in_keys:
            spec = observation_spec[key]
            if self.unsqueeze_if_needed and len(spec.shape) == batch_dims:
                spec = spec.unsqueeze(-1)
            specs.append(spec)
        out = _combine_specs(specs, lambda xs: torch.cat(xs, self.dim))
        if self.del_keys:
            for key in self.in_keys:
                del observation_spec[key]
        observation_spec[self.out_key] = out
        return observation_spec

    def __repr__(self) -> str:
        return f"CatTensors(in_keys={self.__dict__.get('_in_keys')}, out_key={self.out_key!r}, dim={self.dim})"


class Stack(Transform):
    """Stacks entries into one along a new ``dim``; the inverse unbinds it.

    Args:
        in_keys: the entries to stack.
        out_key: the result.
        in_key_inv: the stacked input entry (as written by the policy).
        out_keys_inv: the entries it is unbound into for the base env.
        dim: the (negative) dim of the stack.

    Keyword Args:
        del_keys: remove the stacked entries. Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> Stack(["a", "b"], "ab")(TensorDict(a=torch.zeros(2), b=torch.ones(2)))["ab"].shape
        torch.Size([2, 2])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_key: NestedKey,
        in_key_inv: NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        dim: int = -1,
        allow_positive_dim: bool = False,
        *,
        del_keys: bool = True,
    ) -> None:
        if dim >= 0 and not allow_positive_dim:
            raise ValueError(f"Stack: dim must be negative, got {dim}")
        if (in_key_inv is None) != (out_keys_inv is None):
            raise ValueError("Stack: give both in_key_inv and out_keys_inv, or neither")
        super().__init__(in_keys, [out_key])
        self.__dict__["_out_keys"] = _normalize_keys([out_key])
        self.out_key = self.out_keys[0]
        self.in_key_inv = _normalize_keys([in_key_inv])[0] if in_key_inv is not None else None
        self._unbound_keys = _normalize_keys(out_keys_inv) or []
        self.dim = dim
        self.del_keys = del_keys

    @property
    def _has_inverse(self) -> bool:
        return self.in_key_inv is not None

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        values = _gather(self, next_tensordict, self.in_keys)
        if values is None:
            return next_tensordict
        next_tensordict.set(self.out_key, torch.stack(values, self.dim))
        if self.del_keys:
            next_tensordict = next_tensordict.exclude(*self.in_keys)
        return next_tensordict

    forward = _call

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.in_key_inv is None:
            return tensordict
        value = tensordict.get(self.in_key_inv, None)
        if value is None:
            if self.missing_tolerance:
                return tensordict
            raise KeyError(f"Stack: entry {self.in_key_inv!r} not found")
        parts = value.unbind(self.dim)
        if len(parts) != len(self._unbound_keys):
            raise ValueError(
                f"Stack: {self.in_key_inv!r} has {len(parts)} elements along dim {self.dim}, "
                f"expected {len(self._unbound_keys)} ({self._unbound_keys})"
            )
        for key, part in zip(self._unbound_keys, parts):
            tensordict.set(key, part)
        if self.del_keys:
            tensordict = tensordict.exclude(self.in_key_inv)
        return tensordict

    def _stack_spec(self, spec: Composite, keys: list[NestedKey], out_key: NestedKey) -> Composite:
        present = set(spec.keys(True, True))
        if not all(k in present for k in keys):
            return spec
        out = _combine_specs([spec[k] for k in keys], lambda xs: torch.stack(xs, self.dim))
        if self.del_keys:
            for key in keys:
                del spec[key]
        spec[out_key] = out
        return spec

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for name in _OUT_PARTS + ("full_done_spec",):
            self._stack_spec(output_spec[name], self.in_keys, self.out_key)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self.in_key_inv is not None:
            for name in ("full_action_spec", "full_state_spec"):
                self._stack_spec(input_spec[name], self._unbound_keys, self.in_key_inv)
        return input_spec

    def __repr__(self) -> str:
        return f"Stack(in_keys={self.in_keys}, out_key={self.out_key!r}, dim={self.dim})"


class ClipTransform(Transform):
    """Clips entries to ``[low, high]``: outputs through ``in_keys``, inputs through ``in_keys_inv``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ClipTransform(["obs"], low=-1.0, high=1.0)
        >>> t(TensorDict(obs=torch.tensor([-3.0, 0.5, 3.0])))["obs"]
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        low: float | None = None,
        high: float | None = None,
    ) -> None:
        super().__init__(in_keys or [], out_keys, in_keys_inv or [], out_keys_inv)
        if low is None and high is None:
            raise TypeError("ClipTransform needs low, high or both")
        for name, value in (("low", low), ("high", high)):
            if value is not None and torch.as_tensor(value).numel() != 1:
                raise TypeError(f"ClipTransform: {name} must be a scalar, got {value!r}")
        if low is not None and high is not None and low >= high:
            raise ValueError(f"ClipTransform: low ({low}) must be lower than high ({high})")
        self.low = None if low is None else float(low)
        self.high = None if high is None else float(high)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.clamp(self.low, self.high)

    _inv_apply_transform = _apply_transform

    def _leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        low = self.low
        high = self.high
        if isinstance(spec, Bounded):  # the spec's bounds, clipped to [self.low, self.high]
            low = spec.space.low if low is None else spec.space.low.clamp(self.low, self.high)
            high = spec.space.high if high is None else spec.space.high.clamp(self.low, self.high)
            return Bounded(low, high, shape=spec.shape, dtype=spec.dtype, device=spec.device)
        finfo = torch.finfo(spec.dtype) if spec.dtype.is_floating_point else torch.iinfo(spec.dtype)
        low = finfo.min if low is None else low
        high = finfo.max if high is None else high
        return Bounded(low, high, shape=spec.shape, dtype=spec.dtype, device=spec.device)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_output_specs(output_spec, self._leaf_spec)

    def __repr__(self) -> str:
        return f"ClipTransform(low={self.low}, high={self.high}, keys={self.in_keys}, keys_inv={self.in_keys_inv})"


class SignTransform(Transform):
    """Replaces entries by their sign (-1, 0 or 1), forward and/or inverse.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> SignTransform(["obs"])(TensorDict(obs=torch.tensor([-3.0, 0.0, 2.0])))["obs"]
        tensor([-1.,  0.,  1.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or [], out_keys, in_keys_inv or [], out_keys_inv)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return obs.sign()

    _inv_apply_transform = _apply_transform

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_output_specs(output_spec, self._leaf_spec)

    @staticmethod
    def _leaf_spec(spec: TensorSpec) -> TensorSpec:
        return Bounded(-1.0, 1.0, shape=spec.shape, dtype=spec.dtype, device=spec.device)


def _unwrap_nontensor(value: Any) -> Any:
    if isinstance(value, (NonTensorData, NonTensorStack)):
        return value.tolist()
    return value


class UnaryTransform(Transform):
    """Applies ``fn`` to entries (and ``inv_fn`` to inverse entries).

    The output spec is found by calling ``fn`` on a zero of the input spec.

    Args:
        in_keys: as for :class:`Transform`.
        out_keys: as for :class:`Transform`.
        in_keys_inv: as for :class:`Transform`.
        out_keys_inv: as for :class:`Transform`.

    Keyword Args:
        fn: the function applied forward.
        inv_fn: the function applied on the inverse path. Defaults to the identity.
        use_raw_nontensor: pass non-tensor data wrappers to ``fn`` as they are.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = UnaryTransform(["obs"], ["obs2"], fn=lambda x: x * 2)
        >>> t(TensorDict(obs=torch.ones(2)))["obs2"]
        tensor([2., 2.])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        fn: Callable[[Any], Any],
        inv_fn: Callable[[Any], Any] | None = None,
        use_raw_nontensor: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv or [], out_keys_inv)
        self._fn = fn
        self._inv_fn = inv_fn
        self.use_raw_nontensor = use_raw_nontensor

    def _apply_transform(self, value: Any) -> Any:
        if not self.use_raw_nontensor:
            value = _unwrap_nontensor(value)
        return self._fn(value)

    def _inv_apply_transform(self, value: Any) -> Any:
        if self._inv_fn is None:
            return value
        if not self.use_raw_nontensor:
            value = _unwrap_nontensor(value)
        return self._inv_fn(value)

    def _spec_of(self, spec: TensorSpec, fn) -> TensorSpec:
        out = fn(spec.zero())
        if not isinstance(out, torch.Tensor):
            raise TypeError(
                f"{type(self).__name__}: fn must map tensors to tensors in an env, got {type(out).__name__}"
            )
        return Unbounded(shape=out.shape, dtype=out.dtype, device=spec.device)

    def _forward_spec(self, spec: TensorSpec) -> TensorSpec:
        return self._spec_of(spec, self._apply_transform)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_output_specs(output_spec, self._forward_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        # the outer spec is unknown in general: the policy writes what fn produced
        return self._map_input_specs(input_spec, self._forward_spec)


class Hash(UnaryTransform):
    """Writes a hash of entries: by default the 32-byte SHA-256 of each element (``uint8``).

    Tensors are hashed per element of the TensorDict's batch; strings are hashed one by one.
    With inverse keys, a repertoire maps hashes back to the hashed inputs.

    Keyword Args:
        hash_fn: ``(value[, seed]) -> Tensor`` replacing the default hash.
        seed: passed to ``hash_fn`` (and mixed into the default hash).
        repertoire: a dict filled with ``hash -> input`` (created with inverse keys).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Hash(["obs"], ["obs_hash"])
        >>> t(TensorDict(obs=torch.ones(4, 3), batch_size=[4]))["obs_hash"].shape
        torch.Size([4, 32])
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        hash_fn: Callable | None = None,
        seed: Any | None = None,
        use_raw_nontensor: bool = False,
        repertoire: dict | None = None,
    ) -> None:
        super().__init__(
            in_keys,
            out_keys,
            in_keys_inv,
            out_keys_inv,
            fn=self._hash,
            inv_fn=self.get_input_from_hash,
            use_raw_nontensor=use_raw_nontensor,
        )
        self._hash_fn = hash_fn
        self._seed = seed
        self._repertoire = {} if repertoire is None and in_keys_inv else repertoire
        self.__dict__["_batch_dims"] = 0

    @staticmethod
    def reproducible_hash(value: Any, seed: Any | None = None) -> torch.Tensor:
        """SHA-256 of ``value`` (bytes, str or tensor) as a ``uint8`` tensor of 32 elements."""
        h = hashlib.sha256()
        if seed is not None:
            h.update(str(seed).encode())
        if isinstance(value, torch.Tensor):
            h.update(value.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(value, bytes):
            h.update(value)
        else:
            h.update(str(value).encode())
        return torch.frombuffer(bytearray(h.digest()), dtype=torch.uint8)

    def _one(self, value: Any) -> torch.Tensor:
        if self._hash_fn is None:
            return self.reproducible_hash(value, self._seed)
        out = self._hash_fn(value) if self._seed is None else self._hash_fn(value, self._seed)
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"Hash: hash_fn must return a tensor, got {type(out).__name__}")
        return out

    def _hash(self, value: Any) -> torch.Tensor:
        batch_dims = self.__dict__["_batch_dims"]
        if isinstance(value, torch.Tensor):
            lead = value.shape[:batch_dims]
            items = list(value.reshape(-1, *value.shape[batch_dims:])) if batch_dims else [value]
        elif isinstance(value, list):
            lead, items = (len(value),), value
        else:
            lead, items = (), [value]
        hashes = [self._one(item) for item in items]
        if self._repertoire is not None:
            for item, h in zip(items, hashes):
                self._repertoire[tuple(h.tolist())] = item
        out = torch.stack(hashes)
        return out.reshape(*lead, *out.shape[1:])

    def get_input_from_hash(self, hash_tensor: torch.Tensor) -> Any:
        """The input whose hash is ``hash_tensor`` (needs a repertoire)."""
        if self._repertoire is None:
            raise RuntimeError(
                "Hash: the inverse needs a repertoire (pass in_keys_inv or repertoire=)"
            )
        if hash_tensor.ndim == 1:
            return self._repertoire.get(tuple(hash_tensor.tolist()))
        return [self.get_input_from_hash(h) for h in hash_tensor]

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        self.__dict__["_batch_dims"] = next_tensordict.batch_dims
        return super()._call(next_tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.__dict__["_batch_dims"] = tensordict.batch_dims
        return super().forward(tensordict)

    def _spec_of(self, spec: TensorSpec, fn) -> TensorSpec:
        parent = self.parent
        self.__dict__["_batch_dims"] = len(parent.batch_size) if parent is not None else 0
        return super()._spec_of(spec, fn)


_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")


class ExpandAs(Transform):
    """Expands one entry to the right to the shape of a reference entry.

    ``out = expand_as_right(td[in_key], td[ref_key])``: trailing singleton dims are added to
    the entry, then it is expanded to the reference's shape (e.g. an env-level ``"done"`` to the
    shape of a per-agent reward). In an env, the output spec is the input's spec expanded to the
    reference's spec shape; an expanded done entry written under a new key becomes an
    observation. At reset, a reference that is not there (a reward) is taken from its spec.
    TorchRL's transform of the same name.

    Args:
        in_key: the entry to expand.
        ref_key: the entry whose shape is the target.
        out_key: where the expanded entry is written. Defaults to ``in_key``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(done=torch.tensor([True, False]), reward=torch.zeros(2, 3), batch_size=[2])
        >>> ExpandAs("done", "reward")(td)["done"].tolist()
        [[True, True, True], [False, False, False]]
    """

    def __init__(
        self, in_key: NestedKey, ref_key: NestedKey, out_key: NestedKey | None = None
    ) -> None:
        if out_key is None:
            out_key = in_key
        super().__init__(in_keys=[in_key], out_keys=[out_key])
        self.in_key = unravel_key(in_key)
        self.ref_key = unravel_key(ref_key)
        self.out_key = unravel_key(out_key)

    def _expand(self, value: torch.Tensor, ref: torch.Tensor | torch.Size) -> torch.Tensor:
        shape = ref if isinstance(ref, torch.Size) else ref.shape
        if len(shape) < value.ndim or any(n != m and n != 1 for n, m in zip(value.shape, shape)):
            raise RuntimeError(
                f"ExpandAs: cannot expand {self.in_key!r} of shape {tuple(value.shape)} to the "
                f"shape of {self.ref_key!r}, {tuple(shape)}: each of its dims must match the "
                "reference's leading dims or be 1"
            )
        return value.reshape(*value.shape, *((1,) * (len(shape) - value.ndim))).expand(shape)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        ref = next_tensordict.get(self.ref_key, None)
        value = next_tensordict.get(self.in_key, None) if ref is not None else None
        if value is None:
            if self.__dict__["_missing_tolerance"]:
                return next_tensordict
            missing = self.ref_key if ref is None else self.in_key
            raise KeyError(
                f"ExpandAs: expected entry {missing!r} in the tensordict, but it holds only "
                f"{sorted(map(str, next_tensordict.keys(True, True)))}"
            )
        next_tensordict.set(self.out_key, self._expand(value, ref))
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        value = tensordict_reset.get(self.in_key, None)
        if value is None:
            return tensordict_reset
        ref = tensordict_reset.get(self.ref_key, None)
        if ref is not None:
            tensordict_reset.set(self.out_key, self._expand(value, ref))
            return tensordict_reset
        parent = self.parent
        found = self._find_key_spec(parent.output_spec, self.ref_key) if parent else None
        if found is None:
            tensordict_reset.set(self.out_key, value)
        else:
            tensordict_reset.set(self.out_key, self._expand(value, found[1].shape))
        return tensordict_reset

    @staticmethod
    def _find_key_spec(output_spec: Composite, key: NestedKey) -> tuple[str, TensorSpec] | None:
        for name in _OUTPUT_PARTS:
            spec = output_spec.get(name, None)
            if spec is not None and key in spec.keys(True, True):
                return name, spec[key]
        return None

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        found_ref = self._find_key_spec(output_spec, self.ref_key)
        found_in = self._find_key_spec(output_spec, self.in_key)
        for key, found in ((self.ref_key, found_ref), (self.in_key, found_in)):
            if found is None:
                raise KeyError(
                    f"ExpandAs: key {key!r} was not found in the output specs (observation, "
                    "reward and done specs) of the env"
                )
        ref_spec = found_ref[1]
        part, in_spec = found_in[0], found_in[1].clone()
        if part == "full_done_spec" and self.out_key != self.in_key:
            part = "full_observation_spec"
        while len(in_spec.shape) < len(ref_spec.shape):
            in_spec = in_spec.unsqueeze(-1)
        output_spec[part][self.out_key] = in_spec.expand(ref_spec.shape)
        return output_spec

    def __repr__(self) -> str:
        return (
            f"ExpandAs(in_key={self.in_key!r}, ref_key={self.ref_key!r}, out_key={self.out_key!r})"
        )
