"""Partial dispatch, fan-out, kwargs, multi-task, device casting, dynamic specs."""

from __future__ import annotations

import functools

import pytest
import torch
from tensordict import LazyStackedTensorDict

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs.builtin import CartPoleEnv

BOTH = [SerialEnv, pytest.param(ParallelEnv, marks=pytest.mark.parallel)]


@pytest.fixture(params=BOTH, ids=["serial", "parallel"])
def batched_cls(request):
    return request.param


def test_specs_stacked_from_sub_env(batched_cls, noise_env_cls):
    env = batched_cls(3, noise_env_cls)
    sub = noise_env_cls()
    assert env.batch_size == torch.Size([3])
    assert env.full_observation_spec["obs"].shape == torch.Size([3, 3])
    assert env.action_spec.shape == torch.Size([3, 1])
    assert env.single_action_spec == sub.action_spec
    assert env.done_keys == sub.done_keys
    env.close()


def test_partial_step_only_concerned_workers(batched_cls, noise_env_cls):
    env = batched_cls(3, noise_env_cls)
    td = env.reset()
    td.set("action", torch.zeros(3, 1))
    td.set("_step", torch.tensor([True, False, True]))
    out = env.step(td)
    assert env.count == [1, 0, 1]  # the middle worker did not step
    # rows that did not step carry the input's values
    torch.testing.assert_close(out["next", "obs"][1], td["obs"][1])
    assert out["next", "count"].squeeze(-1).tolist() == [1, 0, 1]
    env.close()


def test_partial_reset_only_concerned_workers(batched_cls, noise_env_cls):
    env = batched_cls(3, noise_env_cls)
    td = env.reset()
    td.set("action", torch.zeros(3, 1))
    td = env.step(td)["next"].exclude("reward")
    td = env.step(td.set("action", torch.zeros(3, 1)))["next"].exclude("reward")
    assert env.count == [2, 2, 2]
    before = td["obs"].clone()
    td.set("_reset", torch.tensor([[False], [True], [False]]))
    out = env.reset(td)
    assert env.count == [2, 0, 2]
    assert "_reset" not in out.keys()  # noqa: SIM118
    torch.testing.assert_close(out["obs"][0], before[0])
    torch.testing.assert_close(out["obs"][2], before[2])
    assert out["count"].squeeze(-1).tolist() == [2, 0, 2]
    env.close()


def test_attribute_and_method_fan_out(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls, [{"scale": 1.0}, {"scale": 2.0}])
    assert env.g == pytest.approx([9.81, 19.62])
    assert env.get_count(offset=5) == [5, 5]
    with pytest.raises(AttributeError, match="no_such_attribute"):
        _ = env.no_such_attribute
    env.close()


def test_reset_list_of_kwargs_and_common_kwargs(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls)
    env.reset(list_of_kwargs=[{"scale": 3.0}, {"scale": 4.0}])
    assert env.scale == [3.0, 4.0]
    env.reset(scale=5.0)
    assert env.scale == [5.0, 5.0]
    with pytest.raises(ValueError, match="list_of_kwargs"):
        env.reset(list_of_kwargs=[{}])
    env.close()


def test_create_env_kwargs_list_and_update_kwargs(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls, create_env_kwargs=[{"scale": 1.0}, {"scale": 3.0}])
    assert env.scale == [1.0, 3.0]
    env.update_kwargs({"scale": 7.0})
    assert env.scale == [1.0, 3.0]  # the running envs are unchanged
    env.close()
    assert env.scale == [7.0, 7.0]  # restarted with the new kwargs
    env.close()


def test_multi_task_heterogeneous_specs(batched_cls, noise_env_cls):
    env = batched_cls(
        2,
        [functools.partial(noise_env_cls, obs_dim=2), functools.partial(noise_env_cls, obs_dim=4)],
    )
    td = env.reset()
    assert isinstance(td, LazyStackedTensorDict)
    assert td[0]["obs"].shape == torch.Size([2])
    assert td[1]["obs"].shape == torch.Size([4])
    td.set("action", torch.zeros(2, 1))
    data, td_ = env.step_and_maybe_reset(td)
    assert data[1]["next", "obs"].shape == torch.Size([4])
    assert td_[0]["obs"].shape == torch.Size([2])
    env.close()


def test_multi_task_same_specs_is_dense(batched_cls, noise_env_cls):
    env = batched_cls(2, [noise_env_cls, functools.partial(noise_env_cls, scale=2.0)])
    td = env.reset()
    assert not isinstance(td, LazyStackedTensorDict)
    assert env.scale == [1.0, 2.0]
    env.close()


def test_share_individual_td_gives_lazy_stack(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls, share_individual_td=True)
    td = env.reset()
    assert isinstance(td, LazyStackedTensorDict)
    td.set("action", torch.zeros(2, 1))
    assert env.step(td)["next", "count"].squeeze(-1).tolist() == [1, 1]
    env.close()


def test_device_argument_casts_outputs(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls, device="cpu")
    assert env.device == torch.device("cpu")
    td = env.reset()
    assert td.device == torch.device("cpu")
    td.set("action", torch.zeros(2, 1))
    assert env.step(td)["next"].device == torch.device("cpu")
    env.close()


