"""``TensorSpec``: the base class of every spec, with the shape/device/dtype machinery they share.

A leaf spec describes one tensor: its ``shape`` (batch dims included), ``dtype``, ``device`` and the
``space`` its values come from. Subclasses implement ``rand``, ``is_in``, ``_project`` and, for error
messages, ``_explain_values``. Tensors that follow the spec's shape (Bounded's ``low``/``high``, masks)
are named in ``_tensor_attrs``; the shape operations here (expand, index, squeeze, unsqueeze, unbind,
stack, ``to``, ``clone``) apply to them generically.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from torchenv.specs._errors import (
    SpecEncodeError,
    SpecIndexError,
    SpecIndexTypeError,
    SpecShapeError,
    SpecTypeError,
    SpecValueError,
)
from torchenv.specs._rng import takes_generator, with_generator_kwarg
from torchenv.specs._utils import (
    DeviceLike,
    batch_shape,
    copy_if_negative_strides,
    normalize_dim,
    safe_shape,
    to_device,
    to_size,
    trailing_match,
)

_CPU = torch.device("cpu")


def _meta_shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(safe_shape(torch.Size(shape)))


_INDEX_TYPES = (
    int,
    slice,
    type(None),
    type(Ellipsis),
    torch.Tensor,
    list,
    range,
    np.ndarray,
    np.integer,
)


def _normalize_index(idx: Any, ndim: int) -> tuple:
    """Index as a tuple without Ellipsis (expanded to full slices over ``ndim`` dims)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    for i in idx:
        if not isinstance(i, _INDEX_TYPES):
            raise SpecIndexTypeError(
                f"invalid index {i!r} of type {type(i).__name__} for a spec: use ints, slices, "
                "None, Ellipsis, or integer/bool tensors, arrays or lists"
            )
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if any(i is Ellipsis for i in idx):
        pos = next(j for j, i in enumerate(idx) if i is Ellipsis)
        used = sum(1 for i in idx if i is not None and i is not Ellipsis)
        fill = (slice(None),) * max(ndim - used, 0)
        idx = idx[:pos] + fill + idx[pos + 1 :]
    return idx


def _check_index_bounds(shape: torch.Size, idx: tuple) -> None:
    """Raises ``IndexError`` for an integer array index with an entry outside its dim, as a
    tensor would (the shape computation below runs on a meta tensor, which reads no index)."""
    dim = 0
    for i in idx:
        if i is None:
            continue
        if isinstance(i, (torch.Tensor, np.ndarray, list, range)):
            t = i if isinstance(i, torch.Tensor) else torch.as_tensor(np.asarray(i))
            if t.dtype == torch.bool:
                dim += max(t.ndim, 1)
                continue
            if dim < len(shape) and shape[dim] >= 0 and t.numel():
                size = shape[dim]
                lo, hi = int(t.min()), int(t.max())
                if hi >= size or lo < -size:
                    bad = hi if hi >= size else lo
                    raise SpecIndexError(
                        f"index {bad} is out of bounds for dim {dim} with size {size}"
                    )
        dim += 1


def _index_shape(shape: torch.Size, idx: tuple) -> torch.Size:
    _check_index_bounds(shape, idx)
    dims = [s if s >= 0 else 1 for s in shape]
    out = torch.empty(dims, device="meta")[idx].shape
    return torch.Size(out)


