"""``configure_parallel`` on batched envs, and ``use_buffers=True`` with non-tensor entries
(TorchRL accepts both)."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs import EnvBase, PendulumEnv
from torchenv.specs import Bounded, Composite, NonTensor, Unbounded


class Talking(EnvBase):
    """A counter that also says which step it is at, as a string."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded((1,)), text=NonTensor(shape=()))
        self.action_spec = Bounded(-1, 1, (1,))
        self.reward_spec = Unbounded((1,))
        self.count = 0

    def _reset(self, td):
        self.count = 0
        return TensorDict(observation=torch.zeros(1), text="start")

    def _step(self, td):
        self.count += 1
        return TensorDict(
            observation=torch.full((1,), float(self.count)),
            text=f"step{self.count}",
            reward=torch.ones(1),
            done=torch.tensor([False]),
        )

    def _set_seed(self, seed):
        pass


@pytest.mark.parametrize("batched_cls", [SerialEnv, ParallelEnv])
def test_use_buffers_true_with_non_tensor_entries_gives_the_data(batched_cls):
    env = batched_cls(2, Talking, use_buffers=True)
    try:
        data = env.rollout(3)
        assert data["next", "text"] == [["step1", "step2", "step3"]] * 2
        assert data["next", "observation"].squeeze(-1).tolist() == [[1.0, 2.0, 3.0]] * 2
    finally:
        env.close()


@pytest.mark.parametrize("batched_cls", [SerialEnv, ParallelEnv])
def test_configure_parallel_before_start_changes_the_transport(batched_cls):
    env = batched_cls(2, PendulumEnv)
    reference = batched_cls(2, PendulumEnv)
    try:
        assert env.configure_parallel(use_buffers=False, num_sub_threads=1) is env
        assert env._use_buffers is False
        env.set_seed(0)
        reference.set_seed(0)
        actions = [torch.full((2, 1), 0.5)] * 3
        got, expected = env.rollout(3, actions=actions), reference.rollout(3, actions=actions)
        assert torch.equal(got["next", "observation"], expected["next", "observation"])
        with pytest.raises(RuntimeError, match="started"):
            env.configure_parallel(use_buffers=True)
        env.close()
        env.configure_parallel(use_buffers=True)  # closed: allowed again
        assert env._use_buffers is True
        assert env.rollout(2).batch_size == torch.Size([2, 2])
    finally:
        env.close()
        reference.close()


def test_configure_parallel_daemon_and_shutdown_timeout_reach_the_workers():
    env = ParallelEnv(2, PendulumEnv).configure_parallel(daemon=True, shutdown_timeout=2.5)
    try:
        env.reset()
        assert all(proc.daemon for proc in env._pool.procs)
        assert env._pool._state.shutdown_timeout == 2.5
    finally:
        env.close()


def test_configure_parallel_refuses_what_cannot_work_and_keeps_the_old_settings():
    env = ParallelEnv(2, PendulumEnv)
    try:
        with pytest.raises(ValueError, match="shared_memory"):
            env.configure_parallel(shared_memory=False)
        assert env.shared_memory is True and env._use_buffers is True
    finally:
        env.close()


def test_workers_started_for_their_metadata_take_the_process_options_too():
    env = ParallelEnv(2, PendulumEnv, metadata_from_workers=True, daemon=True, shutdown_timeout=1.5)
    try:
        assert all(proc.daemon for proc in env._pool.procs)
        assert env._pool._state.shutdown_timeout == 1.5
    finally:
        env.close()
