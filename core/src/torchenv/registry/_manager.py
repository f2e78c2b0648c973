"""Plugin discovery: entry points of the ``torchenv`` group, loaded once, on first use.

Each entry point names a hook module. Loading it never imports a simulator (the contract);
a module that fails to import, breaks the hook contract or raises while declaring its backends
is recorded with the exception and left out, so it never breaks the core or other plugins.
That includes ``sys.exit()`` / ``SystemExit`` and ``os._exit()`` at import: while hook modules
load, ``os._exit`` called from the loading thread raises :class:`PluginExitError` instead of
ending the process (other threads keep the real one). What no in-process guard can stop (a
hook module that hangs on import, or ends the process some other way, e.g. ``posix._exit`` or
a crash in native code) is silenced with ``TORCHENV_DISABLE_PLUGINS="a,b"``, which skips entry
points (or distributions) by name. A hook module whose import does not finish within
``TORCHENV_PLUGIN_LOAD_TIMEOUT`` seconds (default 30) is recorded as failed with a
``TimeoutError`` naming it and left importing in a daemon thread, so that one plugin stuck
at import never blocks :func:`make` or :func:`backends` for the others.

The core's own ``builtin`` backend always owns its name: a third-party plugin that declares
``builtin`` (as its name or an alias) loses it; a name two third-party plugins declare is
ambiguous, and the error names both plugins and how to choose.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as metadata
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from torchenv.registry import _hookspecs
from torchenv.registry._errors import PluginExitError
from torchenv.registry._hookspecs import PROJECT, Backend

ENTRY_POINT_GROUP = "torchenv"
DISABLE_ENV_VAR = "TORCHENV_DISABLE_PLUGINS"
LOAD_TIMEOUT_ENV_VAR = "TORCHENV_PLUGIN_LOAD_TIMEOUT"
CORE_PLUGIN = "builtin"  # the entry point of the core's own backends
CORE_TARGET = "torchenv.registry._builtin"


@contextlib.contextmanager
def _no_exit() -> Iterator[None]:
    """``os._exit`` from this thread raises :class:`PluginExitError` for the duration."""
    real_exit = os._exit
    me = threading.get_ident()

    def guarded_exit(code: int) -> None:
        if threading.get_ident() != me:
            real_exit(code)
        raise PluginExitError(f"called os._exit({code!r})")

    os._exit = guarded_exit
    try:
        yield
    finally:
        os._exit = real_exit


def _exit_error(err: BaseException) -> Exception:
    """A ``SystemExit`` as a reportable error (other exceptions unchanged)."""
    if isinstance(err, SystemExit):
        return PluginExitError(f"called sys.exit({err.code!r})")
    return err  # type: ignore[return-value]


def _load_bounded(ep: metadata.EntryPoint) -> Any:
    """``ep.load()`` (guarded by :func:`_no_exit`) in a daemon thread, waited on for at most
    ``TORCHENV_PLUGIN_LOAD_TIMEOUT`` seconds; raises what it raised, or ``TimeoutError``."""
    timeout = float(os.environ.get(LOAD_TIMEOUT_ENV_VAR, "30"))
    result: list = []

    def load() -> None:
        try:
            with _no_exit():
                result.append((True, ep.load()))
        except BaseException as err:  # reported by the caller, as a plugin that raises
            result.append((False, err))

    thread = threading.Thread(target=load, name=f"torchenv-load-{ep.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        raise TimeoutError(
            f"importing its hook module {ep.value!r} did not finish within {timeout:g} s "
            f"({LOAD_TIMEOUT_ENV_VAR}); it was left importing in the background. Skip it with "
            f"{DISABLE_ENV_VAR}={ep.name}"
        )
    ok, value = result[0]
    if not ok:
        raise value
    return value


def is_core(record: PluginRecord) -> bool:
    """Whether ``record`` is the core's own plugin (the ``builtin`` backend)."""
    return record.target == CORE_TARGET


@dataclass(frozen=True)
class PluginRecord:
    """One discovered plugin (an entry point of the ``torchenv`` group).

    Attributes:
        name: the entry-point name.
        target: what the entry point points at (``"torchenv_gym._plugin"``).
        distribution: the distribution that declares it, ``None`` for in-process plugins.
        version: that distribution's version.
        error: the exception raised while loading it, ``None`` when it loaded.
        backends: the backends it declares (empty when it failed).
    """

    name: str
    target: str
    distribution: str | None
    version: str | None
    error: BaseException | None = None
    backends: tuple[Backend, ...] = ()
    plugin: Any = field(default=None, repr=False, compare=False)

    @property
    def loaded(self) -> bool:
        """Whether the plugin loaded and is registered."""
        return self.error is None


@dataclass
class _State:
    manager: pluggy.PluginManager
    plugins: dict[str, PluginRecord]
    failed: list[PluginRecord]
    disabled: tuple[str, ...]
    # backend name or alias -> the plugins declaring it (more than one: ambiguous)
    owners: dict[str, list[tuple[Backend, PluginRecord]]]


_lock = threading.RLock()
_state: _State | None = None
_manual: list[tuple[Any, str]] = []


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def disabled_plugins() -> tuple[str, ...]:
    """Names listed in ``TORCHENV_DISABLE_PLUGINS`` (comma or space separated)."""
    raw = os.environ.get(DISABLE_ENV_VAR, "")
    return tuple(n for n in re.split(r"[,\s]+", raw) if n)


