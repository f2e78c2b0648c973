"""``Composite``: a (nested) mapping from keys to specs, describing a whole TensorDict.

A Composite's ``shape`` is the batch shape shared by its entries: every entry's shape starts with it.
``rand``/``zero`` return a :class:`~tensordict.TensorDict` with that batch size.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from torchenv.specs._base import TensorSpec
from torchenv.specs._composite_data import CompositeDataOps
from torchenv.specs._composite_names import CompositeNames
from torchenv.specs._composite_shape import CompositeShapeOps
from torchenv.specs._errors import SpecKeyError, SpecLockedError, SpecShapeError
from torchenv.specs._keys import ItemsView, KeysView, ValuesView
from torchenv.specs._torchrl import from_torchrl_spec, is_torchrl_spec
from torchenv.specs._utils import (
    DeviceLike,
    ShapeLike,
    prefix_match,
    to_device,
    to_size,
    unravel_key,
)
from torchenv.specs._validate import as_device, as_shape

_RESERVED = frozenset({"shape", "device", "dtype", "space"})
_NO_DEFAULT = object()


class Composite(CompositeNames, CompositeDataOps, CompositeShapeOps, TensorSpec):
    """A collection of specs, one per key; nested dicts or Composites give nested keys.

    Args:
        *args: at most one mapping ``{key: spec}`` (dict values become nested Composites).
        shape: the batch shape shared by all entries (default ``()``); ``batch_size`` is an alias.
        device: the device of all entries (default ``None``: entries keep their own).
        data_cls: accepted for TorchRL compatibility (the class ``rand``/``zero`` would build).
        step_mdp_static: accepted for TorchRL compatibility.
        names: optional names of the batch dims (stored, for TorchRL compatibility).
        **kwargs: more ``key=spec`` entries.

    >>> from torchenv.specs import Bounded, Unbounded
    >>> spec = Composite(obs=Unbounded(shape=(2, 3)), shape=(2,))
    >>> spec["nested", "action"] = Bounded(-1, 1, shape=(2, 1))
    >>> sorted(spec.keys(include_nested=True, leaves_only=True), key=str)
    [('nested', 'action'), 'obs']
    >>> spec.rand().batch_size
    torch.Size([2])
    >>> spec.is_in(spec.zero())
    True
    """

    domain = "composite"

    def __init__(
        self,
        *args: Mapping[str, Any],
        shape: ShapeLike = None,
        device: DeviceLike = None,
        data_cls: type | None = None,
        step_mdp_static: bool = False,
        batch_size: ShapeLike = None,
        names: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if batch_size is not None:
            if shape is not None:
                raise TypeError("Composite: pass shape or batch_size, not both.")
            shape = batch_size
        self._specs: dict[str, TensorSpec | None] = {}
        self._set_shape(as_shape("Composite", shape))
        self._device = to_device(as_device("Composite", device)) if device is not None else None
        self._locked = False
        self.data_cls = data_cls
        self.step_mdp_static = step_mdp_static
        self._names = None
        if len(args) > 1:
            raise TypeError(
                f"Composite takes at most one mapping of specs, got {len(args)} positional arguments."
            )
        if args:
            entries = args[0]
            if not isinstance(entries, Mapping) and not isinstance(entries, Composite):
                raise TypeError(
                    f"Composite expects a mapping of specs, got {type(entries).__name__}."
                )
            for key, value in entries.items():
                self[key] = value
        for key, value in kwargs.items():
            self[key] = value
        if names is not None:
            self.names = names

    # ------------------------------------------------------------------ attributes
    @property
    def device(self) -> torch.device | None:
        """The device of every entry, or ``None`` when entries may differ."""
        return self._device

    @device.setter
    def device(self, device: DeviceLike) -> None:
        self._check_unlocked("set the device of")
        device = to_device(device)
        if device is not None:
            for key, value in self._specs.items():
                if value is not None and value.device != device:
                    self._specs[key] = value.to(device)
        self._device = device

    @property
    def batch_size(self) -> torch.Size:
        """Alias of :attr:`shape`."""
        return self.shape

    @batch_size.setter
    def batch_size(self, value: ShapeLike) -> None:
        self.shape = value

    @property
    def dtype(self) -> torch.dtype | None:  # type: ignore[override]
        """The dtype shared by all leaves, or ``None`` when they differ or there are none."""
        dtypes = {v.dtype for v in self.values(True, True) if v is not None}
        return dtypes.pop() if len(dtypes) == 1 else None

    @property
    def space(self) -> None:
        return None

    @property
    def is_locked(self) -> bool:
        """Whether the Composite refuses modifications."""
        return self._locked

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        if value:
            self.lock_()
        else:
            self.unlock_()

    locked = is_locked

    def lock_(self, recurse: bool = True) -> Composite:
        """Locks the Composite (and, with ``recurse``, every nested Composite) against modification."""
        self._locked = True
        if recurse:
            for value in self._specs.values():
                if isinstance(value, Composite):
                    value.lock_(recurse=True)
        return self

    def unlock_(self, recurse: bool = True) -> Composite:
        """Unlocks the Composite (and, with ``recurse``, every nested Composite)."""
        self._locked = False
        if recurse:
            for value in self._specs.values():
                if isinstance(value, Composite):
                    value.unlock_(recurse=True)
        return self

    def _check_unlocked(self, action: str = "modify") -> None:
        if self._locked:
            raise SpecLockedError(f"Cannot {action} a locked Composite. Call spec.unlock_() first.")

    # ------------------------------------------------------------------ mapping access
    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return self._specs[key]
            except KeyError:
                raise self._missing(key) from None
        if isinstance(key, tuple) and key and all(isinstance(k, (str, tuple)) for k in key):
            key = unravel_key(key)
            if isinstance(key, str):
                return self[key]
            node: Any = self
            for i, sub in enumerate(key):
                if not isinstance(node, Composite):
                    raise SpecKeyError(
                        f"key {key!r} not found: entry {key[:i]!r} is a {type(node).__name__}, not a Composite"
                    )
                try:
                    node = node._specs[sub]
                except KeyError:
                    raise self._missing(key) from None
            return node
        return self._index(key)

    def _missing(self, key: Any) -> SpecKeyError:
        keys = sorted(map(str, self.keys(True)))
        return SpecKeyError(f"key {key!r} not found in Composite; available keys: {keys}")

    def get(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """``spec[key]``, or ``default`` when the key is absent."""
        try:
            return self[key]
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, tuple):
            key = unravel_key(key)
            if isinstance(key, tuple):
                node = self
                for sub in key[:-1]:
                    child = node._specs.get(sub)
                    if child is None:
                        child = Composite(shape=node.shape, device=node._device)
                        node.set(sub, child)
                    elif not isinstance(child, Composite):
                        raise SpecKeyError(
                            f"cannot set {key!r}: entry {sub!r} is a {type(child).__name__}, not a Composite"
                        )
                    node = child
                node[key[-1]] = value
                return
        if not isinstance(key, str):
            raise TypeError(
                f"Composite keys are strings or tuples of strings, got {type(key).__name__}: {key!r}."
            )
        if key in _RESERVED:
            raise AttributeError(f"Composite[{key!r}] cannot be set: {key!r} is a reserved name.")
        if isinstance(value, Mapping) and not isinstance(value, TensorSpec):
            value = Composite(value, shape=self.shape, device=self._device)
        self.set(key, value)

    def set(self, name: Any, spec: TensorSpec | None) -> Composite:
        """Sets entry ``name`` (its shape must start with the Composite's shape); returns ``self``."""
        if not isinstance(name, str):
            self[name] = spec
            return self
        self._check_unlocked("set an entry of")
        if spec is not None:
            if not isinstance(spec, TensorSpec) and is_torchrl_spec(spec):
                spec = from_torchrl_spec(spec)  # a TorchRL transform adding its own spec
            elif not isinstance(spec, TensorSpec):
                raise TypeError(
                    f"Composite entry {name!r} must be a TensorSpec, got {type(spec).__name__}."
                )
            if self._device is not None and spec.device != self._device:
                spec = (
                    spec.to(self._device)
                    if spec.device is not None
                    else _with_device(spec, self._device)
                )
            if not prefix_match(self.shape, spec.shape):
                spec = self._fit_shape(name, spec)
        self._specs[name] = spec
        return self

    def _fit_shape(self, name: str, spec: TensorSpec) -> TensorSpec:
        """Extends a Composite/NonTensor entry whose shape is a prefix of ours to our shape."""
        from torchenv.specs._nontensor import NonTensor

        if (
            isinstance(spec, (Composite, NonTensor))
            and len(spec.shape) < self._ndim
            and prefix_match(spec.shape, self.shape)
        ):
            spec = spec.clone()
            if isinstance(spec, Composite):
                spec._reset_shape(self.shape)
            else:
                spec._set_shape(self.shape)
                spec._refresh()
            return spec
        raise SpecShapeError(
            f"cannot set {name!r}: the shape of {type(spec).__name__} {list(spec.shape)} must start "
            f"with the Composite's shape {list(self.shape)}"
        )

    def _reset_shape(self, shape: torch.Size) -> None:
        for key, value in self._specs.items():
            if isinstance(value, Composite) and not prefix_match(shape, value.shape):
                value._reset_shape(shape)
            elif value is not None and not prefix_match(shape, value.shape):
                raise SpecShapeError(
                    f"cannot set the shape of the Composite to {list(shape)}: entry {key!r} has shape "
                    f"{list(value.shape)}"
                )
        self._set_shape(torch.Size(shape))

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        return self._shape

    @shape.setter
    def shape(self, value: ShapeLike) -> None:
        self._check_unlocked("change the shape of")
        self._reset_shape(to_size(value))

    def _set_shape(self, shape: torch.Size) -> None:
        self._shape = shape
        self._sshape = tuple(1 if s < 0 else s for s in shape)
        self._ndim = len(shape)
        self._dynamic = any(s < 0 for s in shape)

    def __delitem__(self, key: Any) -> None:
        key = unravel_key(key)
        if isinstance(key, tuple):
            parent = self[key[:-1]]
            del parent[key[-1]]
            return
        self._check_unlocked("delete an entry of")
        if key not in self._specs:
            raise self._missing(key)
        del self._specs[key]

    def pop(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """Removes ``key`` and returns its spec (or ``default`` when absent)."""
        try:
            value = self[key]
        except KeyError:
            if default is _NO_DEFAULT:
                raise
            return default
        del self[key]
        return value

    def __iter__(self):
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def _memo_children(self) -> tuple[TensorSpec, ...]:
        return tuple(spec for spec in self._specs.values() if spec is not None)

    def __contains__(self, key: Any) -> bool:
        return key in self.keys(include_nested=isinstance(key, tuple))

    def keys(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
        step_mdp_static_only: bool = False,
    ) -> KeysView:
        """The keys; nested keys (tuples) with ``include_nested``, only non-Composite ones with ``leaves_only``."""
        return KeysView(self, include_nested, leaves_only, is_leaf)

    def values(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> ValuesView:
        """The specs, in the order of :meth:`keys`."""
        return ValuesView(self, include_nested, leaves_only, is_leaf)

    def items(
        self,
        include_nested: bool = False,
        leaves_only: bool = False,
        *,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> ItemsView:
        """``(key, spec)`` pairs, in the order of :meth:`keys`."""
        return ItemsView(self, include_nested, leaves_only, is_leaf)

    def update(self, dict_or_spec: Mapping[str, Any] | Composite) -> Composite:
        """Sets every entry of ``dict_or_spec``; nested Composites are updated recursively."""
        for key, value in dict_or_spec.items():
            current = self.get(key, None)
            if isinstance(current, Composite) and isinstance(value, (Composite, Mapping)):
                current.update(value)
                continue
            self[key] = value
        return self

    def separates(self, *keys: Any, default: Any = None) -> Composite | None:
        """Removes ``keys`` and returns them in a new Composite (``None`` when none was present).

        Missing keys are skipped unless ``default`` is given a non-``None`` value (stored instead).
        """
        out = None
        for key in keys:
            value = self.pop(key, default)
            if value is None:
                continue
            if out is None:
                out = self.empty()
            out[key] = value
        return out

    def empty(self) -> Composite:
        """A Composite with the same shape and device and no entries."""
        return Composite(shape=self.shape, device=self._device, data_cls=self.data_cls)

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether there are no entries (with ``recurse``: no leaf anywhere below)."""
        if not recurse:
            return not self._specs
        return not any(True for _ in self.keys(True, True))

    def select(self, *keys: Any, strict: bool = True) -> Composite:
        """A new Composite with only ``keys`` (nested keys allowed); missing keys raise when ``strict``."""
        out = self.empty()
        for key in keys:
            try:
                value = self[key]
            except KeyError:
                if strict:
                    raise
                continue
            out[key] = value
        return out

    def exclude(self, *keys: Any) -> Composite:
        """A copy without ``keys`` (nested keys allowed; missing ones are ignored)."""
        out = self.clone()
        out.unlock_()
        for key in keys:
            if key in out.keys(include_nested=True):
                del out[key]
        return out

    # ------------------------------------------------------------------ copies and moves
    def _map(
        self,
        fn: Callable[[TensorSpec], TensorSpec],
        shape: torch.Size | None = None,
        device: Any = _NO_DEFAULT,
    ) -> Composite:
        out = Composite.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._specs = {k: (fn(v) if v is not None else None) for k, v in self._specs.items()}
        if shape is not None:
            out._set_shape(torch.Size(shape))
        if device is not _NO_DEFAULT:
            out._device = device
        out._locked = False
        return out

    def clone(self) -> Composite:
        """A deep copy (unlocked)."""
        return self._map(lambda s: s.clone())

    def __deepcopy__(self, memo: dict) -> Composite:
        return self.clone()

    def __copy__(self) -> Composite:
        return self._map(lambda s: s)

    def to(self, dest: DeviceLike | torch.dtype) -> Composite:
        """A copy with every entry moved to a device (or cast to a dtype)."""
        if isinstance(dest, torch.dtype):
            return self._map(lambda s: s.to(dest))
        device = to_device(dest)
        if device == self._device:
            return self
        return self._map(lambda s: s.to(device), device=device)

    def clear_device_(self) -> Composite:
        """Sets the device of this Composite and every nested one to ``None`` (leaves keep theirs)."""
        self._device = None
        for value in self._specs.values():
            if value is not None:
                value.clear_device_()
        return self

    # ------------------------------------------------------------------ comparison / display
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Composite) or type(other) is not type(self):
            return False
        if self.shape != other.shape or self._device != other._device:
            return False
        if self._specs.keys() != other._specs.keys():
            return False
        return all(v == other._specs[k] for k, v in self._specs.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        lines = [f"{key}: {value!r}" for key, value in self._specs.items()]
        lines += [
            f"device={self._device}",
            f"shape={self.shape}",
            f"data_cls={getattr(self.data_cls, '__name__', None)}",
        ]
        body = ",\n".join(lines).replace("\n", "\n    ")
        return f"{type(self).__name__}(\n    {body})"

    def cardinality(self) -> int:
        out = 1
        for value in self.values(True, True):
            if value is not None:
                out *= value.cardinality()
        return out


def _with_device(spec: TensorSpec, device: torch.device) -> TensorSpec:
    spec = spec.clone()
    spec.device = device
    return spec
