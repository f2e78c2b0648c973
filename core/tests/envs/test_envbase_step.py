"""EnvBase.step and friends: bad input, partial steps, step_and_maybe_reset, seeding, auto-reset."""

import pytest
import torch
from _envs_mocks import AutoResettingEnv, CounterEnv, MarlEnv, NestedStatelessEnv, StatelessEnv
from tensordict import LazyStackedTensorDict, TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Composite, Unbounded


def test_step_writes_next_and_returns_input():
    env = CounterEnv(batch_size=(2,))
    td = env.reset()
    td["action"] = torch.full((2, 1), 0.5)
    out = env.step(td)
    assert out is td
    assert td["next", "observation"].squeeze(-1).tolist() == [1.0, 1.0]
    assert td["next", "reward"].squeeze(-1).tolist() == [0.5, 0.5]
    assert td["next"].batch_size == torch.Size([2])
    assert td["observation"].squeeze(-1).tolist() == [0.0, 0.0]  # root untouched


def test_step_missing_action_names_the_key_and_lists_what_came():
    env = CounterEnv()
    td = env.reset()
    with pytest.raises(KeyError, match=r"'action'.*missing.*got keys \['done', 'observation'"):
        env.step(td)


def test_step_wrong_shape_names_key_and_shapes():
    env = CounterEnv(batch_size=(2,))
    td = env.reset()
    td["action"] = torch.zeros(2, 3)
    with pytest.raises(ValueError, match=r"'action' has shape \(2, 3\).*expects shape \(2, 1\)"):
        env.step(td)


def test_step_wrong_dtype_names_key_and_dtypes():
    env = CounterEnv()
    td = env.reset()
    td["action"] = torch.zeros(1, dtype=torch.bool)
    with pytest.raises(TypeError, match=r"'action' has dtype torch.bool.*torch.float32"):
        env.step(td)


def test_out_of_range_action_only_checked_with_run_type_checks():
    td = TensorDict(action=torch.full((1,), 5.0))
    env = CounterEnv()
    env.reset()
    env.step(td.clone())  # cheap checks only: accepted
    env = CounterEnv(run_type_checks=True)
    env.reset()
    with pytest.raises(ValueError, match="'action' is out of its spec"):
        env.step(td.clone())


def test_nested_action_missing_names_nested_key():
    env = MarlEnv()
    td = env.reset()
    with pytest.raises(KeyError, match=r"\('agents', 'action'\)"):
        env.step(td)


def test_step_checks_batch_size_of_locked_env():
    env = CounterEnv(batch_size=(2,))
    with pytest.raises(RuntimeError, match="batch_size"):
        env.step(TensorDict(action=torch.zeros(3, 1), batch_size=[3]))


def test_reward_and_done_are_reshaped_to_spec():
    env = CounterEnv(batch_size=(2,))
    original = env._step

    def flat_step(td):
        out = original(td)
        return TensorDict(
            {
                "observation": out["observation"],
                "reward": out["reward"].reshape(2),
                "done": out["done"].reshape(2),
            },
            [2],
        )

    env._step = flat_step
    td = env.rand_step(env.reset())
    assert td["next", "reward"].shape == torch.Size([2, 1])
    assert td["next", "done"].shape == torch.Size([2, 1])
    assert td["next", "terminated"].shape == torch.Size([2, 1])


def test_missing_reward_is_a_zero_of_the_spec():
    # TorchRL accepts a _step without reward (its output then lacks the entry); ours fills a
    # zero of the reward spec, so that every step and batched row has what the specs announce
    env = CounterEnv()
    env._step = lambda td: TensorDict(
        observation=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool)
    )
    td = env.rand_step(env.reset())
    assert td["next", "reward"].tolist() == [0.0]
    assert td["next", "reward"].dtype == env.reward_spec.dtype
    data = env.rollout(3)
    assert data["next", "reward"].shape == torch.Size([3, 1])
    assert not data["next", "reward"].any()


