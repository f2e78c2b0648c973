"""PixelRenderTransform: the parent env's render() as a "pixels" observation."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs import PendulumEnv, check_env_specs
from torchenv.record import CSVLogger, PixelRenderTransform, VideoRecorder
from torchenv.specs import NonTensor, Unbounded
from torchenv.transforms import TransformedEnv


def test_render_becomes_pixels(pixel_env_cls, frame_level, image_size):
    env = TransformedEnv(pixel_env_cls(with_pixels=False), PixelRenderTransform())
    spec = env.observation_spec["pixels"]
    assert isinstance(spec, Unbounded)
    assert spec.shape == (*image_size, 3) and spec.dtype == torch.uint8
    check_env_specs(env)
    data = env.rollout(4)
    assert data["pixels"].shape == (4, *image_size, 3)
    levels = [int(v) for v in data["next", "pixels"][:, 0, 0, 0]]
    assert levels == [frame_level(t) for t in range(1, 5)]
    assert int(data["pixels"][0, 0, 0, 0]) == frame_level(0)  # the reset frame


def test_preproc_and_out_key(pixel_env_cls, image_size):
    height, width = image_size
    transform = PixelRenderTransform(out_keys="small", preproc=lambda a: a[::2, ::2, :1])
    env = TransformedEnv(pixel_env_cls(with_pixels=False), transform)
    assert env.observation_spec["small"].shape == (height // 2, width // 2, 1)
    check_env_specs(env)
    assert env.rollout(2)["next", "small"].shape == (2, height // 2, width // 2, 1)


def test_pass_tensordict_renders_stateless_envs():
    class RenderedPendulum(PendulumEnv):
        def render(self, tensordict, scale=1):
            level = int(abs(float(tensordict["th"])) * 40 * scale) % 256
            return np.full((6, 8, 3), level, dtype=np.uint8)

    env = TransformedEnv(RenderedPendulum(), PixelRenderTransform(pass_tensordict=True, scale=2))
    check_env_specs(env)
    data = env.rollout(3)
    expected = (data["next", "th"].abs() * 80).long() % 256
    torch.testing.assert_close(data["next", "pixels"][:, 0, 0, 0].long(), expected)


def test_switch(pixel_env_cls):
    transform = PixelRenderTransform()
    env = TransformedEnv(pixel_env_cls(with_pixels=False), transform)
    transform.switch()
    assert not transform.enabled
    assert "pixels" not in env.rollout(2)["next"]
    assert "pixels" in env.observation_spec  # the spec is still read from a render
    transform.switch("on")
    assert transform.enabled and "pixels" in env.rollout(2)["next"]
    with pytest.raises(ValueError, match="'maybe'"):
        transform.switch("maybe")


def test_errors(pixel_env_cls):
    with pytest.raises(ValueError, match="exactly one out_key"):
        PixelRenderTransform(out_keys=["a", "b"])
    env = TransformedEnv(
        pixel_env_cls(with_pixels=False), PixelRenderTransform(render_method="draw")
    )
    with pytest.raises(ValueError, match="PixelEnv has no callable 'draw'"):
        env.reset()
    with pytest.raises(RuntimeError, match="no parent env|append it to an env"):
        PixelRenderTransform()(env.base_env.fake_tensordict())


def test_batched_env_single_image_is_non_tensor(pixel_env_cls):
    class OneImage(pixel_env_cls):
        def render(self):  # a batched env that renders one picture of all its sub-envs
            return np.zeros((4, 5, 3), dtype=np.uint8)

    env = TransformedEnv(OneImage(batch_size=[2], with_pixels=False), PixelRenderTransform())
    assert isinstance(env.observation_spec["pixels"], NonTensor)
    data = env.rollout(2)
    assert data["next"].get("pixels").tolist()[0][0].shape == (4, 5, 3)


def _make_render_env(cls):
    return cls(with_pixels=False)


def test_serial_env_fans_out_render(pixel_env_cls, frame_level, image_size):
    env = SerialEnv(2, functools.partial(_make_render_env, pixel_env_cls))
    env = TransformedEnv(env, PixelRenderTransform())
    try:
        assert env.observation_spec["pixels"].shape == (2, *image_size, 3)
        check_env_specs(env)
        data = env.rollout(3)
        assert data["next", "pixels"].shape == (2, 3, *image_size, 3)
        assert int(data["next", "pixels"][1, 2, 0, 0, 0]) == frame_level(3)
    finally:
        env.close()


@pytest.mark.parallel
def test_parallel_env_to_video(tmp_path, pixel_env_cls, image_size, imageio_v3):
    pytest.importorskip("imageio_ffmpeg")
    height, width = image_size
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="mp4")
    env = ParallelEnv(2, functools.partial(_make_render_env, pixel_env_cls))
    try:
        env = env.append_transform(PixelRenderTransform())
        env = env.append_transform(VideoRecorder(logger=logger, tag="pixels_record"))
        check_env_specs(env)
        env.transform.dump()
        env.rollout(5)
        env.transform.dump()
    finally:
        env.close()
    frames = imageio_v3.imread(tmp_path / "exp" / "videos" / "pixels_record_1.mp4")
    assert frames.shape == (6, height, 2 * width, 3)  # 2 sub-envs side by side


@pytest.mark.gymnasium
def test_gymnasium_cartpole_rgb_array(tmp_path, imageio_v3):
    torchenv_gym = pytest.importorskip("torchenv_gym", reason="the gym plugin is not installed")
    pytest.importorskip("pygame", reason="gymnasium's CartPole renders with pygame")
    pytest.importorskip("imageio_ffmpeg")
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="mp4")
    env = torchenv_gym.GymEnv("CartPole-v1", render_mode="rgb_array")
    env = env.append_transform(PixelRenderTransform())
    env = env.append_transform(VideoRecorder(logger, tag="cartpole", skip=1))
    try:
        spec = env.observation_spec["pixels"]
        assert spec.shape == (400, 600, 3) and spec.dtype == torch.uint8
        check_env_specs(env)
        env.transform.dump()
        data = env.rollout(4, break_when_any_done=False)
        assert data["next", "pixels"].shape == (4, 400, 600, 3)
        assert int(data["next", "pixels"].max()) > int(data["next", "pixels"].min())  # a picture
        env.transform.dump()
    finally:
        env.close()
    frames = imageio_v3.imread(tmp_path / "exp" / "videos" / "cartpole_1.mp4")
    assert frames.shape == (5, 400, 600, 3)
