"""Image and shape transforms, frame transforms, normalisation."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.envs import check_env_specs, step_mdp
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv
from torchenv.specs import Bounded, Unbounded
from torchenv.transforms import (
    CatFrames,
    CenterCrop,
    Compose,
    Crop,
    FlattenObservation,
    FrameSkipTransform,
    GrayScale,
    NoopResetEnv,
    ObservationNorm,
    PermuteTransform,
    Resize,
    SqueezeTransform,
    TimeMaxPool,
    ToTensorImage,
    TransformedEnv,
    UnsqueezeTransform,
    VecNorm,
)


# ----------------------------------------------------------------------------- images
def test_to_tensor_image(image_env):
    env = TransformedEnv(image_env(h=6, w=7), ToTensorImage())
    check_env_specs(env)
    td = env.reset()
    assert td["pixels"].shape == torch.Size([3, 6, 7]) and td["pixels"].dtype == torch.float32
    assert td["pixels"].min() >= 0.0 and td["pixels"].max() <= 1.0
    img = torch.arange(24, dtype=torch.uint8).reshape(2, 4, 3)
    out = ToTensorImage()(TensorDict(pixels=img))["pixels"]
    assert torch.allclose(out, img.permute(2, 0, 1).float() / 255)


@pytest.mark.parametrize(
    "transform, shape",
    [
        (Resize(4, 5), (3, 4, 5)),
        (CenterCrop(4), (3, 4, 4)),
        (Crop(3, 2, top=1, left=2), (3, 3, 2)),
        (CenterCrop(9, 5), (3, 9, 5)),  # larger than the 6 rows: zeros around
        (Crop(4, 4, top=-2, left=5), (3, 4, 4)),  # partly outside the image
        (GrayScale(), (1, 6, 7)),
        (FlattenObservation(-3, -1), (3 * 6 * 7,)),
        (PermuteTransform((-2, -1, -3), in_keys=["pixels"]), (6, 7, 3)),
        (UnsqueezeTransform(-4, in_keys=["pixels"]), (1, 3, 6, 7)),
    ],
)
def test_image_transforms_on_env(image_env, transform, shape):
    env = TransformedEnv(image_env(h=6, w=7), Compose(ToTensorImage(), transform))
    check_env_specs(env)
    assert env.observation_spec["pixels"].shape == torch.Size(shape)
    assert env.rollout(2)["next", "pixels"].shape == torch.Size((2, *shape))


def test_image_transforms_standalone_values():
    img = torch.arange(3 * 4 * 4, dtype=torch.float32).reshape(3, 4, 4)
    td = lambda: TensorDict(pixels=img.clone())  # noqa: E731
    assert torch.equal(CenterCrop(2)(td())["pixels"], img[:, 1:3, 1:3])
    # TorchRL's convention: w sizes the rows, h the columns
    assert torch.equal(Crop(2, 1, top=2, left=1)(td())["pixels"], img[:, 2:4, 1:2])
    assert torch.equal(CenterCrop(2, 4)(td())["pixels"], img[:, 1:3, :])
    gray = GrayScale()(td())["pixels"]
    assert torch.allclose(gray[0], 0.2989 * img[0] + 0.587 * img[1] + 0.114 * img[2])
    small = Resize(2, 2, interpolation="nearest")(td())["pixels"]
    assert torch.equal(small, img[:, ::2, ::2])
    with pytest.raises(ValueError, match="negative"):
        FlattenObservation(0, 1)


def test_crops_outside_the_image_pad_with_zeros_as_torchrl():
    # TorchRL calls torchvision's crop / center_crop: zeros where the window leaves the image,
    # a larger center crop centers the image, and an odd cut starts at round-half-even
    img = torch.arange(1, 17, dtype=torch.float32).reshape(1, 4, 4)
    td = lambda: TensorDict(pixels=img.clone())  # noqa: E731
    big = Crop(5)(td())["pixels"][0]
    assert big.shape == (5, 5)
    assert torch.equal(big[:4, :4], img[0]) and not big[4].any() and not big[:, 4].any()
    shifted = Crop(2, 2, top=-1, left=3)(td())["pixels"][0]
    assert shifted.tolist() == [[0.0, 0.0], [4.0, 0.0]]
    assert not Crop(2, top=9, left=9)(td())["pixels"].any()
    centered = CenterCrop(6)(td())["pixels"][0]
    assert torch.equal(centered[1:5, 1:5], img[0]) and centered.sum() == img.sum()
    # rows 4 -> 1: start round(1.5) == 2; columns 4 -> 7: 1 zero before ((7 - 4) // 2), 2 after
    assert CenterCrop(1, 7)(td())["pixels"][0].tolist() == [[0.0, 9.0, 10.0, 11.0, 12.0, 0.0, 0.0]]
    wide = torch.arange(8.0).reshape(1, 1, 8)
    # 8 -> 5 cuts 3: the start is round(1.5) == 2 (torchvision), not 1
    assert CenterCrop(1, 5)(TensorDict(pixels=wide))["pixels"].flatten().tolist() == [2, 3, 4, 5, 6]
    # 8 -> 3 cuts 5: round(2.5) == 2
    assert CenterCrop(1, 3)(TensorDict(pixels=wide))["pixels"].flatten().tolist() == [2, 3, 4]


def test_permute_inverse():
    t = PermuteTransform((-1, -3, -2), in_keys=["x"], in_keys_inv=["a"])
    x = torch.rand(2, 3, 4)
    out = t(TensorDict(x=x))["x"]
    assert torch.equal(out, x.permute(2, 0, 1))
    back = t.inv(TensorDict(a=out))["a"]
    assert torch.equal(back, x)
    with pytest.raises(ValueError, match="permutation"):
        PermuteTransform((0, 1))


def test_unsqueeze_and_squeeze_with_inverse():
    base = CountingEnv()
    env = TransformedEnv(
        base, UnsqueezeTransform(-1, in_keys=["observation"], in_keys_inv=["action"])
    )
    check_env_specs(env)
    assert env.action_spec.shape == torch.Size([1, 1])
    td = env.rand_step()
    assert td["next", "observation"].shape == torch.Size([3, 1])
    assert base.actions[-1].shape == torch.Size([1])
    env = TransformedEnv(
        CountingEnv(), SqueezeTransform(-1, in_keys=["reward"], in_keys_inv=["action"])
    )
    check_env_specs(env)
    assert env.action_spec.shape == torch.Size([])
    assert env.reward_spec.shape == torch.Size([])
    out = SqueezeTransform(-1, in_keys=["x"])(TensorDict(x=torch.zeros(2, 1)))
    assert out["x"].shape == torch.Size([2])
    # TorchRL (and torch.squeeze): a dim that is not of size 1 is left alone, data and spec
    kept = SqueezeTransform(-1, in_keys=["x"])
    assert kept(TensorDict(x=torch.zeros(2, 2)))["x"].shape == torch.Size([2, 2])
    assert kept._forward_spec(Unbounded((3, 2))).shape == torch.Size([3, 2])


# ----------------------------------------------------------------------------- frames
def test_cat_frames_on_env():
    env = TransformedEnv(CountingEnv(obs_dim=1), CatFrames(3, -1, in_keys=["observation"]))
    check_env_specs(env)
    td = env.reset()
    assert td["observation"].tolist() == [0.0, 0.0, 0.0]  # padding "same"
    td = step_mdp(env.rand_step(td))
    td = step_mdp(env.rand_step(td))
    assert td["observation"].tolist() == [0.0, 1.0, 2.0]
    td = step_mdp(env.rand_step(td))
    assert td["observation"].tolist() == [1.0, 2.0, 3.0]
    assert env.reset()["observation"].tolist() == [0.0, 0.0, 0.0]


def test_cat_frames_constant_padding_and_bounded_spec():
    env = TransformedEnv(
        PendulumEnv(),
        CatFrames(2, -1, in_keys=["observation"], padding="constant", padding_value=0),
    )
    check_env_specs(env)
    spec = env.observation_spec["observation"]
    assert isinstance(spec, Bounded) and spec.shape == torch.Size([6])
    td = env.reset()
    assert (td["observation"][:3] == 0).all()


def test_cat_frames_partial_reset():
    env = TransformedEnv(
        CountingEnv(batch_size=[2], obs_dim=1), CatFrames(2, -1, in_keys=["observation"])
    )
    td = env.reset()
    td = step_mdp(env.rand_step(td))
    td = step_mdp(env.rand_step(td))
    assert td["observation"].tolist() == [[1.0, 2.0], [1.0, 2.0]]
    td["_reset"] = torch.tensor([[True], [False]])
    td = env.reset(td)
    assert td["observation"].tolist() == [[0.0, 0.0], [1.0, 2.0]]


def test_cat_frames_standalone_on_trajectories():
    obs = torch.arange(5.0).unsqueeze(-1)
    done = torch.tensor([False, True, False, False, False]).unsqueeze(-1)
    td = TensorDict({"obs": obs, ("next", "done"): done}, [5])
    out = CatFrames(2, -1, in_keys=["obs"], out_keys=["stacked"])(td)
    assert out["stacked"].tolist() == [[0, 0], [0, 1], [2, 2], [2, 3], [3, 4]]
    with pytest.raises(ValueError, match="negative"):
        CatFrames(2, 0)


def test_time_max_pool():
    # observations -0, -1, -2, ...: the max over the last two steps is the previous one
    negate = ObservationNorm(loc=0.0, scale=-1.0, in_keys=["observation"])
    env = TransformedEnv(CountingEnv(obs_dim=1), Compose(negate, TimeMaxPool(["observation"], T=2)))
    check_env_specs(env)
    td = env.rollout(4)
    assert td["next", "observation"].squeeze(-1).tolist() == [0.0, -1.0, -2.0, -3.0]
    check_env_specs(TransformedEnv(PendulumEnv(), TimeMaxPool(["observation"], T=3)))


def test_frame_skip_repeats_the_action():
    base = CountingEnv(obs_dim=1)
    env = TransformedEnv(base, FrameSkipTransform(3))
    check_env_specs(env)
    base.actions.clear()
    td = env.reset().set("action", torch.full((1,), 0.5, dtype=torch.float64))
    out = env.step(td)
    assert len(base.actions) == 3
    assert out["next", "observation"].item() == 3.0
    assert out["next", "reward"].item() == pytest.approx(1.5)
    with pytest.raises(ValueError, match="frame_skip"):
        FrameSkipTransform(0)


def test_noop_reset_env():
    base = CountingEnv(obs_dim=1)
    env = TransformedEnv(base, NoopResetEnv(noops=4, random=False))
    check_env_specs(env)
    td = env.reset()
    assert td["observation"].item() == 4.0
    assert "reward" not in td
    with pytest.raises(ValueError, match="one element"):
        TransformedEnv(CartPoleEnv(batch_size=[2]), NoopResetEnv(2)).reset()


# ----------------------------------------------------------------------------- normalisation
def test_observation_norm_affine_and_inverse():
    env = TransformedEnv(
        CountingEnv(obs_dim=1), ObservationNorm(loc=1.0, scale=2.0, in_keys=["observation"])
    )
    check_env_specs(env)
    td = step_mdp(env.rand_step(env.reset()))
    assert td["observation"].item() == 3.0  # 1 * 2 + 1
    t = ObservationNorm(loc=1.0, scale=2.0, in_keys=["x"], in_keys_inv=["a"], standard_normal=True)
    assert t(TensorDict(x=torch.tensor([5.0])))["x"].item() == 2.0
    assert t.inv(TensorDict(a=torch.tensor([2.0])))["a"].item() == 5.0


def test_observation_norm_init_stats():
    # counting observations 0, 1, ..., 9: known mean and standard deviation
    env = TransformedEnv(
        CountingEnv(obs_dim=2), ObservationNorm(in_keys=["observation"], standard_normal=True)
    )
    with pytest.raises(RuntimeError, match="init_stats"):
        env.reset()
    t = env.transform[0]
    t.init_stats(num_iter=10)
    expected = torch.arange(10.0)
    assert torch.allclose(t.loc, torch.full((2,), expected.mean()))
    assert torch.allclose(t.scale, torch.full((2,), expected.std()))
    check_env_specs(env)
    assert torch.allclose(env.reset()["observation"].float(), -expected.mean() / expected.std())
    with pytest.raises(RuntimeError, match="already"):
        t.init_stats(10)
    with pytest.raises(RuntimeError, match="in an env"):
        ObservationNorm(in_keys=["observation"]).init_stats(10)


def test_observation_norm_init_stats_batched_affine():
    env = TransformedEnv(
        CartPoleEnv(batch_size=[8], seed=0), ObservationNorm(in_keys=["observation"])
    )
    env.transform[0].init_stats(num_iter=20, reduce_dim=(0, 1), cat_dim=1)
    t = env.transform[0]
    assert t.loc.shape == torch.Size([4]) and t.scale.shape == torch.Size([4])
    assert (t.scale > 0).all()
    check_env_specs(env)


def test_observation_norm_bounded_spec():
    env = TransformedEnv(
        PendulumEnv(), ObservationNorm(loc=0.0, scale=2.0, in_keys=["observation"])
    )
    check_env_specs(env)
    spec = env.observation_spec["observation"]
    base = PendulumEnv().observation_spec["observation"]
    assert torch.allclose(spec.space.high, base.space.high * 2)


def test_vec_norm():
    env = TransformedEnv(
        CartPoleEnv(batch_size=[4], seed=0), VecNorm(in_keys=["observation"], decay=1.0)
    )
    check_env_specs(env)
    env.rollout(20, break_when_any_done=False)
    t = env.transform[0]
    assert t.loc["observation"].shape == torch.Size([4])
    frozen = t.frozen_copy()
    before = frozen.loc["observation"].clone()
    env.rollout(5, break_when_any_done=False)
    assert torch.equal(frozen.loc["observation"], before)
    assert not torch.equal(t.loc["observation"], before)
    norm = t.to_observation_norm()
    assert isinstance(norm, ObservationNorm)
    x = torch.rand(4)
    expected = (x - t.loc["observation"]) / t.scale["observation"]
    assert torch.allclose(norm(TensorDict(observation=x))["observation"], expected, atol=1e-5)


def test_vec_norm_standalone_stats():
    t = VecNorm(in_keys=["obs"], decay=1.0)
    out = t(TensorDict(obs=torch.tensor([[1.0], [3.0]]), batch_size=[2]))
    assert t.loc["obs"].tolist() == [2.0] and t.scale["obs"].tolist() == [1.0]
    assert out["obs"].squeeze(-1).tolist() == [-1.0, 1.0]
    t.freeze()
    t(TensorDict(obs=torch.tensor([[100.0]]), batch_size=[1]))
    assert t.loc["obs"].tolist() == [2.0]
