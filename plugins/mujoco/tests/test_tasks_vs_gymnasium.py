"""Each task, one env, against gymnasium's ``-v5`` env: same seed, same actions, same numbers.

Both reset from the same seed (our reset noise draws the numbers gymnasium draws, in the same
order), then take the same 60 actions. Observations, rewards and terminations must agree to float
tolerance. Exception, documented in docs/mujoco.md: the contact forces ``cfrc_ext`` of Ant and
Humanoid (MuJoCo computes them in its sensor pass at the start of the last substep; gymnasium
calls ``mj_rnePostConstraint`` after the RK4 step): those observation columns and the contact cost
are compared separately (same shape, finite), everything else exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv_mujoco import MujocoEnv

gym = pytest.importorskip("gymnasium")
pytestmark = pytest.mark.mujoco

TASKS = ["HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "InvertedPendulum", "Reacher"]
# observation columns holding cfrc_ext[1:] (body 0 is the world)
CONTACT_COLUMNS = {"Ant": slice(27, None), "Humanoid": slice(348 - 78, None)}


def _contact_cost(name: str, env: MujocoEnv) -> float:
    forces = env.sim.field("cfrc_ext")
    if name == "Ant":
        return float(5e-4 * np.square(np.clip(forces, -1, 1)).sum())
    return float(min(5e-7 * np.square(forces).sum(), 10.0))


@pytest.mark.parametrize("name", TASKS)
def test_one_env_trajectory_equals_gymnasium(name):
    ref = gym.make(f"{name}-v5")
    env = MujocoEnv(name, num_envs=1)
    try:
        obs_ref, _ = ref.reset(seed=7)
        env.set_seed(7)
        td = env.reset()
        cols = CONTACT_COLUMNS.get(name, slice(0, 0))
        keep = np.ones(obs_ref.shape[0], bool)
        keep[cols] = False
        np.testing.assert_allclose(td["observation"][0].numpy(), obs_ref, rtol=1e-10, atol=1e-12)
        rng = np.random.default_rng(1)
        low, high = ref.action_space.low, ref.action_space.high
        for t in range(60):
            action = rng.uniform(0.4 * low, 0.4 * high).astype(np.float32)
            obs_ref, r_ref, term_ref, trunc_ref, info = ref.step(action)
            td["action"] = torch.from_numpy(action)[None]
            td = env.step(td)["next"]
            obs = td["observation"][0].numpy()
            assert obs.shape == obs_ref.shape
            np.testing.assert_allclose(
                obs[keep], obs_ref[keep], rtol=1e-9, atol=1e-9, err_msg=f"step {t}"
            )
            assert np.isfinite(obs[cols]).all()
            reward = td["reward"].item()
            if name in CONTACT_COLUMNS:  # compare the rewards without their contact costs
                reward += _contact_cost(name, env)
                r_ref -= info["reward_contact"]
            assert reward == pytest.approx(r_ref, rel=1e-5, abs=1e-5), f"step {t}"
            assert bool(td["terminated"].item()) == term_ref, f"step {t}"
            assert bool(td["truncated"].item()) == trunc_ref, f"step {t}"
            if term_ref:
                break
    finally:
        ref.close()
        env.close()
