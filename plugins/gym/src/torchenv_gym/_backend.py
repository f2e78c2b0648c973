"""Which gym library is in use: ``set_gym_backend`` and ``gym_backend``.

gym and gymnasium may be installed side by side. Every function of this plugin that touches the
simulator asks :func:`gym_backend` for the module to use; :class:`set_gym_backend` changes it for a
block, a function, or (with :meth:`set_gym_backend.set`) for good.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from types import ModuleType

import numpy as np
from packaging.version import Version

from torchenv.versions import implement_for

__all__ = [
    "gym_backend",
    "set_gym_backend",
    "backend_version",
    "check_supported",
    "registered_ids",
]

# Ranges this plugin supports, per library: [low, high).
SUPPORTED: dict[str, tuple[str, str | None]] = {
    "gymnasium": ("0.29", None),
    "gym": ("0.23", "0.27"),
}
_INSTALL = {
    "gymnasium": 'pip install "torchenv[gymnasium]"',
    "gym": 'pip install "torchenv[gym]"',
}

_current: ModuleType | None = None


def _import(name: str) -> ModuleType:
    if name not in SUPPORTED:
        raise ValueError(f"Unknown gym backend {name!r}: expected one of {sorted(SUPPORTED)}.")
    try:
        module = importlib.import_module(name)
    except ImportError as err:
        raise ImportError(
            f"The gym backend {name!r} is not installed. Install it with: {_INSTALL[name]}"
        ) from err
    check_supported(module)
    return module


def backend_version(module: ModuleType) -> Version:
    """The installed version of a gym-like module (``gym`` or ``gymnasium``)."""
    return Version(module.__version__)


def check_supported(module: ModuleType) -> None:
    """Raise an ``ImportError`` naming the supported range if ``module``'s version is unsupported.

    >>> import gymnasium
    >>> check_supported(gymnasium)
    """
    name = module.__name__.split(".")[0]
    low, high = SUPPORTED[name]
    version = backend_version(module)
    if version < Version(low) or (high is not None and version >= Version(high)):
        span = f">={low}" + (f",<{high}" if high else "")
        raise ImportError(
            f"{name} {version} is not supported by torchenv-gym (supported: {name}{span}). "
            f"Install a supported version: {_INSTALL[name]}"
        )
    if name == "gym" and not legacy_gym_usable():
        raise ImportError(
            f"gym {version} needs numpy<2 (it uses np.bool8, removed in numpy 2); numpy "
            f"{np.__version__} is installed. Do not downgrade numpy here: use gymnasium, or "
            "legacy gym in a separate venv: python -m venv gym-venv && gym-venv/bin/pip install "
            '"torchenv[gym]"'
        )


def legacy_gym_usable() -> bool:
    """Whether the legacy ``gym`` (< 0.27) can run with the installed numpy (it needs numpy < 2).

    gym may be installed without being asked for (VMAS pulls gym 0.26 in): with numpy 2 the
    ``gym`` backend is then refused with a clear error instead of failing inside gym.

    >>> isinstance(legacy_gym_usable(), bool)
    True
    """
    return Version(np.__version__) < Version("2")


# Packages whose envs gymnasium >= 1.0 registers only once they are imported (no plugin entry
# points any more): id prefix -> module. Imported when installed, on first need (ale_py: 0.3 s).
EXTERNAL_ENVS = {"ALE/": "ale_py"}


def register_external_envs(module: ModuleType) -> None:
    """Register the envs of the installed packages of :data:`EXTERNAL_ENVS` (``ale_py``: the
    ``ALE/...`` Atari envs) with gymnasium; nothing for gym or packages not installed."""
    if module.__name__ != "gymnasium":
        return
    for name in EXTERNAL_ENVS.values():
        if name not in _registered_external and importlib.util.find_spec(name) is not None:
            _registered_external.add(name)
            importlib.import_module(name)  # registers its envs on import


_registered_external: set[str] = set()


def registered_ids(module: ModuleType, external: bool = True) -> list[str]:
    """The env ids registered with a gym-like module, sorted (namespaced ids included).

    With ``external`` the envs of installed packages that gymnasium does not load by itself are
    registered first (``ale_py``: ``"ALE/Pong-v5"``...).

    >>> import gymnasium
    >>> "CartPole-v1" in registered_ids(gymnasium)
    True
    """
    if external:
        register_external_envs(module)
    registry = module.envs.registry
    specs = getattr(registry, "env_specs", registry)  # gym < 0.24 wraps the dict
    return sorted(str(k) for k in specs)


def _default() -> ModuleType:
    errors = []
    for name in ("gymnasium", "gym"):
        try:
            return _import(name)
        except ImportError as err:
            errors.append(str(err))
    raise ImportError("No gym backend could be imported:\n  " + "\n  ".join(errors))


def gym_backend(submodule: str | None = None) -> ModuleType:
    """Return the gym module in use (``gymnasium`` by default), or one of its submodules.

    Args:
        submodule: a dotted submodule name such as ``"wrappers"`` or ``"spaces"``.

    >>> with set_gym_backend("gymnasium"):
    ...     gym_backend("spaces").__name__
    'gymnasium.spaces'
    """
    global _current
    if _current is None:
        _current = _default()
    if submodule is None:
        return _current
    return importlib.import_module(f"{_current.__name__}.{submodule}")


class set_gym_backend(contextlib.ContextDecorator):
    """Choose the gym library: a context manager, a decorator, or (``.set()``) for good.

    Args:
        backend: ``"gym"``, ``"gymnasium"`` or the module itself.

    >>> import gymnasium
    >>> with set_gym_backend(gymnasium):
    ...     gym_backend() is gymnasium
    True
    >>> @set_gym_backend("gymnasium")
    ... def lib_name():
    ...     return gym_backend().__name__
    >>> lib_name()
    'gymnasium'
    """

    def __init__(self, backend: str | ModuleType) -> None:
        self._backend = backend
        self._previous: list[tuple[ModuleType | None, object]] = []

    @property
    def backend(self) -> ModuleType:
        """The module this object selects (imported on first use)."""
        if isinstance(self._backend, str):
            self._backend = _import(self._backend)
        else:
            check_supported(self._backend)
        return self._backend

    def set(self) -> None:
        """Select the backend for the rest of the process."""
        global _current
        _current = self.backend
        implement_for.prefer(_current.__name__)

    def __enter__(self) -> set_gym_backend:
        global _current
        backend = self.backend
        # implement_for-decorated code (ours and the user's) follows the chosen library too.
        self._previous.append((_current, implement_for.prefer(backend.__name__)))
        _current = backend
        return self

    def __exit__(self, *exc: object) -> None:
        global _current
        _current, preference = self._previous.pop()
        preference.__exit__(*exc)

    def __repr__(self) -> str:
        name = self._backend if isinstance(self._backend, str) else self._backend.__name__
        return f"set_gym_backend({name!r})"
