"""CartPoleEnv: conformance, gymnasium-identical physics, batching, partial resets."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import CartPoleEnv
from torchenv.testing import EnvConformanceTests

gym_cartpole = pytest.importorskip("gymnasium.envs.classic_control.cartpole")


class TestCartPoleConformance(EnvConformanceTests):
    def make_env(self):
        return CartPoleEnv(batch_size=[4])


class TestCartPoleUnbatchedConformance(EnvConformanceTests):
    def make_env(self):
        return CartPoleEnv()


class TestCartPoleOneHotConformance(EnvConformanceTests):
    def make_env(self):
        return CartPoleEnv(batch_size=[2, 3], categorical_action_encoding=False)


def _gym_rollout(seed: int, actions: list[int]):
    """Steps gymnasium's CartPole from its seeded reset; returns start state and per-step data."""
    env = gym_cartpole.CartPoleEnv()
    env.reset(seed=seed)
    start = torch.tensor(env.state, dtype=torch.float64)
    steps = []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        state = torch.from_numpy(env.state.copy())
        steps.append((torch.from_numpy(obs), reward, terminated, state))
        if terminated:
            break
    return start, steps


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_dynamics_equal_gymnasium_step_for_step(seed):
    generator = torch.Generator().manual_seed(seed)
    actions = torch.randint(0, 2, (200,), generator=generator).tolist()
    start, steps = _gym_rollout(seed, actions)
    env = CartPoleEnv(seed=seed)
    env.reset()
    env.state = start
    td = TensorDict(batch_size=[])
    for t, (obs, reward, terminated, state) in enumerate(steps):
        out = env.step(td.set("action", torch.tensor(actions[t])))["next"]
        # bit for bit, on the float64 state too
        assert torch.equal(env.state, state), f"step {t}: {env.state} vs {state}"
        assert torch.equal(out["observation"], obs), f"step {t}: {out['observation']} vs {obs}"
        assert out["reward"].item() == reward
        assert out["terminated"].item() == terminated
        assert out["done"].item() == terminated
        assert not out["truncated"].item()
    assert steps[-1][2], "the random actions should have let the pole fall"


def test_batched_dynamics_equal_gymnasium():
    seeds = list(range(6))
    actions = torch.randint(0, 2, (15, len(seeds)), generator=torch.Generator().manual_seed(3))
    env = CartPoleEnv(batch_size=[len(seeds)], seed=0)
    env.reset()
    gyms = [gym_cartpole.CartPoleEnv() for _ in seeds]
    for gym_env, seed in zip(gyms, seeds):
        gym_env.reset(seed=seed)
    env.state = torch.stack([torch.tensor(g.state, dtype=torch.float64) for g in gyms])
    td = TensorDict(batch_size=[len(seeds)])
    alive = set(range(len(seeds)))
    for row in actions:
        out = env.step(td.set("action", row.clone()))["next"]
        for i in sorted(alive):
            obs, _, terminated, _, _ = gyms[i].step(int(row[i]))
            assert torch.equal(env.state[i], torch.from_numpy(gyms[i].state))
            assert torch.equal(out["observation"][i], torch.from_numpy(obs))
            assert out["terminated"][i].item() == terminated
            if terminated:
                alive.discard(i)


def test_specs_follow_batch_size():
    env = CartPoleEnv(batch_size=[1024])
    assert env.batch_size == torch.Size([1024])
    assert env.observation_spec["observation"].shape == torch.Size([1024, 4])
    assert env.action_spec.shape == torch.Size([1024])
    assert env.full_done_spec["truncated"].shape == torch.Size([1024, 1])
    td = env.rand_step(env.reset())
    assert td["next", "observation"].shape == torch.Size([1024, 4])
    assert (td["next", "reward"] == 1.0).all()


def test_reset_state_is_uniform_in_small_box():
    env = CartPoleEnv(batch_size=[2048], seed=0)
    obs = env.reset()["observation"]
    assert obs.abs().max() <= 0.05
    assert obs.abs().max() > 0.045  # spread over the whole box
    assert obs.std(0).min() > 0.02


def test_seed_sets_reset_states():
    first = CartPoleEnv(batch_size=[3], seed=5).reset()["observation"]
    again = CartPoleEnv(batch_size=[3], seed=5).reset()["observation"]
    other = CartPoleEnv(batch_size=[3], seed=6).reset()["observation"]
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    env = CartPoleEnv(batch_size=[3], seed=1)
    env.set_seed(5)
    assert torch.equal(env.reset()["observation"], first)


