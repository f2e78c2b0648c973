"""Actions of another dtype, device or shape than their spec (issue 20): cast or refuse.

TorchRL 0.14.1 casts a float64 action for a float32 spec and an int64 action for an int8
``Categorical``: we do too; where a value cannot be represented we refuse, naming the key.
"""

import pytest
import torch
from _envs_mocks import CounterEnv, DiscreteEnv
from tensordict import TensorDict

from torchenv.envs import TicTacToeEnv


def _step(env, action):
    td = env.reset()
    td["action"] = action
    return env.step(td)


def test_float64_action_is_cast_to_the_float32_spec():
    env = CounterEnv()
    td = _step(env, torch.full((1,), 0.5, dtype=torch.float64))
    assert td["action"].dtype == torch.float32
    assert td["next", "reward"].dtype == torch.float32
    assert td["next", "reward"].item() == 0.5


def test_int64_action_is_cast_to_an_int8_categorical():
    env = DiscreteEnv(torch.int8)
    td = _step(env, torch.tensor([3]))
    assert env.seen == [torch.int8]
    assert td["next", "observation"].item() == 3.0


@pytest.mark.parametrize(
    ("dtype", "value", "err", "match"),
    [
        (torch.uint8, torch.tensor([2.5]), TypeError, r"not whole numbers \(e.g. 2.5\)"),
        (torch.int8, torch.tensor([300]), ValueError, r"\[300, 300\] do not fit in \[-128, 127\]"),
        (torch.uint8, torch.tensor([-1]), ValueError, r"do not fit in \[0, 255\]"),
        (torch.bool, torch.tensor([0.7]), ValueError, r"only 0 and 1 can be cast to bool"),
        (torch.int64, torch.tensor([float("nan")]), TypeError, r"not whole numbers"),
    ],
)
def test_values_that_cannot_be_represented_are_refused(dtype, value, err, match):
    env = DiscreteEnv(dtype, n=2 if dtype is torch.bool else 4)
    with pytest.raises(err, match=rf"DiscreteEnv.step: the action 'action' .*{dtype}.*{match}"):
        _step(env, value)
    assert env.seen == []


def test_whole_floats_and_bools_are_cast_to_integer_specs():
    env = DiscreteEnv(torch.uint8)
    _step(env, torch.tensor([2.0]))
    _step(env, torch.tensor([True]))
    assert env.seen == [torch.uint8, torch.uint8]


def test_bool_action_for_a_float_spec_is_refused():
    env = CounterEnv()
    with pytest.raises(TypeError, match=r"'action' has dtype torch.bool.*torch.float32"):
        _step(env, torch.ones(1, dtype=torch.bool))


def test_float64_overflowing_float32_is_refused():
    env = CounterEnv()
    with pytest.raises(ValueError, match="overflow torch.float32"):
        _step(env, torch.full((1,), 1e300, dtype=torch.float64))


def test_meta_device_action_is_refused_by_step_and_step_and_maybe_reset():
    env = CounterEnv()
    for method in (env.step, env.step_and_maybe_reset):
        td = env.reset()
        td["action"] = torch.zeros(1, device="meta")
        with pytest.raises(ValueError, match="'action' is on the 'meta' device"):
            method(td)


def test_rollout_with_a_policy_returning_meta_actions_is_refused():
    env = CounterEnv()

    def policy(td):
        td["action"] = torch.zeros(1, device="meta")
        return td

    with pytest.raises(ValueError, match="'meta' device"):
        env.rollout(3, policy)


def test_wrongly_shaped_action_on_tictactoe_is_refused():
    env = TicTacToeEnv(seed=0)
    td = env.reset()
    td["action"] = torch.tensor([0, 4])
    with pytest.raises(
        ValueError, match=r"'action' has shape \(2,\) but the spec expects shape \(\)"
    ):
        env.step(td)
    td = env.reset(TensorDict(batch_size=[3]))
    td["action"] = torch.tensor([[0], [1], [2]])
    with pytest.raises(ValueError, match=r"has shape \(3, 1\) but the spec expects shape \(3,\)"):
        env.step_and_maybe_reset(td)
    td["action"] = torch.tensor([0, 1, 2])
    assert env.step(td)["next", "board"].shape == (3, 3, 3)
