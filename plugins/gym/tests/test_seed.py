"""Seeding gym/gymnasium envs: TorchRL 0.14.1's convention (issue 36), seeded random actions
(issue 29).

``set_seed(s)`` performs the seeded reset itself (``env.reset(seed=s)``), as TorchRL's
``GymEnv`` does; the next ``reset`` continues from the generators it seeded. Random actions
draw from the env's generator, seeded with ``s``. Comparisons with TorchRL itself are in
``tests/test_torchrl_seed.py`` (the ``torchrl`` tox cell).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.testing import assert_tensordict_equal
from torchenv_gym import GymEnv
from torchenv_gym._toy_envs import LIB

NEW_API = LIB.__name__ == "gymnasium" or tuple(int(x) for x in LIB.__version__.split(".")[:2]) >= (
    0,
    26,
)
VECTOR = pytest.mark.skipif(LIB.__name__ != "gymnasium", reason="vector envs need gymnasium")


def _obs(out):
    return np.asarray(out[0] if NEW_API or isinstance(out, tuple) else out)


def _make_cartpole():
    return GymEnv("CartPole-v1")


class _Replay:
    """A policy that writes recorded actions, one per call."""

    def __init__(self, actions):
        self._it = iter(actions)

    def __call__(self, tensordict):
        return tensordict.set("action", next(self._it))


def _rollout(env, seed, steps, **kwargs):
    env.set_seed(seed)
    return env.rollout(steps, **kwargs)


def test_seeded_cartpole_ends_at_the_same_step_every_run():
    runs = []
    for _ in range(2):
        env = GymEnv("CartPole-v1")
        runs.append(_rollout(env, 0, 500, break_when_any_done=True))
        torch.rand(5)  # the global generator moving in between changes nothing
        env.close()
    assert runs[0].batch_size == runs[1].batch_size
    assert_tensordict_equal(runs[1], runs[0], "seeded CartPole rollouts")


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_set_seed_performs_the_seeded_reset_as_torchrl(env_id):
    raw = LIB.make(env_id)
    raw.reset(seed=4)
    second = _obs(raw.reset())
    raw.close()
    env = GymEnv(env_id)
    env.set_seed(4)
    first = env.reset()["observation"].numpy()
    env.close()
    np.testing.assert_array_equal(first, second)


def test_same_seed_same_data_with_recorded_actions_and_resets():
    env = GymEnv("CartPole-v1")
    torch.manual_seed(0)
    actions = env.action_spec.rand((120,))
    outs = []
    for _ in range(2):
        env.set_seed(11)
        outs.append(env.rollout(120, _Replay(actions), break_when_any_done=False))
    env.close()
    assert outs[0]["next", "done"].any()  # the episodes went through resets
    assert_tensordict_equal(outs[1], outs[0], "same seed, same actions")


@pytest.mark.parametrize("cls", [SerialEnv, ParallelEnv], ids=["serial", "parallel"])
def test_batched_envs_same_seed_same_random_rollout(cls):
    runs = []
    for _ in range(2):
        env = cls(2, _make_cartpole)
        try:
            runs.append(_rollout(env, 3, 60, break_when_any_done=False))
        finally:
            env.close()
    assert_tensordict_equal(runs[1], runs[0], f"{cls.__name__} seeded twice")


def test_serial_and_parallel_give_the_same_seeded_data():
    runs = []
    for cls in (SerialEnv, ParallelEnv):
        env = cls(2, _make_cartpole)
        try:
            runs.append(_rollout(env, 8, 40, break_when_any_done=False))
        finally:
            env.close()
    assert_tensordict_equal(runs[1], runs[0], "ParallelEnv vs SerialEnv")


def test_batched_workers_get_torchrls_seed_chain():
    env = SerialEnv(3, _make_cartpole)
    try:
        assert env.set_seed(0) == 2309840538  # TorchRL 0.14.1's SerialEnv(3, ...).set_seed(0)
        first = env.reset()["observation"]
    finally:
        env.close()
    seed = 0
    for i in range(3):
        single = GymEnv("CartPole-v1")
        seed_next = single.set_seed(seed)
        torch.testing.assert_close(single.reset()["observation"], first[i], rtol=0, atol=0)
        single.close()
        seed = seed_next


@VECTOR
def test_vector_env_same_seed_same_rollout_and_gymnasiums_sub_env_seeds():
    runs = []
    for _ in range(2):
        env = GymEnv("CartPole-v1", num_envs=3)
        runs.append(_rollout(env, 5, 80, break_when_any_done=False))
        env.close()
    assert_tensordict_equal(runs[1], runs[0], "vector env seeded twice")
    raw = LIB.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync")
    raw.reset(seed=5)  # sub-env i: seed 5 + i
    expected = raw.reset()[0]
    raw.close()
    np.testing.assert_array_equal(runs[0]["observation"][:, 0].numpy(), expected)
