"""Reward and done transforms: StepCounter, RewardSum, RewardScaling, RewardClipping,
BinarizeReward, LineariseRewards, Reward2GoTransform, TargetReturn, InitTracker, TrajCounter."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.envs import EnvBase, MarlGroupMapType, MarlLayout, check_env_specs, step_mdp
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv
from torchenv.specs import Binary, Bounded, Unbounded
from torchenv.transforms import (
    BinarizeReward,
    Compose,
    InitTracker,
    LineariseRewards,
    Reward2GoTransform,
    RewardClipping,
    RewardScaling,
    RewardSum,
    StepCounter,
    TargetReturn,
    TrajCounter,
    TransformedEnv,
)


def _steps(env, td, n, action=None):
    for _ in range(n):
        td = env.rand_action(td) if action is None else td.set("action", action)
        td = step_mdp(env.step(td))
    return td


# ----------------------------------------------------------------------------- StepCounter
@pytest.mark.parametrize("env_fn", [PendulumEnv, lambda: CartPoleEnv(batch_size=[3])])
def test_step_counter_check_env_specs(env_fn):
    check_env_specs(TransformedEnv(env_fn(), StepCounter(max_steps=4)))


def test_step_counter_truncates_and_sets_done():
    env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=5))
    td = env.rollout(50)
    assert td.shape == torch.Size([5])
    assert td["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3, 4, 5]
    assert td["step_count"].squeeze(-1).tolist() == [0, 1, 2, 3, 4]
    assert td["next", "truncated"].squeeze(-1).tolist() == [False] * 4 + [True]
    assert td["next", "done"][-1].item()
    assert "truncated" in env.full_done_spec


def test_step_counter_update_done_false():
    env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=2, update_done=False))
    td = env.rollout(4, break_when_any_done=False)
    assert td["next", "truncated"].any()
    assert not td["next", "done"].any()


def test_step_counter_partial_reset_keeps_other_counts():
    env = TransformedEnv(CartPoleEnv(batch_size=[3], seed=1), StepCounter())
    td = _steps(env, env.reset(), 2)
    td["_reset"] = torch.tensor([[False], [True], [False]])
    td = env.reset(td)
    assert td["step_count"].squeeze(-1).tolist() == [2, 0, 2]


def test_step_counter_errors():
    with pytest.raises(ValueError, match="max_steps"):
        StepCounter(max_steps=0)
    env = TransformedEnv(PendulumEnv(), StepCounter())
    td = env.rand_action(env.reset().exclude("step_count"))
    with pytest.raises(KeyError, match="step_count"):
        env.step(td)


# ----------------------------------------------------------------------------- RewardSum
def test_reward_sum_accumulates_and_resets():
    env = TransformedEnv(CountingEnv(), RewardSum())
    check_env_specs(env)
    td = env.reset()
    assert td["episode_reward"].item() == 0.0
    one = torch.ones(1, dtype=torch.float64)
    td = _steps(env, td, 3, one * 0.5)
    assert td["episode_reward"].item() == pytest.approx(1.5)
    assert "episode_reward" in env.full_state_spec
    td = env.reset()
    assert td["episode_reward"].item() == 0.0


def test_reward_sum_batched_partial_reset():
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), RewardSum())
    check_env_specs(env)
    td = _steps(env, env.reset(), 2)
    td["_reset"] = torch.tensor([[True], [False]])
    td = env.reset(td)
    assert td["episode_reward"].squeeze(-1).tolist() == [0.0, 2.0]


def test_reward_sum_in_reward_spec_and_custom_keys():
    env = TransformedEnv(
        CountingEnv(), RewardSum(in_keys=["reward"], out_keys=["ret"], reward_spec=True)
    )
    assert "ret" in env.full_reward_spec
    assert "ret" not in env.full_observation_spec
    td = env.rollout(3)
    assert td["next", "ret"].squeeze(-1).tolist() == pytest.approx(
        td["next", "reward"].cumsum(0).squeeze(-1).tolist()
    )


def test_reward_sum_standalone_on_a_trajectory():
    reward = torch.ones(5, 1)
    done = torch.tensor([False, True, False, False, False]).unsqueeze(-1)
    td = TensorDict({("next", "reward"): reward, ("next", "done"): done}, [5])
    out = RewardSum()(td)
    assert out["next", "episode_reward"].squeeze(-1).tolist() == [1, 2, 1, 2, 3]


# ----------------------------------------------------------------------------- scaling / clipping
def test_reward_scaling_env_and_standalone():
    env = TransformedEnv(CartPoleEnv(), RewardScaling(loc=1.0, scale=3.0))
    check_env_specs(env)
    assert (env.rollout(3)["next", "reward"] == 4.0).all()
    t = RewardScaling(loc=1.0, scale=2.0, standard_normal=True)
    assert t(TensorDict(reward=torch.tensor([5.0])))["reward"].item() == 2.0
    with pytest.raises(ValueError, match="non-zero"):
        RewardScaling(0.0, 0.0)


def test_reward_clipping_env_and_standalone():
    env = TransformedEnv(CartPoleEnv(), RewardClipping(-0.5, 0.5))
    check_env_specs(env)
    assert isinstance(env.reward_spec, Bounded)
    assert (env.rollout(3)["next", "reward"] == 0.5).all()
    out = RewardClipping(clamp_min=0.0)(TensorDict(reward=torch.tensor([-2.0, 3.0])))
    assert out["reward"].tolist() == [0.0, 3.0]


def test_binarize_reward():
    env = TransformedEnv(PendulumEnv(), BinarizeReward())
    check_env_specs(env)
    assert isinstance(env.reward_spec, Binary)
    td = env.rollout(3)
    assert td["next", "reward"].dtype == torch.int8
    assert (td["next", "reward"] == 0).all()  # pendulum rewards are <= 0
    out = BinarizeReward()(TensorDict(reward=torch.tensor([[0.5], [0.0]]), batch_size=[2]))
    assert out["reward"].squeeze(-1).tolist() == [1, 0]
    with pytest.raises(ValueError, match="last dim"):
        BinarizeReward()(TensorDict(reward=torch.ones(2, 3), batch_size=[2]))


def test_linearise_rewards():
    env = TransformedEnv(CartPoleEnv(), LineariseRewards(in_keys=["reward"], weights=[2.0]))
    check_env_specs(env)
    assert (env.rollout(2)["next", "reward"] == 2.0).all()
    t = LineariseRewards(in_keys=["r"], out_keys=["r1"], weights=[1.0, -1.0, 0.5])
    out = t(TensorDict(r=torch.tensor([[1.0, 2.0, 4.0]]), batch_size=[1]))
    assert out["r1"].tolist() == [[1.0]]
    with pytest.raises(ValueError, match="objectives"):
        t(TensorDict(r=torch.ones(2)))


# ----------------------------------------------------------------------------- reward to go
def test_reward2go_standalone_and_inverse():
    td = TensorDict(
        {
            ("next", "reward"): torch.ones(4, 1),
            ("next", "done"): torch.tensor([[False], [True], [False], [True]]),
        },
        [4],
    )
    t = Reward2GoTransform(gamma=0.5)
    out = t.inv(td)
    assert out["reward_to_go"].squeeze(-1).tolist() == [1.5, 1.0, 1.5, 1.0]
    assert "reward_to_go" not in td
    assert t(td.clone())["reward_to_go"].squeeze(-1).tolist() == [1.5, 1.0, 1.5, 1.0]


def test_reward2go_refuses_envs():
    with pytest.raises(ValueError, match="replay buffer"):
        TransformedEnv(CartPoleEnv(), Reward2GoTransform())


# ----------------------------------------------------------------------------- target return
def test_target_return_reduces_with_the_reward():
    env = TransformedEnv(CartPoleEnv(), TargetReturn(10.0))
    check_env_specs(env)
    td = env.rollout(3)
    assert td["target_return"].squeeze(-1).tolist() == [10.0, 9.0, 8.0]
    env = TransformedEnv(CartPoleEnv(), TargetReturn(10.0, mode="constant"))
    assert (env.rollout(3)["next", "target_return"] == 10.0).all()
    with pytest.raises(ValueError, match="mode"):
        TargetReturn(1.0, mode="other")


# ----------------------------------------------------------------------------- trackers
def test_init_tracker():
    env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), InitTracker())
    check_env_specs(env)
    td = env.rollout(3)
    assert td["is_init"][:, 0].all() and not td["is_init"][:, 1:].any()
    td = _steps(env, env.reset(), 1)
    td["_reset"] = torch.tensor([[True], [False]])
    assert env.reset(td)["is_init"].squeeze(-1).tolist() == [True, False]


def test_traj_counter_gives_new_ids_at_each_reset():
    env = TransformedEnv(PendulumEnv(), Compose(StepCounter(2), TrajCounter()))
    check_env_specs(env)
    env = TransformedEnv(PendulumEnv(), Compose(StepCounter(2), TrajCounter()))
    td = env.rollout(6, break_when_any_done=False)
    assert td["traj_count"].squeeze(-1).tolist() == [0, 0, 1, 1, 2, 2]
    batched = TransformedEnv(CartPoleEnv(batch_size=[2]), TrajCounter())
    assert batched.reset()["traj_count"].squeeze(-1).tolist() == [0, 1]
    td = batched.reset()
    td["_reset"] = torch.tensor([[False], [True]])
    assert batched.reset(td)["traj_count"].squeeze(-1).tolist() == [2, 4]


class _TwoAgentEnv(EnvBase):
    """Two agents in group "agents" (batch (4,)), per-agent rewards, a root done after 3 steps."""

    def __init__(self, done: str = "root"):
        super().__init__(batch_size=(4,))
        self.layout = MarlLayout(
            ["agent_0", "agent_1"],
            observation_specs={a: Unbounded((2,)) for a in ("agent_0", "agent_1")},
            action_specs={a: Bounded(-1.0, 1.0, (1,)) for a in ("agent_0", "agent_1")},
            done=done,
            truncated=False,
            batch_size=(4,),
            default_group_map=MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map,
        )
        self.layout.set_specs(self)
        self.t = 0

    def _reset(self, tensordict=None, **kwargs):
        self.t = 0
        obs = [torch.zeros(4, 2), torch.zeros(4, 2)]
        return self.layout.output({"observation": obs}, {"done": torch.zeros(4, dtype=torch.bool)})

    def _step(self, tensordict):
        self.t += 1
        obs = [torch.full((4, 2), float(self.t))] * 2
        rew = [torch.ones(4), 2 * torch.ones(4)]
        done = torch.full((4,), self.t >= 3)
        return self.layout.output({"observation": obs, "reward": rew}, {"done": done})

    def _set_seed(self, seed):
        pass


def test_reward_sum_nested_group_key_has_the_group_shape():
    """("agents", "episode_reward") in the state spec sits in a group of shape (*batch, n_agents)."""
    base = _TwoAgentEnv()
    env = TransformedEnv(
        base, RewardSum(in_keys=[("agents", "reward")], out_keys=[("agents", "episode_reward")])
    )
    assert env.full_state_spec["agents"].shape == (4, 2)
    assert env.fake_tensordict()["agents"].batch_size == (4, 2)
    check_env_specs(env)
    td = env.rollout(3)
    assert td["next", "agents", "episode_reward"][0, :, :, 0].tolist() == [
        [1.0, 2.0],
        [2.0, 4.0],
        [3.0, 6.0],
    ]


# ----------------------------------------------------------------------------- TerminateTransform
def test_terminate_transform_ends_the_rollout_when_the_predicate_holds():
    from torchenv.transforms import TerminateTransform

    env = TransformedEnv(
        CountingEnv(), TerminateTransform(lambda td: (td["observation"] >= 3).all())
    )
    check_env_specs(env)
    rollout = env.rollout(20)
    assert rollout.shape == (3,)
    assert rollout["next", "terminated"][-1].all() and rollout["next", "done"][-1].all()
    assert not rollout["next", "terminated"][:-1].any()
    assert not rollout["next", "truncated"].any()


def test_terminate_transform_write_done_false_leaves_done_alone():
    from torchenv.transforms import TerminateTransform

    env = TransformedEnv(
        CountingEnv(),
        TerminateTransform(lambda td: (td["observation"] >= 1).all(), write_done=False),
    )
    td = env.step(env.reset().set("action", torch.ones(1, dtype=torch.float64)))
    assert td["next", "terminated"].all() and not td["next", "done"].any()


def test_terminate_transform_refuses_a_non_callable():
    from torchenv.transforms import TerminateTransform

    with pytest.raises(ValueError, match="callable"):
        TerminateTransform(3)


# ----------------------------------------------------------------------------- SuccessReward
def test_success_reward_standalone_and_bounded_spec():
    from torchenv.transforms import SuccessReward

    td = TensorDict(success=torch.tensor([[True], [False]]), batch_size=[2])
    out = SuccessReward(scale=-2.0)(td)
    assert out["reward"].squeeze(-1).tolist() == [-2.0, 0.0]
    env = TransformedEnv(PendulumEnv(), SuccessReward("done", scale=3.0))
    spec = env.reward_spec
    assert isinstance(spec, Bounded)
    assert spec.space.low.item() == 0.0 and spec.space.high.item() == 3.0
    rollout = env.rollout(3)
    assert set(rollout["next", "reward"].unique().tolist()) <= {0.0, 3.0}


def test_success_reward_names_a_missing_success_key():
    from torchenv.transforms import SuccessReward

    env = TransformedEnv(PendulumEnv(), SuccessReward("goal", reward_key="bonus"))
    with pytest.raises(KeyError, match="goal"):
        _ = env.reward_spec


# ----------------------------------------------------------------------------- PinMemoryTransform
def test_pin_memory_transform_passes_data_through_without_cuda():
    from torchenv.transforms import PinMemoryTransform

    env = TransformedEnv(PendulumEnv(), PinMemoryTransform())
    rollout = env.rollout(3)
    assert rollout.shape == (3,)
    assert rollout["next", "th"].is_pinned() == torch.cuda.is_available()


# ----------------------------------------------------------------------------- RandomTruncation
def _random_truncation_env():
    from torchenv.transforms import RandomTruncationTransform

    return TransformedEnv(
        CountingEnv(batch_size=(4,)),
        Compose(StepCounter(), RandomTruncationTransform(2, 5, prob=0.5)),
    )


def test_random_truncation_draws_torchrl_horizons():
    check_env_specs(_random_truncation_env())
    env = _random_truncation_env()
    assert sorted(env.full_done_spec.keys()) == ["done", "terminated", "truncated"]
    torch.manual_seed(0)
    env.reset()
    assert env.transform[1]._horizons.squeeze(-1).tolist() == [5, 5, 4, 1]
    rollout = env.rollout(
        12,
        lambda td: td.set("action", torch.full((4, 1), 0.5, dtype=torch.float64)),
        break_when_any_done=False,
    )
    # TorchRL 0.14.1, same seed, env and policy: step counts per step (rows) and sub-env
    expected_counts = [
        [1, 1, 1, 1], [2, 2, 2, 1], [3, 3, 3, 2], [4, 4, 4, 3], [5, 5, 1, 4], [1, 1, 2, 5],
        [2, 2, 3, 1], [3, 3, 4, 2], [1, 4, 5, 1], [2, 5, 1, 2], [3, 1, 2, 3], [4, 2, 3, 4],
    ]  # fmt: skip
    assert rollout["next", "step_count"].squeeze(-1).T.tolist() == expected_counts
    truncated = rollout["next", "truncated"].squeeze(-1).T.int().tolist()
    assert truncated[7] == [1, 0, 0, 1] and truncated[0] == [0, 0, 0, 1]
    assert (rollout["next", "truncated"] <= rollout["next", "done"]).all()
    assert env.transform[1]._horizons.squeeze(-1).tolist() == [5, 5, 4, 5]


def test_random_truncation_adds_a_truncated_spec_and_needs_a_step_counter():
    from torchenv.transforms import RandomTruncationTransform

    env = TransformedEnv(
        PendulumEnv(), Compose(StepCounter(), RandomTruncationTransform(3, 3, prob=1.0))
    )
    assert sorted(env.full_done_spec.keys()) == ["done", "terminated", "truncated"]  # added
    assert env.rollout(10).shape[0] <= 3
    with pytest.raises(RuntimeError, match="StepCounter"):
        TransformedEnv(CountingEnv(), RandomTruncationTransform(2, 5))
    with pytest.raises(NotImplementedError):
        RandomTruncationTransform(1, 3)(TensorDict())


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((0, 5), {}, "min_horizon must be >= 1, got 0"),
        ((3, 2), {}, r"min_horizon \(3\) must be <= max_horizon \(2\)"),
        ((1, 0), {}, "max_horizon must be >= 1, got 0"),
        ((1, 3), {"prob": 2.0}, r"prob must be in \[0, 1\], got 2.0"),
        ((1, 3), {"first_episode_prob": -1}, "first_episode_prob must be in"),
    ],
)
def test_random_truncation_bad_arguments(args, kwargs, match):
    from torchenv.transforms import RandomTruncationTransform

    with pytest.raises(ValueError, match=match):
        RandomTruncationTransform(*args, **kwargs)


class _PerAgentDoneEnv(_TwoAgentEnv):
    """_TwoAgentEnv with per-agent done flags as well as the root ones (PettingZoo's layout)."""

    def __init__(self):
        super().__init__(done="per_agent")

    def _reset(self, tensordict=None, **kwargs):
        self.t = 0
        obs = [torch.zeros(4, 2), torch.zeros(4, 2)]
        return self.layout.output(
            {"observation": obs, "terminated": [torch.zeros(4, dtype=torch.bool)] * 2}
        )

    def _step(self, tensordict):
        self.t += 1
        obs = [torch.full((4, 2), float(self.t))] * 2
        rew = [torch.ones(4), 2 * torch.ones(4)]
        term = [torch.full((4,), self.t >= 3)] * 2
        return self.layout.output({"observation": obs, "reward": rew, "terminated": term})


@pytest.mark.parametrize("transform_cls", [StepCounter, InitTracker])
def test_episode_trackers_follow_the_root_reset_only_when_there_is_one(transform_cls):
    # TorchRL's transforms keep one entry per "filtered" reset key: the agents' reset key is
    # covered by the root one, so a single root entry is added (not one per group)
    base = _PerAgentDoneEnv()
    assert base.reset_keys == ["_reset", ("agents", "_reset")]
    assert base._filtered_reset_keys == ["_reset"]
    env = TransformedEnv(base, transform_cls())
    data = env.rollout(3)
    name = "step_count" if transform_cls is StepCounter else "is_init"
    keys = set(data.keys(True))
    assert name in keys and ("next", name) in keys
    assert ("agents", name) not in data.keys(True)
    if transform_cls is StepCounter:
        assert data["next", "step_count"][0, :, 0].tolist() == [1, 2, 3]
