"""VideoRecorder: frames cached from env data or TensorDicts, written through a logger."""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import check_env_specs
from torchenv.record import CSVLogger, VideoRecorder
from torchenv.transforms import Compose, StepCounter, TransformedEnv


def _levels(video: torch.Tensor) -> list[int]:
    """The grey level of each frame of a [1, T, C, H, W] video."""
    return [int(v) for v in video[0, :, 0, 0, 0]]


def _load(tmp_path, name):
    return torch.load(tmp_path / "exp" / "videos" / name)


@pytest.mark.parametrize("fmt", ["mp4", "gif"])
def test_rollout_to_video_file(tmp_path, pixel_env_cls, image_size, imageio_v3, fmt):
    if fmt != "gif":
        pytest.importorskip("imageio_ffmpeg")
    logger = CSVLogger("exp", log_dir=tmp_path, video_format=fmt, video_fps=8)
    env = TransformedEnv(pixel_env_cls(), VideoRecorder(logger, tag="run", skip=1))
    env.rollout(9)
    env.transform.dump()  # Compose dispatches dump to the recorder
    path = tmp_path / "exp" / "videos" / f"run_0.{fmt}"
    assert path.stat().st_size > 0
    frames = list(imageio_v3.imiter(path))
    assert len(frames) == 10  # the reset frame and 9 steps
    assert all(f.shape == (*image_size, 3) for f in frames)
    means = torch.tensor([f.astype("float32").mean() for f in frames])
    torch.testing.assert_close(means, torch.arange(10.0) * 10, atol=4.0, rtol=0)
    assert env.transform[0].obs == []  # the cache is emptied


def test_frames_are_exact_and_in_order(tmp_path, pixel_env_cls, frame_level, image_size):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    recorder = VideoRecorder(logger, tag="run", skip=1)
    env = TransformedEnv(pixel_env_cls(), recorder)
    env.rollout(4)
    recorder.dump()
    env.rollout(2)
    recorder.dump(suffix="eval")
    first = _load(tmp_path, "run_0.pt")
    assert first.shape == (1, 5, 3, *image_size) and first.dtype == torch.uint8
    assert _levels(first) == [frame_level(t) for t in range(5)]
    second = _load(tmp_path, "run_eval_1.pt")  # the step is the dump count
    assert _levels(second) == [frame_level(t) for t in range(3)]


def test_default_skip_is_two_for_a_single_env(tmp_path, pixel_env_cls, frame_level):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    recorder = VideoRecorder(logger, tag="run")
    env = TransformedEnv(pixel_env_cls(), recorder)
    env.rollout(9)  # 10 calls: the reset and 9 steps; every second one is kept
    assert recorder.skip == 2 and recorder.make_grid is True
    recorder.dump(step=5)
    assert _levels(_load(tmp_path, "run_5.pt")) == [frame_level(t) for t in (1, 3, 5, 7, 9)]


def test_batched_env_makes_a_grid(tmp_path, pixel_env_cls, frame_level, image_size):
    height, width = image_size
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    env = TransformedEnv(pixel_env_cls(batch_size=[3]), VideoRecorder(logger, tag="grid"))
    env.rollout(4)
    assert env.transform[0].skip == 1
    env.transform.dump()
    video = _load(tmp_path, "grid_0.pt")
    # 3 images tiled on a 2 x 2 grid, the last cell black
    assert video.shape == (1, 5, 3, 2 * height, 2 * width)
    last = video[0, -1, 0]
    assert int(last[0, 0]) == frame_level(4, 0)
    assert int(last[0, width]) == frame_level(4, 1)
    assert int(last[height, 0]) == frame_level(4, 2)
    assert int(last[height:, width:].max()) == 0


def test_batched_env_without_grid(tmp_path, pixel_env_cls, frame_level):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    recorder = VideoRecorder(logger, tag="flat", make_grid=False)
    env = TransformedEnv(pixel_env_cls(batch_size=[2]), recorder)
    env.rollout(2)
    recorder.dump()
    expected = [frame_level(t, i) for t in range(3) for i in range(2)]
    assert _levels(_load(tmp_path, "flat_0.pt")) == expected


@pytest.mark.parametrize("layout", ["hwc", "chw"])
@pytest.mark.parametrize("as_float", [False, True])
def test_layouts_and_dtypes(tmp_path, pixel_env_cls, frame_level, image_size, layout, as_float):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    env = TransformedEnv(
        pixel_env_cls(layout=layout, as_float=as_float), VideoRecorder(logger, "v", skip=1)
    )
    check_env_specs(env)  # the recorder leaves the data and specs as they are
    env.transform[0].dump()
    env.rollout(3)
    env.transform.dump()
    video = _load(tmp_path, "v_1.pt")
    assert video.shape == (1, 4, 3, *image_size)
    assert _levels(video) == [frame_level(t) for t in range(4)]


