"""The natively batched side: partial resets by ``"_reset"`` mask, step_and_maybe_reset, and
batched runners (``ParallelEnv`` of VMAS envs)."""

from __future__ import annotations

import pytest
import torch

vmas = pytest.importorskip("vmas")

from tensordict import TensorDict  # noqa: E402

import torchenv  # noqa: E402
from torchenv.batched import ParallelEnv, SerialEnv  # noqa: E402
from torchenv_vmas import VmasEnv  # noqa: E402

pytestmark = pytest.mark.vmas


def _zero_action(env):
    return env.full_action_spec.zero()


def test_partial_reset_resets_only_the_masked_sub_envs():
    env = VmasEnv("navigation", num_envs=6, n_agents=2, seed=0)
    twin = VmasEnv("navigation", num_envs=6, n_agents=2, seed=0)
    env.reset()
    twin.reset()
    for _ in range(3):
        action = env.full_action_spec.rand()
        td = env.step(action.clone())
        twin.step(action.clone())
    before = td["next", "agents", "observation"].clone()
    mask = torch.tensor([True, False, False, True, False, False]).unsqueeze(-1)
    # reset(data with "_reset"): the kept sub-envs' entries come from the data given
    out = env.reset(td["next"].exclude(("agents", "reward")).set("_reset", mask))
    kept = ~mask.squeeze(-1)
    torch.testing.assert_close(out["agents", "observation"][kept], before[kept], rtol=0, atol=0)
    assert not torch.equal(out["agents", "observation"][~kept], before[~kept])
    # and the env's own state agrees: VMAS kept those sub-envs as they were
    raw = env.base_vmas_env
    obs = torch.stack(raw.get_from_scenario(True, False, False, False)[0], 1)
    torch.testing.assert_close(obs, out["agents", "observation"], rtol=0, atol=0)
    # the kept sub-envs go on exactly as in the twin env that was never reset
    action = env.full_action_spec.rand()
    a = env.step(action.clone())["next", "agents", "observation"]
    b = twin.step(action.clone())["next", "agents", "observation"]
    torch.testing.assert_close(a[kept], b[kept], rtol=0, atol=0)
    # VMAS's own step counters were reset for the masked sub-envs only
    assert env.base_vmas_env.steps.tolist() == [1, 4, 4, 1, 4, 4]


def test_partial_reset_with_nothing_to_reset_changes_nothing():
    env = VmasEnv("balance", num_envs=3, seed=0)
    first = env.reset()
    env.step(first.clone().update(env.full_action_spec.rand()))
    raw = env.base_vmas_env
    state = torch.stack(raw.get_from_scenario(True, False, False, False)[0], 1)
    env.reset(first.clone().set("_reset", torch.zeros(3, 1, dtype=torch.bool)))
    after = torch.stack(raw.get_from_scenario(True, False, False, False)[0], 1)
    torch.testing.assert_close(after, state, rtol=0, atol=0)
    assert raw.steps.tolist() == [1, 1, 1]


def test_step_and_maybe_reset_restarts_truncated_sub_envs():
    env = VmasEnv("balance", num_envs=4, seed=0, max_steps=3)
    td = env.reset()
    steps = []
    for _ in range(7):
        td["agents", "action"] = env.full_action_spec["agents", "action"].zero()
        out, td = env.step_and_maybe_reset(td)
        steps.append(env.base_vmas_env.steps.clone())
        assert out["next", "truncated"].any() == (len(steps) % 3 == 0)
    assert [int(s[0]) for s in steps] == [1, 2, 0, 1, 2, 0, 1]


@pytest.mark.parallel
@pytest.mark.slow
def test_make_in_parallel_env():
    env = ParallelEnv(2, lambda: torchenv.make("vmas:navigation", num_envs=8, seed=0))
    try:
        assert env.batch_size == (2, 8)
        env.set_seed(0)
        td = env.rollout(6, break_when_any_done=False)
        assert td["next", "agents", "observation"].shape == (2, 8, 6, 4, 18)
        reset = env.reset(
            TensorDict({"_reset": torch.tensor([[True] * 8, [False] * 8]).unsqueeze(-1)}, [2, 8])
        )
        assert reset["agents", "observation"].shape == (2, 8, 4, 18)
    finally:
        env.close()


def test_serial_env_of_vmas_envs_matches_the_envs():
    serial = SerialEnv(2, lambda: VmasEnv("balance", num_envs=3, seed=0))
    single = VmasEnv("balance", num_envs=3, seed=0)
    got = serial.reset()["agents", "observation"]
    want = single.reset()["agents", "observation"]
    assert got.shape == (2, 3, 3, 16)
    torch.testing.assert_close(got[0], want, rtol=0, atol=0)
    serial.close()