def test_truncation_after_max_episode_steps():
    env = CartPoleEnv(batch_size=[2], max_episode_steps=10, seed=0)
    td = env.reset()
    for t in range(10):
        # alternating pushes keep the pole up, so only the time limit can end the episode
        td.set("action", torch.full((2,), t % 2))
        td = env.step(td)
        nxt = td["next"]
        assert not nxt["terminated"].any()
        assert nxt["truncated"].all() == (t == 9)
        assert torch.equal(nxt["done"], nxt["truncated"])
        td = td["next"].exclude("reward")


def test_terminates_when_pole_falls():
    env = CartPoleEnv(seed=0)
    env.reset()
    env.state = torch.tensor([0.0, 0.0, 0.2, 1.0], dtype=torch.float64)  # 0.2 + 0.02 > 12 degrees
    out = env.step(TensorDict({"action": torch.tensor(1)}, []))["next"]
    assert out["terminated"].item() and out["done"].item() and not out["truncated"].item()
    assert out["reward"].item() == 1.0


def test_partial_reset_resets_only_masked_sub_envs():
    env = CartPoleEnv(batch_size=[4], max_episode_steps=3, seed=0)
    td = env.reset()
    for _ in range(2):
        td = env.step(td.set("action", torch.tensor([0, 1, 0, 1])))["next"].exclude("reward")
    before = env.state.clone()
    mask = torch.tensor([[True], [False], [True], [False]])
    out = env.reset(td.set("_reset", mask))
    assert "_reset" not in out
    kept = ~mask.squeeze(-1)
    assert torch.equal(env.state[kept], before[kept])
    assert torch.equal(out["observation"][kept], td["observation"][kept])
    assert not torch.equal(env.state[~kept], before[~kept])
    assert env.state[~kept].abs().max() <= 0.05
    # the kept sub-envs reach their time limit one step later, the reset ones do not
    out = env.step(out.set("action", torch.tensor([0, 1, 0, 1])))["next"]
    assert out["truncated"].squeeze(-1).tolist() == [False, True, False, True]


def test_one_hot_actions_match_categorical():
    one_hot = CartPoleEnv(batch_size=[2], categorical_action_encoding=False, seed=0)
    categorical = CartPoleEnv(batch_size=[2], seed=0)
    assert one_hot.action_spec.shape == torch.Size([2, 2])
    td_a, td_b = one_hot.reset(), categorical.reset()
    assert torch.equal(td_a["observation"], td_b["observation"])
    action = torch.tensor([1, 0])
    td_a.set("action", torch.nn.functional.one_hot(action, 2).to(one_hot.action_spec.dtype))
    td_b.set("action", action)
    obs_a = one_hot.step(td_a)["next", "observation"]
    obs_b = categorical.step(td_b)["next", "observation"]
    assert torch.equal(obs_a, obs_b)


def test_state_setter_validates_shape():
    env = CartPoleEnv(batch_size=[2])
    with pytest.raises(ValueError, match="shape"):
        env.state = torch.zeros(3, 4)


def test_invalid_max_episode_steps():
    with pytest.raises(ValueError, match="max_episode_steps"):
        CartPoleEnv(max_episode_steps=0)


def test_partial_step_leaves_unmasked_sub_envs_untouched():
    env = CartPoleEnv(batch_size=[3], max_episode_steps=2, seed=0)
    td = env.reset()
    before = env.state.clone()
    td["action"] = torch.tensor([1, 1, 1])
    td["_step"] = torch.tensor([True, False, True])
    nxt = env.step(td)["next"]
    assert torch.equal(env.state[1], before[1])
    assert not torch.equal(env.state[0], before[0])
    assert torch.equal(nxt["observation"][1], td["observation"][1])
    assert nxt["reward"].squeeze(-1).tolist() == [1.0, 0.0, 1.0]
    # the skipped sub-env did not count the step: it is truncated one step after the others
    nxt = env.step(nxt.exclude("reward").set("action", torch.tensor([1, 1, 1])))["next"]
    assert nxt["truncated"].squeeze(-1).tolist() == [True, False, True]
