"""OpenSpiel's games by name: the list, the lookup (with suggestions) and loading.

A game is named by its short name (``"kuhn_poker"``) or by a game string with parameters
(``"kuhn_poker(players=3)"``, OpenSpiel's own syntax); parameters may also be given as a dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchenv_openspiel._backend import import_pyspiel

__all__ = ["check_game_name", "game_names", "load_game", "short_name"]


def game_names() -> list[str]:
    """The short names of every game registered with OpenSpiel (``pyspiel.registered_names()``),
    sorted.

    >>> "kuhn_poker" in game_names()
    True
    """
    return sorted(import_pyspiel().registered_names())


def short_name(game_string: str) -> str:
    """The game's short name: ``game_string`` without its parameters.

    >>> short_name("kuhn_poker(players=3)")
    'kuhn_poker'
    """
    return game_string.split("(", 1)[0].strip()


def check_game_name(game_string: str) -> str:
    """The short name of ``game_string`` if OpenSpiel registers it; otherwise
    :class:`~torchenv.registry.UnknownEnvError` with close matches.

    >>> check_game_name("tic_tac_toe")
    'tic_tac_toe'
    >>> check_game_name("kuhn_pokr")
    Traceback (most recent call last):
    ...
    torchenv.registry._errors.UnknownEnvError: unknown env id 'kuhn_pokr' for backend 'openspiel'. Did you mean 'openspiel:kuhn_poker'? ...
    """
    from torchenv.registry import UnknownEnvError

    if not isinstance(game_string, str):
        raise TypeError(f"OpenSpiel: the game must be a str, got {type(game_string).__name__}")
    name = short_name(game_string)
    known = game_names()
    if name not in known:
        raise UnknownEnvError("openspiel", game_string, known) from None
    return name


def load_game(game_string: str, parameters: Mapping[str, Any] | None = None) -> Any:
    """``pyspiel.load_game`` with a clear error for unknown games and rejected parameters.

    >>> load_game("kuhn_poker", {"players": 3}).num_players()
    3
    """
    pyspiel = import_pyspiel()
    name = check_game_name(game_string)
    if parameters is not None and not isinstance(parameters, Mapping):
        raise TypeError(
            f"OpenSpiel {name}: parameters must be a dict name -> value, got "
            f"{type(parameters).__name__}"
        )
    try:
        if parameters:
            if "(" in game_string:
                raise ValueError(
                    f"OpenSpiel {name}: give the parameters either in the game string "
                    f"({game_string!r}) or as parameters={dict(parameters)}, not both"
                )
            return pyspiel.load_game(game_string, dict(parameters))
        return pyspiel.load_game(game_string)
    except pyspiel.SpielError as err:
        raise ValueError(
            f"OpenSpiel could not load {game_string!r}"
            + (f" with parameters {dict(parameters)}" if parameters else "")
            + f": {err}"
        ) from err
