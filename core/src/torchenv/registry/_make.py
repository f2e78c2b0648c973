"""make, backends and list_envs: the user-facing side of the registry.

``make("backend:env-id")`` and ``list_envs("backend")`` are routed to the plugin that declared
the backend; its simulator is imported then, not before.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any

from torchenv.registry import _manager
from torchenv.registry._errors import (
    AmbiguousNameError,
    BackendUnavailableError,
    InvalidEnvNameError,
    PluginWarning,
    UnknownBackendError,
    UnknownEnvError,
    close_matches,
)
from torchenv.registry._hookspecs import Backend
from torchenv.registry._info import BackendInfo, backend_info, failed_info
from torchenv.registry._kwargs import check_make_kwargs

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
    bad = next((c for c in name if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise InvalidEnvNameError(
            f"expected an env name like 'backend:env-id', got {name!r}: it contains {bad!r} "
            f"at position {name.index(bad)} (names hold no whitespace or control characters)"
        )
    backend, sep, env_id = name.partition(":")
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
        candidates = [
            f"{b.name} from plugin {r.name!r} ({r.distribution or 'registered in-process'})"
            for b, r in owners
        ]
        others = sorted({r.name for _, r in owners})
        hint = (
            "Choose one by disabling the others, e.g. "
            f"TORCHENV_DISABLE_PLUGINS={','.join(others[1:])} keeps {others[0]!r}, or use a "
            "name only one of them declares (see: torchenv backends)."
        )
        raise AmbiguousNameError(name, candidates, "backend", hint)
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
        try:
            result = impl.function(**{k: kwargs[k] for k in impl.argnames})
        except SystemExit as err:  # a plugin does not get to end the user's process
            raise _manager.PluginExitError(
                f"plugin {record.name!r} called sys.exit({err.code!r}) in {hook}"
            ) from None
        if result is not None:
            return result
    return None


def _list(backend: Backend, record: _manager.PluginRecord) -> list[str]:
    ids = _call_owner("torchenv_list_envs", record, backend=backend.name)
    return sorted(dict.fromkeys(ids or ()))


_NO_OWNER = (None, _manager.PluginRecord("", "", None, None))


def _single_owner(name: str) -> tuple[Backend, _manager.PluginRecord] | None:
    owners = _manager._owners(name)
    return owners[0] if len(owners) == 1 else None


def _list_with_timeout(backend: Backend, record: _manager.PluginRecord) -> list[str]:
    """``_list`` in a daemon thread: a hook that hangs is skipped (and warned about), never
    waited for. The thread cannot be stopped; it ends when the hook returns, or with the
    process. A hook that fails in the thread is called again in this one (some simulators
    must be imported from the main thread, e.g. to install signal handlers)."""
    try:
        timeout = float(os.environ.get("TORCHENV_LIST_TIMEOUT", "10"))
    except ValueError:
        timeout = 10.0
    box: list = []

    def run() -> None:
        try:
            box.append(("ok", _list(backend, record)))
        except BaseException as err:  # reported to the caller below
            box.append(("error", err))

    thread = threading.Thread(target=run, name=f"torchenv-list-{record.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        warnings.warn(
            f"plugin {record.name!r}: torchenv_list_envs({backend.name!r}) did not answer "
            f"within {timeout:g} s (TORCHENV_LIST_TIMEOUT); its envs were not searched. "
            f"Disable it with TORCHENV_DISABLE_PLUGINS={record.name}.",
            PluginWarning,
            stacklevel=4,
        )
        raise TimeoutError(f"torchenv_list_envs of plugin {record.name!r} did not answer")
    kind, value = box[0]
    if kind == "error":
        return _list(backend, record)
    return value


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


def _find_bare(env_id: str) -> tuple[tuple[Backend, _manager.PluginRecord], str]:
    """The one available backend that lists ``env_id`` (bare names: ``make("Pendulum")``), and
    the id it lists (``"tictactoe_v3"`` finds ``"classic/tictactoe_v3"``).

    The core's own backends are asked first, and answer alone when they have the id (they own
    their names); the plugins' lists are then read each in a thread of its own, skipped with a
    warning when one does not answer within ``TORCHENV_LIST_TIMEOUT`` seconds (default 10).
    """
    if _manager._owners(env_id):  # make("gymnasium"): a backend without its env id
        raise UnknownEnvError(
            None,
            env_id,
            note=f"{env_id!r} is a backend: add the env id, make('{env_id}:<env-id>'); "
            f"see: torchenv list {env_id}",
        )
    hits: list[tuple[Backend, _manager.PluginRecord]] = []
    tails: list[tuple[Backend, _manager.PluginRecord, str]] = []
    known: list[str] = []
    infos = [info for info in backends() if info.ok]
    infos.sort(key=lambda info: not _manager.is_core((_single_owner(info.name) or _NO_OWNER)[1]))
    for info in infos:
        owner = _single_owner(info.name)
        if owner is None:
            continue
        core = _manager.is_core(owner[1])
        try:
            ids = _list(*owner) if core else _list_with_timeout(*owner)
        except Exception:  # a backend that cannot list is skipped, never fatal
            continue
        if core and env_id in ids:
            return owner, env_id
        known += [f"{info.name}:{i}" for i in ids]
        if env_id in ids:
            hits.append(owner)
        elif "/" not in env_id:  # "tictactoe_v3" for "classic/tictactoe_v3", as TorchRL takes it
            tails += [(*owner, i) for i in ids if i.rsplit("/", 1)[-1] == env_id]
    if not hits and len(tails) == 1:
        return tails[0][:2], tails[0][2]
    if not hits and len(tails) > 1:
        raise AmbiguousNameError(env_id, [f"{b.name}:{i}" for b, _, i in tails], "env id")
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
    return hits[0], env_id


def make(name: str, /, **kwargs: Any) -> EnvBase:
    """Make an env by name: ``"backend:env-id"``, or a bare id that one backend provides.

    Keyword arguments go to the backend's constructor (``device``, ``batch_size``, ``num_envs``,
    ...), except ``check_finite`` (``"warn"``, ``"raise"`` or ``"ignore"``), which every backend
    takes: it is set on the env made (:attr:`EnvBase.check_finite`). After creation every
    plugin's ``torchenv_env_created`` hook is called.

    Raises:
        InvalidEnvNameError: ``name`` is not of the form ``"backend:env-id"`` (or holds
            whitespace or control characters).
        InvalidKwargError: a conventional keyword (``num_envs``, ``max_episode_steps``,
            ``frame_skip``, ``seed``, ``device``, ``batch_size``, ``from_pixels``,
            ``pixels_only``) has the wrong type or is out of range.
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
    check_finite = kwargs.pop("check_finite", None)
    if check_finite is not None:
        from torchenv.envs._finite import check_finite_mode  # here: the registry imports no torch

        check_finite_mode(check_finite)
    check_make_kwargs(name, kwargs)
    if backend_name is None:
        (backend, record), env_id = _find_bare(env_id)
    else:
        backend, record = _resolve(backend_name)
    _require(backend, record)
    try:
        env = _call_owner(
            "torchenv_make_env", record, backend=backend.name, env_id=env_id, kwargs=dict(kwargs)
        )
    except TypeError as err:
        hint = misspelled_kwarg_hint(err, kwargs)
        if hint is None:
            raise
        raise TypeError(f"{err}. {hint}") from err
    if env is None:
        try:
            known = _list(backend, record)
        except Exception:
            known = []
        raise UnknownEnvError(backend.name, env_id, known)
    if check_finite is not None:
        env.check_finite = check_finite
    _env_created(env, backend.name, env_id)
    return env


