"""CatFrames options as TorchRL 0.14.1 (expected frames built by hand from the inputs)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.transforms import CatFrames, TransformedEnv

T = 6
# one row, trajectories [0, 1, 2] and [3, 4, 5] (done at step 2)
DONE = [False, False, True, False, False, False]


def trajectory(with_done: bool = True, time_name: bool = True) -> TensorDict:
    td = TensorDict({"obs": torch.arange(float(T)).unsqueeze(-1)}, [T])
    if with_done:
        td["next", "done"] = torch.tensor(DONE).unsqueeze(-1)
    if time_name:
        td.refine_names("time")
    return td


def windows(N: int, future: bool, pad: float | None):
    """Per step: the N frame indices (or ``pad``) and which slots are padding."""
    traj = {t: (0, 2) if t <= 2 else (3, 5) for t in range(T)}
    out, mask = [], []
    for t in range(T):
        lo, hi = traj[t]
        idx = range(t, t + N) if future else range(t - N + 1, t + 1)
        row, padded = [], []
        for i in idx:
            inside = lo <= i <= hi
            padded.append(not inside)
            if inside:
                row.append(float(i))
            elif pad is not None:
                row.append(pad)
            else:
                row.append(float(hi if future else lo))  # "same": nearest in-trajectory frame
        out.append(row)
        mask.append(padded)
    return out, mask


@pytest.mark.parametrize("N", [1, 2, 4])
@pytest.mark.parametrize("future", [False, True])
@pytest.mark.parametrize("padding", ["same", "constant"])
def test_forward_windows_and_mask(N, future, padding):
    cat = CatFrames(
        N, -1, in_keys=["obs"], out_keys=["win"], padding=padding, padding_value=-1.0,
        future=future, mask_key="is_pad",
    )  # fmt: skip
    out = cat(trajectory())
    expected, mask = windows(N, future, -1.0 if padding == "constant" else None)
    assert out["win"].tolist() == expected
    assert out["is_pad"].tolist() == mask
    assert out["is_pad"].dtype == torch.bool


def test_missing_done_raises_key_error_unless_future():
    with pytest.raises(KeyError, match="'next', 'done'"):
        CatFrames(2, -1, in_keys=["obs"])(trajectory(with_done=False))
    with pytest.raises(KeyError, match="'next', 'trunc'"):
        CatFrames(2, -1, in_keys=["obs"], done_key="trunc")(trajectory())
    # future=True: each row is one trajectory, padded past its end only
    out = CatFrames(2, -1, in_keys=["obs"], out_keys=["w"], future=True)(
        trajectory(with_done=False)
    )
    assert out["w"].tolist() == [[t, min(t + 1, T - 1)] for t in map(float, range(T))]


def test_time_dim_found_by_name():
    # batch [T, 2]: time first, named; the second column holds obs + 10
    obs = torch.stack([torch.arange(float(T)), torch.arange(float(T)) + 10], 1).unsqueeze(-1)
    done = torch.tensor(DONE).unsqueeze(-1).expand(T, 2).unsqueeze(-1)
    td = TensorDict({"obs": obs, ("next", "done"): done}, [T, 2])
    td.refine_names("time", None)
    out = CatFrames(2, -1, in_keys=["obs"], out_keys=["w"])(td)
    expected, _ = windows(2, False, None)
    assert out["w"][:, 0].tolist() == expected
    assert out["w"][:, 1].tolist() == [[v + 10 for v in row] for row in expected]


def test_as_inverse_forward_passes_through():
    td = trajectory()
    out = CatFrames(3, -1, in_keys=["obs"], out_keys=["w"], as_inverse=True)(td)
    assert "w" not in out
    assert out["obs"].shape == (T, 1)
    inv = CatFrames(2, -1, in_keys=["obs"], out_keys=["w"], as_inverse=True).inv(trajectory())
    assert inv["w"].tolist() == windows(2, False, None)[0]
    assert "w" not in CatFrames(2, -1, in_keys=["obs"], out_keys=["w"]).inv(trajectory())
    env = TransformedEnv(
        CountingEnv(obs_dim=1), CatFrames(2, -1, in_keys=["observation"], as_inverse=True)
    )
    with pytest.raises(RuntimeError, match="replay buffers"):
        env.reset()


def test_offline_only_options_refuse_env():
    env = TransformedEnv(
        CountingEnv(obs_dim=1), CatFrames(2, -1, in_keys=["observation"], future=True)
    )
    with pytest.raises(RuntimeError, match="offline"):
        env.observation_spec  # noqa: B018
    env = TransformedEnv(
        CountingEnv(obs_dim=1), CatFrames(2, -1, in_keys=["observation"], mask_key="m")
    )
    with pytest.raises(RuntimeError, match="offline"):
        env.rollout(2)


def test_padding_arguments():
    with pytest.raises(RuntimeError, match="zeros"):
        CatFrames(2, -1, padding="zeros")
    with pytest.raises(ValueError, match="padding"):
        CatFrames(2, -1, padding="edge")


@pytest.mark.parametrize("padding", ["same", "constant"])
def test_rollout_with_resets_mid_rollout(padding):
    # CountingEnv(max_count=3): observations 0, 1, 2, 3 (done) then reset to 0
    env = TransformedEnv(
        CountingEnv(max_count=3, obs_dim=1, dtype=torch.float32),
        CatFrames(3, -1, in_keys=["observation"], padding=padding, padding_value=-1.0),
    )
    data = env.rollout(7, break_when_any_done=False)
    raw_root = [0, 1, 2, 0, 1, 2, 0]
    fill = -1.0 if padding == "constant" else 0.0

    def stack(history):
        frames = [float(v) for v in history[-3:]]
        return [fill] * (3 - len(frames)) + frames

    root, nxt = [], []
    episode: list[int] = []
    for t, obs in enumerate(raw_root):
        if obs == 0:
            episode = []
        episode.append(obs)
        root.append(stack(episode))
        nxt.append(stack([*episode, obs + 1]))
        assert bool(data["next", "done"][t]) == (obs + 1 == 3)
    if padding == "same":  # "same" pads with the episode's first frame: 0 here
        assert root[0] == [0.0, 0.0, 0.0]
    assert data["observation"].tolist() == root
    assert data["next", "observation"].tolist() == nxt


@pytest.mark.parametrize("padding", ["same", "constant"])
def test_next_entry_windows_continue_the_root_window(padding):
    # ("next", "obs")[t] = obs[t] + 1 within each trajectory; its window is obs's window at t
    # shifted by one frame, then ("next", "obs")[t] (what an env rollout holds)
    td = trajectory()
    td["next", "obs"] = td["obs"] + 1
    cat = CatFrames(3, -1, in_keys=["obs", ("next", "obs")], padding=padding, padding_value=-1.0)
    out = cat(td)
    root, _ = windows(3, False, -1.0 if padding == "constant" else None)
    assert out["obs"].tolist() == root
    assert out["next", "obs"].tolist() == [row[1:] + [float(t) + 1] for t, row in enumerate(root)]
    with pytest.raises(NotImplementedError, match="future=True"):
        CatFrames(2, -1, in_keys=["obs", ("next", "obs")], future=True)(
            trajectory().set(("next", "obs"), torch.zeros(T, 1))
        )
