"""ActionDiscretizer: one-hot (``categorical=False``) actions and per-dim ``num_intervals``."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase, check_env_specs
from torchenv.envs.builtin import PendulumEnv
from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
)
from torchenv.transforms import ActionDiscretizer, TransformedEnv

LOW, HIGH = -2.0, 3.0


class BoxActionEnv(EnvBase):
    """Bounded action of any shape in ``[LOW, HIGH]``; records the continuous actions it gets."""

    def __init__(self, action_shape=(2,), batch_size=()):
        super().__init__(batch_size=torch.Size(batch_size))
        shape = self.batch_size
        self.action_spec = Bounded(LOW, HIGH, shape=(*shape, *action_shape))
        self.observation_spec = Composite(observation=Unbounded(shape=(*shape, 1)), shape=shape)
        self.reward_spec = Unbounded(shape=(*shape, 1))
        self.actions: list[torch.Tensor] = []

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict(observation=torch.zeros(*self.batch_size, 1), batch_size=self.batch_size)

    def _step(self, tensordict):
        self.actions.append(tensordict.get("action").clone())
        zeros = torch.zeros(*self.batch_size, 1)
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return TensorDict(
            observation=zeros,
            reward=zeros.clone(),
            done=done,
            terminated=done.clone(),
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def _expected(index, nvec, sampling=0.5):
    """The continuous value of interval ``index`` out of ``nvec`` (per action dim)."""
    index = torch.as_tensor(index, dtype=torch.float64)
    nvec = torch.as_tensor(nvec, dtype=torch.float64)
    return (LOW + (HIGH - LOW) * (index + sampling) / nvec).to(torch.float32)


def _one_hot(index, nvec):
    return torch.cat([torch.nn.functional.one_hot(torch.tensor(i), n) for i, n in zip(index, nvec)])


@pytest.mark.parametrize(
    ("action_shape", "num_intervals", "cls", "shape", "nvec"),
    [
        ((), 4, OneHot, (4,), None),
        ((), [3], OneHot, (3,), None),
        ((1,), 4, MultiOneHot, (4,), [4]),
        ((3,), 4, MultiOneHot, (12,), [4, 4, 4]),
        ((3,), [3], MultiOneHot, (9,), [3, 3, 3]),
        ((3,), [3, 4, 5], MultiOneHot, (12,), [3, 4, 5]),
        ((3,), torch.tensor([3, 4, 5]), MultiOneHot, (12,), [3, 4, 5]),
        ((2, 3), [2, 3, 4], MultiOneHot, (2, 9), [2, 3, 4]),
    ],
)
def test_onehot_spec_type_and_shape(action_shape, num_intervals, cls, shape, nvec):
    env = TransformedEnv(
        BoxActionEnv(action_shape), ActionDiscretizer(num_intervals, categorical=False)
    )
    spec = env.action_spec
    assert type(spec) is cls
    assert spec.shape == torch.Size(shape)
    if nvec is not None:
        assert spec.nvec == nvec
    else:
        assert spec.space.n == shape[0]
    action = env.rand_action(env.reset())["action"]
    assert action.shape == torch.Size(shape) and spec.is_in(action)


@pytest.mark.parametrize(
    ("action_shape", "num_intervals", "cls"),
    [
        ((), 4, Categorical),
        ((3,), 4, Categorical),
        ((3,), [3], MultiCategorical),
        ((3,), [3, 4, 5], MultiCategorical),
    ],
)
def test_categorical_spec_with_int_or_list(action_shape, num_intervals, cls):
    env = TransformedEnv(BoxActionEnv(action_shape), ActionDiscretizer(num_intervals))
    assert type(env.action_spec) is cls
    assert env.action_spec.shape == torch.Size(action_shape)
    check_env_specs(env)


@pytest.mark.parametrize("sampling", ["median", "low", "high"])
@pytest.mark.parametrize("num_intervals", [4, [3, 4, 5]])
def test_onehot_inverse_matches_categorical(num_intervals, sampling):
    nvec = [num_intervals] * 3 if isinstance(num_intervals, int) else num_intervals
    cat = TransformedEnv(BoxActionEnv((3,)), ActionDiscretizer(num_intervals, sampling=sampling))
    hot = TransformedEnv(
        BoxActionEnv((3,)), ActionDiscretizer(num_intervals, sampling=sampling, categorical=False)
    )
    offset = ActionDiscretizer.SAMPLING[sampling]
    for index in ([0, 0, 0], [1, 3, 2], [n - 1 for n in nvec]):
        from_index = cat.transform.inv(TensorDict(action=torch.tensor(index)))["action"]
        from_hot = hot.transform.inv(TensorDict(action=_one_hot(index, nvec).bool()))["action"]
        torch.testing.assert_close(from_hot, from_index)
        torch.testing.assert_close(from_hot, _expected(index, nvec, offset))
        assert from_hot.dtype == torch.float32


def test_onehot_inverse_scalar_action_and_batched_leading_dims():
    env = TransformedEnv(BoxActionEnv(()), ActionDiscretizer(5, categorical=False))
    t = env.transform
    hot = torch.nn.functional.one_hot(torch.tensor([[0, 4], [2, 1]]), 5).bool()
    out = t.inv(TensorDict(action=hot, batch_size=[2, 2]))["action"]
    assert out.shape == torch.Size([2, 2])
    torch.testing.assert_close(out, _expected([[0, 4], [2, 1]], 5))
    # float one-hot (e.g. a policy's output cast to float) maps the same way
    multi = TransformedEnv(BoxActionEnv((2,)), ActionDiscretizer([2, 3], categorical=False))
    action = torch.tensor([[0.0, 1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0, 0.0]])
    out = multi.transform.inv(TensorDict(action=action, batch_size=[2]))["action"]
    torch.testing.assert_close(out, _expected([[1, 2], [0, 0]], [2, 3]))


@pytest.mark.parametrize("num_intervals", [3, [3, 7]])
def test_onehot_rollout_and_check_env_specs(num_intervals):
    base = BoxActionEnv((2,))
    env = TransformedEnv(base, ActionDiscretizer(num_intervals, categorical=False))
    check_env_specs(env)
    base.actions.clear()
    td = env.rollout(6)
    nvec = [3, 3] if num_intervals == 3 else [3, 7]
    assert td["action"].shape == torch.Size([6, sum(nvec)]) and td["action"].dtype == torch.bool
    assert env.action_spec.is_in(td["action"][0])
    sent = torch.stack(base.actions)
    assert sent.shape == torch.Size([6, 2])
    index = torch.stack([c.long().argmax(-1) for c in td["action"].split(nvec, -1)], -1)
    torch.testing.assert_close(sent, _expected(index, nvec))


def test_onehot_batched_env_and_out_action_key():
    base = BoxActionEnv((2,), batch_size=(4,))
    env = TransformedEnv(
        base, ActionDiscretizer([2, 5], out_action_key="action_disc", categorical=False)
    )
    check_env_specs(env)
    assert list(env.full_action_spec.keys()) == ["action_disc"]
    assert env.action_spec.shape == torch.Size([4, 7]) and type(env.action_spec) is MultiOneHot
    td = env.rollout(3)
    assert td["action_disc"].shape == torch.Size([4, 3, 7])
    assert base.actions[-1].shape == torch.Size([4, 2])


def test_onehot_pendulum():
    env = TransformedEnv(PendulumEnv(), ActionDiscretizer(5, categorical=False))
    check_env_specs(env)
    assert type(env.action_spec) is MultiOneHot and env.action_spec.shape == torch.Size([5])
    td = env.rollout(5)
    assert td["action"].shape == torch.Size([5, 5]) and (td["action"].sum(-1) == 1).all()


@pytest.mark.parametrize("bad", [1, [3, 1], [], torch.ones(2, 2, dtype=torch.long) * 3, 2.5])
def test_bad_num_intervals(bad):
    with pytest.raises(ValueError, match="num_intervals"):
        ActionDiscretizer(bad, categorical=False)


def test_num_intervals_length_must_match_action():
    env = TransformedEnv(BoxActionEnv((3,)), ActionDiscretizer([3, 4], categorical=False))
    with pytest.raises(ValueError, match=r"num_intervals \[3, 4\].*\[3\]"):
        _ = env.action_spec
    env = TransformedEnv(BoxActionEnv(()), ActionDiscretizer([3, 4]))
    with pytest.raises(ValueError, match="one entry per element"):
        _ = env.action_spec


def test_sampling_strategy_enum_as_torchrl():
    from torchenv.envs import PendulumEnv
    from torchenv.transforms import ActionDiscretizer, TransformedEnv

    strategy = ActionDiscretizer.SamplingStrategy
    assert [s.name for s in strategy] == ["MEDIAN", "LOW", "HIGH", "RANDOM"]
    assert [int(s) for s in strategy] == [0, 1, 2, 3]
    for given, expected in [(strategy.LOW, -2.0), (strategy.HIGH, -1.2), ("median", -1.6)]:
        t = ActionDiscretizer(5, sampling=given)
        env = TransformedEnv(PendulumEnv(), t)
        out = env.transform.inv(env.rand_action().set("action", torch.tensor(0)))
        assert out["action"].item() == pytest.approx(expected)
    t = ActionDiscretizer(5, sampling=strategy.RANDOM)
    env = TransformedEnv(PendulumEnv(), t)
    values = [
        env.transform.inv(env.rand_action().set("action", torch.tensor(0)))["action"].item()
        for _ in range(20)
    ]
    assert all(-2.0 <= v <= -1.2 for v in values) and len(set(values)) > 1
