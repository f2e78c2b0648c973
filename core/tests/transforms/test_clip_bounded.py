"""``ClipTransform(low=, high=)`` on an observation whose spec is ``Bounded`` (issue 37): the
spec's bounds are clipped to ``[low, high]`` (this raised ``TypeError`` from ``clamp``)."""

from __future__ import annotations

import torch

from torchenv.envs import PendulumEnv
from torchenv.specs import Bounded
from torchenv.transforms import ClipTransform, TransformedEnv


def test_clip_both_bounds_on_a_bounded_observation():
    base = PendulumEnv()
    assert isinstance(base.observation_spec["observation"], Bounded)
    env = TransformedEnv(PendulumEnv(), ClipTransform(["observation"], low=-0.5, high=0.5))
    spec = env.observation_spec["observation"]
    assert isinstance(spec, Bounded)
    assert spec.space.low.tolist() == [-0.5, -0.5, -0.5]
    assert spec.space.high.tolist() == [0.5, 0.5, 0.5]
    data = env.rollout(5)
    assert data["next", "observation"].abs().max() <= 0.5
    assert spec.is_in(data["next", "observation"][0])


def test_clip_one_bound_keeps_the_spec_other_bound():
    base_spec = PendulumEnv().observation_spec["observation"]
    env = TransformedEnv(PendulumEnv(), ClipTransform(["observation"], low=0.0))
    spec = env.observation_spec["observation"]
    assert torch.equal(spec.space.low, base_spec.space.low.clamp(min=0.0))
    assert torch.equal(spec.space.high, base_spec.space.high)
