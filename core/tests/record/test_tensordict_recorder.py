"""TensorDictRecorder: step outputs saved, stacked, on dump."""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import CartPoleEnv, check_env_specs
from torchenv.record import TensorDictRecorder
from torchenv.transforms import TransformedEnv


def test_saved_file_loads_with_the_expected_steps(tmp_path):
    base = tmp_path / "out" / "cartpole"
    recorder = TensorDictRecorder(base)  # skip=4, reset outputs not recorded
    env = TransformedEnv(CartPoleEnv(), recorder)
    env.set_seed(0)
    data = env.rollout(12, break_when_any_done=False)
    path = recorder.dump()
    assert path == f"{base}_tensordict.t" and os.path.getsize(path) > 0
    saved = torch.load(path, weights_only=False)
    assert saved.batch_size == (3,)
    assert {"observation", "reward", "done"} <= set(saved.keys())
    torch.testing.assert_close(saved["observation"], data["next", "observation"][3::4])
    torch.testing.assert_close(saved["reward"], data["next", "reward"][3::4])
    assert recorder.td == [] and recorder.dump() is None  # emptied; nothing left to save


def test_reset_outputs_and_in_keys(tmp_path):
    recorder = TensorDictRecorder(tmp_path / "r", skip_reset=False, skip=1, in_keys=["observation"])
    env = TransformedEnv(CartPoleEnv(), recorder)
    data = env.rollout(5, break_when_any_done=False)
    saved = torch.load(recorder.dump(suffix="a"), weights_only=False)
    assert os.path.exists(tmp_path / "r_a_tensordict.t")
    assert saved.batch_size == (6,) and set(saved.keys()) == {"observation"}
    torch.testing.assert_close(saved["observation"][0], data["observation"][0])
    torch.testing.assert_close(saved["observation"][1:], data["next", "observation"])


def test_reset_and_step_outputs_with_different_keys_are_kept(tmp_path):
    recorder = TensorDictRecorder(tmp_path / "all", skip_reset=False, skip=1)
    env = TransformedEnv(CartPoleEnv(), recorder)
    env.rollout(3, break_when_any_done=False)
    saved = torch.load(recorder.dump(), weights_only=False)
    assert saved.batch_size == (4,)
    assert "reward" not in saved[0] and "reward" in saved[1]


def test_memmap_dump(tmp_path):
    recorder = TensorDictRecorder(tmp_path / "mm", skip=2, memmap=True)
    env = TransformedEnv(CartPoleEnv(batch_size=[2]), recorder)
    data = env.rollout(6, break_when_any_done=False)
    path = recorder.dump()
    loaded = TensorDict.load_memmap(path)
    assert loaded.batch_size == (3, 2)
    # the rollout is [batch, time]; the recorder stacks steps first
    expected = data["next", "observation"][:, 1::2].transpose(0, 1)
    torch.testing.assert_close(loaded["observation"], expected)


def test_standalone_and_specs(tmp_path):
    recorder = TensorDictRecorder(tmp_path / "s", skip=1)
    batch = TensorDict(x=torch.arange(3.0))
    assert recorder(batch) is batch
    batch["x"] += 1  # the recorder holds a copy
    saved = torch.load(recorder.dump(), weights_only=False)
    torch.testing.assert_close(saved["x"], torch.arange(3.0).unsqueeze(0))
    check_env_specs(TransformedEnv(CartPoleEnv(), TensorDictRecorder(tmp_path / "c")))
    with pytest.raises(ValueError, match="skip"):
        TensorDictRecorder(tmp_path / "bad", skip=0)
