"""Ours vs TorchRL 0.14.1's ``DMControlEnv`` on the same tasks: specs, trajectories, pixels.

Runs where torchrl is installed (the ``torchrl`` tox cell: ``tox -e torchrl``); skipped elsewhere.
Seeding follows TorchRL's convention (``set_seed`` resets the env once itself).
"""

from __future__ import annotations

import pytest
import torch

torchrl = pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from dm_control import suite  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import DMControlEnv as TorchRLDMControlEnv  # noqa: E402
from torchrl.envs import DMControlWrapper as TorchRLDMControlWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from torchenv.interop import to_torchrl  # noqa: E402
from torchenv_dmcontrol import DMControlEnv, DMControlWrapper  # noqa: E402

pytestmark = [pytest.mark.dmcontrol, pytest.mark.torchrl]

TASKS = [("cheetah", "run"), ("walker", "walk"), ("cartpole", "swingup")]


def _leaves(spec):
    return {key: spec[key] for key in spec.keys(True, True)}


def _kind(spec):
    # TorchRL's Bounded/Unbounded construct BoundedContinuous/UnboundedContinuous subclasses
    return type(spec).__name__.removesuffix("Continuous").removesuffix("Discrete")


def _assert_same_spec(theirs, ours, what):
    theirs, ours = _leaves(theirs), _leaves(ours)
    assert sorted(theirs) == sorted(ours), what
    for key, t in theirs.items():
        o = ours[key]
        where = f"{what}[{key!r}]"
        assert _kind(o) == _kind(t), where
        assert (o.shape, o.dtype) == (t.shape, t.dtype), where
        # Unbounded boxes: TorchRL stores finfo.min/max, the core -inf/inf (a core choice)
        if _kind(t) == "Bounded":
            assert torch.equal(o.space.low, t.space.low), where
            assert torch.equal(o.space.high, t.space.high), where


@pytest.mark.parametrize(("domain", "task"), TASKS)
def test_specs_equal_torchrls(domain, task):
    theirs, ours = TorchRLDMControlEnv(domain, task), DMControlEnv(domain, task)
    for name in ("observation_spec", "full_action_spec", "full_reward_spec", "full_done_spec"):
        _assert_same_spec(getattr(theirs, name), getattr(ours, name), name)
    assert ours.batch_size == theirs.batch_size


@pytest.mark.parametrize(("domain", "task"), TASKS[:2])
def test_same_seed_same_trajectory_as_torchrl(domain, task):
    theirs, ours = TorchRLDMControlEnv(domain, task), DMControlEnv(domain, task)
    theirs.set_seed(11)
    ours.set_seed(11)
    t = theirs.reset()
    o = ours.reset()
    keys = list(ours.observation_spec.keys())
    for key in keys:
        torch.testing.assert_close(o[key], t[key], rtol=0, atol=0)
    torch.manual_seed(0)
    for _ in range(25):
        action = ours.action_spec.rand()
        t = theirs.step(t.set("action", action))["next"]
        o = ours.step(o.set("action", action))["next"]
        for key in [*keys, "reward", "done", "terminated", "truncated"]:
            torch.testing.assert_close(o[key], t[key], rtol=0, atol=0, msg=key)


def _load_cartpole():
    return suite.load("cartpole", "balance", task_kwargs={"random": 5})


@pytest.mark.usefixtures("pixels_available")
def test_pixels_equal_torchrls():
    kwargs = {
        "from_pixels": True,
        "pixels_only": False,
        "render_kwargs": {"height": 24, "width": 32},
    }
    # TorchRL's DMControlEnv hands render_kwargs to the task (a TypeError): wrap loaded envs
    theirs = TorchRLDMControlWrapper(_load_cartpole(), **kwargs)
    ours = DMControlWrapper(_load_cartpole(), **kwargs)
    _assert_same_spec(theirs.observation_spec, ours.observation_spec, "observation_spec")
    t, o = theirs.reset(), ours.reset()
    assert o["pixels"].shape == (24, 32, 3) and o["pixels"].dtype == torch.uint8
    assert torch.equal(o["pixels"], t["pixels"])
    action = ours.action_spec.zero()
    t = theirs.step(t.set("action", action))["next"]
    o = ours.step(o.set("action", action))["next"]
    assert torch.equal(o["pixels"], t["pixels"]) and torch.equal(o["position"], t["position"])


def test_ours_passes_torchrls_check_and_collector():
    env = to_torchrl(DMControlEnv("cartpole", "swingup"))
    check_env_specs(env)
    collector = Collector(env, None, frames_per_batch=50, total_frames=100)
    try:
        batches = list(collector)
    finally:
        collector.shutdown()
    assert [b.numel() for b in batches] == [50, 50]
    assert batches[-1]["next", "position"].dtype == torch.float64
