"""Transforms of collected data (replay buffers): NextObservationDelta."""

from __future__ import annotations

import pytest
import torch
from torchenv_transforms_helpers import CountingEnv

from torchenv.batched import SerialEnv
from torchenv.transforms import Compose, NextObservationDelta, StepCounter, TransformedEnv


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