# Keywords that make() takes for most backends: a near miss of one is named in the error.
_COMMON_KWARGS = (
    "num_envs",
    "batch_size",
    "device",
    "seed",
    "frame_skip",
    "max_episode_steps",
    "from_pixels",
    "pixels_only",
    "render_mode",
    "categorical_action_encoding",
    "continuous_actions",
    "n_agents",
)


def misspelled_kwarg_hint(err: TypeError, kwargs: dict[str, Any]) -> str | None:
    """``"Did you mean 'num_envs'?"`` for ``got an unexpected keyword argument 'num_env'``.

    >>> misspelled_kwarg_hint(TypeError("f() got an unexpected keyword argument 'num_env'"),
    ...                       {"num_env": 4})
    "Did you mean 'num_envs'?"
    """
    text = str(err)
    marker = "unexpected keyword argument '"
    if marker in text:
        words = [text.split(marker, 1)[1].split("'", 1)[0]]
    else:  # e.g. "num_envs is required" while num_env was given (taken by a **kwargs)
        words = [k for k in kwargs if k not in _COMMON_KWARGS]
    for word in words:
        if word not in kwargs:
            continue
        matches = close_matches(word, _COMMON_KWARGS, n=1)
        if matches and (marker in text or matches[0] in text):
            return f"Did you mean {matches[0]!r}?"
    return None


def _env_created(env: Any, backend: str, env_id: str) -> None:
    """Every plugin's ``torchenv_env_created`` hook, each isolated: one that raises is reported
    with a :class:`PluginWarning` naming it, and neither stops the others nor fails ``make``
    (the env is built and valid; an observer's failure is not the user's)."""
    caller = _manager.plugin_manager().hook.torchenv_env_created
    for impl in reversed(caller.get_hookimpls()):
        if impl.hookwrapper or impl.wrapper:
            continue
        kwargs = {"env": env, "backend": backend, "env_id": env_id}
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except (Exception, SystemExit) as err:
            warnings.warn(
                f"plugin {impl.plugin_name!r}: torchenv_env_created raised "
                f"{type(err).__name__}: {err} (ignored; the env was made). Silence it with "
                f"TORCHENV_DISABLE_PLUGINS={impl.plugin_name}.",
                PluginWarning,
                stacklevel=3,
            )


__all__ = ["backends", "list_envs", "make", "split_name"]