def test_dynamic_specs_run_without_buffers(batched_cls, dynamic_env_cls):
    env = batched_cls(2, dynamic_env_cls)
    assert not env._use_buffers
    rollout = env.rollout(3, return_contiguous=False)
    assert rollout.batch_size == torch.Size([2, 3])
    assert rollout[0, 2]["next", "observation"].shape == torch.Size([4, 2])
    td = env.reset()
    td.set("action", torch.zeros(2, 2))
    data, td_ = env.step_and_maybe_reset(td)
    assert data["next", "observation"].shape == torch.Size([2, 2, 2])
    with pytest.raises(ValueError, match="dynamic specs"):
        batched_cls(2, dynamic_env_cls, use_buffers=True)
    env.close()


def test_no_buffers_matches_buffers(batched_cls, noise_env_cls):
    results = []
    for use_buffers in (True, False):
        env = batched_cls(2, noise_env_cls, use_buffers=use_buffers)
        env.set_seed(0)
        td = env.reset()
        for _ in range(6):
            td.set("action", torch.full((2, 1), 0.5))
            data, td = env.step_and_maybe_reset(td)
        results.append(data)
        env.close()
    for key in results[0].keys(True, True):
        torch.testing.assert_close(results[0][key], results[1][key])


@pytest.mark.parallel
def test_serial_for_single(noise_env_cls):
    env = ParallelEnv(1, noise_env_cls, serial_for_single=True)
    assert isinstance(env, SerialEnv)
    assert env.reset().batch_size == torch.Size([1])
    env.close()
    env = ParallelEnv(1, noise_env_cls)
    assert isinstance(env, ParallelEnv)
    env.close()


@pytest.mark.parallel
def test_parallel_disables_gradients(noise_env_cls):
    env = ParallelEnv(2, noise_env_cls)
    td = env.reset()
    action = torch.zeros(2, 1, requires_grad=True)
    td.set("action", action)
    out = env.step(td)
    assert not out["next", "obs"].requires_grad
    env.close()


def test_bad_arguments(noise_env_cls):
    with pytest.raises(ValueError, match="num_workers"):
        SerialEnv(0, noise_env_cls)
    with pytest.raises(ValueError, match="create_env_kwargs"):
        SerialEnv(2, noise_env_cls, [{}, {}, {}])
    with pytest.raises(TypeError, match="callable"):
        SerialEnv(2, [noise_env_cls, 3])
    # an env instance is callable (an nn.Module) but is not a constructor
    with pytest.raises(TypeError, match=r"env instance \(CartPoleEnv\).*lambda: CartPoleEnv"):
        ParallelEnv(2, CartPoleEnv())
    with pytest.raises(ValueError, match="share_individual_td=False"):
        SerialEnv(
            2,
            [noise_env_cls, functools.partial(noise_env_cls, obs_dim=5)],
            share_individual_td=False,
        )


def test_to_device_keeps_sub_envs_and_casts(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls)
    assert env.to("cpu") is env
    assert env.device == torch.device("cpu")
    td = env.reset()
    assert td.device == torch.device("cpu")
    env.close()


def test_state_dict_per_worker(batched_cls, noise_env_cls):
    env = batched_cls(2, noise_env_cls)
    env.bump(1.0)
    sd = env.state_dict()
    assert set(sd) == {"worker0", "worker1"}
    assert float(sd["worker0"]["stat"]) == 1.0
    env.load_state_dict(
        {"worker0": {"stat": torch.tensor([5.0])}, "worker1": {"stat": torch.zeros(1)}}
    )
    assert [float(s) for s in env.stat] == [5.0, 0.0]
    env.load_state_dict({"stat": torch.tensor([2.0])})
    assert [float(s) for s in env.stat] == [2.0, 2.0]
    env.close()


def test_batched_sub_envs_partial_reset(batched_cls):
    env = batched_cls(2, CartPoleEnv, create_env_kwargs={"batch_size": [3]})
    assert env.batch_size == torch.Size([2, 3])
    env.set_seed(0)
    td = env.reset()
    for _ in range(3):
        td = env.step(td.set("action", torch.ones(2, 3, dtype=torch.long)))["next"]
        td = td.exclude("reward")
    before = td["observation"].clone()
    reset = torch.zeros(2, 3, 1, dtype=torch.bool)
    reset[1, 2] = True
    out = env.reset(td.set("_reset", reset))
    changed = (out["observation"] != before).any(-1)
    assert changed.tolist() == [[False, False, False], [False, False, True]]
    data, td_ = env.step_and_maybe_reset(out.set("action", torch.ones(2, 3, dtype=torch.long)))
    assert data["next", "observation"].shape == torch.Size([2, 3, 4])
    env.close()


def test_parallel_needs_shared_buffers(noise_env_cls):
    with pytest.raises(ValueError, match="shared_memory=False"):
        ParallelEnv(2, noise_env_cls, shared_memory=False)
    # serial buffers need not be shared
    env = SerialEnv(2, noise_env_cls, shared_memory=False)
    assert env.reset().batch_size == torch.Size([2])
    env.close()
