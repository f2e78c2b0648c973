"""PettingZoo envs inside torchenv's batched envs: SerialEnv and ParallelEnv (worker processes)
give the same data for the same seeds and actions, parallel (MPE) and AEC (tictactoe) alike."""

from __future__ import annotations

import functools

import pytest
import torch

pytest.importorskip("pettingzoo")

from leaving_envs import LeavingParallel

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv_pettingzoo import PettingZooEnv, PettingZooWrapper, task_names

pytestmark = pytest.mark.pettingzoo


def _leaving():
    return PettingZooWrapper(LeavingParallel(), use_mask=True, done_on_any=False)


MAKERS = {
    "leaving": _leaving,
    "simple_spread": functools.partial(
        PettingZooEnv, "mpe/simple_spread_v3", parallel=True, max_cycles=6
    ),
    "tictactoe": functools.partial(
        PettingZooEnv, "classic/tictactoe_v3", parallel=False, use_mask=True
    ),
}
NEEDS = {"simple_spread": "mpe/simple_spread_v3", "tictactoe": "classic/tictactoe_v3"}


def _rollout(env, steps=14):
    env.set_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return env.rollout(steps, break_when_any_done=False)


@pytest.mark.parametrize("name", list(MAKERS))
def test_parallel_env_equals_serial_env(name):
    if name in NEEDS and NEEDS[name] not in task_names():
        pytest.skip(f"{NEEDS[name]} is not installed")
    serial = SerialEnv(2, MAKERS[name])
    parallel = ParallelEnv(2, MAKERS[name])
    try:
        a, b = _rollout(serial), _rollout(parallel)
    finally:
        serial.close()
        parallel.close()
    assert a.batch_size == b.batch_size == (2, 14)
    for key in a.keys(True, True):
        assert torch.equal(a[key], b[key]), key
    if name == "simple_spread":  # the two sub-envs were seeded differently
        obs = a["agent", "observation"][:, 0]
        assert not torch.equal(obs[0], obs[1])
        assert a["next", "done"].any(), "episodes end (max_cycles=6) and are reset in the rollout"
    elif name == "leaving":
        assert not a["next", "runner", "mask"].all(), "agents leave in the rollout"
    else:  # turns alternate in both sub-envs
        turns = a["player_1", "mask"][:, :2, 0]
        assert turns[:, 0].all() and not turns[:, 1].any()
