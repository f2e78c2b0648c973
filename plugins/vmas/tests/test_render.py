"""Rendering: rgb frames from VMAS's pyglet renderer, headless (software GL), for the recorders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("vmas")

from torchenv.record import PixelRenderTransform
from torchenv.record._frames import to_video_frames
from torchenv.transforms import TransformedEnv
from torchenv_vmas import VmasEnv

pytestmark = [pytest.mark.vmas, pytest.mark.slow]


def _render_or_skip(env, **kwargs):
    try:
        return env.render(**kwargs)
    except Exception as err:  # no GL at all on this machine: say why
        pytest.skip(f"VMAS's pyglet renderer cannot run headless here: {type(err).__name__}: {err}")


def test_render_gives_rgb_frames_that_follow_the_state():
    env = VmasEnv("balance", num_envs=2, seed=0)
    env.reset()
    first = _render_or_skip(env)
    assert isinstance(first, np.ndarray) and first.dtype == np.uint8 and first.shape[-1] == 3
    assert first.std() > 0, "a blank frame"
    for _ in range(10):
        env.step(env.full_action_spec.rand())
    later = env.render()
    other = env.render(env_index=1)
    assert later.shape == first.shape
    assert not np.array_equal(later, first) and not np.array_equal(later, other)
    env.close()


def test_pixel_render_transform_frames_for_video():
    env = VmasEnv("navigation", num_envs=2, n_agents=2, seed=0)
    _render_or_skip(env)
    rendered = TransformedEnv(env, PixelRenderTransform())
    td = rendered.rollout(4)
    # one frame (sub-env 0) per step, kept as non-tensor data over the env's batch
    per_env = td["next", "pixels"].tolist()
    assert len(per_env) == 2 and len(per_env[0]) == 4
    frames = torch.stack([torch.as_tensor(np.asarray(f)) for f in per_env[0]])
    video = to_video_frames(frames)
    assert video.shape[:2] == (4, 3) and video.dtype == torch.uint8
    assert not torch.equal(video[0], video[-1])
    env.close()
