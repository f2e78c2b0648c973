"""Small image envs for the recorder tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Categorical, Composite, Unbounded

H, W = 12, 16


def frame_value(count: int, index: int = 0) -> int:
    """The grey level of the frame after ``count`` steps in sub-env ``index``."""
    return (10 * count + 3 * index) % 256


class PixelEnv(EnvBase):
    """Counts steps; emits (or only renders) a grey ``[H, W, 3]`` uint8 frame of level ``frame_value``.

    Args:
        batch_size: the env's batch size (each sub-env has its own grey offset).
        with_pixels: put the frame in the observations under ``"pixels"``.
        layout: ``"hwc"`` or ``"chw"`` for the observed frame.
        as_float: observe the frame as floats in ``[0, 1]``.
        max_count: done after this many steps.
    """

    def __init__(
        self,
        batch_size=(),
        with_pixels: bool = True,
        layout: str = "hwc",
        as_float: bool = False,
        max_count: int = 100,
    ):
        super().__init__(batch_size=batch_size)
        bs = self.batch_size
        self.with_pixels, self.layout, self.as_float = with_pixels, layout, as_float
        image = (H, W, 3) if layout == "hwc" else (3, H, W)
        obs = {"observation": Unbounded((*bs, 1))}
        if with_pixels:
            dtype = torch.float32 if as_float else torch.uint8
            obs["pixels"] = Unbounded((*bs, *image), dtype=dtype)
        self.observation_spec = Composite(obs, shape=bs)
        self.action_spec = Categorical(2, shape=(*bs, 1))
        self.reward_spec = Unbounded((*bs, 1))
        self.max_count = max_count
        self.count = 0

    def _levels(self) -> torch.Tensor:
        n = int(np.prod(self.batch_size)) if self.batch_size else 1
        levels = torch.tensor([frame_value(self.count, i) for i in range(n)], dtype=torch.uint8)
        return levels.reshape(*self.batch_size) if self.batch_size else levels[0]

    def render(self) -> np.ndarray:
        """The current frame(s), channels last, as numpy (like gymnasium's rgb_array)."""
        levels = self._levels()
        return levels[..., None, None, None].expand(*levels.shape, H, W, 3).numpy().copy()

    def _obs(self) -> TensorDict:
        bs = self.batch_size
        done = torch.full((*bs, 1), self.count >= self.max_count)
        out = {
            "observation": torch.full((*bs, 1), float(self.count)),
            "done": done,
            "terminated": done.clone(),
        }
        if self.with_pixels:
            pixels = torch.from_numpy(self.render())
            if self.layout == "chw":
                pixels = pixels.movedim(-1, -3).contiguous()
            if self.as_float:
                pixels = pixels.float() / 255
            out["pixels"] = pixels
        return TensorDict(out, bs)

    def _reset(self, tensordict=None, **kwargs):
        self.count = 0
        return self._obs()

    def _step(self, tensordict):
        self.count += 1
        out = self._obs()
        out["reward"] = torch.ones(*self.batch_size, 1)
        return out

    def _set_seed(self, seed):
        pass


@pytest.fixture
def pixel_env_cls():
    return PixelEnv


@pytest.fixture
def frame_level():
    return frame_value


@pytest.fixture
def image_size():
    return H, W


@pytest.fixture
def imageio_v3():
    return pytest.importorskip("imageio.v3", reason="needs the video extra (imageio)")
