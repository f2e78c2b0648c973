"""EnvBase spec properties: leaf-vs-composite views, keys, done flanking, locking."""

import pytest
import torch
from _envs_mocks import CounterEnv, DynamicSpecEnv, MarlEnv, ZeroResetEnv
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


class _Bare(EnvBase):
    """An env whose specs are set by the test."""

    def __init__(self, batch_size=(), **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)

    def _reset(self, tensordict=None, **kwargs):
        return self.full_observation_spec.zero().update(self.full_done_spec.zero())

    def _step(self, tensordict):
        out = self.full_observation_spec.zero()
        return out.update(self.full_done_spec.zero()).update(self.full_reward_spec.zero())


def test_env_is_module_with_batch_and_device():
    env = CounterEnv(batch_size=(4,))
    assert isinstance(env, torch.nn.Module)
    assert env.batch_size == torch.Size([4])
    assert env.device is None
    assert env.batch_locked
    assert env.numel() == 4 and env.batch_dims == 1


def test_single_leaf_specs_are_returned_as_leaves():
    env = CounterEnv(batch_size=(2,))
    assert isinstance(env.action_spec, Bounded)
    assert env.action_spec.shape == torch.Size([2, 1])
    assert isinstance(env.reward_spec, Unbounded)
    assert env.reward_spec is env.full_reward_spec["reward"]
    # observation and state specs stay composite
    assert isinstance(env.observation_spec, Composite)
    assert isinstance(env.state_spec, Composite)
    # done is flanked by terminated: two leaves -> the composite
    assert isinstance(env.done_spec, Composite)
    assert set(env.done_spec.keys()) == {"done", "terminated"}


def test_leaf_spec_setters_wrap_under_default_keys():
    env = _Bare(batch_size=(3,))
    env.observation_spec = Unbounded((3, 4))
    env.action_spec = Bounded(-1.0, 1.0, shape=(3, 2))
    env.reward_spec = Unbounded((3, 1))
    assert env.observation_keys == ["observation"]
    assert env.action_keys == ["action"] and env.action_key == "action"
    assert env.reward_keys == ["reward"] and env.reward_key == "reward"
    assert env.output_spec["full_reward_spec"]["reward"].shape == torch.Size([3, 1])


def test_full_spec_views_and_containers():
    env = MarlEnv(batch_size=(3,), n_agents=2)
    assert env.action_key == ("agents", "action")
    assert env.reward_key == ("agents", "reward")
    assert env.reward_spec == env.output_spec["full_reward_spec"][env.reward_key]
    assert env.action_spec.shape == torch.Size([3, 2, 2])
    assert set(env.input_spec.keys()) == {"full_action_spec", "full_state_spec"}
    assert set(env.output_spec.keys()) == {
        "full_observation_spec",
        "full_reward_spec",
        "full_done_spec",
    }
    assert env.single_action_spec.shape == torch.Size([2, 2])
    assert env.single_observation_spec["agents", "observation"].shape == torch.Size([2, 3])


def test_multi_leaf_action_spec_returns_composite_and_action_key_raises():
    env = _Bare()
    env.full_action_spec = Composite(a=Unbounded((1,)), b=Unbounded((2,)))
    assert isinstance(env.action_spec, Composite)
    with pytest.raises(KeyError, match="action_key"):
        _ = env.action_key
    with pytest.raises(KeyError, match="done_key"):
        _ = env.done_key  # done and terminated


def test_spec_shape_must_start_with_batch_size():
    env = _Bare(batch_size=(2,))
    with pytest.raises(ValueError, match=r"batch_size \(2,\).*\(3, 1\)"):
        env.reward_spec = Unbounded((3, 1))
    with pytest.raises(ValueError, match="observation"):
        env.full_observation_spec = Composite(obs=Unbounded((5,)))


def test_reward_and_done_leaves_need_a_dim():
    env = _Bare()
    with pytest.raises(ValueError, match="empty shape"):
        env.reward_spec = Unbounded(())


def test_default_done_and_reward_specs():
    env = _Bare(batch_size=(5,))
    assert env.done_keys == ["done", "terminated"]
    for key in env.done_keys:
        spec = env.full_done_spec[key]
        assert isinstance(spec, Categorical)
        assert spec.dtype == torch.bool
        assert spec.shape == torch.Size([5, 1])
    assert env.reward_keys == ["reward"]
    assert env.reward_spec.shape == torch.Size([5, 1])


@pytest.mark.parametrize("given", ["done", "terminated"])
def test_done_flanking_adds_the_dual(given):
    env = _Bare()
    env.full_done_spec = Composite({given: Categorical(2, shape=(1,), dtype=torch.bool)})
    assert set(env.full_done_spec.keys()) == {"done", "terminated"}


def test_done_flanking_nested_and_truncated_kept():
    env = _Bare()
    env.full_done_spec = Composite(
        truncated=Categorical(2, shape=(1,), dtype=torch.bool),
        done=Categorical(2, shape=(1,), dtype=torch.bool),
        agents=Composite(terminated=Categorical(2, shape=(1,), dtype=torch.bool)),
    )
    assert set(env.done_keys) == {
        "done",
        "terminated",
        "truncated",
        ("agents", "done"),
        ("agents", "terminated"),
    }
    # root first
    assert env.done_keys[:3] == ["done", "terminated", "truncated"]
    assert env.reset_keys == ["_reset", ("agents", "_reset")]
    assert env.done_keys_groups == [
        ["done", "terminated", "truncated"],
        [("agents", "done"), ("agents", "terminated")],
    ]


