"""Dim names of :class:`~torchenv.specs.Composite`, with TorchRL 0.14.1's rules.

An unnamed Composite stores ``None`` (``names`` then reads ``[None] * ndim``), so the hot paths
(``rand``/``zero``/``is_in``) pay one ``is None`` check. Shape operations carry the names along:
indexing with an int and ``squeeze`` drop the dim's name, ``unsqueeze``/``expand``/``stack`` add
``None`` names, ``reshape``/``view`` drop all names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["CompositeNames"]


class CompositeNames:
    """Mixin of Composite: the ``names`` of its batch dims."""

    _td_dim_names: list[str | None] | None = None

    @property
    def names(self) -> list[str | None]:
        """The names of the batch dims (``None`` for an unnamed dim).

        >>> from torchenv.specs import Composite
        >>> Composite(shape=(3, 4), names=["t", None]).names
        ['t', None]
        >>> Composite(shape=(3,)).names
        [None]
        """
        names = self._td_dim_names
        if names is None:
            return [None] * self.ndim
        return list(names)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is None:
            self._td_dim_names = None
            return
        value = list(value)
        if len(value) != self.ndim:
            raise ValueError(
                f"Composite names: expected {self.ndim} names (one per batch dim of shape "
                f"{tuple(self.shape)}), got {len(value)}: {value}"
            )
        self._td_dim_names = value
        # nested Composites share the leading dims: they get the same names
        for spec in self._specs.values():
            if isinstance(spec, CompositeNames) and spec.ndim >= self.ndim:
                spec.names = value + [None] * (spec.ndim - self.ndim)

    def refine_names(self, *names: Any) -> Any:
        """Names unnamed dims (in place) and returns the Composite; a named dim keeps its name.

        One ``...`` stands for as many unnamed dims as needed.

        >>> from torchenv.specs import Composite
        >>> Composite(shape=(3, 4, 5)).refine_names("a", ..., "c").names
        ['a', None, 'c']
        """
        asked = names
        if any(n is Ellipsis for n in names):
            filled: list[str | None] = []
            for n in names:
                filled += [None] * (self.ndim - len(names) + 1) if n is Ellipsis else [n]
            names = tuple(filled)
        current = self.names
        for old, new in zip(current, names):
            if old is not None and old != new:
                raise RuntimeError(
                    f"refine_names: cannot coerce Composite names {current} with {asked}."
                )
        self.names = list(names)
        return self

    def _names_after_index(self, idx: tuple, ndim: int) -> list[str | None] | None:
        """The names after indexing with the normalized tuple ``idx`` (``ndim``: dims after)."""
        old = self._td_dim_names
        new: list[str | None] = []
        pos = 0
        for i in idx:
            if i is None:
                new.append(None)
            elif isinstance(i, int):
                pos += 1
            elif isinstance(i, torch.Tensor) and i.dtype is torch.bool:
                new.append(old[pos] if i.ndim == 1 and pos < len(old) else None)
                pos += max(i.ndim, 1)
            else:
                new.append(old[pos] if pos < len(old) else None)
                pos += 1
        new += old[pos:]
        if len(new) != ndim:
            return None
        return new if any(n is not None for n in new) or ndim == 0 else None

    def _names_without(self, dim: int) -> list[str | None] | None:
        names = [n for i, n in enumerate(self._td_dim_names) if i != dim]
        return names if any(n is not None for n in names) else None
