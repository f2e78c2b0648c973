"""``implement_for``: pick one of several implementations from the installed version of a library.

Every definition decorated with the same name (module + qualified name) joins one
:class:`VersionDispatcher`. On its first call the dispatcher reads the installed versions from
distribution metadata (no import), keeps the implementations whose half-open range
``[from_version, to_version)`` holds the installed version, and caches the winner: the last
registered one, unless :meth:`implement_for.prefer` names a library to favour.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import update_wrapper
from types import MethodType
from typing import Any

from packaging.version import Version

from torchenv.versions._errors import DistributionNotInstalledError, UnsupportedVersionError
from torchenv.versions._metadata import (
    clear_version_cache,
    distribution_name,
    installed_version,
    parse_version,
)

Source = str | Callable[[], Any]


def _bound(version: str | Version | None, what: str) -> Version | None:
    if version is None or isinstance(version, Version):
        return version
    try:
        return Version(str(version))
    except Exception as err:
        raise ValueError(f"implement_for: {what} {version!r} is not a PEP 440 version") from err


def format_range(lower: Version | None, upper: Version | None) -> str:
    """Format a half-open version range the way a requirement reads.

    >>> format_range(Version("0.26"), None)
    '>=0.26'
    >>> format_range(None, None)
    'any version'
    """
    parts = ([f">={lower}"] if lower is not None else []) + ([f"<{upper}"] if upper else [])
    return ", ".join(parts) or "any version"


def version_in_range(version: Version, lower: Version | None, upper: Version | None) -> bool:
    """Whether ``lower <= version < upper`` with PEP 440 ordering (``None`` bounds are open).

    Pre-releases sort before their release (``1.0rc1 < 1.0``); post-releases and local versions
    after it (``1.0 < 1.0+cpu < 1.0.post1``).

    >>> version_in_range(Version("1.0rc1"), None, Version("1.0"))
    True
    """
    return (lower is None or version >= lower) and (upper is None or version < upper)


@dataclass(frozen=True)
class _Candidate:
    source: Source
    lower: Version | None
    upper: Version | None
    fn: Callable[..., Any]

    @property
    def source_name(self) -> str:
        if isinstance(self.source, str):
            return self.source
        return getattr(self.source, "__qualname__", repr(self.source))

    def describe(self) -> str:
        return f"{self.source_name} {format_range(self.lower, self.upper)}"


def _version_of(source: Source) -> tuple[str, Version | None]:
    """(distribution name for messages, installed version or None)."""
    if isinstance(source, str):
        return distribution_name(source) or source, installed_version(source)
    module = source()
    name = getattr(module, "__name__", repr(module))
    version = getattr(module, "__version__", None)
    return name, (parse_version(str(version)) if version is not None else None)


def _load_qualified(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class VersionDispatcher:
    """The callable returned by :class:`implement_for`: one name, several version-bound bodies.

    It behaves like the function it replaces (a method when set on a class, bound to the class
    when registered with ``class_method=True``). Use :meth:`register` to add an implementation
    without redefining the name.
    """

    def __init__(self, key: tuple[str, str], class_method: bool) -> None:
        self._key = key
        self.class_method = class_method
        self._candidates: list[_Candidate] = []
        self._resolved: Callable[..., Any] | None = None

    def _add(self, candidate: _Candidate) -> None:
        same = [
            i
            for i, c in enumerate(self._candidates)
            if (c.source, c.lower, c.upper) == (candidate.source, candidate.lower, candidate.upper)
        ]
        if same:  # re-running a definition (reload, test re-run) replaces it
            del self._candidates[same[0]]
        self._candidates.append(candidate)
        self._resolved = None
        if len(self._candidates) == 1:
            update_wrapper(self, candidate.fn)
        elif self.__doc__ is None:
            self.__doc__ = candidate.fn.__doc__

    @property
    def implementations(self) -> tuple[str, ...]:
        """Readable ``"library range"`` of every registered implementation, in order."""
        return tuple(c.describe() for c in self._candidates)

    def resolve(self) -> Callable[..., Any]:
        """Return (and cache) the implementation that fits the installed versions.

        Raises:
            DistributionNotInstalledError: no library named by an implementation is installed.
            UnsupportedVersionError: a library is installed but no range holds its version.
        """
        resolved = self._resolved
        if resolved is not None:
            return resolved
        matches: list[_Candidate] = []
        found: dict[str, Version | None] = {}
        for candidate in self._candidates:
            name, version = _version_of(candidate.source)
            found[name] = version
            if version is not None and version_in_range(version, candidate.lower, candidate.upper):
                matches.append(candidate)
        if not matches:
            raise self._no_match(found)
        chosen = matches[-1]
        for preferred in implement_for._preferred:
            hit = [c for c in matches if c.source_name == preferred]
            if hit:
                chosen = hit[-1]
                break
        self._resolved = chosen.fn
        return chosen.fn

    def _no_match(self, found: dict[str, Version | None]) -> ImportError:
        name = ".".join(self._key)
        supported = self.implementations
        installed = {dist: v for dist, v in found.items() if v is not None}
        if not installed:
            missing = " or ".join(found)
            return DistributionNotInstalledError(
                f"{name} needs {missing}, which is not installed "
                f"(supported: {'; '.join(supported)}). Install it with: pip install {missing}",
                distribution=next(iter(found), "?"),
            )
        dist, version = next(iter(installed.items()))
        versions = ", ".join(f"{d} {v}" for d, v in installed.items())
        return UnsupportedVersionError(
            f"{name} has no implementation for the installed {versions}; "
            f"supported: {'; '.join(supported)}",
            distribution=dist,
            version=str(version),
            supported=supported,
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self._resolved
        if fn is None:
            fn = self.resolve()
        return fn(*args, **kwargs)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if self.class_method:
            return MethodType(self, owner if owner is not None else type(obj))
        if obj is None:
            return self
        return MethodType(self, obj)

    def register(
        self,
        from_version: str | None = None,
        to_version: str | None = None,
        *,
        module_name: Source | None = None,
    ) -> Callable[[Callable[..., Any]], VersionDispatcher]:
        """Add an implementation under this name (``functools.singledispatch`` style).

        Args:
            from_version: first supported version (inclusive), ``None`` for open.
            to_version: first unsupported version (exclusive), ``None`` for open.
            module_name: the library to check; defaults to the one of the first implementation.

        >>> @implement_for("packaging", None, "1.0")
        ... def answer():
        ...     return "old"
        >>> @answer.register("1.0")
        ... def _():
        ...     return "new"
        >>> answer()
        'new'
        """
        source = module_name if module_name is not None else self._candidates[0].source
        lower, upper = _bound(from_version, "from_version"), _bound(to_version, "to_version")

        def decorator(fn: Callable[..., Any]) -> VersionDispatcher:
            self._add(_Candidate(source, lower, upper, fn))
            return self

        return decorator

    def __reduce__(self) -> tuple[Any, ...]:
        return _load_qualified, self._key

    def __repr__(self) -> str:
        return f"<implement_for {'.'.join(self._key)}: {'; '.join(self.implementations)}>"


class _Definition(VersionDispatcher):
    """What one ``@implement_for`` decoration returns: the name's shared dispatcher under this
    definition's own function attributes (``__name__``, ``__doc__``, pytest marks...).

    Each ``def`` gives its own function object, so decorators applied above one definition (e.g.
    ``pytest.mark.parametrize``) must not pile up on the others of the same name, as they would
    on one shared object. Calls, binding, :meth:`register` and the cached choice are the
    shared dispatcher's.
    """

    def __init__(self, shared: VersionDispatcher, fn: Callable[..., Any]) -> None:
        self.__dict__["_shared"] = shared
        update_wrapper(self, fn)

    def __getattr__(self, name: str) -> Any:
        if name == "_shared":  # not set yet (copy, unpickling): no delegation
            raise AttributeError(name)
        return getattr(self._shared, name)

    def _add(self, candidate: _Candidate) -> None:
        self._shared._add(candidate)

    def resolve(self) -> Callable[..., Any]:
        return self._shared.resolve()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._shared(*args, **kwargs)

    def register(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        return self._shared.register(*args, **kwargs)


class implement_for:  # lower case: TorchRL's spelling, used as a decorator
    """Decorate several definitions of one function; the installed library version picks one.

    A definition applies when ``from_version <= installed < to_version`` (PEP 440 ordering,
    ``None`` is open). Versions come from distribution metadata: the library is not imported.
    The choice is made on the first call and cached; :meth:`reset` forgets it.

    Args:
        module_name: distribution or import name of the library (``"gym"``, ``"torch"``,
            ``"dm_control"``), or a callable returning the module (its ``__version__`` is used).
        from_version: first supported version, inclusive; ``None`` for no lower bound.
        to_version: first unsupported version, exclusive; ``None`` for no upper bound.
        class_method: bind the function to the class, like :func:`classmethod`.

    Raises (when called):
        DistributionNotInstalledError: the library is not installed.
        UnsupportedVersionError: no range holds the installed version; the message names the
            installed version and every supported range.

    Examples:
        >>> from torchenv.versions import implement_for
        >>> @implement_for("packaging", None, "20.0")
        ... def fun():
        ...     return 0
        >>> @implement_for("packaging", "20.0", None)
        ... def fun():
        ...     return 1
        >>> fun()
        1
    """

    _dispatchers: dict[tuple[str, str], VersionDispatcher] = {}
    _preferred: tuple[str, ...] = ()
    _lock = threading.Lock()

    def __init__(
        self,
        module_name: Source,
        from_version: str | None = None,
        to_version: str | None = None,
        class_method: bool = False,
    ) -> None:
        if not (isinstance(module_name, str) or callable(module_name)):
            raise TypeError(
                f"implement_for: module_name must be a name or a callable, got {module_name!r}"
            )
        self.module_name = module_name
        self.from_version = from_version
        self.to_version = to_version
        self.class_method = class_method
        self._lower = _bound(from_version, "from_version")
        self._upper = _bound(to_version, "to_version")
        if self._lower is not None and self._upper is not None and self._lower >= self._upper:
            raise ValueError(
                f"implement_for({module_name!r}): empty range, from_version {from_version} "
                f"is not below to_version {to_version}"
            )

    def __call__(self, fn: Callable[..., Any]) -> VersionDispatcher:
        class_method = self.class_method
        if isinstance(fn, classmethod):
            fn, class_method = fn.__func__, True
        if isinstance(fn, VersionDispatcher):  # stacked decorators: same body, one more range
            fn = fn._candidates[-1].fn
        key = (fn.__module__, fn.__qualname__)
        with implement_for._lock:
            dispatcher = implement_for._dispatchers.get(key)
            if dispatcher is None:
                dispatcher = VersionDispatcher(key, class_method)
                implement_for._dispatchers[key] = dispatcher
            elif dispatcher.class_method != class_method:
                raise TypeError(
                    f"implement_for: {'.'.join(key)} is registered both with and without "
                    "class_method=True"
                )
            dispatcher._add(_Candidate(self.module_name, self._lower, self._upper, fn))
        return _Definition(dispatcher, fn)

    @staticmethod
    def check_version(
        version: str | Version, from_version: str | None, to_version: str | None
    ) -> bool:
        """Whether ``version`` lies in ``[from_version, to_version)``.

        >>> implement_for.check_version("0.26.2", "0.26", None)
        True
        """
        v = version if isinstance(version, Version) else parse_version(str(version))
        return version_in_range(v, _bound(from_version, "from"), _bound(to_version, "to"))

    @classmethod
    def reset(cls) -> None:
        """Forget every cached choice and installed version; the next call resolves again."""
        with cls._lock:
            for dispatcher in cls._dispatchers.values():
                dispatcher._resolved = None
        clear_version_cache()

    @classmethod
    def prefer(cls, *names: str) -> _Preference:
        """Favour implementations for ``names`` when several libraries fit (e.g. gym and gymnasium).

        Takes effect at once; used as a context manager, the previous preference comes back on
        exit. ``prefer()`` with no names goes back to "last registered wins".

        >>> with implement_for.prefer("gymnasium"):
        ...     pass
        """
        return _Preference(cls, names)

    @classmethod
    def dispatchers(cls) -> Iterator[VersionDispatcher]:
        """Every dispatcher created so far (for introspection and tests)."""
        return iter(list(cls._dispatchers.values()))


class _Preference:
    def __init__(self, owner: type[implement_for], names: tuple[str, ...]) -> None:
        self._owner = owner
        self._previous = owner._preferred
        owner._preferred = tuple(names)
        owner.reset()

    def __enter__(self) -> _Preference:
        return self

    def __exit__(self, *exc: object) -> None:
        self._owner._preferred = self._previous
        self._owner.reset()
