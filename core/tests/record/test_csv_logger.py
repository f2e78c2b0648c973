"""CSVLogger: scalars, texts and video files, read back."""

from __future__ import annotations

import csv
import os
import sys

import pytest
import torch
from tensordict import MemoryMappedTensor, TensorDict

from torchenv.record import CSVLogger, Logger, generate_exp_name, get_logger
from torchenv.record.loggers import CSVExperiment


def _read_csv(path):
    with open(path, newline="") as f:
        return [(int(step), float(value)) for step, value in csv.reader(f)]


def _video(frames: int = 5, height: int = 12, width: int = 16, channels: int = 3) -> torch.Tensor:
    """A [1, T, C, H, W] uint8 video whose frame t is uniformly 20 * t grey."""
    levels = (torch.arange(frames) * 20).to(torch.uint8)
    return levels.view(1, frames, 1, 1, 1).expand(1, frames, channels, height, width).clone()


def test_scalars_round_trip(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    values = [0.5, -1.25, 3.0]
    for step, value in zip((10, 20, 30), values):
        logger.log_scalar("reward", value, step=step)
    logger.log_scalar("train/loss", torch.tensor(2.5))
    logger.log_scalar("train/loss", 1.5)
    assert _read_csv(tmp_path / "exp" / "scalars" / "reward.csv") == [
        (10, 0.5),
        (20, -1.25),
        (30, 3.0),
    ]
    # no step: the index of the value for that name; nested names are folders
    assert _read_csv(tmp_path / "exp" / "scalars" / "train" / "loss.csv") == [(0, 2.5), (1, 1.5)]
    assert logger.experiment.scalars["reward"] == [(10, 0.5), (20, -1.25), (30, 3.0)]


def test_scalars_append_across_loggers(tmp_path):
    CSVLogger("exp", log_dir=tmp_path).log_scalar("r", 1.0, step=0)
    second = CSVLogger("exp", log_dir=tmp_path)
    second.log_scalar("r", 2.0, step=1)
    second.close()
    assert _read_csv(tmp_path / "exp" / "scalars" / "r.csv") == [(0, 1.0), (1, 2.0)]


def test_log_metrics_flattens_tensordicts(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    metrics = TensorDict({"loss": torch.tensor(0.25), "stats": {"mean": torch.tensor(4.0)}})
    out = logger.log_metrics(metrics, step=7)
    assert out == {"loss": 0.25, "stats/mean": 4.0}
    assert _read_csv(tmp_path / "exp" / "scalars" / "stats" / "mean.csv") == [(7, 4.0)]


def test_log_hparams(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path)
    logger.log_hparams({"lr": 0.001, "batch": 32})
    text = (tmp_path / "exp" / "texts" / "hparams0.txt").read_text()
    assert text.splitlines() == ["batch: 32", "lr: 0.001"]


def test_repr_and_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logger = CSVLogger("exp")
    assert logger.log_dir == "csv_logs" and os.path.isdir(tmp_path / "csv_logs" / "exp" / "videos")
    assert repr(logger).startswith("CSVLogger(exp_name=exp")
    assert isinstance(logger, Logger) and isinstance(logger.experiment, CSVExperiment)
    with pytest.raises(NotImplementedError, match="histogram"):
        logger.log_histogram("h", [1, 2])


def test_unknown_video_format(tmp_path):
    with pytest.raises(ValueError, match="'webp'.*expected one of"):
        CSVLogger("exp", log_dir=tmp_path, video_format="webp")


def test_log_video_checks_shape_and_dtype(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="gif")
    with pytest.raises(ValueError, match=r"'v'.*\[N, T, C, H, W\].*\(5, 3, 12, 16\)"):
        logger.log_video("v", _video()[0])
    with pytest.raises(ValueError, match="uint8.*float32"):
        logger.log_video("v", _video().float())


def test_video_pt_round_trip(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="pt")
    video = _video()
    logger.log_video("run", video)
    logger.log_video("run", video[:, :2])
    videos = tmp_path / "exp" / "videos"
    assert sorted(os.listdir(videos)) == ["run_0.pt", "run_1.pt"]
    torch.testing.assert_close(torch.load(videos / "run_0.pt"), video)
    assert torch.load(videos / "run_1.pt").shape == (1, 2, 3, 12, 16)


def test_video_memmap_round_trip(tmp_path):
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="memmap")
    video = _video()
    logger.log_video("run", video, step=3)
    path = tmp_path / "exp" / "videos" / "run_3.memmap"
    loaded = MemoryMappedTensor.from_filename(str(path), dtype=torch.uint8, shape=video.shape)
    torch.testing.assert_close(loaded.clone(), video)


@pytest.mark.parametrize("fmt", ["mp4", "gif", "mkv", "mov", "avi"])
def test_encoded_video_decodes(tmp_path, imageio_v3, fmt):
    if fmt != "gif":
        pytest.importorskip("imageio_ffmpeg")
    logger = CSVLogger("exp", log_dir=tmp_path, video_format=fmt, video_fps=10)
    logger.log_video("run", _video(frames=6), step=2)
    path = tmp_path / "exp" / "videos" / f"run_2.{fmt}"
    assert path.stat().st_size > 0
    frames = imageio_v3.imread(path)
    assert frames.shape == (6, 12, 16, 3)
    # uniform grey frames survive encoding within a small error
    means = torch.as_tensor(frames).float().mean(dim=(1, 2, 3))
    torch.testing.assert_close(means, torch.arange(6.0) * 20, atol=4.0, rtol=0)


def test_mp4_odd_size_is_padded_and_fps_is_kept(tmp_path, imageio_v3):
    pytest.importorskip("imageio_ffmpeg")
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="mp4", video_fps=12)
    logger.log_video("odd", _video(frames=4, height=11, width=15, channels=1))
    path = tmp_path / "exp" / "videos" / "odd_0.mp4"
    assert imageio_v3.imread(path).shape == (4, 12, 16, 3)
    assert imageio_v3.immeta(path)["fps"] == pytest.approx(12)
    # fps passed to log_video overrides the logger's; TorchRL's codec options are understood
    logger.log_video("odd", _video(frames=4), fps=5, video_codec="libx264", options={"crf": "30"})
    assert imageio_v3.immeta(tmp_path / "exp" / "videos" / "odd_1.mp4")["fps"] == pytest.approx(5)


def test_missing_imageio_names_the_extra(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "imageio" or m.startswith("imageio.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "imageio", None)
    logger = CSVLogger("exp", log_dir=tmp_path, video_format="gif")
    with pytest.raises(ImportError, match=r"torchenv\[video\]"):
        logger.log_video("run", _video())


def test_get_logger_and_exp_name(tmp_path):
    logger = get_logger("csv", str(tmp_path), "exp", video_fps=24)
    assert isinstance(logger, CSVLogger)
    assert (logger.video_format, logger.video_fps) == ("mp4", 24)
    assert get_logger(None, str(tmp_path), "exp") is None
    assert get_logger("", str(tmp_path), "exp") is None
    with pytest.raises(NotImplementedError, match="'wandb'"):
        get_logger("wandb", str(tmp_path), "exp")
    name = generate_exp_name("ppo", "cartpole")
    model, exp, uid, stamp = name.split("_", 3)
    assert (model, exp, len(uid)) == ("ppo", "cartpole", 8)
    assert name != generate_exp_name("ppo", "cartpole")