def test_next_preset_entries_are_kept():
    env = CounterEnv()
    td = env.reset()
    td["action"] = torch.zeros(1)
    td["next", "extra"] = torch.ones(2)
    env.step(td)
    assert td["next", "extra"].tolist() == [1.0, 1.0]
    assert td["next", "observation"].item() == 1.0


# ----------------------------------------------------------------------------- partial steps
def test_partial_step_batch_unlocked_steps_the_selected_sub_batch():
    env = StatelessEnv(limit=10.0)
    td = env.reset(TensorDict(batch_size=[3]))
    td["observation"] = torch.tensor([[1.0], [2.0], [3.0]])
    td["done"] = torch.tensor([[False], [True], [False]])
    td["action"] = torch.full((3, 1), 0.5)
    td["_step"] = torch.tensor([True, False, True])
    env.step(td)
    assert env.step_batches[-1] == torch.Size([2])  # only two elements were stepped
    assert td["next", "observation"].squeeze(-1).tolist() == [1.5, 2.0, 3.5]
    assert td["next", "reward"].squeeze(-1).tolist() == [-1.5, 0.0, -3.5]  # zero when absent
    assert td["next", "done"].squeeze(-1).tolist() == [False, True, False]  # previous content
    assert "_step" not in td


def test_partial_step_all_false_skips_step():
    env = CounterEnv()
    td = env.reset()
    td["action"] = torch.zeros(1)
    td["_step"] = torch.tensor([False])
    env.step(td)
    assert env.count.item() == 0.0  # _step was not called
    assert td["next", "observation"].item() == 0.0
    assert td["next", "reward"].item() == 0.0


def test_partial_step_unbatched_true_runs_the_step():
    env = CounterEnv()
    td = env.reset()
    td["action"] = torch.zeros(1)
    td["_step"] = torch.tensor(True)
    env.step(td)
    assert td["next", "observation"].item() == 1.0


def test_partial_step_batch_locked_env_receives_the_mask():
    env = CounterEnv(batch_size=(2,))
    seen = {}
    original = env._step

    def spy(td):
        seen["mask"] = td.get("_step", None)
        return original(td)

    env._step = spy
    td = env.reset()
    td["action"] = torch.zeros(2, 1)
    td["_step"] = torch.tensor([True, False])
    env.step(td)
    assert seen["mask"].tolist() == [True, False]


# ----------------------------------------------------------------------------- step_and_maybe_reset
def test_step_and_maybe_reset_resets_done_envs_only():
    env = CounterEnv(batch_size=(2,), max_count=2)
    td_ = env.reset()
    # element 1 starts one step ahead
    env.count[1] = 1.0
    td_["observation"][1] = 1.0
    td_["action"] = torch.zeros(2, 1)
    td, td_ = env.step_and_maybe_reset(td_)
    assert td["next", "done"].squeeze(-1).tolist() == [False, True]
    assert td_["observation"].squeeze(-1).tolist() == [1.0, 0.0]  # 1 was reset
    assert not td_["done"].any()
    assert "_reset" not in td_
    assert "next" not in td_ and "reward" not in td_
    assert "action" in td_  # the env's step_mdp keeps the action


def test_step_and_maybe_reset_marl_shared_done():
    env = MarlEnv(batch_size=(2,), max_count=1)
    td_ = env.reset()
    td_ = env.rand_action(td_)
    td, td_ = env.step_and_maybe_reset(td_)
    assert td["next", "done"].all()
    assert not td_["done"].any()
    assert td_["agents", "observation"].eq(0).all()
    assert td["next", "agents", "observation"].eq(1).all()


def test_maybe_reset_is_noop_when_not_done():
    env = CounterEnv()
    td = env.reset()
    calls = env.reset_calls
    assert env.maybe_reset(td) is td
    assert env.reset_calls == calls


# ----------------------------------------------------------------------------- random actions, seeds
def test_rand_action_and_rand_step():
    env = CounterEnv(batch_size=(3,))
    td = env.rand_action()
    assert td["action"].shape == torch.Size([3, 1])
    assert env.action_spec.is_in(td["action"])
    td = env.rand_step()
    assert ("next", "observation") in td.keys(True)


