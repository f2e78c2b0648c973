"""torchenv's VMAS env inside TorchRL 0.14.1: next to TorchRL's own ``VmasEnv``, and TorchRL's
multi-agent PPO tutorial (``examples/multiagent_ppo_vmas.py``) run on it.

Runs where torchrl is installed (the ``torchrl`` tox cell); skipped elsewhere.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("vmas")
pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from tensordict import TensorDict
from torchrl.envs.libs.vmas import VmasEnv as TorchRLVmasEnv
from torchrl.envs.utils import check_env_specs as torchrl_check_env_specs

from torchenv_vmas import VmasEnv

pytestmark = pytest.mark.vmas
EXAMPLE = Path(__file__).parents[3] / "examples" / "multiagent_ppo_vmas.py"


def test_torchrl_check_env_specs_passes_on_our_env():
    torchrl_check_env_specs(VmasEnv("navigation", num_envs=4, n_agents=2, seed=0), seed=0)


@pytest.mark.parametrize("scenario", ["balance", "navigation"])
def test_same_data_as_torchrl_vmas_env(scenario):
    """Same scenario, seed and actions: TorchRL's VmasEnv and ours give the same keys (ours adds
    ``"truncated"``), shapes and values."""
    kwargs = {"num_envs": 4, "seed": 3, "max_steps": 6}
    theirs = TorchRLVmasEnv(scenario, **kwargs)
    ours = VmasEnv(scenario, **kwargs)
    assert ours.group_map == theirs.group_map
    for name in ("full_observation_spec", "full_action_spec", "full_reward_spec"):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert set(a.keys(True, True)) == set(b.keys(True, True)), name
        for key in a.keys(True, True):
            assert a[key].shape == b[key].shape, (name, key)
    assert set(ours.done_keys) == set(theirs.done_keys) | {"truncated"}
    td_ours, td_theirs = ours.reset(), theirs.reset()
    torch.testing.assert_close(
        td_ours["agents", "observation"], td_theirs["agents", "observation"], rtol=0, atol=0
    )
    gen = torch.Generator().manual_seed(0)
    for _ in range(8):
        action = torch.rand(ours.full_action_spec["agents", "action"].shape, generator=gen)
        action = action * 2 - 1
        a = ours.step(TensorDict({"agents": {"action": action}}, batch_size=[4]))["next"]
        b = theirs.step(TensorDict({"agents": {"action": action}}, batch_size=[4]))["next"]
        for key in (("agents", "observation"), ("agents", "reward"), "done"):
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


@pytest.mark.slow
def test_multiagent_ppo_tutorial_runs_on_our_env(capsys):
    """TorchRL's MAPPO tutorial, only its env imports changed: 3 short training iterations."""
    spec = importlib.util.spec_from_file_location("multiagent_ppo_vmas", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.VmasEnv is VmasEnv
    rewards = module.main(full=False)
    assert len(rewards) == 3 and all(math.isfinite(r) for r in rewards)
    assert "iteration 2: episode_reward_mean" in capsys.readouterr().out
