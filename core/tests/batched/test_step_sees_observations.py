"""Sub-envs whose ``_step`` reads its state from the observations of the input (TorchRL's
``StateLessCountingEnv`` pattern: nothing declared as state) work in batched envs, as in
TorchRL, whose sub-envs step on a tensordict that still holds their last outputs."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs import EnvBase
from torchenv.specs import Composite, Unbounded


class ObservedCounter(EnvBase):
    """``count += action`` where ``count`` lives only in the observations; ends at ``limit``."""

    def __init__(self, limit: int = 3):
        super().__init__()
        self.observation_spec = Composite(
            count=Unbounded((1,), dtype=torch.int32), limit=Unbounded((1,), dtype=torch.int32)
        )
        self.action_spec = Unbounded((1,), dtype=torch.int32)
        self.reward_spec = Unbounded((1,))
        self.limit = limit

    def _reset(self, td):
        return TensorDict(
            count=torch.zeros(1, dtype=torch.int32),
            limit=torch.full((1,), self.limit, dtype=torch.int32),
        )

    def _step(self, td):
        count = td["count"] + td["action"]
        return TensorDict(
            count=count,
            limit=td["limit"],
            reward=count.float(),
            done=count >= td["limit"],
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("batched_cls", [SerialEnv, ParallelEnv])
def test_observations_reach_the_sub_env_step(batched_cls):
    env = batched_cls(2, ObservedCounter)
    try:
        ones = [torch.ones(2, 1, dtype=torch.int32)] * 7
        data = env.rollout(7, actions=ones, break_when_any_done=False)
        # counts 1, 2, 3 (done: reset to 0), 1, 2, 3, 1 in both sub-envs
        expected = [1, 2, 3, 1, 2, 3, 1]
        assert data["next", "count"][..., 0].tolist() == [expected, expected]
        assert data["next", "done"][0, :, 0].tolist() == [c == 3 for c in expected]
        # with step (no reset in the sub-envs) the count goes on from the last output
        td = env.reset()
        for want in (1, 2):
            td = env.step(td.set("action", torch.ones(2, 1, dtype=torch.int32)))
            assert td["next", "count"][:, 0].tolist() == [want, want]
            td = env.step_mdp(td)
    finally:
        env.close()
