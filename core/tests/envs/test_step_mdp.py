"""step_mdp: the public function's variants and the env's cached fast path."""

import torch
from _envs_mocks import CounterEnv, MarlEnv
from tensordict import LazyStackedTensorDict, TensorDict

from torchenv.envs import step_mdp


def _data():
    return TensorDict(
        {
            "obs": torch.zeros(2, 1),
            "action": torch.ones(2, 1),
            "done": torch.zeros(2, 1, dtype=torch.bool),
            "other": torch.full((2, 1), 7.0),
            "nested": {"a": torch.zeros(2, 1), "action": torch.ones(2, 1)},
            "next": {
                "obs": torch.ones(2, 1),
                "reward": torch.full((2, 1), 3.0),
                "done": torch.ones(2, 1, dtype=torch.bool),
                "nested": {"a": torch.ones(2, 1)},
            },
        },
        [2],
    )


def test_step_mdp_defaults():
    data = _data()
    out = step_mdp(data)
    assert set(out.keys(True, True)) == {
        "obs",
        "done",
        "other",
        ("nested", "a"),
        ("nested", "action"),
    }
    assert out["obs"].eq(1).all()  # from next
    assert out["done"].all()
    assert out["other"].eq(7).all()  # kept
    assert out["nested", "a"].eq(1).all()  # nested entries from next prevail
    assert out.batch_size == torch.Size([2])
    assert "next" in data  # the input is not modified


def test_step_mdp_keep_other_false():
    out = step_mdp(_data(), keep_other=False)
    assert set(out.keys(True, True)) == {"obs", "done", ("nested", "a")}


def test_step_mdp_keep_reward_and_action_drop_done():
    out = step_mdp(_data(), exclude_reward=False, exclude_action=False, exclude_done=True)
    keys = set(out.keys(True, True))
    assert "reward" in keys and "action" in keys and "done" not in keys
    out = step_mdp(_data(), keep_other=False, exclude_action=False)
    assert "action" in out


def test_step_mdp_custom_keys():
    out = step_mdp(
        _data(),
        reward_keys=["obs"],
        done_keys="done",
        action_keys=[("nested", "action"), "action"],
    )
    keys = set(out.keys(True, True))
    assert "obs" not in keys  # treated as a reward and excluded
    assert "reward" in keys
    assert ("nested", "action") not in keys and "action" not in keys


def test_step_mdp_into_next_tensordict():
    target = TensorDict(batch_size=[2])
    result = step_mdp(_data(), next_tensordict=target)
    assert result is target
    assert target["obs"].eq(1).all()


def test_step_mdp_lazy_stack():
    data = LazyStackedTensorDict.lazy_stack([_data()[0], _data()[1]], 0)
    out = step_mdp(data)
    assert isinstance(out, LazyStackedTensorDict)
    assert out["obs"].eq(1).all()


def test_env_step_mdp_keeps_action_and_drops_reward_and_next():
    env = CounterEnv(batch_size=(2,))
    td = env.rand_step(env.reset())
    td["extra"] = torch.zeros(2)
    td["_reset"] = torch.zeros(2, 1, dtype=torch.bool)
    out = env._step_mdp(td)
    assert set(out.keys()) == {"observation", "done", "terminated", "action", "extra"}
    assert out["observation"].eq(1).all()
    assert out["action"] is td["action"]


def test_env_step_mdp_nested_keys_merge_levels():
    env = MarlEnv(batch_size=(2,), shared_done=False)
    td = env.rand_step(env.reset())
    out = env._step_mdp(td)
    assert set(out.keys(True, True)) == {
        ("agents", "action"),
        ("agents", "observation"),
        ("agents", "done"),
        ("agents", "terminated"),
    }
    assert out["agents", "observation"].eq(1).all()
    assert out["agents"].batch_size == torch.Size([2, 2])
    # the root is a new tensordict, the input is untouched
    assert ("agents", "reward") in td["next"].keys(True)


def test_env_step_mdp_matches_public_step_mdp():
    env = CounterEnv(batch_size=(3,))
    td = env.rand_step(env.reset())
    fast = env._step_mdp(td)
    slow = step_mdp(td, exclude_action=False, done_keys=env.done_keys, reward_keys=env.reward_keys)
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key])


def test_step_mdp_heterogeneous_lazy_group():
    """Groups of agents whose entries differ in shape (lazy stacks) go through step_mdp."""
    from tensordict import LazyStackedTensorDict, TensorDict

    def group(sizes, extra):
        return LazyStackedTensorDict(
            *[
                TensorDict(
                    {
                        "observation": torch.full((2, s), float(extra)),
                        **({"reward": torch.zeros(2, 1)} if extra else {}),
                    },
                    (2,),
                )
                for s in sizes
            ],
            stack_dim=1,
        )

    td = TensorDict(
        {
            "agents": group([3, 4], 0),
            "next": {"agents": group([3, 4], 1), "done": torch.zeros(2, 1, dtype=torch.bool)},
        },
        batch_size=(2,),
    )
    out = step_mdp(td, keep_other=True, reward_keys=[("agents", "reward")])
    agents = out.get("agents")
    assert isinstance(agents, LazyStackedTensorDict)
    assert [m["observation"].shape[-1] for m in agents.tensordicts] == [3, 4]
    assert all((m["observation"] == 1).all() for m in agents.tensordicts)
    assert all("reward" not in m for m in agents.tensordicts)