class TensorSpec:
    """Base class of all specs.

    Attributes:
        shape (torch.Size): shape of the tensors the spec describes (leading batch dims included).
        dtype (torch.dtype): their dtype.
        device (torch.device): their device.
        domain (str): ``"continuous"``, ``"discrete"`` or ``"composite"``.

    >>> from torchenv.specs import Unbounded
    >>> spec = Unbounded(shape=(3,))
    >>> spec.rand().shape
    torch.Size([3])
    >>> spec.is_in(spec.zero())
    True
    """

    domain: ClassVar[str] = ""
    # tensors that follow the spec shape, with how many extra trailing dims they carry
    _tensor_attrs: ClassVar[dict[str, int]] = {}
    # non-tensor attributes compared by ``==`` and shown by ``repr``
    _meta_attrs: ClassVar[tuple[str, ...]] = ()
    # trailing dims that indexing / squeezing must leave alone (e.g. OneHot's category dim)
    _protected_dims: ClassVar[int] = 0
    # (dtype, device, zero tensor) used by ``zero()``; reset when the shape changes
    _zcache: tuple | None = None

    dtype: torch.dtype
    device: torch.device | None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        rand = cls.__dict__.get("rand")
        if callable(rand) and not takes_generator(rand):
            # a TorchRL-style ``rand(self, shape)``: give it the ``generator`` keyword
            cls.rand = with_generator_kwarg(rand)

    @property
    def shape(self) -> torch.Size:
        """The spec's shape; assigning it re-derives the cached sizes."""
        return self._shape

    @shape.setter
    def shape(self, value: Sequence[int]) -> None:
        self._set_shape(to_size(value))

    def _set_shape(self, shape: torch.Size) -> None:
        self._shape = shape
        self._zcache = None
        self._sshape = safe_shape(shape)
        self._ndim = len(shape)
        self._dynamic = any(s < 0 for s in shape)

    def _refresh(self) -> None:
        """Recomputes caches derived from the spec's tensors (override when there are some)."""

    # ------------------------------------------------------------------ basic attributes
    @property
    def ndim(self) -> int:
        """Number of dims of the spec."""
        return self._ndim

    def ndimension(self) -> int:
        return self._ndim

    @property
    def space(self) -> Any:
        return None

    @property
    def _safe_shape(self) -> torch.Size:
        return torch.Size(self._sshape)

    # ------------------------------------------------------------------ sampling
    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """A random value of the spec, with extra leading dims ``shape``, drawn from
        ``generator`` (torch's global generator when ``None``, as TorchRL's ``rand``)."""
        raise NotImplementedError(type(self).__name__)

    def sample(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Alias of :meth:`rand`."""
        return self.rand(shape, generator=generator)

    def zero(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        """A zero-filled value with extra leading dims ``shape`` (not always in the spec's space)."""
        if not shape:  # hot path (e.g. done flags at reset): clone a cached template
            cache = self._zcache
            if cache is not None and cache[0] is self.dtype and cache[1] is self.device:
                return cache[2].clone()
            template = torch.zeros(self._sshape, dtype=self.dtype, device=self.device)
            self._zcache = (self.dtype, self.device, template)
            return template.clone()
        return torch.zeros(batch_shape(shape) + self._sshape, dtype=self.dtype, device=self.device)

    def zeros(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        """Alias of :meth:`zero`."""
        return self.zero(shape)

    def one(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        """A one-filled value with extra leading dims ``shape``."""
        return torch.ones(batch_shape(shape) + self._sshape, dtype=self.dtype, device=self.device)

    def ones(self, shape: Sequence[int] | None = None) -> torch.Tensor:
        """Alias of :meth:`one`."""
        return self.one(shape)

    # ------------------------------------------------------------------ membership
    def _shape_ok(self, val_shape: torch.Size) -> bool:
        n = self._ndim
        if val_shape[len(val_shape) - n :] == self.shape and len(val_shape) >= n:
            return True
        return self._dynamic and trailing_match(self.shape, val_shape)

    def _layout_ok(self, val: Any) -> bool:
        """Whether ``val`` is a tensor of the spec's dtype whose shape ends with the spec's shape.

        The cheap first step of every leaf ``is_in`` (no value is read); callers then check the values.

        Args:
            val: any object.

        Returns:
            ``True`` when ``val`` is a :class:`torch.Tensor` with the right dtype and trailing shape.
        """
        try:
            vs = val.shape
            dtype = val.dtype
        except AttributeError:
            return False
        n = self._ndim
        if len(vs) < n or (vs[len(vs) - n :] != self._shape and not self._shape_ok(vs)):
            return False
        return dtype == self.dtype and isinstance(val, torch.Tensor)

    def is_in(self, val: Any) -> bool:
        """Whether ``val`` could have been produced by this spec (shape, dtype and range)."""
        raise NotImplementedError(type(self).__name__)

    def contains(self, val: Any) -> bool:
        """Alias of :meth:`is_in`."""
        return self.is_in(val)

    def _explain_values(self, val: torch.Tensor) -> str:
        """Why the values (shape and dtype being right) are not in the space."""
        return "values outside the spec's space"

    def _explain(self, val: Any) -> str:
        if not isinstance(val, torch.Tensor):
            return f"expected a torch.Tensor, got {type(val).__name__}"
        if not self._shape_ok(val.shape):
            return f"expected a shape ending with {list(self.shape)}, got shape {list(val.shape)}"
        if val.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got dtype {val.dtype}"
        return self._explain_values(val)

    def _short(self) -> str:
        return f"{type(self).__name__}(shape={list(self.shape)}, dtype={self.dtype})"

    def assert_is_in(self, value: Any, key: Any = None) -> None:
        """Raises :class:`SpecValueError` (an ``AssertionError``) naming the spec and value if ``value`` is not in it.

        >>> from torchenv.specs import Bounded
        >>> Bounded(0, 1, shape=(2,)).assert_is_in(torch.tensor([0.5, 2.0]))
        Traceback (most recent call last):
        ...
        torchenv.specs._errors.SpecValueError: value is not in Bounded... got max 2.0...
        """
        if self.is_in(value):
            return
        where = f" for key {key!r}" if key is not None else ""
        raise SpecValueError(
            f"value is not in {self._short()}{where}: {self._explain(value)}. "
            "Consider calling spec.project(value) first."
        )

    def type_check(self, value: torch.Tensor, key: Any = None) -> None:
        """Raises :class:`SpecTypeError` (a ``TypeError``) if ``value``'s dtype is not the spec's."""
        if not isinstance(value, torch.Tensor):
            raise SpecTypeError(
                f"{self._short()}{'' if key is None else f' for key {key!r}'}: expected a torch.Tensor, "
                f"got {type(value).__name__}"
            )
        if value.dtype != self.dtype:
            where = "" if key is None else f" for key {key!r}"
            raise SpecTypeError(
                f"value.dtype={value.dtype} but {type(self).__name__}.dtype={self.dtype}{where}"
            )

    def project(self, val: torch.Tensor) -> torch.Tensor:
        """Maps ``val`` into the spec's space; values already in it are returned unchanged."""
        if self.is_in(val):
            return val
        return self._project(val)

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(type(self).__name__)

    # ------------------------------------------------------------------ conversion
    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Builds a tensor of the spec from numpy arrays, lists, scalars or tensors.

        >>> from torchenv.specs import Unbounded
        >>> import numpy as np
        >>> Unbounded(shape=(2,)).encode(np.ones(2))
        tensor([1., 1.])
        """
        device = None if ignore_device else self.device
        if isinstance(val, torch.Tensor):
            out = val.to(dtype=self.dtype, device=device)
            if self._shape_ok(out.shape):
                return out
        else:
            # Arrays, lists and scalars have the spec's shape (or its number of elements), as in
            # TorchRL: leading batch dims need a spec expanded to them.
            out = torch.as_tensor(copy_if_negative_strides(val), dtype=self.dtype, device=device)
            if out.shape == self._sshape or (self._dynamic and self._shape_ok(out.shape)):
                return out
        if out.numel() == math.prod(self._sshape):
            return out.reshape(self._sshape)
        raise SpecEncodeError(
            f"Shape mismatch: cannot encode a value of shape {list(out.shape)} with "
            f"{self._short()} (an array or list needs the spec's shape or its number of "
            "elements; expand the spec for batched values)"
        )

    def memoize_encode(self, mode: bool = True) -> None:
        """TorchRL's switch for caching the encode path (composites apply it to every entry).

        :meth:`encode` here takes one direct path chosen by the spec's class, so there is nothing
        to cache: the switch is recorded in ``_encode_memoized`` and ``encode`` is unchanged.

        >>> from torchenv.specs import Unbounded
        >>> spec = Unbounded(2)
        >>> spec.memoize_encode()
        >>> spec.encode([1.0, 2.0])
        tensor([1., 2.])
        """
        self._encode_memoized = bool(mode)
        for sub in self._memo_children():
            sub.memoize_encode(mode)

    def _memo_children(self) -> tuple[TensorSpec, ...]:
        return ()

    def _checked(self, val: Any, safe: bool | None) -> Any:
        """``val``, after :meth:`assert_is_in` when ``safe`` (the identity conversions)."""
        if safe:
            self.assert_is_in(val)
        return val

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Converts ``val`` to a numpy array (checking it belongs to the spec when ``safe``)."""
        if safe:
            self.assert_is_in(val)
        return val.detach().cpu().numpy()

    # ------------------------------------------------------------------ copies and moves
    def _copy(self) -> TensorSpec:
        new = copy.copy(self)
        new.__dict__ = dict(self.__dict__)
        return new

    def _map_tensors(self, fn: Any) -> TensorSpec:
        new = self._copy()
        for name in self._tensor_attrs:
            t = getattr(self, name)
            if t is not None:
                new._set_tensor(name, fn(t))
        new._refresh()
        return new

    def _set_tensor(self, name: str, value: torch.Tensor) -> None:
        """Sets a shape-following tensor without re-deriving caches (callers ``_refresh`` after)."""
        setattr(self, name, value)

    def clone(self) -> TensorSpec:
        """A deep copy of the spec."""
        return self._map_tensors(torch.Tensor.clone)

    def __deepcopy__(self, memo: dict) -> TensorSpec:
        return self.clone()

    def to(self, dest: DeviceLike | torch.dtype) -> TensorSpec:
        """Returns the spec moved to a device, or cast to a dtype."""
        if isinstance(dest, torch.dtype):
            return self._to_dtype(dest)
        device = to_device(dest)
        if device == self.device:
            return self
        new = self._copy()
        new.device = device
        for name in self._tensor_attrs:
            t = getattr(self, name)
            if t is not None:
                new._set_tensor(name, t.to(device))
        new._refresh()
        return new

    def _to_dtype(self, dtype: torch.dtype) -> TensorSpec:
        if dtype == self.dtype:
            return self
        new = self._copy()
        new.dtype = dtype
        new._refresh()
        return new

    def cpu(self) -> TensorSpec:
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> TensorSpec:
        return self.to("cuda" if device is None else f"cuda:{device}")

    def clear_device_(self) -> TensorSpec:
        """No-op on leaf specs (they always carry a device); Composite overrides it."""
        return self

    # ------------------------------------------------------------------ shape operations
    def _reshaped(self, new_shape: torch.Size, fn: Any) -> TensorSpec:
        """Copy with shape ``new_shape``; ``fn(tensor, extra_trailing_dims)`` maps shape-following tensors."""
        new = self._copy()
        for name, extra in self._tensor_attrs.items():
            t = getattr(self, name)
            if t is not None:
                new._set_tensor(name, fn(t, extra))
        new._set_shape(torch.Size(new_shape))
        new._refresh()
        return new

    def _expand_target(self, shape: tuple, kind: str) -> torch.Size:
        """The shape that ``expand(*shape)`` produces, checked against the spec's own shape.

        Args:
            shape: the arguments of ``expand``: ints, or one sequence of ints.
            kind: how error messages name the spec (``"spec"``, ``"Composite"``).

        Returns:
            The full new shape; a ``-1`` in its last ``ndim`` dims keeps the spec's size there.

        Raises:
            SpecShapeError: if the shape has fewer dims than the spec, or its trailing dims do not
                match the spec's (sizes of 1 may be broadcast).
        """
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        new_shape = to_size(shape)
        nd = self._ndim
        if len(new_shape) < nd:
            raise SpecShapeError(
                f"cannot expand {self._short()} to shape {list(new_shape)}: it has fewer dims than the {kind}"
            )
        tail = new_shape[len(new_shape) - nd :]
        for old, new in zip(self.shape, tail):
            if old != new and old != 1 and new != -1:
                raise SpecShapeError(
                    f"cannot expand {self._short()} to shape {list(new_shape)}: the last {nd} dims must "
                    f"match the {kind}'s shape {list(self.shape)}"
                )
        return torch.Size(
            list(new_shape[: len(new_shape) - nd])
            + [o if n == -1 else n for o, n in zip(self.shape, tail)]
        )

    def expand(self, *shape: int | Sequence[int]) -> TensorSpec:
        """Returns the spec with extra leading dims (existing dims of size 1 may be broadcast).

        >>> from torchenv.specs import Unbounded
        >>> Unbounded(shape=(3,)).expand(2, 3).shape
        torch.Size([2, 3])
        """
        new_shape = self._expand_target(shape, "spec")
        nd = self._ndim
        safe = safe_shape(new_shape)
        lead = safe[: len(safe) - nd]
        body = safe[len(safe) - nd :]
        p = self._protected_dims

        def fn(t: torch.Tensor, extra: int) -> torch.Tensor:
            own = t.shape[: t.ndim - extra]
            dims = (*lead, *body[: nd - p], *own[nd - p :], *t.shape[t.ndim - extra :])
            return t.expand(*dims)

        return self._reshaped(new_shape, fn)

    def __getitem__(self, idx: Any) -> TensorSpec:
        """Indexes the spec's leading dims, like indexing a tensor of that shape.

        >>> from torchenv.specs import Unbounded
        >>> Unbounded(shape=(4, 3))[0].shape
        torch.Size([3])
        """
        idx = _normalize_index(idx, self._ndim - self._protected_dims)
        consumed = 0
        for i in idx:
            if i is None:
                continue
            consumed += i.ndim if isinstance(i, torch.Tensor) and i.dtype == torch.bool else 1
        if consumed > self._ndim - self._protected_dims:
            raise IndexError(
                f"cannot index {self._short()} with {idx}: only its first "
                f"{self._ndim - self._protected_dims} dims can be indexed"
            )
        new_shape = _index_shape(self.shape, idx)
        n_tail = self._ndim - consumed
        if n_tail:
            new_shape = torch.Size(
                new_shape[: len(new_shape) - n_tail] + self.shape[self._ndim - n_tail :]
            )
        return self._reshaped(new_shape, lambda t, extra: t[idx])

    def index(self, index: Any, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Indexes ``tensor_to_index`` with ``index`` (identity-shaped specs: plain tensor indexing)."""
        return tensor_to_index[index]

    def squeeze(self, dim: int | None = None) -> TensorSpec:
        """Removes dims of size 1 (all of them, or ``dim``).

        As in TorchRL, ``squeeze()`` leaves a spec with a single dim as it is (a ``(1,)`` reward
        spec stays ``(1,)``); ``squeeze(0)`` removes that dim.

        >>> from torchenv.specs import Unbounded
        >>> Unbounded((1, 3, 1)).squeeze().shape, Unbounded((1,)).squeeze().shape
        (torch.Size([3]), torch.Size([1]))
        """
        free = self._ndim - self._protected_dims
        if dim is None:
            if self._ndim == 1:
                return self
            dims = [i for i in range(free) if self.shape[i] == 1]
        else:
            d = normalize_dim(dim, self._ndim)
            if d >= free and self.shape[d] == 1:
                raise SpecShapeError(
                    f"cannot squeeze dim {dim} of {self._short()}: its last dim must remain unchanged"
                )
            dims = [d] if self.shape[d] == 1 else []
        if not dims:
            return self
        new_shape = torch.Size([s for i, s in enumerate(self.shape) if i not in dims])

        def fn(t: torch.Tensor, extra: int) -> torch.Tensor:
            for d in reversed(dims):
                t = t.squeeze(d)
            return t

        return self._reshaped(new_shape, fn)

    def unsqueeze(self, dim: int) -> TensorSpec:
        """Inserts a dim of size 1 at ``dim``."""
        d = normalize_dim(dim, self._ndim + 1)
        if d > self._ndim - self._protected_dims:
            raise SpecShapeError(
                f"cannot unsqueeze {self._short()} at dim {dim}: it is a protected dim"
            )
        new_shape = torch.Size([*self.shape[:d], 1, *self.shape[d:]])
        return self._reshaped(new_shape, lambda t, extra: t.unsqueeze(d))

    def unbind(self, dim: int = 0) -> tuple[TensorSpec, ...]:
        """Splits the spec along ``dim`` into ``shape[dim]`` specs."""
        d = normalize_dim(dim, self._ndim)
        if d >= self._ndim - self._protected_dims:
            raise SpecShapeError(f"cannot unbind {self._short()} along its protected dim {dim}")
        if self.shape[d] < 0:
            raise SpecShapeError(f"cannot unbind {self._short()} along the dynamic dim {dim}")
        pre = (slice(None),) * d
        return tuple(self[pre + (i,)] for i in range(self.shape[d]))

    def reshape(self, *shape: int | Sequence[int]) -> TensorSpec:
        """Reshapes the spec (its shape-following tensors are reshaped too)."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        new_shape = torch.Size(torch.empty(self._sshape, device="meta").reshape(shape).shape)
        if (
            self._protected_dims
            and new_shape[-self._protected_dims :] != self.shape[-self._protected_dims :]
        ):
            raise SpecShapeError(
                f"cannot reshape {self._short()} to {list(shape)}: its last dim must be kept"
            )

        p = self._protected_dims
        nd = self._ndim

        def fn(t: torch.Tensor, extra: int) -> torch.Tensor:
            keep = t.shape[nd - p :]
            return t.reshape(*new_shape[: len(new_shape) - p], *keep)

        return self._reshaped(new_shape, fn)

    view = reshape

    def flatten(self, start_dim: int, end_dim: int) -> TensorSpec:
        """The spec reshaped as :func:`torch.flatten` reshapes a tensor of its shape.

        >>> from torchenv.specs import Unbounded
        >>> Unbounded((2, 3, 4)).flatten(0, 1).shape
        torch.Size([6, 4])
        """
        return self.reshape(
            torch.empty(self._sshape, device="meta").flatten(start_dim, end_dim).shape
        )

    def unflatten(self, dim: int, sizes: Sequence[int]) -> TensorSpec:
        """The spec reshaped as :func:`torch.unflatten` reshapes a tensor of its shape.

        >>> from torchenv.specs import Unbounded
        >>> Unbounded((6, 4)).unflatten(0, (2, 3)).shape
        torch.Size([2, 3, 4])
        """
        return self.reshape(torch.empty(self._sshape, device="meta").unflatten(dim, sizes).shape)

    def make_neg_dim(self, dim: int) -> None:
        """Marks ``dim`` as dynamic (``-1``), in place.

        Raises:
            SpecIndexError: ``dim`` is out of range (a ``ValueError``, as TorchRL's).

        >>> from torchenv.specs import Unbounded
        >>> spec = Unbounded((2, 3))
        >>> spec.make_neg_dim(-1)
        >>> spec.shape
        torch.Size([2, -1])
        """
        d = normalize_dim(dim, self._ndim)
        self.shape = torch.Size([-1 if i == d else s for i, s in enumerate(self.shape)])

    def erase_memoize_cache(self) -> None:
        """TorchRL's reset of the encode cache: nothing is cached here (see
        :meth:`memoize_encode`), so it only reaches the nested specs."""
        for sub in self._memo_children():
            sub.erase_memoize_cache()

    # ------------------------------------------------------------------ torch functions
    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        from torchenv.specs._stack import SPEC_TORCH_FUNCTIONS

        handler = SPEC_TORCH_FUNCTIONS.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **(kwargs or {}))

    # ------------------------------------------------------------------ comparison / display
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        if self.shape != other.shape or self.dtype != other.dtype or self.device != other.device:
            return False
        for name in self._meta_attrs:
            if getattr(self, name) != getattr(other, name):
                return False
        for name in self._tensor_attrs:
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None):
                return False
            if a is not None and (a.shape != b.shape or not bool((a == b).all())):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def _repr_fields(self) -> list[tuple[str, Any]]:
        return [
            ("shape", self.shape),
            ("space", self.space),
            ("device", self.device),
            ("dtype", self.dtype),
            ("domain", self.domain),
        ]

    def __repr__(self) -> str:
        fields = ",\n".join(f"{name}={value}" for name, value in self._repr_fields())
        return f"{type(self).__name__}(\n    " + fields.replace("\n", "\n    ") + ")"

    # ------------------------------------------------------------------ discrete helpers
    def _as_mask(self, mask: Any, target: Sequence[int]) -> torch.Tensor:
        """A bool copy of ``mask`` on the spec's device, broadcast to ``target`` (for ``update_mask``).

        Args:
            mask: a bool tensor (or anything ``torch.as_tensor`` accepts) of allowed categories.
            target: the shape the mask must broadcast to.

        Returns:
            A new bool tensor of shape ``target``.

        Raises:
            SpecShapeError: if ``mask`` does not broadcast to ``target``.
        """
        mask = torch.as_tensor(mask, device=self.device).to(torch.bool)
        try:
            return mask.expand(target).clone()
        except RuntimeError:
            raise SpecShapeError(
                f"mask of shape {list(mask.shape)} does not broadcast to {list(target)} for {self._short()}"
            ) from None

    def cardinality(self) -> int:
        """Number of distinct values (discrete specs only)."""
        raise NotImplementedError(
            f"cardinality is only defined for discrete specs, not {type(self).__name__}"
        )

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """All the values the spec can take, stacked on dim 0 (discrete specs only)."""
        raise NotImplementedError(
            f"enumerate is only defined for discrete specs, not {type(self).__name__}"
        )


def init_leaf(
    spec: TensorSpec,
    shape: torch.Size,
    device: DeviceLike,
    dtype: torch.dtype,
) -> None:
    """Sets the attributes every leaf spec carries (``device`` and ``dtype`` checked)."""
    from torchenv.specs._validate import as_device, as_dtype

    owner = type(spec).__name__
    spec._set_shape(shape)
    spec.device = to_device(as_device(owner, device)) if device is not None else _CPU
    spec.dtype = as_dtype(owner, dtype)
