"""Test-local PettingZoo envs whose agents leave mid-episode (real PettingZoo base classes).

``LeavingParallel``: every live agent moves on a line; agent ``i`` terminates after
``lifetimes[i]`` steps (``None``: never), everyone is truncated at ``max_cycles``. It checks that
it only gets actions of live agents. Its infos give each agent's age (``infos=False``: empty).

``LeavingAEC``: players take turns adding 0-3 to a counter (an ``action_mask`` in a ``Dict``
observation forbids repeating the previous player's number); player ``i`` terminates after
``lifetimes[i]`` own moves and is removed with PettingZoo's dead step (``None`` action).
"""

from __future__ import annotations

import numpy as np
from gymnasium.spaces import Box, Dict, Discrete
from pettingzoo import AECEnv, ParallelEnv


class LeavingParallel(ParallelEnv):
    metadata = {"name": "leaving_parallel_v0", "render_modes": []}

    def __init__(self, lifetimes=(3, 6, None), max_cycles: int = 10, infos: bool = True) -> None:
        self.possible_agents = [f"runner_{i}" for i in range(len(lifetimes))]
        self.infos = infos
        self.lifetimes = dict(zip(self.possible_agents, lifetimes, strict=True))
        self.max_cycles = max_cycles
        self._rng = np.random.default_rng()
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> Box:
        return Box(-100.0, 100.0, (2,), np.float32)

    def action_space(self, agent: str) -> Discrete:
        return Discrete(3)

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.pos[agent], self.t], dtype=np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.pos = {a: float(self._rng.uniform(-1, 1)) for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, self._infos()

    def _infos(self) -> dict:
        return {a: {"age": self.t} if self.infos else {} for a in self.agents}

    def step(self, actions):
        unexpected = sorted(set(actions) - set(self.agents))
        if unexpected:
            raise ValueError(f"actions for agents that have left: {unexpected}")
        self.t += 1
        for agent, action in actions.items():
            self.pos[agent] += float(action) - 1.0 + 0.1 * float(self._rng.normal())
        rewards = {a: -abs(self.pos[a]) for a in self.agents}
        life = self.lifetimes
        term = {a: life[a] is not None and self.t >= life[a] for a in self.agents}
        trunc = {a: self.t >= self.max_cycles for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = self._infos()
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        return obs, rewards, term, trunc, infos

    def state(self) -> np.ndarray:
        return np.array([self.pos.get(a, 0.0) for a in self.possible_agents], np.float32)


class LeavingAEC(AECEnv):
    metadata = {"name": "leaving_aec_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self, lifetimes=(2, 4, None), max_cycles: int = 12) -> None:
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(len(lifetimes))]
        self.lifetimes = dict(zip(self.possible_agents, lifetimes, strict=True))
        self.max_cycles = max_cycles
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> Dict:
        return Dict(
            {
                "observation": Box(0.0, 1000.0, (2,), np.float32),
                "action_mask": Box(0, 1, (4,), np.int8),
            }
        )

    def action_space(self, agent: str) -> Discrete:
        return Discrete(4)

    def observe(self, agent: str) -> dict:
        mask = np.ones(4, np.int8)
        if self.previous is not None:
            mask[self.previous] = 0
        obs = np.array([self.moves[agent], self.counter], dtype=np.float32)
        return {"observation": obs, "action_mask": mask}

    def reset(self, seed=None, options=None) -> None:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.moves = {a: 0 for a in self.agents}
        self.counter = int(self._rng.integers(0, 10))
        self.previous: int | None = None
        self.cycles = 0
        self.agent_selection = self.agents[0]

    def _next_live(self, agent: str) -> str:
        order = self.possible_agents
        start = order.index(agent)
        for k in range(1, len(order) + 1):
            candidate = order[(start + k) % len(order)]
            if candidate in self.agents and not (
                self.terminations[candidate] or self.truncations[candidate]
            ):
                return candidate
        return agent

    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if self.previous is not None and action == self.previous:
            raise ValueError(f"{agent}: action {action} is masked out")
        self._cumulative_rewards[agent] = 0
        self.counter += int(action)
        self.previous = int(action)
        self.moves[agent] += 1
        self.cycles += 1
        self.rewards = {a: 0.0 for a in self.agents}
        self.rewards[agent] = float(action) - 1.5
        life = self.lifetimes[agent]
        if life is not None and self.moves[agent] >= life:
            self.terminations[agent] = True
        if self.cycles >= self.max_cycles:
            self.truncations = {a: True for a in self.agents}
        self._accumulate_rewards()
        self.agent_selection = self._next_live(agent)
        self._deads_step_first()
