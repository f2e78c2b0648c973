"""Exceptions raised by specs. They subclass the built-ins TorchRL raises, so callers can catch either."""

from __future__ import annotations


class SpecError(Exception):
    """Base class of every spec error."""


class SpecValueError(SpecError, AssertionError, ValueError):
    """A value does not belong to a spec (raised by ``assert_is_in``).

    Subclasses ``AssertionError`` (what TorchRL raises) and ``ValueError``.
    """


class SpecTypeError(SpecError, TypeError):
    """A value has the wrong dtype or type for a spec (raised by ``type_check``)."""


class SpecShapeError(SpecError, ValueError):
    """A spec was given a shape it cannot take (expand, Composite entries, stacking)."""


class SpecStackError(SpecShapeError, RuntimeError):
    """Specs that cannot be stacked together. Subclasses ``RuntimeError`` (what TorchRL raises)."""


class SpecIndexError(SpecError, IndexError, ValueError):
    """A dim or index is out of range for a spec.

    Subclasses ``IndexError`` (what tensors raise) and ``ValueError`` (what TorchRL's
    ``unsqueeze`` raises).
    """


class SpecIndexTypeError(SpecError, TypeError, IndexError):
    """A spec was indexed with something that is not an index (a float, a string...).

    Subclasses ``TypeError`` (what tensors and most TorchRL specs raise) and ``IndexError``
    (what TorchRL's ``MultiCategorical`` raises).
    """


class SpecEncodeError(SpecShapeError, RuntimeError):
    """``encode`` was given a value whose shape does not fit the spec.

    Subclasses ``ValueError`` (via :class:`SpecShapeError`) and ``RuntimeError`` (what TorchRL's
    ``encode`` raises for a shape mismatch).
    """


class SpecLockedError(SpecError, RuntimeError):
    """A locked Composite was modified."""


class SpecKeyError(SpecError, KeyError):
    """A key is absent from a Composite."""

    def __str__(self) -> str:  # KeyError quotes its message: print it as written
        return str(self.args[0]) if self.args else ""


class SpecArgumentError(SpecError, ValueError):
    """A spec constructor was given a nonsensical argument (``n=-1``, a NaN bound...)."""