def test_standalone_on_a_batch_of_frames(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    recorder = VideoRecorder(logger, tag="data", in_keys=[("next", "image")], center_crop=4)
    images = torch.arange(6, dtype=torch.uint8).view(6, 1, 1, 1).expand(6, 10, 8, 3).clone()
    images[:, 0] = 255  # a border the crop removes
    data = TensorDict({("next", "image"): images}, batch_size=[6])
    out = recorder(data)
    assert out is data and out["next", "image"] is images
    assert recorder.make_grid is False and len(recorder.obs) == 6
    recorder.dump()
    video = _load(tmp_path, "data_0.pt")
    assert video.shape == (1, 6, 3, 4, 4)
    assert _levels(video) == list(range(6)) and int(video.max()) == 5


def test_grayscale_and_rgba_frames():
    recorder = VideoRecorder(None, "g", skip=1)
    recorder._apply_transform(torch.full((9, 7), 0.5))  # [H, W] floats in [0, 1]
    recorder._apply_transform(torch.full((9, 7, 1), 200, dtype=torch.uint8))
    recorder._apply_transform(torch.full((9, 7, 4), 100, dtype=torch.uint8))  # alpha dropped
    assert [tuple(f.shape) for f in recorder.obs] == [(1, 9, 7), (1, 9, 7), (3, 9, 7)]
    assert [int(f.max()) for f in recorder.obs] == [128, 200, 100]
    recorder.dump()  # no logger: the frames are dropped
    assert recorder.obs == [] and recorder.iter == 1


def test_frames_do_not_alias_the_env_buffers():
    recorder = VideoRecorder(None, "a", skip=1)
    image = torch.zeros(4, 4, 3, dtype=torch.uint8)
    recorder(TensorDict(pixels=image))
    image.fill_(9)
    assert int(recorder.obs[0].max()) == 0


def test_max_frames_and_dump_on_done(tmp_path, pixel_env_cls):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    capped = VideoRecorder(logger, "capped", skip=1, max_frames=3)
    env = TransformedEnv(pixel_env_cls(), capped)
    env.rollout(6)
    assert len(capped.obs) == 3

    recorder = VideoRecorder(logger, "episode", skip=1, dump_on_done=True)
    env = TransformedEnv(pixel_env_cls(max_count=4), recorder)
    env.rollout(10)  # stops at the done step, which dumps
    assert recorder.obs == []
    assert _load(tmp_path, "episode_0.pt").shape[1] == 5


def test_out_keys_copy_and_spec(tmp_path, pixel_env_cls):
    recorder = VideoRecorder(None, "c", skip=1, out_keys=["pixels_copy"])
    env = TransformedEnv(pixel_env_cls(), recorder)
    assert "pixels_copy" in env.observation_spec
    check_env_specs(env)
    data = env.rollout(2)
    torch.testing.assert_close(data["next", "pixels_copy"], data["next", "pixels"])


def test_several_in_keys_write_one_video_each(tmp_path, pixel_env_cls):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    env = TransformedEnv(pixel_env_cls(), StepCounter())
    env.append_transform(lambda td: td.set("pixels_b", td["pixels"] // 2))
    recorder = VideoRecorder(logger, "multi", in_keys=["pixels", "pixels_b"], skip=1)
    env.append_transform(recorder)
    env.rollout(3)
    recorder.dump()
    assert sorted(os.listdir(tmp_path / "exp" / "videos")) == [
        "multi_pixels_0.pt",
        "multi_pixels_b_0.pt",
    ]
    a, b = _load(tmp_path, "multi_pixels_0.pt"), _load(tmp_path, "multi_pixels_b_0.pt")
    torch.testing.assert_close(b, a // 2)


def test_errors_name_the_key_and_shape():
    recorder = VideoRecorder(None, "e", skip=1)
    with pytest.raises(KeyError, match="'pixels'.*observation"):
        recorder(TensorDict(observation=torch.zeros(3)))
    with pytest.raises(ValueError, match=r"'pixels' is not an image.*\(5, 6, 7\)"):
        recorder(TensorDict(pixels=torch.zeros(5, 6, 7)))
    with pytest.raises(ValueError, match="skip"):
        VideoRecorder(None, "e", skip=0)
    recorder = VideoRecorder(None, "e", skip=1, center_crop=(20, 2))
    with pytest.raises(ValueError, match="center_crop"):
        recorder(TensorDict(pixels=torch.zeros(8, 8, 3)))


def test_parent_and_compose_integration(tmp_path, pixel_env_cls):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    env = TransformedEnv(
        pixel_env_cls(), Compose(StepCounter(max_steps=3), VideoRecorder(logger, "c", skip=1))
    )
    check_env_specs(env)
    env.transform.dump()
    data = env.rollout(10)
    assert data.shape == (3,)
    env.transform.dump(suffix="final")
    assert _load(tmp_path, "c_final_1.pt").shape[1] == 4
