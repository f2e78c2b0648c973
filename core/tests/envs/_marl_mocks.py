"""A pure-torch multi-agent env for the core's tests, built on ``MarlLayout``.

Three walkers (``walker_0..2``: observation of size 4) and a scout (``scout_0``: size 6), each moving
on a line with a discrete action in ``0..4`` (a move of ``action - 2``). A move that lands on a
multiple of 3 is forbidden: the ``(group, "action_mask")`` entries say which moves are allowed,
and a forbidden move costs a reward of -1 (an allowed one -|position| / 100). Each agent has a
random lifetime: when it ends the agent is terminated and has left (zero observation, ``(group, "mask")`` False) until the
sub-env is reset; the episode ends when every agent has left (``done_on_any=False``), or is
truncated after ``max_steps``. Batched (one row per sub-env), partial resets, seeded.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from torchenv.envs import EnvBase, MarlLayout
from torchenv.specs import Categorical, Unbounded

AGENTS = ["walker_0", "walker_1", "walker_2", "scout_0"]
N_ACTIONS = 5


class MarlMockEnv(EnvBase):
    """Heterogeneous agents, agents that leave mid-episode, action masks, per-agent done."""

    def __init__(
        self,
        batch_size=(3,),
        group_map=None,
        max_steps: int = 12,
        done: str = "per_agent",
        device=None,
        spec_masks: bool = False,
    ):
        super().__init__(batch_size=torch.Size(batch_size), device=device)
        self.max_steps = max_steps
        self.spec_masks = spec_masks  # keep the action spec masked (TorchRL's PettingZoo way)
        self.layout = MarlLayout(
            AGENTS,
            group_map,
            observation_specs={
                a: Unbounded((6,) if a.startswith("scout") else (4,)) for a in AGENTS
            },
            action_specs={a: Categorical(N_ACTIONS) for a in AGENTS},
            action_mask=True,
            agent_mask=True,
            done=done,
            done_on_any=False,
            batch_size=self.batch_size,
            device=device,
        )
        self.layout.set_specs(self)
        shape = (*self.batch_size, len(AGENTS))
        self.pos = torch.zeros(shape, dtype=torch.long)
        self.life = torch.zeros(shape, dtype=torch.long)
        self.t = torch.zeros(self.batch_size, dtype=torch.long)
        self.rng = torch.Generator()

    def _set_seed(self, seed):
        self.rng.manual_seed(0 if seed is None else seed)

    # ------------------------------------------------------------------ dynamics
    def _alive(self) -> torch.Tensor:
        return self.t.unsqueeze(-1) < self.life

    def _allowed(self) -> torch.Tensor:
        """(*batch, agents, actions): moves that do not land on a multiple of 3."""
        moves = torch.arange(N_ACTIONS) - 2
        return (self.pos.unsqueeze(-1) + moves) % 3 != 0

    def _output(self, reward=None) -> TensorDictBase:
        alive = self._alive()
        t = self.t.unsqueeze(-1).expand_as(self.pos).float()
        left = (self.life - self.t.unsqueeze(-1)).float()
        base = torch.stack([self.pos.float(), t, left, alive.float()], -1) * alive.unsqueeze(-1)
        scout_extra = torch.stack([alive.sum(-1).float(), self.pos.sum(-1).float()], -1)
        allowed = self._allowed() | ~alive.unsqueeze(-1)
        observations = [base.select(-2, i) for i in range(3)]
        observations.append(torch.cat([base.select(-2, 3), scout_extra * alive[..., 3:]], -1))
        truncated = (self.t >= self.max_steps).unsqueeze(-1).expand_as(alive) & alive
        per_agent = {
            "observation": observations,
            "terminated": list((~alive).unbind(-1)),
            "truncated": list(truncated.unbind(-1)),
            "action_mask": list(allowed.unbind(-2)),
            "mask": list(alive.unbind(-1)),
        }
        if reward is not None:
            per_agent["reward"] = list(reward.unbind(-1))
        root = None
        if self.layout.done_layout != "per_agent":
            term = ~alive.any(-1)
            trunc = self.t >= self.max_steps
            root = {"terminated": term, "truncated": trunc & ~term}
            del per_agent["terminated"], per_agent["truncated"]
        out = self.layout.output(per_agent, root)
        if self.spec_masks:
            self.layout.update_action_spec_masks(self.full_action_spec, out)
        return out

    def _reset(self, tensordict=None, **kwargs) -> TensorDictBase:
        rows = self.layout.reset_rows(tensordict)
        if not rows.any():  # only some agents done: nothing to reset, no random draws
            return self._output()
        shape = self.pos.shape
        fresh_life = torch.randint(2, self.max_steps + 4, shape, generator=self.rng)
        fresh_pos = torch.randint(-5, 6, shape, generator=self.rng)
        self.life = torch.where(rows.unsqueeze(-1), fresh_life, self.life)
        self.pos = torch.where(rows.unsqueeze(-1), fresh_pos, self.pos)
        self.t = self.t.masked_fill(rows, 0)
        return self._output()

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        actions = torch.stack(self.layout.split_actions(tensordict), -1)  # (*batch, agents)
        alive = self._alive()
        legal = self._allowed().gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        self.pos = torch.where(alive, self.pos + actions - 2, self.pos)
        reward = torch.where(
            legal,
            -self.pos.abs().float() / 100,  # above -1 while |pos| < 100
            torch.full_like(self.pos, -1.0, dtype=torch.float32),
        )
        reward = reward * alive
        self.t = self.t + 1
        return self._output(reward)
