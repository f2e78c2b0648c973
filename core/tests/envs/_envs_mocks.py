"""Small envs used by the EnvBase tests (the built-in envs are tested elsewhere)."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Binary, Bounded, Categorical, Composite, Unbounded


class CounterEnv(EnvBase):
    """Counts steps; done after ``max_count`` steps. Observation = count (float)."""

    def __init__(self, batch_size=(), max_count: int = 5, **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        bs = self.batch_size
        self.observation_spec = Composite(observation=Unbounded((*bs, 1)), shape=bs)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*bs, 1))
        self.reward_spec = Unbounded((*bs, 1))
        self.max_count = max_count
        self.count = torch.zeros(*bs, 1)
        self.seed = None
        self.reset_calls = 0

    def _reset(self, tensordict=None, **kwargs):
        self.reset_calls += 1
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is None:
            self.count = torch.zeros_like(self.count)
        else:
            self.count = torch.where(reset.reshape(self.count.shape), 0.0, self.count)
        done = self.count >= self.max_count
        return TensorDict(
            {"observation": self.count.clone(), "done": done, "terminated": done.clone()},
            self.batch_size,
        )

    def _step(self, tensordict):
        self.count = self.count + 1
        done = self.count >= self.max_count
        return TensorDict(
            {
                "observation": self.count.clone(),
                "reward": tensordict["action"].clone(),
                "done": done,
                "terminated": done.clone(),
            },
            self.batch_size,
        )

    def _set_seed(self, seed):
        self.seed = seed


class ZeroResetEnv(EnvBase):
    """Returns zeros after reset (the env of the reference's "_reset" examples).

    ``layout``: "root" (root done), "nested" (agent0/agent1 dones) or "both".
    Every "val" and done entry has shape (2,) and the env batch size is ().
    """

    def __init__(self, layout: str = "root"):
        super().__init__(batch_size=())
        self.layout = layout
        obs, done = {}, {}
        if layout in ("root", "both"):
            obs["val"] = Unbounded((2,), dtype=torch.int64)
            done["done"] = Categorical(2, shape=(2,), dtype=torch.bool)
        if layout in ("nested", "both"):
            for agent in ("agent0", "agent1"):
                obs[agent] = Composite(val=Unbounded((2,), dtype=torch.int64))
                done[agent] = Composite(done=Categorical(2, shape=(2,), dtype=torch.bool))
        self.observation_spec = Composite(obs)
        self.full_done_spec = Composite(done)
        self.action_spec = Unbounded((1,))

    def _reset(self, tensordict=None, **kwargs):
        out = self.full_observation_spec.zero()
        out.update(self.full_done_spec.zero())
        return out

    def _step(self, tensordict):
        out = self.full_observation_spec.zero()
        out.update(self.full_done_spec.zero())
        out.update(self.full_reward_spec.zero())
        return out


class MarlEnv(EnvBase):
    """A VMAS-like multi-agent env: per-agent action/observation/reward under "agents".

    ``shared_done``: one done at the root (VMAS) or one per agent under "agents".
    """

    def __init__(self, batch_size=(3,), n_agents: int = 2, shared_done: bool = True, max_count=4):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.n_agents = n_agents
        agent_shape = (*bs, n_agents)
        self.full_action_spec = Composite(
            agents=Composite(action=Bounded(-1.0, 1.0, shape=(*agent_shape, 2)), shape=agent_shape),
            shape=bs,
        )
        self.full_observation_spec = Composite(
            agents=Composite(observation=Unbounded((*agent_shape, 3)), shape=agent_shape),
            shape=bs,
        )
        self.full_reward_spec = Composite(
            agents=Composite(reward=Unbounded((*agent_shape, 1)), shape=agent_shape), shape=bs
        )
        if shared_done:
            self.full_done_spec = Composite(
                done=Categorical(2, shape=(*bs, 1), dtype=torch.bool), shape=bs
            )
        else:
            self.full_done_spec = Composite(
                agents=Composite(
                    done=Categorical(2, shape=(*agent_shape, 1), dtype=torch.bool),
                    shape=agent_shape,
                ),
                shape=bs,
            )
        self.shared_done = shared_done
        self.max_count = max_count
        self.count = torch.zeros(*bs, 1)

    def _output(self, done, **agent_entries):
        bs = self.batch_size
        agents = TensorDict(agent_entries, (*bs, self.n_agents))
        agents["observation"] = self.count.unsqueeze(-1).expand(*bs, self.n_agents, 3).clone()
        if self.shared_done:
            return TensorDict({"agents": agents, "done": done, "terminated": done.clone()}, bs)
        per_agent = done.unsqueeze(-2).expand(*bs, self.n_agents, 1).clone()
        agents["done"] = per_agent
        agents["terminated"] = per_agent.clone()
        return TensorDict({"agents": agents}, bs)

    def _reset(self, tensordict=None, **kwargs):
        self.count = torch.zeros_like(self.count)
        return self._output(self.count > 0)

    def _step(self, tensordict):
        self.count = self.count + 1
        reward = tensordict["agents", "action"].sum(-1, keepdim=True)
        return self._output(self.count >= self.max_count, reward=reward)


class StatelessEnv(EnvBase):
    """A batch-unlocked, stateless env: next observation = observation + action."""

    _batch_locked = False

    def __init__(self, limit: float = 3.0):
        super().__init__(batch_size=())
        self.observation_spec = Composite(observation=Unbounded((1,)))
        self.action_spec = Bounded(0.0, 1.0, shape=(1,))
        self.limit = limit
        self.step_batches: list[torch.Size] = []

    def _reset(self, tensordict=None, **kwargs):
        batch = tensordict.batch_size if tensordict is not None else torch.Size(())
        obs = torch.zeros(*batch, 1)
        done = torch.zeros(*batch, 1, dtype=torch.bool)
        return TensorDict({"observation": obs, "done": done, "terminated": done.clone()}, batch)

    def _step(self, tensordict):
        self.step_batches.append(tensordict.batch_size)
        obs = tensordict["observation"] + tensordict["action"]
        done = obs >= self.limit
        return TensorDict(
            {"observation": obs, "reward": -obs, "done": done, "terminated": done.clone()},
            tensordict.batch_size,
        )


class DynamicSpecEnv(EnvBase):
    """The reference's EnvWithDynamicSpec: the observation grows by one row per step."""

    def __init__(self, max_count: int = 5):
        super().__init__(batch_size=())
        self.observation_spec = Composite(observation=Unbounded(shape=(3, -1, 2)))
        self.action_spec = Bounded(low=-1, high=1, shape=(2,))
        self.full_done_spec = Composite(
            done=Binary(1, shape=(1,), dtype=torch.bool),
            terminated=Binary(1, shape=(1,), dtype=torch.bool),
            truncated=Binary(1, shape=(1,), dtype=torch.bool),
        )
        self.reward_spec = Unbounded((1,), dtype=torch.float)
        self.count = 0
        self.max_count = max_count

    def _obs(self):
        return torch.full((3, self.count + 1, 2), float(self.count))

    def _reset(self, tensordict=None, **kwargs):
        self.count = 0
        data = TensorDict({"observation": self._obs()})
        data.update(self.full_done_spec.zero())
        return data

    def _step(self, tensordict):
        self.count += 1
        data = TensorDict({"observation": self._obs()})
        data.update(self.full_done_spec.zero() | (self.count >= self.max_count))
        data.update(self.full_reward_spec.zero())
        return data


class AutoResettingEnv(CounterEnv):
    """Resets itself when done: the observation returned with done=True is the next episode's."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        done = out["done"]
        if done.any():
            self.count = torch.where(done, 0.0, self.count)
            out["observation"] = self.count.clone()
        return out


class NestedStatelessEnv(EnvBase):
    """A batch-unlocked env with two agents under "agents": next obs = obs + action."""

    _batch_locked = False

    def __init__(self):
        super().__init__(batch_size=())
        self.full_observation_spec = Composite(
            agents=Composite(observation=Unbounded((2, 1)), shape=(2,))
        )
        self.full_action_spec = Composite(
            agents=Composite(action=Bounded(0.0, 1.0, shape=(2, 1)), shape=(2,))
        )
        self.step_batches: list[torch.Size] = []

    def _reset(self, tensordict=None, **kwargs):
        batch = tensordict.batch_size if tensordict is not None else torch.Size(())
        agents = TensorDict({"observation": torch.zeros(*batch, 2, 1)}, (*batch, 2))
        done = torch.zeros(*batch, 1, dtype=torch.bool)
        return TensorDict({"agents": agents, "done": done, "terminated": done.clone()}, batch)

    def _step(self, tensordict):
        self.step_batches.append(tensordict.batch_size)
        batch = tensordict.batch_size
        obs = tensordict["agents", "observation"] + tensordict["agents", "action"]
        agents = TensorDict({"observation": obs}, (*batch, 2))
        done = torch.zeros(*batch, 1, dtype=torch.bool)
        return TensorDict(
            {"agents": agents, "reward": obs.sum(-2), "done": done, "terminated": done.clone()},
            batch,
        )


class DiscreteEnv(EnvBase):
    """Observation = the last action (as float); the action spec has ``dtype``."""

    def __init__(self, dtype=torch.int8, n=4):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded((1,)))
        self.action_spec = Categorical(n, shape=(1,), dtype=dtype)
        self.reward_spec = Unbounded((1,))
        self.seen = []

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict(observation=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        action = tensordict["action"]
        self.seen.append(action.dtype)
        return TensorDict(
            observation=action.to(torch.float32),
            reward=torch.zeros(1),
            done=torch.zeros(1, dtype=torch.bool),
        )

    def _set_seed(self, seed):
        pass
