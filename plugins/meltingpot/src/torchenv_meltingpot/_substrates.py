"""Melting Pot's substrates by name: the list, the lookup (with suggestions) and building.

Scenarios (a substrate with pretrained background bots) are recognised and refused: their bots
are TensorFlow saved models that dm-meltingpot downloads as "assets" when it is built, and this
plugin does not run them (see ``docs/meltingpot.md``).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

from torchenv_meltingpot._backend import import_meltingpot

__all__ = ["build_substrate", "check_substrate", "substrate_config", "substrate_names"]


def substrate_names() -> list[str]:
    """The names of Melting Pot's substrates, sorted.

    >>> "commons_harvest__open" in substrate_names()
    True
    """
    return sorted(import_meltingpot().SUBSTRATES)


def _scenarios() -> Any:
    try:
        from meltingpot.configs import scenarios
    except ImportError:  # pragma: no cover - depends on the install
        return {}
    return scenarios.SCENARIO_CONFIGS


def check_substrate(name: str) -> str:
    """``name`` if it is a substrate; otherwise :class:`~torchenv.registry.UnknownEnvError` with
    close matches (or ``NotImplementedError`` for a scenario).

    >>> check_substrate("commons_harvest__open")
    'commons_harvest__open'
    """
    from torchenv.registry import UnknownEnvError

    if not isinstance(name, str):
        raise TypeError(f"Melting Pot: the substrate must be a str, got {type(name).__name__}")
    known = substrate_names()
    if name in known:
        return name
    scenario = _scenarios().get(name)
    if scenario is not None:
        raise NotImplementedError(
            f"Melting Pot: {name!r} is a scenario (substrate {scenario.substrate!r} with "
            "pretrained background bots); torchenv-meltingpot runs substrates only: make "
            f"'meltingpot:{scenario.substrate}'"
        )
    raise UnknownEnvError("meltingpot", name, known)


def substrate_config(substrate: Any) -> Any:
    """The ``ConfigDict`` of a substrate given by name (or the config itself)."""
    module = import_meltingpot()
    if isinstance(substrate, str):
        return module.get_config(check_substrate(substrate))
    if hasattr(substrate, "default_player_roles"):
        return substrate
    raise TypeError(
        "MeltingpotEnv: substrate must be a substrate name or a ConfigDict from "
        f"meltingpot.substrate.get_config, got {type(substrate).__name__}"
    )


def build_substrate(config: Any, roles: Sequence[str], seed: int | None) -> Any:
    """Builds the substrate. Melting Pot draws the seed of its Lua world from Python's
    ``random`` when the substrate is built (and adds one per reset): with ``seed``, that draw is
    made from ``random.Random(seed)``, leaving the global generator as it was."""
    module = import_meltingpot()
    roles = list(roles)
    # a copy per build: building may change the config it is given, and a rebuild with the
    # same seed must start from the same config
    config = copy.deepcopy(config)
    if seed is None:
        return module.build_from_config(config, roles=roles)
    saved = random.getstate()
    try:
        random.seed(seed)
        return module.build_from_config(config, roles=roles)
    finally:
        random.setstate(saved)