def test_done_spec_leaf_setter_flanks():
    env = _Bare()
    env.done_spec = Categorical(2, shape=(1,), dtype=torch.bool)
    assert set(env.done_keys) == {"done", "terminated"}


def test_step_fills_terminated_from_done_and_done_from_terminated():
    env = _Bare()
    env.observation_spec = Unbounded((1,))
    env.action_spec = Unbounded((1,))

    def step_only_done(td):
        return TensorDict(
            {
                "observation": torch.zeros(1),
                "reward": torch.zeros(1),
                "done": torch.ones(1, dtype=torch.bool),
            }
        )

    env._step = step_only_done
    td = env.step(TensorDict(action=torch.zeros(1)))
    assert td["next", "terminated"].all() and td["next", "done"].all()

    def step_only_terminated(td):
        return TensorDict(
            {
                "observation": torch.zeros(1),
                "reward": torch.zeros(1),
                "terminated": torch.ones(1, dtype=torch.bool),
            }
        )

    env._step = step_only_terminated
    td = env.step(TensorDict(action=torch.zeros(1)))
    assert td["next", "terminated"].all() and td["next", "done"].all()


def test_specs_are_locked_by_default_and_assignment_relocks():
    env = CounterEnv()
    assert env.spec_locked
    assert env.output_spec.is_locked and env.full_observation_spec.is_locked
    with pytest.raises(RuntimeError):
        env.full_observation_spec["other"] = Unbounded((2,))
    keys_before = env.observation_keys
    env.observation_spec = Composite(observation=Unbounded((1,)), other=Unbounded((2,)))
    assert env.spec_locked and env.full_observation_spec.is_locked
    assert keys_before == ["observation"]
    assert env.observation_keys == ["observation", "other"]  # cache was erased


def test_unlocked_specs_can_be_modified_in_place():
    env = CounterEnv(spec_locked=False)
    assert not env.spec_locked
    assert not env.output_spec.is_locked
    env.full_observation_spec["other"] = Unbounded((2,))
    assert "other" in env.observation_keys  # nothing cached while unlocked
    env.set_spec_lock_(True)
    assert env.output_spec.is_locked
    env.set_spec_lock_(False)
    assert not env.input_spec.is_locked


def test_key_collisions_are_rejected():
    class Colliding(_Bare):
        def __init__(self):
            super().__init__()
            self.observation_spec = Composite(reward=Unbounded((1,)))

    with pytest.raises(RuntimeError, match="'reward'"):
        Colliding()


def test_dynamic_specs_detected():
    assert DynamicSpecEnv()._has_dynamic_specs
    assert not CounterEnv()._has_dynamic_specs


def test_nested_done_layout_keys():
    env = ZeroResetEnv("both")
    assert env.reset_keys == ["_reset", ("agent0", "_reset"), ("agent1", "_reset")]


def test_add_truncated_keys():
    env = CounterEnv()
    assert "truncated" not in env.done_keys
    assert env.add_truncated_keys() is env
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    td = env.rand_step()
    assert not td["next", "truncated"].any()


def test_input_output_spec_setters():
    env = CounterEnv()
    new_out = env.output_spec.clone()
    new_out.unlock_(recurse=True)
    new_out["full_observation_spec"]["extra"] = Unbounded((3,))
    env.output_spec = new_out
    assert "extra" in env.observation_keys
    with pytest.raises(KeyError, match="bad"):
        env.output_spec = Composite(bad=Composite())
    with pytest.raises(TypeError):
        env.state_spec = Unbounded((1,))


def test_specs_container_and_fake_tensordict_structure():
    env = CounterEnv(batch_size=(2,))
    specs = env.specs
    assert specs["output_spec", "full_observation_spec", "observation"].shape == torch.Size([2, 1])
    fake = env.fake_tensordict()
    assert fake.batch_size == torch.Size([2])
    assert set(fake.keys(True, True)) == {
        "action",
        "observation",
        "done",
        "terminated",
        ("next", "observation"),
        ("next", "reward"),
        ("next", "done"),
        ("next", "terminated"),
    }


def test_unbatched_views_and_setters():
    env = CounterEnv(batch_size=(2, 3))
    assert env.action_spec_unbatched.shape == torch.Size([1])
    assert env.single_action_spec.shape == torch.Size([1])
    assert env.full_observation_spec_unbatched["observation"].shape == torch.Size([1])
    env.action_spec_unbatched = Bounded(-2.0, 2.0, shape=(4,))
    assert env.action_spec.shape == torch.Size([2, 3, 4])
    env.full_observation_spec_unbatched = Composite(obs=Unbounded((5,)))
    assert env.full_observation_spec["obs"].shape == torch.Size([2, 3, 5])


def test_device_is_applied_to_specs():
    env = CounterEnv(device="cpu")
    assert env.device == torch.device("cpu")
    assert env.full_observation_spec["observation"].device == torch.device("cpu")
    assert env.to("cpu") is env
    assert env.input_spec.device == torch.device("cpu")
