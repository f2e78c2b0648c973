"""PendulumEnv: conformance, gymnasium's physics, stateless batch-unlocked stepping."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import PendulumEnv
from torchenv.testing import EnvConformanceTests


class TestPendulumConformance(EnvConformanceTests):
    batch_sizes = ((3,), (2, 2))

    def make_env(self):
        return PendulumEnv()


def test_is_batch_unlocked_and_stateless():
    env = PendulumEnv(seed=0)
    assert not env.batch_locked
    assert env.batch_size == torch.Size([])
    assert set(env.state_spec.keys()) == {"th", "thdot", "params"}


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_any_input_batch(batch):
    env = PendulumEnv(seed=0)
    td = env.reset(TensorDict(batch_size=batch))
    assert td["th"].shape == torch.Size(batch)
    assert td["observation"].shape == torch.Size([*batch, 3])
    assert td["params", "g"].shape == torch.Size(batch)
    td = env.rand_step(td)
    assert td["next", "reward"].shape == torch.Size([*batch, 1])
    rollout = env.rollout(4, tensordict=env.reset(TensorDict(batch_size=batch)))
    assert rollout.batch_size == torch.Size([*batch, 4])


def test_reset_ranges_and_observation():
    env = PendulumEnv(seed=1)
    td = env.reset(TensorDict(batch_size=[4096]))
    assert td["th"].abs().max() <= math.pi and td["th"].abs().max() > 3.0
    assert td["thdot"].abs().max() <= 1.0 and td["thdot"].abs().max() > 0.95
    expected = torch.stack([td["th"].cos(), td["th"].sin(), td["thdot"]], -1)
    assert torch.equal(td["observation"], expected)
    assert not td["done"].any()


def test_dynamics_match_gymnasium_pendulum():
    pendulum = pytest.importorskip("gymnasium.envs.classic_control.pendulum")
    gym_env = pendulum.PendulumEnv()
    gym_env.reset(seed=0)
    env = PendulumEnv(seed=0)
    th, thdot = gym_env.state
    td = env.reset(TensorDict(batch_size=[]))
    td["th"] = torch.tensor(th, dtype=torch.float32)
    td["thdot"] = torch.tensor(thdot, dtype=torch.float32)
    torques = torch.linspace(-2.0, 2.0, 30)[
        torch.randperm(30, generator=torch.Generator().manual_seed(0))
    ]
    for u in torques:
        obs, reward, _, _, _ = gym_env.step(u.reshape(1).numpy())
        td = env.step(td.set("action", u.reshape(1)))
        nxt = td["next"]
        torch.testing.assert_close(nxt["observation"], torch.from_numpy(obs), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(nxt["reward"].item(), float(reward), atol=1e-4, rtol=1e-4)
        td = nxt.exclude("reward")


def test_step_is_a_pure_function_of_its_input():
    env = PendulumEnv(seed=0)
    td = env.reset(TensorDict(batch_size=[3]))
    td["action"] = torch.tensor([[1.0], [-1.0], [0.5]])
    first = env.step(td.clone())["next"]
    second = env.step(td.clone())["next"]
    assert torch.equal(first["th"], second["th"]) and torch.equal(first["thdot"], second["thdot"])


def test_params_drive_the_dynamics():
    env = PendulumEnv(seed=0)
    td = env.reset(PendulumEnv.gen_params(g=10.0, batch_size=[2]))
    td["th"] = torch.full((2,), 1.0)
    td["thdot"] = torch.zeros(2)
    td["params", "g"] = torch.tensor([10.0, 20.0])
    td["action"] = torch.zeros(2, 1)
    thdot = env.step(td)["next", "thdot"]
    # thdot' = 3 g / (2 l) sin(th) dt: doubling g doubles the acceleration
    torch.testing.assert_close(thdot[1], 2 * thdot[0])
    torch.testing.assert_close(thdot[0], torch.tensor(3 * 10.0 / 2 * math.sin(1.0) * 0.05))


def test_torque_and_speed_are_clamped():
    env = PendulumEnv(seed=0)
    td = env.reset(TensorDict(batch_size=[2]))
    td["th"] = torch.zeros(2)
    td["thdot"] = torch.tensor([7.9, 0.0])
    td["action"] = torch.tensor([[2.0], [2.0]])
    nxt = env.step(td)["next"]
    assert nxt["thdot"][0].item() == pytest.approx(8.0)  # clamped at max_speed
    assert nxt["th"].abs().max() <= math.pi


def test_seeded_resets_are_reproducible():
    a = PendulumEnv(seed=3).reset(TensorDict(batch_size=[4]))
    b = PendulumEnv(seed=3).reset(TensorDict(batch_size=[4]))
    c = PendulumEnv(seed=4).reset(TensorDict(batch_size=[4]))
    assert torch.equal(a["th"], b["th"]) and torch.equal(a["thdot"], b["thdot"])
    assert not torch.equal(a["th"], c["th"])


def test_reward_is_negative_cost():
    env = PendulumEnv(seed=0)
    td = env.reset(TensorDict(batch_size=[]))
    td["th"], td["thdot"] = torch.tensor(0.5), torch.tensor(2.0)
    td["action"] = torch.tensor([1.5])
    reward = env.step(td)["next", "reward"]
    expected = -(0.5**2 + 0.1 * 2.0**2 + 0.001 * 1.5**2)
    assert reward.item() == pytest.approx(expected, rel=1e-6)
