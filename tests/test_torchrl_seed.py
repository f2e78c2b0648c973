"""Same seed, same actions, same trajectory as TorchRL 0.14.1 (issue 36).

For each backend TorchRL wraps, TorchRL's env and ours are seeded alike and stepped with the
same recorded actions (through ``rollout``, resets included); the data and the returned seed
must be bit-identical. Runs where torchrl is installed (the ``torchrl`` tox cell:
``tox -e torchrl``); skipped elsewhere. Random actions are not compared: TorchRL draws them from
torch's global generator, ours from the env's seeded one (see docs/migrating-from-torchrl.md).
"""

from __future__ import annotations

import functools

import pytest
import torch

torchrl = pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from torchrl.envs import GymEnv as TorchRLGymEnv  # noqa: E402
from torchrl.envs import ParallelEnv as TorchRLParallelEnv  # noqa: E402
from torchrl.envs import SerialEnv as TorchRLSerialEnv  # noqa: E402

from torchenv.batched import ParallelEnv, SerialEnv  # noqa: E402
from torchenv.testing import assert_tensordict_equal  # noqa: E402

pytestmark = pytest.mark.torchrl

STEPS = 150


class _Replay:
    """A policy writing recorded actions (one per call) under ``key``."""

    def __init__(self, actions, key="action"):
        self._it = iter(actions)
        self._key = key

    def __call__(self, tensordict):
        return tensordict.set(self._key, next(self._it).clone())


