"""torchenv.transforms.functional: cat_frames and rgb_to_grayscale (values from TorchRL 0.14.1)."""

from __future__ import annotations

import pytest
import torch

from torchenv.transforms.functional import cat_frames, rgb_to_grayscale


def test_cat_frames_pads_the_start_of_the_trajectory():
    frames = torch.arange(8.0).view(4, 2)
    assert cat_frames(frames, N=3, dim=-1, time_dim=-2).tolist() == [
        [0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
        [0.0, 1.0, 0.0, 1.0, 2.0, 3.0],
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        [2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    ]
    out = cat_frames(frames, N=3, dim=-1, time_dim=-2, padding="constant")
    assert out[1].tolist() == [0.0, 0.0, 0.0, 1.0, 2.0, 3.0] and out.dtype == frames.dtype


def test_cat_frames_with_a_done_mask():
    # a trajectory starts at step 3: the mask flags the window slots before it
    x = torch.arange(1.0, 6.0).view(5, 1)
    mask = torch.zeros(5, 1, 3, dtype=torch.bool)
    mask[3, 0, :2] = True
    mask[4, 0, :1] = True
    # slots before the data's start that the mask leaves unflagged hold padding_value
    assert cat_frames(x, 3, -1, time_dim=-2, done_mask=mask).tolist() == [
        [0.0, 0.0, 1.0], [0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [4.0, 4.0, 5.0],
    ]  # fmt: skip
    out = cat_frames(x, 3, -1, time_dim=-2, done_mask=mask, padding="constant", padding_value=-1)
    assert out.tolist() == [
        [-1.0, -1.0, 1.0], [-1.0, 1.0, 2.0], [1.0, 2.0, 3.0], [-1.0, -1.0, 4.0], [-1.0, 4.0, 5.0],
    ]  # fmt: skip
    # the mask may also be given without its singleton dim
    same = cat_frames(x, 3, -1, time_dim=-2, done_mask=mask.squeeze(-2), padding="constant")
    assert torch.equal(same, cat_frames(x, 3, -1, time_dim=-2, done_mask=mask, padding="constant"))


def test_cat_frames_time_last_and_bad_arguments():
    x = torch.arange(6.0).view(2, 3)  # features first, time last
    assert cat_frames(x, 2, -2).tolist() == [
        [0.0, 0.0, 1.0], [3.0, 3.0, 4.0], [0.0, 1.0, 2.0], [3.0, 4.0, 5.0],
    ]  # fmt: skip
    with pytest.raises(ValueError, match="padding"):
        cat_frames(x, 2, -1, padding="zero")
    with pytest.raises(ValueError, match="time_dim"):
        cat_frames(x, 2, -1, time_dim=0)
    with pytest.raises(ValueError, match="dim must be < 0"):
        cat_frames(x, 2, 1)


def test_rgb_to_grayscale():
    img = torch.tensor([[[[10]], [[100]], [[200]]]], dtype=torch.uint8)
    assert rgb_to_grayscale(img).tolist() == [[[[84]]]]
    assert rgb_to_grayscale(img, 3).shape == (1, 3, 1, 1)
    assert rgb_to_grayscale(img).dtype == torch.uint8
    with pytest.raises(TypeError, match="at least 3 dims"):
        rgb_to_grayscale(torch.ones(3, 4))
    with pytest.raises(TypeError, match="3 channels"):
        rgb_to_grayscale(torch.ones(2, 4, 4))
    with pytest.raises(ValueError, match="num_output_channels"):
        rgb_to_grayscale(torch.ones(3, 4, 4), num_output_channels=2)
