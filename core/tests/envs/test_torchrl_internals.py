"""The private members TorchRL's wrappers read on an env (torchenv.envs._torchrl_internals)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import PendulumEnv
from torchenv.envs._torchrl_internals import complete_done
from torchenv.specs import Categorical, Composite


def _flag() -> Categorical:
    return Categorical(2, (1,), dtype=torch.bool)


def _done_spec(**groups: Composite) -> Composite:
    return Composite(done=_flag(), terminated=_flag(), truncated=_flag(), **groups)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"done": True}, {"done": True, "terminated": True, "truncated": False}),
        ({"terminated": True}, {"done": True, "terminated": True, "truncated": False}),
        ({}, {"done": False, "terminated": False, "truncated": False}),
    ],
)
def test_complete_done_follows_torchrl_rules(given, expected):
    data = TensorDict({k: torch.tensor([v]) for k, v in given.items()})
    complete_done(_done_spec(), data)
    assert {k: data[k].item() for k in expected} == expected


def test_complete_done_refuses_to_guess_terminated_from_done_and_truncated():
    data = TensorDict(done=torch.tensor([True]), truncated=torch.tensor([True]))
    with pytest.raises(RuntimeError, match="Cannot infer the value of terminated"):
        complete_done(_done_spec(), data)


def test_complete_done_reshapes_and_recurses_with_batch_dims():
    spec = _done_spec(
        agents=Composite(done=Categorical(2, (3, 1), dtype=torch.bool), shape=(3,))
    ).expand(4)
    data = TensorDict(
        {"done": torch.zeros(4, dtype=torch.bool), "agents": TensorDict({}, [4, 3])}, batch_size=[4]
    )
    complete_done(spec, data)
    assert data["done"].shape == (4, 1)
    assert data["terminated"].shape == (4, 1) and data["truncated"].shape == (4, 1)
    assert data["agents", "done"].shape == (4, 3, 1)


def test_step_mdp_key_lists_and_flags():
    env = PendulumEnv()
    assert set(env._observation_keys_step_mdp) == set(env.full_observation_spec.keys(True, True))
    assert set(env._done_keys_step_mdp) == set(env.full_done_spec.keys(True, True))
    assert "done" in env._done_keys_step_mdp
    assert env._supports_set_state is False and env._inplace_update is False
    td = env.reset()
    assert env._input_td_has_state(td) == bool(list(env.full_state_spec.keys(True, True)))
    assert env._input_td_has_state(None) is False
    assert env._reset_on_native_autoreset(td, td) is td
