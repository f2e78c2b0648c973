"""Primers, action transforms and the other transforms."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.envs import check_env_specs, step_mdp
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv, TicTacToeEnv
from torchenv.specs import Bounded, Categorical, OneHot, Unbounded
from torchenv.transforms import (
    ActionDiscretizer,
    ActionMask,
    AutoResetEnv,
    AutoResetTransform,
    BatchSizeTransform,
    ConditionalSkip,
    DiscreteActionProjection,
    EndOfLifeTransform,
    FiniteTensorDictCheck,
    MultiAction,
    StepCounter,
    TensorDictPrimer,
    Timer,
    TransformedEnv,
    gSDENoise,
)


# ----------------------------------------------------------------------------- primers
def test_tensordict_primer_default_and_carry_over():
    env = TransformedEnv(
        CartPoleEnv(batch_size=[2]),
        TensorDictPrimer(hidden=Unbounded(shape=(4,)), default_value=1.5),
    )
    check_env_specs(env)
    assert env.full_state_spec["hidden"].shape == torch.Size([2, 4])
    td = env.reset()
    assert (td["hidden"] == 1.5).all() and td["hidden"].shape == torch.Size([2, 4])
    td["hidden"] = torch.full((2, 4), 7.0)
    td = step_mdp(env.rand_step(td))
    assert (td["hidden"] == 7.0).all(), "the primer carries the policy's value to the next step"
    td["_reset"] = torch.tensor([[True], [False]])
    td = env.reset(td)
    assert td["hidden"][:, 0].tolist() == [1.5, 7.0]


def test_tensordict_primer_random_and_standalone():
    env = TransformedEnv(
        PendulumEnv(), TensorDictPrimer({"noise": Bounded(-1.0, 1.0, shape=(3,))}, random=True)
    )
    check_env_specs(env)
    a, b = env.reset()["noise"], env.reset()["noise"]
    assert not torch.equal(a, b)
    td = TensorDictPrimer(h=Unbounded(shape=(2,)))(TensorDict(batch_size=[5]))
    assert td["h"].shape == torch.Size([5, 2])
    with pytest.raises(ValueError, match="incompatible"):
        TensorDictPrimer(h=Unbounded(shape=(2,)), random=True, default_value=1.0)
    with pytest.raises(TypeError, match="TensorSpec"):
        TensorDictPrimer(h=3)


def test_gsde_noise():
    env = TransformedEnv(PendulumEnv(), gSDENoise(state_dim=3, action_dim=1))
    check_env_specs(env)
    assert env.reset()["_eps_gSDE"].shape == torch.Size([1, 3])


# ----------------------------------------------------------------------------- actions
def test_action_mask_keeps_random_actions_legal():
    torch.manual_seed(0)
    env = TransformedEnv(TicTacToeEnv(), ActionMask())
    for _ in range(5):
        td = env.rollout(9)
        mask = td["action_mask"]
        picked = mask.gather(-1, td["action"].unsqueeze(-1))
        assert picked.all()
        assert td["next", "done"][-1].item()
    spec_mask = env.full_action_spec["action"].mask
    assert torch.equal(spec_mask, td["next", "action_mask"][-1])


def test_action_mask_check_env_specs():
    check_env_specs(TransformedEnv(TicTacToeEnv(), ActionMask()))


def test_action_mask_needs_a_maskable_spec():
    with pytest.raises(TypeError, match="no mask"):
        TransformedEnv(CountingEnv(), ActionMask(mask_key="observation")).reset()


def test_discrete_action_projection():
    env = TransformedEnv(
        CartPoleEnv(categorical_action_encoding=False), DiscreteActionProjection(2, 5)
    )
    check_env_specs(env)
    assert isinstance(env.action_spec, OneHot) and env.action_spec.shape == torch.Size([5])
    t = DiscreteActionProjection(2, 4)
    assert t.inv(TensorDict(action=torch.tensor([0, 1, 0, 0])))["action"].tolist() == [0, 1]
    projected = t.inv(TensorDict(action=torch.tensor([0, 0, 0, 1])))["action"]
    assert projected.sum() == 1 and projected.shape == torch.Size([2])
    assert t(TensorDict(action=torch.tensor([1, 0])))["action"].tolist() == [1, 0, 0, 0]


def test_action_discretizer():
    base = CountingEnv()
    env = TransformedEnv(base, ActionDiscretizer(num_intervals=4))
    check_env_specs(env)
    assert isinstance(env.action_spec, Categorical) and env.action_spec.space.n == 4
    env.step(env.reset().set("action", torch.tensor([3])))
    assert base.actions[-1].item() == pytest.approx(0.75)  # median of [0.5, 1]
    assert base.actions[-1].dtype == torch.float64
    env = TransformedEnv(
        PendulumEnv(), ActionDiscretizer(3, out_action_key="action_disc", sampling="low")
    )
    check_env_specs(env)
    assert list(env.full_action_spec.keys()) == ["action_disc"]


def test_multi_action():
    base = CountingEnv()
    env = TransformedEnv(base, MultiAction(num_actions=3))
    check_env_specs(env)
    base.actions.clear()
    td = env.reset()
    td["action"] = torch.tensor([[0.1], [0.2], [0.3]], dtype=torch.float64)
    out = env.step(td)
    assert [a.item() for a in base.actions] == pytest.approx([0.1, 0.2, 0.3])
    assert out["next", "reward"].squeeze(-1).tolist() == pytest.approx([0.1, 0.2, 0.3])
    assert out["next", "observation"][0].item() == 3.0


def test_multi_action_stops_when_done():
    base = CountingEnv(max_count=1)
    env = TransformedEnv(base, MultiAction(num_actions=3))
    td = env.reset()
    td["action"] = torch.zeros(3, 1, dtype=torch.float64)
    env.step(td)
    assert len(base.actions) == 1


# ----------------------------------------------------------------------------- misc
def test_finite_tensordict_check():
    env = TransformedEnv(CartPoleEnv(), FiniteTensorDictCheck())
    check_env_specs(env)
    with pytest.raises(ValueError, match="'a'"):
        FiniteTensorDictCheck()(TensorDict(a=torch.tensor([float("nan")])))


def test_timer():
    env = TransformedEnv(CartPoleEnv(batch_size=[2]), Timer())
    check_env_specs(env)
    td = env.rollout(3)
    assert (td["next", "time_step"] >= 0).all() and td["next", "time_step"].dtype == torch.float64
    assert (td["next", "time_policy"][:, 1:] > 0).all()


def test_conditional_skip():
    # the skip also skips the transforms of its own env: count steps in an outer env
    base = CountingEnv(obs_dim=1)
    middle = TransformedEnv(base, ConditionalSkip(lambda td: td["step_count"] % 2 == 1))
    env = TransformedEnv(middle, StepCounter(), auto_unwrap=False)
    check_env_specs(env)
    base.actions.clear()
    td = env.rollout(4)
    assert td["step_count"].squeeze(-1).tolist() == [0, 1, 2, 3]
    assert len(base.actions) == 2
    assert td["next", "observation"].squeeze(-1).tolist() == [1.0, 1.0, 2.0, 2.0]


def test_conditional_skip_batch_unlocked_partial():
    env = TransformedEnv(PendulumEnv(), ConditionalSkip(lambda td: td["th"] > 0))
    td = env.reset(TensorDict(batch_size=[6]))
    td["th"] = torch.tensor([-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    out = env.step(env.rand_action(td))
    skipped = td["th"] > 0
    assert torch.equal(out["next", "th"][skipped], td["th"][skipped])
    assert not torch.equal(out["next", "th"][~skipped], td["th"][~skipped])


def test_end_of_life():
    base = CountingEnv()
    base.lives = 3
    env = TransformedEnv(base, EndOfLifeTransform(eol_attribute="lives"))
    check_env_specs(env)
    td = env.reset()
    assert not td["end-of-life"].item()
    td = step_mdp(env.rand_step(td))
    assert not td["end-of-life"].item()
    base.lives = 2
    out = env.rand_step(td)
    assert out["next", "end-of-life"].item()
    assert "end-of-life" in env.full_done_spec


def test_auto_reset_transform():
    class SelfResetting(CountingEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            if out["done"].any():
                self.count = torch.zeros_like(self.count)
                fresh = self._obs(out.empty())
                out.set("observation", fresh["observation"])
            return out

    env = AutoResetEnv(SelfResetting(max_count=2, obs_dim=1), AutoResetTransform())
    check_env_specs(env)
    td = env.rollout(5, break_when_any_done=False)
    obs = td["next", "observation"].squeeze(-1)
    assert torch.isnan(obs[1]) and torch.isnan(obs[3])
    assert td["observation"].squeeze(-1)[2].item() == 0.0  # the saved first observation
    with pytest.raises(RuntimeError, match="inserted"):
        env.insert_transform(0, StepCounter())


def test_batch_size_transform():
    env = TransformedEnv(PendulumEnv(), BatchSizeTransform(batch_size=[4]))
    check_env_specs(env)
    assert env.batch_size == torch.Size([4])
    assert env.rollout(2).shape == torch.Size([4, 2])
    env = TransformedEnv(
        CartPoleEnv(batch_size=[2, 3]), BatchSizeTransform(reshape_fn=lambda td: td.reshape(-1))
    )
    check_env_specs(env)
    assert env.batch_size == torch.Size([6])
    assert env.rollout(2).shape == torch.Size([6, 2])
    with pytest.raises(ValueError, match="exactly one"):
        BatchSizeTransform()


def test_multi_action_stacks_observations():
    env = TransformedEnv(
        CountingEnv(obs_dim=1), MultiAction(num_actions=3, stack_observations=True)
    )
    check_env_specs(env)
    td = env.reset()
    assert td["stacked", "observation"].squeeze(-1).tolist() == [0.0, 0.0, 0.0]
    td["action"] = torch.zeros(3, 1, dtype=torch.float64)
    out = env.step(td)
    assert out["next", "stacked", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
