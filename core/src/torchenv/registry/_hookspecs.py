"""The plugin contract: what a backend plugin tells torchenv, in four hooks.

A plugin is a distribution with an entry point in the ``torchenv`` group. The entry point names a
small *hook module* that imports no simulator; it implements some of the hooks below with
:data:`hookimpl`. torchenv loads the hook module at discovery time and imports the simulator only
when one of the plugin's envs is made or listed.

>>> from torchenv.registry import Backend, hookimpl
>>> @hookimpl
... def torchenv_backends():
...     return [Backend(name="toy", distribution="torchenv-toy", simulator="toy-sim",
...                     supported=">=1.0", install="pip install toy-sim")]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.envs import EnvBase

PROJECT = "torchenv"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class Backend:
    """What a plugin declares about one backend, without importing its simulator.

    Args:
        name: the prefix users type in ``make("name:env-id")``.
        distribution: the plugin's own distribution name (``"torchenv-gym"``).
        simulator: the simulator's distribution name (``"gymnasium"``), ``None`` if it needs none.
        supported: PEP 440 specifier of the simulator versions the plugin supports (``">=0.29"``).
        install: what to run when the simulator is missing (``'pip install "torchenv[gym]"'``).
        description: one line for listings.
        aliases: other names accepted for this backend.
        extra_distributions: other distributions the backend needs at run time, checked the same way.
    """

    name: str
    distribution: str
    simulator: str | None = None
    supported: str = ""
    install: str = ""
    description: str = ""
    aliases: tuple[str, ...] = ()
    extra_distributions: tuple[str, ...] = field(default_factory=tuple)


@hookspec
def torchenv_backends() -> list[Backend]:
    """Declare the backends this plugin provides. Must not import the simulator."""


@hookspec(firstresult=True)
def torchenv_list_envs(backend: str) -> list[str] | None:
    """Return the env ids of ``backend``, or ``None`` if this plugin does not own it.

    May import the simulator.
    """


@hookspec(firstresult=True)
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> EnvBase | None:
    """Build the env ``env_id`` of ``backend`` with ``kwargs``, or return ``None`` if not ours.

    Raise a ``KeyError``-free, explicit error (e.g. :class:`torchenv.registry.UnknownEnvError`) for
    an unknown id of a backend you own.
    """


@hookspec(firstresult=True)
def torchenv_convert_space(backend: str, space: Any, device: Any) -> Any | None:
    """Convert a simulator space to a torchenv spec, or return ``None`` to decline (room for later)."""


@hookspec
def torchenv_env_created(env: EnvBase, backend: str, env_id: str) -> None:
    """Called after any plugin made an env (post-creation hook: logging, wrapping checks)."""


@hookspec(firstresult=True)
def torchenv_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any | None:
    """A baseline for ``torchenv bench``: the simulator driven directly, without torchenv.

    Return ``None`` if ``backend`` is not yours; else a callable ``run(steps: int) -> int`` that
    makes the raw simulator env (as ``torchenv_make_env`` would, with ``kwargs``), then steps it
    ``steps`` times with random actions, resetting finished episodes the way the simulator's
    users do, and returns how many env-steps it made (``steps × num_envs`` for a vectorised env).
    The benchmark times the call; building the env before the loop is allowed. Optional.
    """
