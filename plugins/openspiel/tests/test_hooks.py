"""The ``openspiel`` backend: listing, making by name, the raw loop, errors."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspiel")

import pyspiel

import torchenv
from torchenv.registry import UnknownEnvError
from torchenv_openspiel import OpenSpielEnv, game_names
from torchenv_openspiel._raw import make_raw_loop

pytestmark = pytest.mark.openspiel


def test_list_envs_is_pyspiels_registry():
    assert torchenv.list_envs("openspiel") == sorted(pyspiel.registered_names())
    assert game_names() == sorted(pyspiel.registered_names())


def test_make_by_name_with_seed_and_parameters():
    env = torchenv.make("openspiel:kuhn_poker", seed=0)
    assert isinstance(env, OpenSpielEnv)
    assert env.reset()["agents", "observation"].shape == (2, 7)
    env3 = torchenv.make("openspiel:kuhn_poker(players=3)")
    assert env3.num_players == 3
    env3b = torchenv.make("openspiel:kuhn_poker", parameters={"players": 3})
    assert env3b.group_map == env3.group_map

    def deals(seed):
        e = torchenv.make("openspiel:kuhn_poker", seed=seed, categorical_actions=True)
        return [e.reset() is not None and tuple(e.game_state.history()) for _ in range(5)]

    assert deals(3) == deals(3)


def test_unknown_game_suggests():
    with pytest.raises(UnknownEnvError, match="openspiel:tic_tac_toe"):
        torchenv.make("openspiel:tic_tac_to")


def test_num_envs_is_refused():
    with pytest.raises(ValueError, match="SerialEnv"):
        torchenv.make("openspiel:kuhn_poker", num_envs=4)


@pytest.mark.parametrize("game", ["kuhn_poker", "goofspiel(num_cards=3)"])
def test_raw_loop_runs(game):
    run = make_raw_loop(game, {})
    assert run(30) == 30
    run.close()
