"""Views over the keys, values and items of a Composite (nested traversal with ``include_nested``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchenv.specs._composite import Composite


def _default_is_leaf(cls: type) -> bool:
    from torchenv.specs._composite import Composite

    return not issubclass(cls, Composite)


def iter_items(
    spec: Composite,
    include_nested: bool,
    leaves_only: bool,
    is_leaf: Callable[[type], bool] | None,
    prefix: tuple[str, ...] = (),
) -> Iterator[tuple[Any, Any]]:
    """Yields ``(key, spec)`` pairs; nested keys are tuples. Sub-entries come before their Composite."""
    leaf = is_leaf or _default_is_leaf
    for key, value in spec._specs.items():
        full = (*prefix, key) if prefix else key
        value_is_leaf = value is None or leaf(type(value))
        if include_nested and not value_is_leaf:
            yield from iter_items(
                value, True, leaves_only, is_leaf, (*prefix, key) if prefix else (key,)
            )
        if not leaves_only or value_is_leaf:
            yield full, value


class _View:
    def __init__(
        self,
        spec: Composite,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> None:
        self._spec = spec
        self._args = (include_nested, leaves_only, is_leaf)

    def _items(self) -> Iterator[tuple[Any, Any]]:
        return iter_items(self._spec, *self._args)

    def __len__(self) -> int:
        return sum(1 for _ in self._items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)})"


class KeysView(_View):
    """The keys of a Composite (``spec.keys(include_nested, leaves_only)``).

    Supports ``in`` with string and tuple keys, ``len`` and iteration.
    """

    def __iter__(self) -> Iterator[Any]:
        for key, _ in self._items():
            yield key

    def __contains__(self, key: Any) -> bool:
        include_nested, leaves_only, is_leaf = self._args
        if isinstance(key, tuple):
            if len(key) == 1:
                key = key[0]
            elif not include_nested:
                return False
        if isinstance(key, str):
            if key not in self._spec._specs:
                return False
            value = self._spec._specs[key]
        else:
            try:
                value = self._spec[key]
            except (KeyError, TypeError):
                return False
        if leaves_only:
            leaf = is_leaf or _default_is_leaf
            return value is None or leaf(type(value))
        return True

    def __eq__(self, other: object) -> bool:
        try:
            return set(self) == set(other)  # type: ignore[arg-type]
        except TypeError:
            return False

    __hash__ = None  # type: ignore[assignment]


class ValuesView(_View):
    """The values of a Composite."""

    def __iter__(self) -> Iterator[Any]:
        for _, value in self._items():
            yield value


class ItemsView(_View):
    """The ``(key, spec)`` pairs of a Composite."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        yield from self._items()