def test_rand_action_batch_unlocked_takes_td_batch():
    env = StatelessEnv()
    td = env.rand_action(TensorDict(batch_size=[4]))
    assert td["action"].shape == torch.Size([4, 1])


def test_set_seed_returns_deterministic_next_seed():
    env = CounterEnv()
    s1 = env.set_seed(3)
    assert env.seed == 3
    assert s1 == CounterEnv().set_seed(3)  # deterministic
    assert s1 != 3
    chain = [3]
    for _ in range(50):
        chain.append(env.set_seed(chain[-1]))
    assert len(set(chain)) == len(chain)  # no overlap along the chain
    assert env.set_seed(3, static_seed=True) == 3
    assert env.set_seed(None) is None


def test_fake_tensordict_matches_a_real_step():
    env = MarlEnv()
    fake = env.fake_tensordict()
    real = env.rand_step(env.reset())
    assert set(fake.keys(True, True)) == set(real.keys(True, True))
    for key in fake.keys(True, True):
        assert fake[key].shape == real[key].shape, key
        assert fake[key].dtype == real[key].dtype, key


def test_close_and_is_closed():
    env = CounterEnv()
    assert not env.is_closed
    env.close()
    assert env.is_closed
    env.close()  # idempotent
    assert env.is_closed
    with pytest.raises(RuntimeError, match="already closed"):
        env.close(raise_if_closed=True)


def test_forward_is_not_callable():
    with pytest.raises(NotImplementedError, match="reset"):
        CounterEnv()(TensorDict())


def test_append_transform_returns_transformed_env():
    transforms = pytest.importorskip("torchenv.transforms")
    if not hasattr(transforms, "TransformedEnv") or not hasattr(transforms, "Compose"):
        pytest.skip("torchenv.transforms not available yet")
    env = CounterEnv()
    tenv = env.append_transform(transforms.Compose())
    assert isinstance(tenv, transforms.TransformedEnv)
    assert tenv.base_env is env


def test_empty_cache_rebuilds_keys():
    env = CounterEnv(spec_locked=False)
    assert env.observation_keys == ["observation"]
    env.full_observation_spec["other"] = Unbounded((2,))
    env.empty_cache()
    assert env.observation_keys == ["observation", "other"]


# ----------------------------------------------------------------------------- auto-reset
def test_auto_reset_env_masks_obs_and_skips_reset_calls():
    env = AutoResettingEnv(max_count=3, auto_reset=True)
    assert env.auto_reset
    r = env.rollout(8, break_when_any_done=False)
    done = r["next", "done"].squeeze(-1)
    assert done.tolist() == [False, False, True, False, False, True, False, False]
    next_obs = r["next", "observation"].squeeze(-1)
    assert torch.isnan(next_obs[done]).all()
    assert not torch.isnan(next_obs[~done]).any()
    # the observation after a done is the env's own reset observation
    assert r["observation"].squeeze(-1).tolist() == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0, 1.0]
    assert env.reset_calls == 1  # only the initial reset reached _reset


def test_auto_reset_without_replace_keeps_observations():
    env = AutoResettingEnv(max_count=2, auto_reset=True, auto_reset_replace=False)
    r = env.rollout(4, break_when_any_done=False)
    assert not torch.isnan(r["next", "observation"]).any()


# ----------------------------------------------------------------------------- batch-locked vs unlocked
def test_batch_unlocked_env_steps_and_rolls_out_any_batch():
    env = StatelessEnv(limit=100.0)
    assert not env.batch_locked
    for batch in ([], [4], [2, 3]):
        td = env.reset(TensorDict(batch_size=batch))
        td = env.step(env.rand_action(td))
        assert td["next", "observation"].shape == torch.Size([*batch, 1])
    start = env.reset(TensorDict(batch_size=[4]))
    r = env.rollout(3, auto_reset=False, tensordict=start)
    assert r.batch_size == torch.Size([4, 3])


