"""EnvBase.rollout: every keyword, policies, dynamic specs, the "time" dim."""

import pytest
import torch
from _envs_mocks import CounterEnv, DynamicSpecEnv, MarlEnv, StatelessEnv
from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.nn import TensorDictModule


def test_rollout_stops_at_first_done_by_default():
    env = CounterEnv(max_count=3)
    r = env.rollout(10)
    assert r.batch_size == torch.Size([3])
    assert r.names == ["time"]
    assert r["next", "done"].squeeze(-1).tolist() == [False, False, True]
    assert r["observation"].squeeze(-1).tolist() == [0.0, 1.0, 2.0]
    assert r["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]


def test_rollout_time_is_the_trailing_batch_dim():
    env = CounterEnv(batch_size=(2,), max_count=100)
    r = env.rollout(4)
    assert r.batch_size == torch.Size([2, 4])
    assert r.names == [None, "time"]


def test_rollout_no_break_resets_done_envs():
    env = CounterEnv(max_count=2)
    r = env.rollout(5, break_when_any_done=False)
    assert r.batch_size == torch.Size([5])
    assert r["observation"].squeeze(-1).tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert r["next", "done"].squeeze(-1).tolist() == [False, True, False, True, False]


def test_rollout_break_when_all_done_uses_partial_steps():
    env = StatelessEnv(limit=2.0)
    start = env.reset(TensorDict(batch_size=[2]))
    start["observation"] = torch.tensor([[1.0], [0.0]])
    r = env.rollout(
        10,
        policy=lambda td: td.set("action", torch.ones(*td.batch_size, 1)),
        auto_reset=False,
        tensordict=start,
        break_when_all_done=True,
    )
    # element 0 is done after 1 step, element 1 after 2: the rollout stops after step 2
    assert r.batch_size == torch.Size([2, 2])
    assert r["next", "done"].squeeze(-1).tolist() == [[True, True], [False, True]]
    # the done element was not stepped again: its second step repeats the first
    assert r["next", "observation"][0].squeeze(-1).tolist() == [2.0, 2.0]
    assert env.step_batches == [torch.Size([2]), torch.Size([1])]


def test_rollout_break_flags_are_exclusive():
    with pytest.raises(TypeError, match="exclusive"):
        CounterEnv().rollout(3, break_when_any_done=True, break_when_all_done=True)


def test_rollout_with_tensordict_module_policy():
    env = CounterEnv()
    policy = TensorDictModule(lambda obs: torch.tanh(obs) * 0.0 + 0.25, ["observation"], ["action"])
    r = env.rollout(3, policy)
    assert r["action"].eq(0.25).all()
    assert r["next", "reward"].eq(0.25).all()


def test_rollout_with_plain_module_policy_reads_observations_positionally():
    env = CounterEnv(max_count=100)
    module = torch.nn.Linear(1, 1)
    with torch.no_grad():
        module.weight.fill_(0.0)
        module.bias.fill_(0.5)
    r = env.rollout(3, module)
    assert torch.allclose(r["action"], torch.full((3, 1), 0.5))


def test_rollout_with_plain_callable_on_tensors():
    env = CounterEnv(max_count=100)
    r = env.rollout(2, lambda observation: torch.full_like(observation, -0.5))
    assert r["action"].eq(-0.5).all()


def test_rollout_with_tensordict_callable():
    env = CounterEnv(max_count=100)
    r = env.rollout(2, lambda tensordict: tensordict.set("action", torch.full((1,), 0.1)))
    assert torch.allclose(r["action"], torch.full((2, 1), 0.1))


def test_rollout_rejects_incompatible_policy():
    env = CounterEnv()
    with pytest.raises(TypeError, match="observation entries"):
        env.rollout(2, lambda a, b: a)


def test_rollout_trust_policy_calls_policy_as_is():
    env = CounterEnv(max_count=100)
    calls = []

    def policy(td, *unused):
        calls.append(td.batch_size)
        return td.set("action", torch.zeros(1))

    env.rollout(3, policy, trust_policy=True)
    assert len(calls) == 3


def test_rollout_callback_called_with_env_and_data():
    env = CounterEnv(max_count=100)
    seen = []
    env.rollout(4, callback=lambda e, td: seen.append((e, td["observation"].item())))
    assert [e for e, _ in seen] == [env] * 3
    assert [v for _, v in seen] == [1.0, 2.0, 3.0]
    seen.clear()
    env.rollout(4, callback=lambda e, td: seen.append(e), break_when_any_done=False)
    assert len(seen) == 3


def test_rollout_auto_reset_false_requires_tensordict():
    env = CounterEnv()
    with pytest.raises(RuntimeError, match="tensordict must be given"):
        env.rollout(3, auto_reset=False)


def test_rollout_from_tensordict_continues_the_episode():
    env = CounterEnv(max_count=100)
    td = env.reset()
    for _ in range(2):
        td = env._step_mdp(env.rand_step(td))
    calls = env.reset_calls
    r = env.rollout(3, auto_reset=False, tensordict=td)
    assert env.reset_calls == calls
    assert r["observation"].squeeze(-1).tolist() == [2.0, 3.0, 4.0]


def test_rollout_set_truncated_marks_last_step():
    env = CounterEnv(max_count=100)
    with pytest.raises(RuntimeError, match="add_truncated_keys"):
        env.rollout(3, set_truncated=True)
    env.add_truncated_keys()
    r = env.rollout(3, set_truncated=True)
    assert r["next", "truncated"].squeeze(-1).tolist() == [False, False, True]
    assert r["next", "done"].squeeze(-1).tolist() == [False, False, True]


def test_rollout_return_contiguous_false_gives_lazy_stack():
    env = CounterEnv(max_count=100)
    r = env.rollout(3, return_contiguous=False)
    assert isinstance(r, LazyStackedTensorDict)
    assert r.names == ["time"]


def test_rollout_out_argument():
    env = CounterEnv(max_count=100)
    out = env.rollout(3).zero_()
    r = env.rollout(3, out=out)
    assert r is out
    assert out["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]


def test_rollout_dynamic_specs_reference_example():
    env = DynamicSpecEnv()
    r = env.rollout(5, return_contiguous=False)
    assert isinstance(r, LazyStackedTensorDict)
    assert r.batch_size == torch.Size([5])
    assert [td["next", "observation"].shape[1] for td in r.tensordicts] == [2, 3, 4, 5, 6]
    assert r["next", "done"].squeeze(-1).tolist() == [False, False, False, False, True]
    with pytest.raises(RuntimeError, match="return_contiguous=False"):
        env.rollout(5)
    assert isinstance(env.rollout(5, return_contiguous=None), LazyStackedTensorDict)


def test_rollout_marl_nested_keys():
    env = MarlEnv(batch_size=(3,), n_agents=2, shared_done=False, max_count=3)
    r = env.rollout(5)
    assert r.batch_size == torch.Size([3, 3])
    assert r["agents", "action"].shape == torch.Size([3, 3, 2, 2])
    assert r["next", "agents", "reward"].shape == torch.Size([3, 3, 2, 1])
    r = env.rollout(5, break_when_any_done=False)
    assert r["agents", "observation"][0, :, 0, 0].tolist() == [0.0, 1.0, 2.0, 0.0, 1.0]


def test_rollout_auto_cast_to_device_runs_on_cpu():
    env = CounterEnv(max_count=100)
    module = torch.nn.Linear(1, 1)
    r = env.rollout(2, module, auto_cast_to_device=True)
    assert r.batch_size == torch.Size([2])


def test_rollout_max_steps_must_be_positive():
    with pytest.raises(ValueError, match="max_steps"):
        CounterEnv().rollout(0)
