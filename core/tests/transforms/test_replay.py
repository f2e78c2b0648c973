"""Transforms of collected data (replay buffers): NextObservationDelta, MultiStepTransform,
RandomCropTensorDict."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.batched import SerialEnv
from torchenv.envs import PendulumEnv
from torchenv.transforms import (
    Compose,
    MultiStepTransform,
    NextObservationDelta,
    RandomCropTensorDict,
    StepCounter,
    TransformedEnv,
)


def _names(td):
    return sorted(map(str, td.keys(True, True)))


_NEXT = ["('delta', 'observation')", "done", "reward", "terminated", "truncated"]


# ----------------------------------------------------------------------------- NextObservationDelta
def test_next_observation_delta_infers_float_observations_from_the_parent():
    t = NextObservationDelta()
    assert t.in_keys is None  # no env: nothing inferred
    env = TransformedEnv(CountingEnv(max_count=4), t)
    assert env.transform[0].in_keys == ["observation"]
    env = TransformedEnv(CountingEnv(), Compose(StepCounter(), NextObservationDelta()))
    assert env.transform[1].in_keys == ["observation"]  # step_count (int64) is excluded


def test_next_observation_delta_env_side_matches_torchrl():
    # the values are TorchRL 0.14.1's on the same env (tests/transforms/_helpers.CountingEnv)
    env = TransformedEnv(CountingEnv(max_count=4), NextObservationDelta())
    fake = env.fake_tensordict()
    assert _names(fake["next"]) == _NEXT
    assert fake["next", "delta", "observation"].dtype == torch.float16
    td = env.reset()
    td["action"] = torch.full((1,), 0.5, dtype=torch.float64)
    stepped = env.step(td.clone())  # step keeps ("next", "observation"): step_mdp needs it
    assert "observation" in _names(stepped["next"])
    out, next_in = env.step_and_maybe_reset(td.clone())
    assert _names(out["next"]) == _NEXT
    assert _names(next_in) == ["action", "done", "observation", "terminated", "truncated"]
    assert next_in["observation"].tolist() == [2.0, 2.0, 2.0]
    rollout = env.rollout(6)
    assert rollout.shape == (4,) and _names(rollout["next"]) == _NEXT
    assert rollout["next", "delta", "observation"][:, 0].tolist() == [1.0] * 4
    rollout = env.rollout(6, break_when_any_done=False)
    assert rollout.shape == (6,) and _names(rollout["next"]) == _NEXT
    assert rollout["observation"][:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 0.0, 1.0]


def test_next_observation_delta_replay_side_rebuilds_next():
    env = TransformedEnv(CountingEnv(max_count=4), NextObservationDelta())
    rollout = env.rollout(6, break_when_any_done=False)
    out = NextObservationDelta(["observation"])(rollout.clone())
    assert _names(out["next"]) == ["done", "observation", "reward", "terminated", "truncated"]
    assert out["next", "observation"][:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 1.0, 2.0]
    assert out["next", "observation"].dtype == torch.float64
    out = NextObservationDelta(["observation"], drop_delta=False, restore_dtype=torch.float32)(
        rollout.clone()
    )
    assert ("next", "delta", "observation") in out.keys(True)
    assert out["next", "observation"].dtype == torch.float32
    # no env and no in_keys: nothing to rebuild
    assert _names(NextObservationDelta()(rollout.clone())) == _names(rollout)
    env = TransformedEnv(
        CountingEnv(dtype=torch.float32), NextObservationDelta(delta_dtype=torch.bfloat16)
    )
    rollout = env.rollout(3, break_when_any_done=False)
    assert rollout["next", "delta", "observation"].dtype == torch.bfloat16


def test_next_observation_delta_bad_dtypes_and_batched_workers():
    with pytest.raises(ValueError, match="delta_dtype"):
        NextObservationDelta(delta_dtype=torch.int32)
    with pytest.raises(ValueError, match="restore_dtype"):
        NextObservationDelta(restore_dtype=torch.int64)
    with pytest.raises(ValueError, match="'x'"):
        NextObservationDelta(restore_dtype="x")
    with pytest.raises(RuntimeError, match="SerialEnv/ParallelEnv"):
        SerialEnv(2, lambda: TransformedEnv(CountingEnv(), NextObservationDelta()))
    # outside the batched env it works
    env = TransformedEnv(SerialEnv(2, CountingEnv), NextObservationDelta())
    rollout = env.rollout(3, break_when_any_done=False)
    assert rollout["next", "delta", "observation"].shape == (2, 3, 3)
    assert ("next", "observation") not in rollout.keys(True)


# ----------------------------------------------------------------------------- MultiStepTransform
def _batch(start, length=6):
    done = torch.zeros(length, 1, dtype=torch.bool)
    done[2] = True
    return TensorDict(
        {
            "obs": torch.arange(start, start + length, dtype=torch.float32),
            ("next", "obs"): torch.arange(start + 1, start + length + 1, dtype=torch.float32),
            ("next", "reward"): torch.arange(1.0, length + 1).unsqueeze(-1),
            ("next", "done"): done,
        },
        batch_size=[length],
    )


def _flat(td, key):
    value = td[key]
    return (value.squeeze(-1) if value.ndim > 1 else value).tolist()


def test_multi_step_transform_matches_torchrl_across_batches():
    # the numbers are TorchRL 0.14.1's for the same two batches (n_steps=3, gamma=0.5)
    t = MultiStepTransform(3, 0.5)
    out = t.inv(_batch(0))
    assert out.shape == (3,)
    assert _names(out) == [
        "('next', 'done')", "('next', 'obs')", "('next', 'original_reward')",
        "('next', 'reward')", "gamma", "nonterminal", "obs", "steps_to_next_obs",
    ]  # fmt: skip
    assert _flat(out, ("next", "obs")) == [3.0, 3.0, 3.0]
    assert _flat(out, ("next", "reward")) == [2.75, 3.5, 3.0]
    assert _flat(out, ("next", "original_reward")) == [1.0, 2.0, 3.0]
    assert _flat(out, "steps_to_next_obs") == [3, 2, 1]
    assert _flat(out, "gamma") == [0.125, 0.25, 0.5]
    assert _flat(out, "nonterminal") == [True, True, False]
    out = t.inv(_batch(10))  # the 3 steps kept from the first batch come out first
    assert _flat(out, "obs") == [3.0, 4.0, 5.0, 10.0, 11.0, 12.0]
    assert _flat(out, ("next", "obs")) == [6.0, 11.0, 12.0, 13.0, 13.0, 13.0]
    assert _flat(out, ("next", "reward")) == [8.0, 8.25, 7.0, 2.75, 3.5, 3.0]
    assert _flat(out, "steps_to_next_obs") == [3, 3, 3, 3, 2, 1]
    assert _flat(out, ("next", "done")) == [False] * 5 + [True]
    assert MultiStepTransform(3, 0.5).inv(_batch(0, length=3)) is None  # not enough steps yet


def test_multi_step_transform_mask_forward_and_env_use():
    data = _batch(0)
    data["mask"] = torch.tensor([True, False, True, True, True, True])
    out = MultiStepTransform(2, 0.5).inv(data)
    assert _flat(out, "nonterminal") == [True, False, False, True]  # as TorchRL
    assert _names(MultiStepTransform(2, 0.5)(data.clone())) == _names(data)  # forward: identity
    with pytest.raises(ValueError, match="strictly positive"):
        MultiStepTransform(0, 0.5)
    env = TransformedEnv(PendulumEnv(), MultiStepTransform(3, 0.5))
    with pytest.raises(ValueError, match="replay buffers"):
        env.rollout(3)


# ----------------------------------------------------------------------------- RandomCropTensorDict
def test_random_crop_tensordict_draws_torchrl_crops():
    torch.manual_seed(3)
    td = TensorDict(obs=torch.arange(20).view(2, 10), batch_size=[2, 10])
    assert RandomCropTensorDict(4)(td)["obs"].tolist() == [[4, 5, 6, 7], [12, 13, 14, 15]]
    mask = torch.ones(2, 10, dtype=torch.bool)
    mask[0, 5:] = False
    td["mask"] = mask
    for _ in range(10):  # the crop of row 0 stays within its 5 valid steps
        assert RandomCropTensorDict(4, mask_key="mask")(td)["obs"][0, -1] <= 4


def test_random_crop_tensordict_errors():
    with pytest.raises(RuntimeError, match="no batch dims"):
        RandomCropTensorDict(4)(TensorDict(obs=torch.zeros(())))
    with pytest.raises(RuntimeError, match=r"shape \(3,\)"):
        RandomCropTensorDict(4)(TensorDict(obs=torch.zeros(3), batch_size=[3]))
    with pytest.raises(ValueError, match=r"'m' must have the tensordict's shape \(3,\)"):
        RandomCropTensorDict(2, mask_key="m")(
            TensorDict(m=torch.ones(3, 1, dtype=torch.bool), batch_size=[3])
        )
    with pytest.raises(RuntimeError, match="shortest masked trajectory has 2"):
        RandomCropTensorDict(3, mask_key="m")(
            TensorDict(m=torch.tensor([True, True, False, False]), batch_size=[4])
        )
    with pytest.warns(UserWarning, match="positive sample_dim"):
        RandomCropTensorDict(2, sample_dim=1)
