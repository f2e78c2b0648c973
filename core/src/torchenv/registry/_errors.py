"""Registry errors: one base class, each also a builtin exception users already catch."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.registry._info import BackendInfo


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` candidates that look like ``word`` (typos, case, missing version suffix).

    >>> close_matches("Pendulm", ["Pendulum", "CartPole", "TicTacToe"])
    ['Pendulum']
    """
    candidates = list(dict.fromkeys(candidates))
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word.lower())
    scored = []
    for candidate in candidates:
        matcher.set_seq1(candidate.lower())
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6:
            scored.append((matcher.ratio(), candidate))
    scored.sort(key=lambda item: -item[0])
    best = scored[0][0] if scored else 1.0
    # keep the clear winners only: a near miss should not bury the obvious answer
    matches = [c for score, c in scored if score >= max(0.6, best - 0.1)][:n]
    # "CartPole" should suggest "CartPole-v1": prefix matches count too.
    prefix = [c for c in candidates if c.lower().startswith(word.lower()) and c not in matches]
    return (matches + prefix)[:n]


def _did_you_mean(suggestions: list[str]) -> str:
    if not suggestions:
        return ""
    return " Did you mean " + " or ".join(repr(s) for s in suggestions) + "?"


class TorchEnvRegistryError(Exception):
    """Base class of every error raised by :mod:`torchenv.registry`."""


class InvalidEnvNameError(TorchEnvRegistryError, ValueError):
    """The name given to :func:`~torchenv.registry.make` is not ``"backend:env-id"`` or an id."""


class UnknownBackendError(TorchEnvRegistryError, LookupError):
    """No installed plugin declares this backend.

    Attributes:
        backend: the name that was asked for.
        known: the names of the backends that are declared.
        suggestions: close matches among ``known``.
    """

    def __init__(
        self, backend: str, known: Iterable[str], *, install: str = "", disabled: Iterable[str] = ()
    ) -> None:
        self.backend = backend
        self.known = sorted(known)
        self.suggestions = close_matches(backend, self.known)
        message = f"unknown backend {backend!r}.{_did_you_mean(self.suggestions)}"
        message += f" Known backends: {', '.join(self.known) or 'none'}."
        disabled = sorted(disabled)
        if disabled:
            message += f" Disabled by TORCHENV_DISABLE_PLUGINS: {', '.join(disabled)}."
        if install:
            message += f" To add it: {install}"
        super().__init__(message)


class UnknownEnvError(TorchEnvRegistryError, LookupError):
    """The backend exists but has no env with this id.

    Attributes:
        backend: the backend name (``None`` when a bare id matched no backend).
        env_id: the id that was asked for.
        suggestions: close matches, as names :func:`~torchenv.registry.make` accepts.
    """

    def __init__(
        self,
        backend: str | None,
        env_id: str,
        known: Iterable[str] = (),
        *,
        note: str = "",
        suggestions: Iterable[str] | None = None,
    ) -> None:
        self.backend = backend
        self.env_id = env_id
        known = list(known)
        prefix = f"{backend}:" if backend else ""
        if suggestions is None:
            suggestions = [prefix + m for m in close_matches(env_id, known)]
        self.suggestions = list(suggestions)
        where = f"backend {backend!r}" if backend else "any available backend"
        message = f"unknown env id {env_id!r} for {where}.{_did_you_mean(self.suggestions)}"
        if backend and known:
            message += f" See its {len(known)} envs with: torchenv list {backend}"
        if note:
            message += f" {note}"
        super().__init__(message.rstrip())


class AmbiguousNameError(TorchEnvRegistryError, LookupError):
    """A backend or bare env id matches several candidates.

    Attributes:
        name: the ambiguous name.
        candidates: the names it could mean.
    """

    def __init__(self, name: str, candidates: Iterable[str], what: str, hint: str = "") -> None:
        self.name = name
        self.candidates = sorted(candidates)
        super().__init__(
            f"{what} {name!r} is ambiguous: it could be {', '.join(self.candidates)}. "
            + (hint or "Name one of them.")
        )


class BackendUnavailableError(TorchEnvRegistryError, ImportError):
    """A backend is declared but cannot be used: simulator missing, unsupported version, or its
    plugin failed to load.

    Attributes:
        info: the :class:`~torchenv.registry.BackendInfo` of the backend (``info.status``,
            ``info.reason``, ``info.hint``).
    """

    def __init__(self, info: BackendInfo) -> None:
        self.info = info
        message = f"backend {info.name!r} is unavailable ({info.status}): {info.reason}"
        if info.hint:
            message += f". {info.hint}"
        super().__init__(message, name=info.simulator or info.distribution)

    @property
    def status(self) -> str:
        """``"simulator missing"``, ``"unsupported version"`` or ``"failed to load"``."""
        return self.info.status


class InvalidKwargError(TorchEnvRegistryError, TypeError, ValueError):
    """A conventional keyword argument of :func:`~torchenv.registry.make` (``num_envs``,
    ``max_episode_steps``, ``device``...) has the wrong type or is out of range (a
    ``TypeError`` and a ``ValueError``: catch either)."""


class PluginWarning(UserWarning):
    """A plugin misbehaved in a way the registry worked around (a hook that raised or hung)."""


class PluginExitError(TorchEnvRegistryError, RuntimeError):
    """A plugin's hook module or hook tried to end the process (``sys.exit``, ``os._exit``)."""