def _actions(spec, steps=STEPS, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [spec.rand(generator=generator) for _ in range(steps)]


def _compare(theirs, ours, seed, steps=STEPS, keys=None):
    """Seeds both, rolls out ``steps`` recorded actions through resets, compares bit for bit."""
    actions = _actions(ours.full_action_spec["action"], steps)
    assert ours.set_seed(seed) == theirs.set_seed(seed)
    t = theirs.rollout(steps, _Replay(actions), break_when_any_done=False)
    o = ours.rollout(steps, _Replay(actions), break_when_any_done=False)
    keys = keys or [k for k in t.keys(True, True) if not (isinstance(k, tuple) and "_" in k[-1])]
    from tensordict import TensorDict

    pick = lambda td: TensorDict({k: td.get(k) for k in keys}, batch_size=td.batch_size)  # noqa: E731
    assert_tensordict_equal(pick(o), pick(t), f"ours vs TorchRL's (seed {seed})")
    return o


# ---------------------------------------------------------------------------------- gym
GYM_KEYS = [
    "observation",
    "action",
    "done",
    "terminated",
    "truncated",
    ("next", "observation"),
    ("next", "reward"),
    ("next", "done"),
    ("next", "terminated"),
    ("next", "truncated"),
]


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("seed", [0, 7])
def test_gym_single_env(env_id, seed):
    from torchenv_gym import GymEnv

    theirs, ours = TorchRLGymEnv(env_id), GymEnv(env_id)
    try:
        out = _compare(theirs, ours, seed, keys=GYM_KEYS)
        if env_id == "CartPole-v1":
            assert out["next", "done"].any()  # resets inside the rollout were compared too
    finally:
        theirs.close()
        ours.close()


def test_gym_set_seed_then_reset_is_torchrls_first_reset():
    from torchenv_gym import GymEnv

    theirs, ours = TorchRLGymEnv("CartPole-v1"), GymEnv("CartPole-v1")
    assert theirs.set_seed(3) == ours.set_seed(3)
    assert torch.equal(ours.reset()["observation"], theirs.reset()["observation"])
    theirs.close()
    ours.close()


def test_gym_vector_env():
    # up to the first episode end: after it, TorchRL 0.14.1 and torchenv treat gymnasium 1.x's
    # next-step autoreset differently (not a seeding matter; see docs/migrating-from-torchrl.md)
    from torchenv_gym import GymEnv

    theirs, ours = TorchRLGymEnv("CartPole-v1", num_envs=3), GymEnv("CartPole-v1", num_envs=3)
    try:
        actions = _actions(ours.full_action_spec["action"], 80)
        assert ours.set_seed(2) == theirs.set_seed(2)
        t = theirs.rollout(80, _Replay(actions), break_when_any_done=True)
        o = ours.rollout(80, _Replay(actions), break_when_any_done=True)
        assert o.batch_size == t.batch_size and o["next", "done"][:, -1].any()
        for key in GYM_KEYS:  # the last step's next observation is where the conventions part
            assert torch.equal(o.get(key)[:, :-1], t.get(key)[:, :-1]), key
        for key in [("next", "done"), ("next", "reward"), ("next", "terminated")]:
            assert torch.equal(o.get(key), t.get(key)), key
    finally:
        theirs.close()
        ours.close()


# partials of the libraries' classes: spawned workers unpickle them without this module
_theirs_cartpole = functools.partial(TorchRLGymEnv, "CartPole-v1")


def _ours_cartpole():
    from torchenv_gym import GymEnv

    return functools.partial(GymEnv, "CartPole-v1")


@pytest.mark.parametrize(
    ("their_cls", "our_cls"),
    [(TorchRLSerialEnv, SerialEnv), (TorchRLParallelEnv, ParallelEnv)],
    ids=["serial", "parallel"],
)
def test_gym_batched_envs_and_worker_seeds(their_cls, our_cls):
    theirs, ours = their_cls(3, _theirs_cartpole), our_cls(3, _ours_cartpole())
    try:
        _compare(theirs, ours, 5, steps=80, keys=GYM_KEYS)
    finally:
        theirs.close()
        ours.close()


# ----------------------------------------------------------------------------- dm_control
DMC_KEYS = ["position", "velocity", ("next", "position"), ("next", "velocity")]
DMC_KEYS += [("next", "reward"), ("next", "done")]


@pytest.mark.dmcontrol
def test_dmcontrol():
    pytest.importorskip("dm_control")
    from torchrl.envs import DMControlEnv as TorchRLDMControlEnv

    from torchenv_dmcontrol import DMControlEnv

    theirs, ours = TorchRLDMControlEnv("cartpole", "swingup"), DMControlEnv("cartpole", "swingup")
    _compare(theirs, ours, 11, steps=60, keys=DMC_KEYS)


# ----------------------------------------------------------------------------------- vmas
@pytest.mark.vmas
def test_vmas():
    pytest.importorskip("vmas")
    from torchrl.envs import VmasEnv as TorchRLVmasEnv

    from torchenv_vmas import VmasEnv

    kwargs = {"num_envs": 4, "continuous_actions": True, "max_steps": 20}
    theirs = TorchRLVmasEnv("balance", **kwargs)
    ours = VmasEnv("balance", **kwargs)
    key = ("agents", "action")
    actions = _actions(ours.full_action_spec[key], 50)
    assert ours.set_seed(1) == theirs.set_seed(1)
    t = theirs.rollout(50, _Replay(actions, key), break_when_any_done=False)
    o = ours.rollout(50, _Replay(actions, key), break_when_any_done=False)
    for k in [
        ("agents", "observation"),
        ("next", "agents", "observation"),
        ("next", "agents", "reward"),
        ("next", "done"),
    ]:
        assert torch.equal(o.get(k), t.get(k)), k


# ----------------------------------------------------------------------------- pettingzoo
@pytest.mark.pettingzoo
def test_pettingzoo():
    # not in the torchrl tox cell (no PettingZoo there): checked with torchrl 0.14.1 and
    # pettingzoo 1.24.3 + mpe2
    pytest.importorskip("mpe2")
    from torchrl.envs import PettingZooEnv as TorchRLPettingZooEnv

    from torchenv_pettingzoo import PettingZooEnv

    kwargs = {"parallel": True, "seed": 3, "max_cycles": 15}
    theirs = TorchRLPettingZooEnv("mpe/simple_spread_v3", **kwargs)
    ours = PettingZooEnv("mpe/simple_spread_v3", **kwargs)
    key = ("agent", "action")
    for seed in (None, 5):  # the constructor's seed, then set_seed's
        if seed is not None:
            assert ours.set_seed(seed) == theirs.set_seed(seed)
        actions = _actions(ours.full_action_spec[key], 30)
        t = theirs.rollout(30, _Replay(actions, key), break_when_any_done=False)
        o = ours.rollout(30, _Replay(actions, key), break_when_any_done=False)
        for k in [("agent", "observation"), ("next", "agent", "observation")]:
            assert torch.equal(o.get(k), t.get(k)), (seed, k)
        assert torch.equal(o.get(("next", "agent", "reward")), t.get(("next", "agent", "reward")))
