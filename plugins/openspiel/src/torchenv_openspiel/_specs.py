"""What a game looks like to torchenv: its players, observation tensors and action space."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from torchenv.specs import Categorical, OneHot, TensorSpec, Unbounded

__all__ = ["GameInfo", "game_info"]

OBSERVATION = "observation"
INFORMATION_STATE = "information_state"


@dataclass(frozen=True)
class GameInfo:
    """The facts about a game the env is built from.

    Attributes:
        name: the game's short name.
        num_players: the number of players (agents ``player_0`` ... ``player_{n-1}``).
        num_actions: ``game.num_distinct_actions()``: every player's action space.
        observation_keys: ``"observation"`` and/or ``"information_state"``, the tensors the
            game provides, each with its shape.
        simultaneous: the game has simultaneous-move nodes.
    """

    name: str
    num_players: int
    num_actions: int
    observation_keys: tuple[tuple[str, tuple[int, ...]], ...]
    simultaneous: bool

    @property
    def agents(self) -> list[str]:
        """TorchRL's agent names, ``player_<index>``."""
        return [f"player_{i}" for i in range(self.num_players)]

    def action_spec(self, categorical: bool) -> TensorSpec:
        """A player's action: a category index (``categorical``) or a one-hot vector."""
        if categorical:
            return Categorical(self.num_actions, dtype=torch.int64)
        return OneHot(self.num_actions, dtype=torch.int64)

    def observation_spec(self, key: str) -> TensorSpec:
        """The float32 spec of one player's ``key`` tensor."""
        shape = dict(self.observation_keys)[key]
        return Unbounded(shape=shape, dtype=torch.float32)


def game_info(pyspiel: Any, game: Any) -> GameInfo:
    """The :class:`GameInfo` of a ``pyspiel.Game``; refuses the kinds of games the env cannot
    play, with the reason.

    >>> import pyspiel
    >>> info = game_info(pyspiel, pyspiel.load_game("kuhn_poker"))
    >>> info.agents, info.num_actions, info.observation_keys
    (['player_0', 'player_1'], 2, (('observation', (7,)), ('information_state', (11,))))
    """
    game_type = game.get_type()
    name = game_type.short_name
    dynamics = pyspiel.GameType.Dynamics
    if game_type.dynamics == dynamics.MEAN_FIELD:
        raise NotImplementedError(
            f"OpenSpiel {name}: mean-field games are not supported (they have no fixed set of "
            "players to map to agents)"
        )
    keys = []
    if game_type.provides_observation_tensor:
        keys.append((OBSERVATION, tuple(game.observation_tensor_shape())))
    if game_type.provides_information_state_tensor:
        keys.append((INFORMATION_STATE, tuple(game.information_state_tensor_shape())))
    if not keys:
        raise NotImplementedError(
            f"OpenSpiel {name}: the game provides neither an observation tensor nor an "
            "information-state tensor, so it has no observation to give the agents"
        )
    return GameInfo(
        name=name,
        num_players=game.num_players(),
        num_actions=game.num_distinct_actions(),
        observation_keys=tuple(keys),
        simultaneous=game_type.dynamics == dynamics.SIMULTANEOUS,
    )
