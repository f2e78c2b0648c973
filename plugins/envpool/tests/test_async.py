"""AsyncEnvPoolEnv: envpool's async mode; outputs name the envs that stepped (``"env_id"``), and
each env's trajectory is the one envpool gives that env for the same seed and actions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchenv
from torchenv.envs import check_env_specs

envpool = pytest.importorskip(
    "envpool", reason='the envpool plugin\'s tests need envpool (pip install "torchenv[envpool]")'
)

from torchenv_envpool import AsyncEnvPoolEnv, MultiThreadedEnv  # noqa: E402

pytestmark = pytest.mark.envpool


def test_make_with_a_smaller_batch_size_is_async():
    env = torchenv.make("envpool:CartPole-v1", num_envs=6, batch_size=2, seed=0)
    try:
        assert isinstance(env, AsyncEnvPoolEnv)
        assert tuple(env.batch_size) == (2,) and env.num_workers == 6
        assert env.observation_spec["env_id"].dtype == torch.int64
        check_env_specs(env)
    finally:
        env.close()
    same = torchenv.make("envpool:CartPole-v1", num_envs=3, batch_size=3)
    try:
        assert isinstance(same, MultiThreadedEnv) and tuple(same.batch_size) == (3,)
    finally:
        same.close()


def test_outputs_name_the_envs_that_stepped():
    env = AsyncEnvPoolEnv("CartPole-v1", 6, 2, create_env_kwargs={"seed": 0})
    try:
        td = env.rollout(40, break_when_any_done=False)
        ids = td["next", "env_id"]
        assert ids.min() >= 0 and ids.max() < 6
        assert all(len(set(row.tolist())) == 2 for row in ids.T)  # two distinct envs per step
        # the next step acts on the envs the previous output named
        assert torch.equal(td["env_id"][:, 1:], ids[:, :-1])
        assert len(set(ids.flatten().tolist())) == 6  # every env stepped
    finally:
        env.close()


def _sync_records(task, n, seed, actions):
    """Per env: its observations/rewards/dones under envpool's sync API, auto-resets included."""
    pool = envpool.make(task, env_type="gymnasium", num_envs=n, seed=seed)
    obs, _ = pool.reset()
    records = [[(obs[i].copy(), 0.0, False, False)] for i in range(n)]
    for k in range(actions.shape[1]):
        obs, reward, term, trunc, _ = pool.step(actions[:, k])
        for i in range(n):
            records[i].append((obs[i].copy(), float(reward[i]), bool(term[i]), bool(trunc[i])))
    pool.close()
    return records


def test_each_env_follows_envpool_for_the_same_seed_and_actions():
    n, b, steps, seed = 6, 2, 60, 4
    actions = np.random.default_rng(1).integers(0, 2, (n, 200))
    env = AsyncEnvPoolEnv("CartPole-v1", n, b, create_env_kwargs={"seed": seed})
    records: list[list] = [[] for _ in range(n)]
    sent = np.zeros(n, dtype=int)
    try:
        td = env.reset()
        for j, i in enumerate(td["env_id"].tolist()):
            records[i].append((td["observation"][j].numpy().copy(), 0.0, False, False))
        for _ in range(steps):
            ids = td["env_id"].numpy()
            td["action"] = torch.as_tensor(actions[ids, sent[ids]])
            sent[ids] += 1
            out, td = env.step_and_maybe_reset(td)
            nxt = out["next"]
            for j, i in enumerate(nxt["env_id"].tolist()):
                records[i].append(
                    (
                        nxt["observation"][j].numpy().copy(),
                        nxt["reward"][j, 0].item(),
                        bool(nxt["terminated"][j, 0]),
                        bool(nxt["truncated"][j, 0]),
                    )
                )
    finally:
        env.close()
    reference = _sync_records("CartPole-v1", n, seed, actions[:, : sent.max()])
    ended = 0
    for i in range(n):
        # one result per action sent, but the last may still be in flight
        assert len(records[i]) in (sent[i], sent[i] + 1) and len(records[i]) > 3
        for k, (mine, theirs) in enumerate(zip(records[i], reference[i])):
            np.testing.assert_array_equal(mine[0], theirs[0], err_msg=f"env {i}, output {k}")
            assert mine[1:] == theirs[1:], f"env {i}, output {k}: reward/dones"
            ended += mine[2] or mine[3]
    assert ended > 0  # auto-resets were exercised


def test_async_errors():
    with pytest.raises(ValueError, match=r"batch_size: expected at most num_envs=2"):
        AsyncEnvPoolEnv("CartPole-v1", 2, 3)
    with pytest.raises(ValueError, match=r"batch_size: expected a positive int"):
        AsyncEnvPoolEnv("CartPole-v1", 2, 0)
    env = AsyncEnvPoolEnv("CartPole-v1", 4, 2)
    try:
        with pytest.raises(RuntimeError, match="reset the env before stepping"):
            env._array_step(np.zeros(2, dtype=np.int64), {})
        env.reset()
        with pytest.raises(ValueError, match=r"action: expected shape \(2,\)"):
            env._array_step(np.zeros(4, dtype=np.int64), {})
    finally:
        env.close()
