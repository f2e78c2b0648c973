"""DQN on CartPole with torchenv and torch only (no TorchRL, no gymnasium).

    python examples/dqn_cartpole.py                 # about 20k steps, a few minutes on a CPU
    python examples/dqn_cartpole.py --frames 2000   # a quick smoke run

The env is torchenv's builtin CartPole, batched (``batch_size=[8]``): every step moves 8
sub-envs, and ``step_and_maybe_reset`` resets the ones whose episode ended. Transitions go to a
plain tensor replay buffer; the Q-network is a small MLP with a target copy; exploration is
epsilon-greedy. Episode returns are printed as training goes.
"""

from __future__ import annotations

import argparse
import copy

import torch
from torch import nn

import torchenv


def q_network(n_obs: int, n_actions: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(n_obs, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, n_actions)
    )


class Replay:
    """A ring buffer of (observation, action, reward, next observation, terminated) tensors."""

    def __init__(self, capacity: int, n_obs: int) -> None:
        self.obs = torch.zeros(capacity, n_obs)
        self.next_obs = torch.zeros(capacity, n_obs)
        self.action = torch.zeros(capacity, dtype=torch.long)
        self.reward = torch.zeros(capacity)
        self.terminated = torch.zeros(capacity)
        self.capacity, self.size, self.cursor = capacity, 0, 0

    def add(self, obs, action, reward, next_obs, terminated) -> None:
        n = obs.shape[0]
        idx = (torch.arange(n) + self.cursor) % self.capacity
        self.obs[idx], self.next_obs[idx], self.action[idx] = obs, next_obs, action
        self.reward[idx], self.terminated[idx] = reward, terminated.float()
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, batch: int, generator: torch.Generator):
        idx = torch.randint(self.size, (batch,), generator=generator)
        return (
            self.obs[idx],
            self.action[idx],
            self.reward[idx],
            self.next_obs[idx],
            self.terminated[idx],
        )


def train(frames: int = 20_000, num_envs: int = 8, seed: int = 0) -> list[float]:
    """Train and return the returns of the episodes that ended, in order."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    env = torchenv.make("builtin:CartPole", batch_size=[num_envs])
    env.set_seed(seed)
    n_obs = env.observation_spec["observation"].shape[-1]
    n_actions = env.action_spec.space.n
    q = q_network(n_obs, n_actions)
    target = copy.deepcopy(q)
    optimizer = torch.optim.Adam(q.parameters(), lr=1e-3)
    replay = Replay(50_000, n_obs)
    gamma, batch, warmup = 0.99, 128, 500
    returns: list[float] = []
    running = torch.zeros(num_envs)

    td = env.reset()
    for step in range(frames // num_envs):
        frame = step * num_envs
        epsilon = max(0.05, 1.0 - frame / (0.5 * frames))
        obs = td["observation"]
        with torch.no_grad():
            greedy = q(obs).argmax(-1)
        explore = torch.rand(num_envs, generator=generator) < epsilon
        random = torch.randint(n_actions, (num_envs,), generator=generator)
        td["action"] = torch.where(explore, random, greedy)
        td, td_next = env.step_and_maybe_reset(td)

        nxt = td["next"]
        reward = nxt["reward"].reshape(num_envs)
        done = nxt["done"].reshape(num_envs)
        replay.add(obs, td["action"], reward, nxt["observation"], nxt["terminated"].reshape(-1))
        running += reward
        returns += running[done].tolist()
        running[done] = 0.0
        td = td_next

        if replay.size >= warmup:
            o, a, r, o2, term = replay.sample(batch, generator)
            with torch.no_grad():
                bootstrap = target(o2).max(-1).values
                y = r + gamma * (1.0 - term) * bootstrap
            loss = nn.functional.smooth_l1_loss(q(o).gather(-1, a[:, None]).squeeze(-1), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            with torch.no_grad():  # soft target update
                for p, pt in zip(q.parameters(), target.parameters()):
                    pt.lerp_(p, 0.01)
        if step % 250 == 0 and returns:
            recent = returns[-20:]
            print(
                f"frames {frame:6d}  epsilon {epsilon:.2f}  return {sum(recent) / len(recent):.1f}"
            )
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    returns = train(args.frames, args.num_envs, args.seed)
    recent = returns[-20:]
    print(f"episodes: {len(returns)}  mean return of the last 20: {sum(recent) / len(recent):.1f}")


if __name__ == "__main__":
    main()
