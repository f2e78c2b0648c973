"""MeltingpotEnv on a real substrate (coins: 2 players, the cheapest to build): TorchRL's
layout, per-player pixels and rewards, the collective reward, max_steps, from_pixels, set_seed,
errors."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("meltingpot")

from torchenv.registry import UnknownEnvError
from torchenv_meltingpot import MeltingpotEnv, MeltingpotWrapper, substrate_names

pytestmark = [pytest.mark.meltingpot, pytest.mark.slow]

SUBSTRATE = "coins"


@pytest.fixture(scope="module")
def env():
    env = MeltingpotEnv(SUBSTRATE, max_steps=6, from_pixels=True)
    yield env
    env.close()


def test_layout_pixels_rewards(env):
    assert env.group_map == {"agents": ["player_0", "player_1"]}
    td = env.reset()
    assert td["agents", "observation", "RGB"].shape == (2, 88, 88, 3)
    assert td["agents", "observation", "RGB"].dtype == torch.uint8
    assert td["agents", "observation", "COLLECTIVE_REWARD"].shape == (2, 1)
    assert td["RGB"].dtype == torch.uint8 and td["RGB"].ndim == 3  # the whole map
    assert torch.equal(td["pixels"], td["RGB"])
    assert set(env.full_done_spec.keys()) == {"done", "terminated"}
    assert torch.equal(torch.from_numpy(env.render()), td["RGB"])


def test_rewards_per_player_and_collective(env):
    torch.manual_seed(0)
    td = env.rollout(6)
    rewards = td["next", "agents", "reward"]
    assert rewards.shape == (6, 2, 1) and rewards.dtype == torch.float64
    # the collective reward each player sees is the sum of the players' rewards
    collective = td["next", "agents", "observation", "COLLECTIVE_REWARD"]
    assert torch.allclose(collective[:, 0], rewards.sum(1))
    assert td["next", "done"][-1].item() and not td["next", "done"][:-1].any()  # max_steps=6


def test_set_seed_rebuilds_the_substrate_and_keeps_global_random(env):
    import random

    old = env.base_env
    random.seed(123)
    expected = random.random()
    random.seed(123)
    env.set_seed(3)
    assert random.random() == expected  # Python's global generator is left as it was
    assert env.base_env is not old
    assert env.reset()["agents", "observation", "RGB"].shape == (2, 88, 88, 3)


def test_actions_move_the_players(env):
    # action 0 is a no-op: random moves change what the players see, no-ops leave it
    td = env.reset()
    start = td["agents", "observation", "RGB"].clone()
    torch.manual_seed(1)
    moved = False
    for _ in range(5):
        out = env.step(env.rand_action(td.clone()))["next", "agents", "observation", "RGB"]
        moved = moved or not torch.equal(out, start)
    assert moved


def test_one_hot_actions_and_group_per_player():
    env = MeltingpotEnv(SUBSTRATE, categorical_actions=False, group_map=None, max_steps=2)
    try:
        assert env.group_map == {"player_0": ["player_0"], "player_1": ["player_1"]}
        td = env.rollout(2)
        assert (
            td["player_1", "action"].shape[-1] == env.full_action_spec["player_1", "action"].space.n
        )
        assert td["next", "player_0", "observation", "RGB"].shape == (2, 1, 88, 88, 3)
    finally:
        env.close()


def test_errors():
    with pytest.raises(UnknownEnvError, match="meltingpot:coins"):
        MeltingpotEnv("coinz")
    with pytest.raises(TypeError, match="Substrate"):
        MeltingpotWrapper("coins")
    with pytest.raises(ValueError, match="max_steps"):
        MeltingpotEnv(SUBSTRATE, max_steps=0)
    with pytest.raises(ValueError, match="Invalid roles"):
        MeltingpotEnv(SUBSTRATE, roles=["nobody", "nobody"])
    assert SUBSTRATE in substrate_names()