def test_batch_unlocked_action_shape_checked_after_leading_dims():
    env = StatelessEnv()
    td = env.reset(TensorDict(batch_size=[4]))
    td["action"] = torch.zeros(4, 2)
    with pytest.raises(
        ValueError, match=r"expects shape \(4, 1\) \(the input.s batch dims \(4,\) \+ spec\)"
    ):
        env.step(td)


def test_batch_locked_flag_can_be_set_on_the_instance():
    env = CounterEnv()
    assert env.batch_locked
    env.batch_locked = False
    assert not env.batch_locked
    env._batch_locked = True  # TorchRL-style attribute
    assert env.batch_locked


def test_rand_action_nested_creates_agent_level_with_its_batch_dims():
    env = MarlEnv(batch_size=(3,), n_agents=2)
    td = env.rand_action(TensorDict(batch_size=[3]))
    assert td["agents"].batch_size == torch.Size([3, 2])
    assert td["agents", "action"].shape == torch.Size([3, 2, 2])


def test_step_output_without_batch_size_adopts_the_input_batch():
    env = CounterEnv(batch_size=(2,))
    original = env._step
    env._step = lambda td: original(td).clone().apply(lambda x: x, batch_size=[])
    td = env.rand_step(env.reset())
    assert td["next"].batch_size == torch.Size([2])


def test_run_type_checks_checks_observations():
    from torchenv.specs import Bounded, Composite

    env = CounterEnv(run_type_checks=True, max_count=100)
    env.observation_spec = Composite(observation=Bounded(0.0, 1.5, shape=(1,)))
    td = env.rand_step(env.reset())  # observation 1.0: fine
    with pytest.raises(ValueError, match="observation 'observation' does not match"):
        env.rand_step(env._step_mdp(td))  # observation 2.0


def test_partial_step_batch_unlocked_nested_keys_keep_agent_dims():
    env = NestedStatelessEnv()
    td = env.reset(TensorDict(batch_size=[3]))
    td["agents", "observation"] = torch.arange(6.0).reshape(3, 2, 1)
    td["agents", "action"] = torch.ones(3, 2, 1)
    td["_step"] = torch.tensor([False, True, True])
    env.step(td)
    assert env.step_batches[-1] == torch.Size([2])
    nxt = td["next"]
    assert nxt["agents"].batch_size == torch.Size([3, 2])
    assert nxt["agents", "observation"].flatten().tolist() == [0.0, 1.0, 3.0, 4.0, 5.0, 6.0]
    assert nxt["reward"].flatten().tolist() == [0.0, 7.0, 11.0]


class _HeteroActions(EnvBase):
    """Two agents in one lazily stacked group whose actions differ in size (3 and 2)."""

    def __init__(self):
        super().__init__()
        agents = [
            Composite(action=Bounded(-1, 1, (n,)), observation=Unbounded((n,))) for n in (3, 2)
        ]
        group = torch.stack(agents, 0)
        self.full_action_spec = Composite(group=group.select("action"))
        self.full_observation_spec = Composite(group=group.select("observation"))
        self.reward_spec = Unbounded((1,))

    def _reset(self, td):
        return TensorDict(group=self.full_observation_spec["group"].zero())

    def _step(self, td):
        agents = td["group"]
        obs = [agents[i]["action"] * 2 for i in range(2)]
        group = LazyStackedTensorDict(*(TensorDict(observation=o) for o in obs), stack_dim=0)
        return TensorDict(group=group, reward=torch.ones(1), done=torch.zeros(1, dtype=torch.bool))

    def _set_seed(self, seed):
        pass


def test_actions_of_different_shapes_in_a_lazily_stacked_group_step():
    # TorchRL steps such envs (its HeterogeneousCountingEnv); no single tensor holds the actions
    env = _HeteroActions()
    data = env.rollout(3, return_contiguous=False)
    assert data.batch_size == torch.Size([3])
    for t in range(3):
        for agent, size in enumerate((3, 2)):
            action = data[t]["group"][agent]["action"]
            assert action.shape == torch.Size([size])
            assert torch.equal(data[t]["next", "group"][agent]["observation"], action * 2)
