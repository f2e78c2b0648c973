"""Which simulator backends are installed, as reported by the plugin registry."""

from __future__ import annotations

__all__ = ["get_available_libraries"]


def get_available_libraries() -> dict[str, bool]:
    """Returns ``{backend name: whether it can be used now}`` for every backend torchenv knows.

    Backends come from the installed plugins and the built-in backend, through
    :func:`torchenv.registry.backends`. A backend is usable (``True``) when its plugin loaded
    and its simulator is installed in a supported version; ``torchenv.registry.backends()``
    (or ``torchenv backends`` on the command line) tells why one is not and what to install.

    >>> get_available_libraries()["builtin"]
    True
    """
    from torchenv.registry import backends  # lazy: the registry sits above envs

    return {info.name: info.ok for info in backends()}
