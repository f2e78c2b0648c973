"""Shape operations of :class:`~torchenv.specs.Composite` (expand, index, squeeze, unbind, reshape).

Each applies to the Composite's batch dims and to every entry, through ``Composite._map``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from torchenv.specs._base import TensorSpec, _index_shape, _normalize_index
from torchenv.specs._composite_names import index_names
from torchenv.specs._errors import SpecShapeError
from torchenv.specs._utils import normalize_dim

if TYPE_CHECKING:
    from torchenv.specs._composite import Composite


class CompositeShapeOps:
    """Mixin of Composite: the shape operations."""

    def expand(self, *shape: int | Sequence[int]) -> Composite:
        """Adds leading dims to the Composite and every entry.

        >>> from torchenv.specs import Composite, Unbounded
        >>> Composite(obs=Unbounded(3)).expand(4)["obs"].shape
        torch.Size([4, 3])
        """
        new_shape = self._expand_target(shape, "Composite")
        nd = self._ndim
        prefix = list(new_shape[: len(new_shape) - nd])

        def fn(spec: TensorSpec) -> TensorSpec:
            return spec.expand(*prefix, *new_shape[len(prefix) :], *spec.shape[nd:])

        out = self._map(fn, shape=new_shape)
        names = self._names
        return self._with_names(out, None if names is None else [None] * len(prefix) + names)

    def _index(self, idx: Any) -> Composite:
        idx = _normalize_index(idx, self._ndim)
        new_shape = _index_shape(self.shape, idx)
        out = self._map(lambda s: s[idx], shape=new_shape)
        return self._with_names(out, index_names(self._names, idx, len(new_shape)))

    def squeeze(self, dim: int | None = None) -> Composite:
        """Removes batch dims of size 1 (all of them, or ``dim``) from the Composite and its entries."""
        if dim is None:
            dims = [i for i, s in enumerate(self.shape) if s == 1]
            out = self
            for d in reversed(dims):
                out = out.squeeze(d)
            return out
        d = normalize_dim(dim, self._ndim)
        if self.shape[d] != 1:
            return self
        new_shape = torch.Size([s for i, s in enumerate(self.shape) if i != d])
        out = self._map(lambda s: s.squeeze(d), shape=new_shape)
        names = self._names
        return self._with_names(out, None if names is None else names[:d] + names[d + 1 :])

    def unsqueeze(self, dim: int) -> Composite:
        """Inserts a batch dim of size 1 at ``dim`` in the Composite and its entries."""
        d = normalize_dim(dim, self._ndim + 1)
        new_shape = torch.Size([*self.shape[:d], 1, *self.shape[d:]])
        out = self._map(lambda s: s.unsqueeze(d), shape=new_shape)
        names = self._names
        return self._with_names(out, None if names is None else [*names[:d], None, *names[d:]])

    def unbind(self, dim: int = 0) -> tuple[Composite, ...]:
        """Splits the Composite along batch dim ``dim``."""
        d = normalize_dim(dim, self._ndim)
        if self.shape[d] < 0:
            raise SpecShapeError(f"cannot unbind {self._short()} along the dynamic dim {dim}")
        pre = (slice(None),) * d
        return tuple(self[pre + (i,)] for i in range(self.shape[d]))

    def reshape(self, *shape: int | Sequence[int]) -> Composite:
        """Reshapes the batch dims of the Composite and its entries."""
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        new_shape = torch.Size(torch.empty(self._sshape, device="meta").reshape(shape).shape)
        nd = self._ndim
        out = self._map(lambda s: s.reshape(*new_shape, *s.shape[nd:]), shape=new_shape)
        return self._with_names(out, None)  # a reshape forgets the names (as TorchRL's)

    view = reshape

    def make_neg_dim(self, dim: int) -> None:
        """Marks batch dim ``dim`` as dynamic (``-1``) here and in every entry, in place.

        TorchRL's raises a ``ValueError`` for any Composite with entries (it changes the
        Composite's shape alone, which then mismatches them).

        Raises:
            SpecIndexError: ``dim`` is out of range (a ``ValueError``, as TorchRL's).

        >>> from torchenv.specs import Composite, Unbounded
        >>> spec = Composite(a=Unbounded((2, 3)), shape=(2,))
        >>> spec.make_neg_dim(0)
        >>> spec.shape, spec["a"].shape
        (torch.Size([-1]), torch.Size([-1, 3]))
        """
        d = normalize_dim(dim, self._ndim)
        for spec in self._specs.values():
            if spec is not None:
                spec.make_neg_dim(d)  # the same dim counted from the front: entries have more
        TensorSpec.make_neg_dim(self, d)

    def index(self, index: Any, tensor_to_index: TensorDictBase) -> TensorDictBase:
        """Applies every entry's :meth:`TensorSpec.index` to the matching entry of ``tensor_to_index``."""
        out = tensor_to_index.clone(False)
        for key, spec in self._specs.items():
            if spec is None or key not in tensor_to_index:
                continue
            sub_index = index.get(key) if isinstance(index, (TensorDictBase, Mapping)) else index
            out.set(key, spec.index(sub_index, tensor_to_index.get(key)))
        return out
