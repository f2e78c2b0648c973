"""make, backends and list_envs: the user-facing side of the registry.

``make("backend:env-id")`` and ``list_envs("backend")`` are routed to the plugin that declared
the backend; its simulator is imported then, not before.
"""

from __future__ import annotations

import importlib.metadata as metadata
from typing import TYPE_CHECKING, Any

from torchenv.registry import _manager
from torchenv.registry._errors import (
    AmbiguousNameError,
    BackendUnavailableError,
    InvalidEnvNameError,
    UnknownBackendError,
    UnknownEnvError,
    close_matches,
)
from torchenv.registry._hookspecs import Backend
from torchenv.registry._info import BackendInfo, backend_info, failed_info

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.envs import EnvBase


def split_name(name: str) -> tuple[str | None, str]:
    """Split ``"backend:env-id"`` at the first colon; a bare id gives ``(None, id)``.

    >>> split_name("gymnasium:CartPole-v1")
    ('gymnasium', 'CartPole-v1')
    >>> split_name("dmcontrol:cheetah/run")
    ('dmcontrol', 'cheetah/run')
    >>> split_name("Pendulum")
    (None, 'Pendulum')
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidEnvNameError(f"expected an env name like 'backend:env-id', got {name!r}")
    backend, sep, env_id = name.strip().partition(":")
    if not sep:
        return None, backend
    if not backend or not env_id:
        raise InvalidEnvNameError(
            f"expected an env name like 'backend:env-id', got {name!r} (empty "
            f"{'backend' if not backend else 'env id'})"
        )
    return backend, env_id


def _extras_hint(name: str) -> str:
    try:
        extras = metadata.metadata("torchenv").get_all("Provides-Extra") or []
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        extras = []
    return f'pip install "torchenv[{name}]"' if name in extras else ""


def _resolve(name: str) -> tuple[Backend, _manager.PluginRecord]:
    """Find the one plugin that declares backend ``name`` (or raise a helpful error)."""
    owners = _manager._owners(name)
    if not owners:
        folded = {k for k in _manager._all_owners() if k.lower() == name.lower()}
        if len(folded) == 1:
            owners = _manager._owners(folded.pop())
    if len(owners) > 1:
        candidates = [f"{b.name} from {r.distribution or r.name}" for b, r in owners]
        raise AmbiguousNameError(name, candidates, "backend")
    if owners:
        return owners[0]
    for record in _manager._failed():
        if record.name == name:
            info = failed_info(record.name, record.distribution, record.version, record.error)
            raise BackendUnavailableError(info)
    raise UnknownBackendError(
        name,
        _manager._all_owners(),
        install=_extras_hint(name),
        disabled=_manager._disabled(),
    )


def _require(backend: Backend, record: _manager.PluginRecord) -> BackendInfo:
    info = backend_info(backend, record.name, record.distribution, record.version)
    if not info.ok:
        raise BackendUnavailableError(info)
    return info


def _call_owner(hook: str, record: _manager.PluginRecord, **kwargs: Any) -> Any:
    for impl in _manager._impls(hook, record.name):
        result = impl.function(**{k: kwargs[k] for k in impl.argnames})
        if result is not None:
            return result
    return None


def _list(backend: Backend, record: _manager.PluginRecord) -> list[str]:
    ids = _call_owner("torchenv_list_envs", record, backend=backend.name)
    return sorted(dict.fromkeys(ids or ()))


def list_envs(backend: str) -> list[str]:
    """Return the sorted env ids of ``backend`` (imports its simulator, not others').

    Raises:
        UnknownBackendError: no plugin declares ``backend`` (close matches are suggested).
        BackendUnavailableError: its simulator is missing or of an unsupported version, or its
            plugin failed to load.

    >>> "Pendulum" in list_envs("builtin")
    True
    """
    found, record = _resolve(backend)
    _require(found, record)
    return _list(found, record)


def backends() -> list[BackendInfo]:
    """Describe every installed backend: plugin and simulator versions, supported range, status.

    Plugins that failed to load appear under their entry-point name with status
    ``"failed to load"`` and the reason. Imports no simulator.

    >>> [b.status for b in backends() if b.name == "builtin"]
    ['ok']
    """
    seen: set[tuple[str, str]] = set()
    infos = []
    for owners in _manager._all_owners().values():
        for backend, record in owners:
            if (backend.name, record.name) in seen:
                continue
            seen.add((backend.name, record.name))
            infos.append(backend_info(backend, record.name, record.distribution, record.version))
    for record in _manager._failed():
        infos.append(failed_info(record.name, record.distribution, record.version, record.error))
    return sorted(infos, key=lambda info: (info.name, info.plugin))


def _find_bare(env_id: str) -> tuple[Backend, _manager.PluginRecord]:
    """The one available backend that lists ``env_id`` (bare names: ``make("Pendulum")``)."""
    hits: list[tuple[Backend, _manager.PluginRecord]] = []
    known: list[str] = []
    for info in backends():
        if not info.ok:
            continue
        owners = _manager._owners(info.name)
        if len(owners) != 1:
            continue
        try:
            ids = _list(*owners[0])
        except Exception:  # a backend that cannot list is skipped, never fatal
            continue
        known += [f"{info.name}:{i}" for i in ids]
        if env_id in ids:
            hits.append(owners[0])
    if len(hits) > 1:
        raise AmbiguousNameError(env_id, [f"{b.name}:{env_id}" for b, _ in hits], "env id")
    if not hits:
        close = set(close_matches(env_id, [k.split(":", 1)[1] for k in known]))
        raise UnknownEnvError(
            None,
            env_id,
            note="Name the backend: make('backend:env-id'); see: torchenv list",
            suggestions=[k for k in known if k.split(":", 1)[1] in close][:3],
        )
    return hits[0]


def make(name: str, /, **kwargs: Any) -> EnvBase:
    """Make an env by name: ``"backend:env-id"``, or a bare id that one backend provides.

    Keyword arguments go to the backend's constructor (``device``, ``batch_size``, ``num_envs``,
    ...). After creation every plugin's ``torchenv_env_created`` hook is called.

    Raises:
        InvalidEnvNameError: ``name`` is not of the form ``"backend:env-id"``.
        UnknownBackendError: no plugin declares the backend (close matches are suggested).
        UnknownEnvError: the backend has no such env (close matches are suggested).
        AmbiguousNameError: several plugins declare the backend, or several backends the bare id.
        BackendUnavailableError: the simulator is missing (the message says what to install), of
            an unsupported version (installed version and supported range), or the plugin failed.

    >>> env = make("builtin:Pendulum")
    >>> type(env).__name__
    'PendulumEnv'
    """
    backend_name, env_id = split_name(name)
    if backend_name is None:
        backend, record = _find_bare(env_id)
    else:
        backend, record = _resolve(backend_name)
    _require(backend, record)
    env = _call_owner(
        "torchenv_make_env", record, backend=backend.name, env_id=env_id, kwargs=dict(kwargs)
    )
    if env is None:
        try:
            known = _list(backend, record)
        except Exception:
            known = []
        raise UnknownEnvError(backend.name, env_id, known)
    _manager.plugin_manager().hook.torchenv_env_created(
        env=env, backend=backend.name, env_id=env_id
    )
    return env


__all__ = ["backends", "list_envs", "make", "split_name"]
