"""Names of a Composite's batch dims (TorchRL's ``names=``, ``refine_names``), and how shape
operations carry them: an index drops the dims it takes, ``unsqueeze``/``expand``/``stack`` add
unnamed ones, ``squeeze``/``unbind`` drop theirs, a reshape forgets them all.

Unnamed Composites store ``None`` and report ``[None] * ndim``, so the shape operations of
specs without names pay one ``is None`` test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from torchenv.specs._errors import SpecShapeError

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.specs._composite import Composite

__all__ = ["CompositeNames", "check_names", "index_names"]


def check_names(names: Sequence[str | None] | None, ndim: int) -> list[str | None] | None:
    """``names`` as stored: ``None`` when no dim is named, else a list of ``ndim`` names.

    Raises:
        SpecShapeError: ``names`` does not have one name (or ``None``) per batch dim.
    """
    if names is None:
        return None
    names = list(names)
    if len(names) != ndim:
        raise SpecShapeError(f"Composite: names {names} must have one entry per batch dim ({ndim})")
    named = [n for n in names if n is not None]
    if len(set(named)) != len(named):
        raise SpecShapeError(f"Composite: names {names} repeat a name")
    return names if named else None


def index_names(names: list[str | None] | None, idx: tuple, new_ndim: int) -> list | None:
    """The names left after indexing with ``idx`` (normalised: a tuple without Ellipsis).

    An integer drops its dim; ``None`` inserts an unnamed one; a slice or an integer index
    tensor keeps its dim's name; a boolean mask over several dims gives one unnamed dim.
    """
    if names is None:
        return None
    out: list[str | None] = []
    pos = 0
    for item in idx:
        if item is None:
            out.append(None)
        elif isinstance(item, int) or (isinstance(item, torch.Tensor) and item.ndim == 0):
            pos += 1
        elif isinstance(item, torch.Tensor) and item.dtype == torch.bool and item.ndim > 1:
            out.append(None)
            pos += item.ndim
        else:
            out.append(names[pos] if pos < len(names) else None)
            pos += 1
    out.extend(names[pos:])
    if len(out) != new_ndim or not any(n is not None for n in out):
        return None
    return out


class CompositeNames:
    """Mixin of Composite: the names of its batch dims."""

    _names: list[str | None] | None = None

    @property
    def names(self) -> list[str | None]:
        """One name (or ``None``) per batch dim; assigning sets them on nested Composites too.

        >>> from torchenv.specs import Composite, Unbounded
        >>> spec = Composite(obs=Unbounded((2, 3)), shape=(2,), names=["time"])
        >>> spec.names, spec[0].names, spec.unsqueeze(0).names
        (['time'], [], [None, 'time'])
        """
        names = self._names
        return list(names) if names is not None else [None] * self._ndim

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        self._set_names(check_names(value, self._ndim))

    # TorchRL's private spellings, for code written against torchrl.data.Composite
    @property
    def _td_dim_names(self) -> list[str | None] | None:
        return self._names

    def _has_names(self) -> bool:
        return self._names is not None

    def _erase_names(self) -> None:
        self._names = None

    def _set_names(self, names: list[str | None] | None) -> None:
        self.__dict__["_names"] = names
        for spec in self._specs.values():
            if isinstance(spec, CompositeNames) and (names is not None or spec._names is not None):
                extra = spec._ndim - len(names) if names is not None else 0
                spec._set_names(None if names is None else [*names, *([None] * extra)])

    def refine_names(self, *names: Any) -> Composite:
        """Names the batch dims (``...`` stands for the dims left unnamed); returns the spec.

        A dim already named must be given its name again (``None`` or ``...`` there raises, as
        TorchRL does).

        Raises:
            RuntimeError: a dim already has another name.

        >>> from torchenv.specs import Composite
        >>> Composite(shape=(3, 4)).refine_names(..., "agents").names
        [None, 'agents']
        """
        ndim = self._ndim
        if Ellipsis in names:
            pos = names.index(Ellipsis)
            fill = ndim - (len(names) - 1)
            names = (*names[:pos], *([None] * max(fill, 0)), *names[pos + 1 :])
        current = self.names
        if len(names) != ndim:
            raise RuntimeError(
                f"refine_names: {len(names)} names for a Composite with {ndim} batch dims"
            )
        merged = []
        for old, new in zip(current, names):
            if old is not None and old != new:  # TorchRL: a named dim keeps exactly its name
                raise RuntimeError(
                    f"refine_names: cannot coerce Composite names {current} with {tuple(names)}."
                )
            merged.append(new)
        self.names = merged
        return self

    def _with_names(self, out: Composite, names: list[str | None] | None) -> Composite:
        """``out`` (a shape-changed copy of this Composite) carrying ``names``."""
        if names is not None or out._names is not None:
            out._set_names(names)
        return out
