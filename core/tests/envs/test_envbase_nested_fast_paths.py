"""Nested (multi-agent) keys on the step's fast paths: the action check, the output check and
``rand_action`` take the plain-TensorDict shortcut and give what the general code gives."""

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded

from ._envs_mocks import MarlEnv


class _ThreeActionsEnv(EnvBase):
    """Actions in two groups and at the root, declared out of alphabetical order."""

    def __init__(self, batch_size=()):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.full_action_spec = Composite(
            team_b=Composite(action=Categorical(5, shape=(*bs, 3)), shape=(*bs, 3)),
            team_a=Composite(action=Bounded(-1.0, 1.0, (*bs, 2, 4)), shape=(*bs, 2)),
            referee=Categorical(7, shape=bs),
            shape=bs,
        )
        self.full_observation_spec = Composite(observation=Unbounded((*bs, 1)), shape=bs)

    def _reset(self, tensordict=None, **kwargs):
        bs = self.batch_size
        return TensorDict(
            {
                "observation": torch.zeros(*bs, 1),
                "team_a": TensorDict({}, (*bs, 2)),
                "team_b": TensorDict({}, (*bs, 3)),
            },
            bs,
        )

    def _step(self, tensordict):
        return TensorDict({"observation": torch.zeros(*self.batch_size, 1)}, self.batch_size)

    def _set_seed(self, seed):
        pass


def _draws(make, seed=0):
    torch.manual_seed(seed)
    out = make()
    return out, torch.rand(5)  # where the generator was left


@pytest.mark.parametrize("batch_size", [(), (4,)])
def test_rand_action_writes_into_the_groups_what_the_composite_draws(batch_size):
    env = _ThreeActionsEnv(batch_size)
    assert env._plan.rand_nested is not None  # the shortcut is taken
    td = env.reset()
    ours, after = _draws(lambda: env.rand_action(td.clone()))
    ref, after_ref = _draws(lambda: env.full_action_spec.rand())
    for key in env.action_keys:
        assert ours[key].shape == ref[key].shape
        assert ours[key].dtype == ref[key].dtype
        torch.testing.assert_close(ours[key], ref[key], rtol=0, atol=0)
    torch.testing.assert_close(after, after_ref, rtol=0, atol=0)
    assert ours["observation"].shape == (*batch_size, 1)  # the rest of the input is kept


def test_rand_action_builds_the_groups_when_the_input_lacks_them():
    env = _ThreeActionsEnv()
    empty = TensorDict({}, [])
    ours, after = _draws(lambda: env.rand_action(empty))
    ref, after_ref = _draws(lambda: env.full_action_spec.rand())
    assert isinstance(ours.get("team_a"), TensorDict) and ours["team_a"].batch_size == (2,)
    for key in env.action_keys:
        torch.testing.assert_close(ours[key], ref[key], rtol=0, atol=0)
    torch.testing.assert_close(after, after_ref, rtol=0, atol=0)


def test_rand_action_with_a_group_of_another_batch_size_takes_the_general_path():
    env = _ThreeActionsEnv()
    td = env.reset()
    td["team_b"] = TensorDict({}, [])  # not the group's (3,): tensordict's update decides
    ours, after = _draws(lambda: env.rand_action(td))
    ref, after_ref = _draws(lambda: env.full_action_spec.rand())
    assert ours["team_b"].batch_size == ()  # what TensorDict.update leaves
    for key in env.action_keys:
        torch.testing.assert_close(ours[key], ref[key], rtol=0, atol=0)
    torch.testing.assert_close(after, after_ref, rtol=0, atol=0)


def test_a_nested_action_of_another_dtype_is_still_cast():
    env = MarlEnv(batch_size=(3,), n_agents=2)
    td = env.reset()
    td["agents", "action"] = torch.full((3, 2, 2), 0.5, dtype=torch.float64)
    out = env.step(td)
    assert out["agents", "action"].dtype == torch.float32
    assert out["next", "agents", "reward"].dtype == torch.float32


def test_a_nested_action_of_a_wrong_shape_is_still_refused():
    env = MarlEnv(batch_size=(3,), n_agents=2)
    td = env.reset()
    td["agents"] = TensorDict({"action": torch.zeros(3, 2, 5)}, (3, 2))
    with pytest.raises(ValueError, match=r"\('agents', 'action'\).*\(3, 2, 5\).*\(3, 2, 2\)"):
        env.step(td)


class _SqueezedRewardEnv(MarlEnv):
    """Returns the per-agent reward without its trailing singleton dim."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        out["agents"] = TensorDict(
            {
                "reward": out["agents", "reward"].squeeze(-1),
                "observation": out["agents", "observation"],
            },
            out["agents"].batch_size,
        )
        return out


def test_a_nested_reward_of_another_shape_is_still_reshaped():
    env = _SqueezedRewardEnv(batch_size=(3,), n_agents=2)
    out = env.step(env.rand_action(env.reset()))
    assert out["next", "agents", "reward"].shape == (3, 2, 1)


def test_missing_nested_done_entries_are_still_filled():
    env = MarlEnv(batch_size=(3,), n_agents=2, shared_done=False)

    def step_without_terminated(tensordict):
        env.count = env.count + 1
        done = (env.count >= env.max_count).unsqueeze(-2).expand(3, 2, 1).clone()
        agents = TensorDict(
            {
                "observation": torch.zeros(3, 2, 3),
                "reward": torch.zeros(3, 2, 1),
                "done": done,
            },
            (3, 2),
        )
        return TensorDict({"agents": agents}, (3,))

    env._step = step_without_terminated
    out = env.step(env.rand_action(env.reset()))
    assert out["next", "agents", "terminated"].shape == (3, 2, 1)
    assert torch.equal(out["next", "agents", "terminated"], out["next", "agents", "done"])
