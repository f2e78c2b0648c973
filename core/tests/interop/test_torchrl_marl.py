"""A multi-agent env built on ``MarlLayout`` inside TorchRL's own multi-agent tooling.

Runs where torchrl is installed (the ``torchrl`` tox cell); skipped elsewhere. TorchRL's
``check_env_specs`` on the env (and on its ``to_torchrl`` view), TorchRL's ``MultiAgentMLP`` and a
masked categorical policy per group, collected with TorchRL's ``Collector``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torchrl = pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import RewardSum, TransformedEnv  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402
from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent.parent / "envs"))
from _marl_mocks import N_ACTIONS, MarlMockEnv  # noqa: E402

from torchenv.interop import to_torchrl  # noqa: E402


def test_torchrl_check_env_specs_passes():
    env = MarlMockEnv(batch_size=(4,))
    check_env_specs(env, seed=0)
    check_env_specs(to_torchrl(MarlMockEnv(batch_size=(4,))), seed=0)


def test_masked_multi_agent_policy_collects_legal_actions():
    env = TransformedEnv(
        to_torchrl(MarlMockEnv(batch_size=(4,))),
        RewardSum(in_keys=[("walker", "reward")], out_keys=[("walker", "episode_reward")]),
    )
    n_obs = env.full_observation_spec["walker", "observation"].shape[-1]
    net = MultiAgentMLP(
        n_agent_inputs=n_obs,
        n_agent_outputs=N_ACTIONS,
        n_agents=3,
        centralized=False,
        share_params=True,
        depth=1,
        num_cells=16,
    )
    policy = ProbabilisticActor(
        TensorDictModule(net, in_keys=[("walker", "observation")], out_keys=[("walker", "logits")]),
        in_keys={"logits": ("walker", "logits"), "mask": ("walker", "action_mask")},
        out_keys=[("walker", "action")],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )

    def act(td):
        policy(td)
        # the scout is driven at random by the env's spec
        td.set(("scout", "action"), env.full_action_spec["scout", "action"].rand())
        return td

    collector = Collector(env, act, frames_per_batch=40, total_frames=80)
    batches = list(collector)
    collector.shutdown()
    assert len(batches) == 2
    for data in batches:
        action = data["walker", "action"]
        mask = data["walker", "action_mask"]
        assert mask.gather(-1, action.unsqueeze(-1)).all(), "a masked action was taken"
        assert data["next", "walker", "episode_reward"].shape[-2:] == (3, 1)
