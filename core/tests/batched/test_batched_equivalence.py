"""Single env, SerialEnv and ParallelEnv give identical results, seed for seed."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs import step_mdp
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv

NUM_WORKERS = 3
STEPS = 12


def _actions(steps: int, shape, seed: int = 123, discrete: bool = False) -> list:
    g = torch.Generator().manual_seed(seed)
    if discrete:
        return [torch.randint(0, 2, shape, generator=g) for _ in range(steps)]
    return [torch.rand(shape, generator=g) * 2 - 1 for _ in range(steps)]


def _run_batched(env, actions) -> list:
    env.set_seed(7)
    td = env.reset()
    out = []
    for action in actions:
        td.set("action", action)
        data, td = env.step_and_maybe_reset(td)
        out.append(data.clone())
    return out


def _run_single(make, seed, actions, worker) -> list:
    env = make()
    env.set_seed(seed)
    td = env.reset()
    out = []
    for action in actions:
        td.set("action", action[worker])
        data, td = env.step_and_maybe_reset(td)
        out.append(data.clone())
    return out


def _chained_seeds(make, seed: int, n: int) -> list[int]:
    seeds, env = [], make()
    for _ in range(n):
        seeds.append(seed)
        seed = env.set_seed(seed)
    return seeds


def _assert_same(a: TensorDict, b: TensorDict) -> None:
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in a.keys(True, True):
        torch.testing.assert_close(a.get(key), b.get(key), rtol=0, atol=0, msg=str(key))


@pytest.mark.parallel
def test_serial_parallel_and_single_identical(noise_env_cls):
    actions = _actions(STEPS, (NUM_WORKERS, 1))
    serial = SerialEnv(NUM_WORKERS, noise_env_cls)
    parallel = ParallelEnv(NUM_WORKERS, noise_env_cls)
    try:
        res_serial = _run_batched(serial, actions)
        res_parallel = _run_batched(parallel, actions)
    finally:
        serial.close()
        parallel.close()
    for s, p in zip(res_serial, res_parallel):
        _assert_same(s, p)
    # episodes end during the run: the in-worker resets are exercised
    assert torch.stack([s["next", "done"] for s in res_serial]).any()
    seeds = _chained_seeds(noise_env_cls, 7, NUM_WORKERS)
    assert len(set(seeds)) == NUM_WORKERS
    for w in range(NUM_WORKERS):
        single = _run_single(noise_env_cls, seeds[w], actions, w)
        for t in range(STEPS):
            _assert_same(single[t], res_serial[t][w])


@pytest.mark.parallel
@pytest.mark.parametrize("make", [CartPoleEnv, PendulumEnv], ids=["cartpole", "pendulum"])
def test_rollout_identical_with_builtin_envs(make):
    discrete = make is CartPoleEnv

    def make_policy():
        actions = iter(_actions(20, (2, 1), discrete=discrete))

        def policy(td):
            action = next(actions)
            return td.set("action", action.squeeze(-1) if discrete else action)

        return policy

    results = []
    for cls in (SerialEnv, ParallelEnv):
        env = cls(2, make)
        env.set_seed(3)
        results.append(env.rollout(10, make_policy(), break_when_any_done=False))
        td = env.reset()
        for _ in range(15):  # through step_and_maybe_reset, with resets inside the workers
            action = torch.ones(2, dtype=torch.long) if discrete else torch.full((2, 1), 0.5)
            data, td = env.step_and_maybe_reset(td.set("action", action))
        results.append(data)
        env.close()
    _assert_same(results[0], results[2])  # rollouts: serial == parallel
    _assert_same(results[1], results[3])  # step_and_maybe_reset loops: serial == parallel
    assert results[0].batch_size == torch.Size([2, 10])
    obs_key = "observation" if discrete else "th"
    assert not torch.equal(results[0][0][obs_key], results[0][1][obs_key])  # distinct seeds


@pytest.mark.parallel
def test_step_and_reset_through_envbase_path(noise_env_cls):
    """``step`` + ``reset`` (EnvBase logic around ``_step``/``_reset``) match too."""
    actions = _actions(6, (2, 1), seed=5)
    outs = []
    for cls in (SerialEnv, ParallelEnv):
        env = cls(2, noise_env_cls)
        env.set_seed(11)
        td = env.reset()
        steps = []
        for action in actions:
            td.set("action", action)
            td = env.step(td)
            steps.append(td.clone())
            td = step_mdp(td)
        outs.append(steps)
        env.close()
    for a, b in zip(*outs):
        _assert_same(a, b)
