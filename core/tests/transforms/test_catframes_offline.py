"""CatFrames on stored trajectories, as TorchRL 0.14.1's ``unfolding``: windows restart at
each trajectory, ("next", key) windows continue the root's frames, ``future=``, ``mask_key=``,
a missing ("next", "done") raises ``KeyError``. Expected windows are written out by hand."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.transforms import CatFrames


def _trajectories(with_done: bool = True) -> TensorDict:
    """Observations 1..5 (next: 11..15); a trajectory ends at step 2 (steps 0-2, then 3-4)."""
    obs = torch.arange(1.0, 6.0).view(5, 1)
    nxt = {"obs": obs + 10}
    if with_done:
        nxt["done"] = torch.tensor([[False], [False], [True], [False], [False]])
    return TensorDict(obs=obs, next=TensorDict(nxt, [5]), batch_size=[5])


def _windows(t: torch.Tensor) -> list:
    return t.tolist()


@pytest.mark.parametrize(
    ("padding", "root", "next_"),
    [
        (
            {},
            [[1, 1, 1], [1, 1, 2], [1, 2, 3], [4, 4, 4], [4, 4, 5]],
            # a next window continues the root's frames: [..., obs_0, next_0, ...]
            [[1, 1, 11], [1, 11, 12], [11, 12, 13], [4, 4, 14], [4, 14, 15]],
        ),
        (
            {"padding": "constant", "padding_value": -1.0},
            [[-1, -1, 1], [-1, 1, 2], [1, 2, 3], [-1, -1, 4], [-1, 4, 5]],
            [[-1, 1, 11], [1, 11, 12], [11, 12, 13], [-1, 4, 14], [4, 14, 15]],
        ),
    ],
)
def test_history_windows_per_trajectory(padding, root, next_):
    t = CatFrames(N=3, dim=-1, in_keys=["obs", ("next", "obs")], **padding)
    out = t(_trajectories())
    assert _windows(out["obs"]) == root
    assert _windows(out["next", "obs"]) == next_


def test_next_windows_match_what_the_env_stacks_online():
    # with real data (next_obs[t] == obs[t + 1]) the offline next window equals the root
    # window of the following step, as the online buffer gives it
    obs = torch.arange(1.0, 6.0).view(5, 1)
    data = TensorDict(
        obs=obs,
        next=TensorDict(obs=obs + 1, done=torch.zeros(5, 1, dtype=torch.bool), batch_size=[5]),
        batch_size=[5],
    )
    out = CatFrames(N=3, dim=-1, in_keys=["obs", ("next", "obs")])(data)
    assert _windows(out["next", "obs"][:-1]) == _windows(out["obs"][1:])


def test_missing_done_raises_key_error_unless_future():
    with pytest.raises(KeyError, match="done"):
        CatFrames(N=3, dim=-1, in_keys=["obs"])(_trajectories(with_done=False))
    out = CatFrames(N=3, dim=-1, in_keys=["obs"], future=True)(_trajectories(with_done=False))
    assert _windows(out["obs"]) == [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 5], [5, 5, 5]]


@pytest.mark.parametrize(
    ("padding", "expected"),
    [
        ({}, [[1, 2, 3], [2, 3, 3], [3, 3, 3], [4, 5, 5], [5, 5, 5]]),
        (
            {"padding": "constant", "padding_value": -1.0},
            [[1, 2, 3], [2, 3, -1], [3, -1, -1], [4, 5, -1], [5, -1, -1]],
        ),
    ],
)
def test_future_windows_stop_at_the_trajectory_end(padding, expected):
    out = CatFrames(N=3, dim=-1, in_keys=["obs"], future=True, **padding)(_trajectories())
    assert _windows(out["obs"]) == expected


def test_mask_flags_the_padded_slots():
    out = CatFrames(N=3, dim=-1, in_keys=["obs"], mask_key="pad")(_trajectories())
    assert out["pad"].tolist() == [
        [True, True, False],
        [True, False, False],
        [False, False, False],
        [True, True, False],
        [True, False, False],
    ]
    future = CatFrames(N=3, dim=-1, in_keys=["obs"], future=True, mask_key="pad")
    assert future(_trajectories())["pad"].tolist() == [
        [False, False, False],
        [False, False, True],
        [False, True, True],
        [False, False, True],
        [False, True, True],
    ]


def test_future_refuses_next_with_its_root_and_the_env_step():
    t = CatFrames(N=2, dim=-1, in_keys=["obs", ("next", "obs")], future=True)
    with pytest.raises(NotImplementedError, match="future=True"):
        t(_trajectories())
    from torchenv.envs import PendulumEnv
    from torchenv.transforms import TransformedEnv

    env = TransformedEnv(
        PendulumEnv(), CatFrames(N=2, dim=-1, in_keys=["observation"], future=True)
    )
    with pytest.raises(RuntimeError, match="offline"):
        env.rollout(2)


def test_time_dim_named_time_need_not_be_last():
    data = _trajectories()
    batched = torch.stack([data, data], 1)  # [time=5, batch=2]
    batched.names = ["time", None]
    out = CatFrames(N=3, dim=-1, in_keys=["obs"])(batched)
    expected = [[1, 1, 1], [1, 1, 2], [1, 2, 3], [4, 4, 4], [4, 4, 5]]
    assert _windows(out["obs"][:, 0]) == expected
    assert _windows(out["obs"][:, 1]) == expected


def test_unbatched_data_is_refused():
    with pytest.raises(ValueError, match="unbatched"):
        CatFrames(N=2, dim=-1, in_keys=["obs"])(TensorDict(obs=torch.zeros(1)))