def _declared_backends(manager: pluggy.PluginManager, name: str) -> tuple[Backend, ...]:
    declared: list[Backend] = []
    for impl in manager.hook.torchenv_backends.get_hookimpls():
        if impl.plugin_name != name:
            continue
        result = impl.function()
        if result is None:
            continue
        if isinstance(result, Backend):
            result = [result]
        for backend in result:
            if not isinstance(backend, Backend):
                raise TypeError(
                    "torchenv_backends() must return torchenv.registry.Backend objects, "
                    f"got {type(backend).__name__}: {backend!r}"
                )
            declared.append(backend)
    return tuple(declared)


def _register(state: _State, plugin: Any, record: PluginRecord) -> None:
    """Register ``plugin`` under ``record.name``; on any failure record it in ``state.failed``."""
    manager = state.manager
    try:
        with _no_exit():
            manager.register(plugin, name=record.name)
            manager.check_pending()
            backends = _declared_backends(manager, record.name)
    except (Exception, SystemExit) as err:
        if manager.get_plugin(record.name) is not None:
            manager.unregister(name=record.name)
        state.failed.append(_replace(record, error=_exit_error(err)))
        return
    record = _replace(record, backends=backends, plugin=plugin)
    state.plugins[record.name] = record
    core = is_core(record)
    for backend in backends:
        for key in dict.fromkeys((backend.name, *backend.aliases)):
            owners = state.owners.setdefault(key, [])
            if core:  # the core's own backend owns its names, whoever came first
                owners[:] = [o for o in owners if is_core(o[1])]
            elif any(is_core(r) for _, r in owners):
                continue  # a third-party claim on a name of the core: ignored
            owners.append((backend, record))


def _replace(record: PluginRecord, **changes: Any) -> PluginRecord:
    values = {f: getattr(record, f) for f in record.__dataclass_fields__}
    values.update(changes)
    return PluginRecord(**values)


def _discover() -> _State:
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(_hookspecs)
    disabled = disabled_plugins()
    skip = {_normalize(n) for n in disabled}
    state = _State(manager, {}, [], disabled, {})
    # the core's own entry point first: its plugin name and backend names are taken before any
    # third-party plugin can claim them
    eps = sorted(
        metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.value != CORE_TARGET
    )
    for ep in eps:
        dist = getattr(ep, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        version = dist.version if dist is not None else None
        if _normalize(ep.name) in skip or (dist_name and _normalize(dist_name) in skip):
            continue
        record = PluginRecord(ep.name, ep.value, dist_name, version)
        if ep.name in state.plugins or manager.has_plugin(ep.name):
            other = state.plugins[ep.name].distribution if ep.name in state.plugins else "?"
            error = RuntimeError(f"entry point name {ep.name!r} is already used by {other}")
            state.failed.append(_replace(record, error=error))
            continue
        try:
            # the core's own module is imported already: no thread for it
            plugin = ep.load() if ep.value == CORE_TARGET else _load_bounded(ep)
        except (Exception, SystemExit) as err:
            state.failed.append(_replace(record, error=_exit_error(err)))
            continue
        _register(state, plugin, record)
    for plugin, name in _manual:
        target = getattr(plugin, "__name__", type(plugin).__name__)
        _register(state, plugin, PluginRecord(name, target, None, None))
    return state


def _current() -> _State:
    global _state
    state = _state
    if state is None:
        with _lock:
            if _state is None:
                _state = _discover()
            state = _state
    return state


def plugin_manager() -> pluggy.PluginManager:
    """The pluggy manager holding every loaded plugin (discovered on first use).

    >>> pm = plugin_manager()
    >>> pm.project_name
    'torchenv'
    """
    return _current().manager


def plugins() -> tuple[PluginRecord, ...]:
    """Every discovered plugin, loaded ones first, then those that failed."""
    state = _current()
    return (*state.plugins.values(), *state.failed)


def reset_plugins() -> None:
    """Forget the discovery; the next use scans entry points (and installed versions) again."""
    global _state
    from torchenv.versions import implement_for

    with _lock:
        _state = None
        importlib.invalidate_caches()
        implement_for.reset()


def register_plugin(plugin: ModuleType | object, name: str | None = None) -> None:
    """Register an in-process plugin (a module or object with hook implementations).

    It behaves like a discovered one and survives :func:`reset_plugins`; useful in notebooks and
    tests. Entry points remain the way to ship a plugin.

    Args:
        plugin: the object whose ``@hookimpl`` functions implement the hooks.
        name: a unique plugin name; defaults to the module or class name.
    """
    name = name or getattr(plugin, "__name__", type(plugin).__name__)
    with _lock:
        _manual.append((plugin, name))
        if _state is not None:
            _register(_state, plugin, PluginRecord(name, name, None, None))


def unregister_plugin(name: str) -> None:
    """Remove an in-process plugin added by :func:`register_plugin`."""
    with _lock:
        _manual[:] = [(p, n) for p, n in _manual if n != name]
    reset_plugins()


def _owners(name: str) -> list[tuple[Backend, PluginRecord]]:
    return _current().owners.get(name, [])


def _all_owners() -> dict[str, list[tuple[Backend, PluginRecord]]]:
    return _current().owners


def _disabled() -> tuple[str, ...]:
    return _current().disabled


def _failed() -> list[PluginRecord]:
    return _current().failed


def _impls(hook_name: str, plugin: str) -> Iterable[Any]:
    caller = getattr(plugin_manager().hook, hook_name)
    # pluggy calls the last registered implementation first; keep that order
    return [
        impl
        for impl in reversed(caller.get_hookimpls())
        if impl.plugin_name == plugin and not (impl.hookwrapper or impl.wrapper)
    ]
