"""VecNorm's state dict has TorchRL's layout: one ``"_extra_state"`` entry of statistics."""

from __future__ import annotations

import torch

from torchenv.envs import PendulumEnv
from torchenv.transforms import TransformedEnv, VecNorm


def _trained() -> VecNorm:
    env = TransformedEnv(PendulumEnv(), VecNorm(in_keys=["observation"], decay=1.0))
    env.set_seed(0)
    env.rollout(5)
    return env.transform[0]


def test_state_dict_layout_is_torchrl_s():
    state = _trained().state_dict()
    assert list(state) == ["_extra_state"]
    assert sorted(state["_extra_state"]) == [
        "observation_count",
        "observation_ssq",
        "observation_sum",
    ]
    assert state["_extra_state"]["observation_count"].item() == 6.0  # reset + 5 steps


def test_load_restores_statistics_into_a_fresh_transform():
    trained = _trained()
    fresh = VecNorm(in_keys=["observation"], decay=1.0)
    fresh.load_state_dict(trained.state_dict())
    torch.testing.assert_close(fresh.loc["observation"], trained.loc["observation"])
    torch.testing.assert_close(fresh.scale["observation"], trained.scale["observation"])


def test_env_state_dict_nests_the_transform_state():
    env = TransformedEnv(PendulumEnv(), VecNorm(in_keys=["observation"]))
    env.rollout(2)
    assert list(env.state_dict()) == ["transforms.0._extra_state"]
