"""``ParallelEnv(metadata_from_workers=True)``: specs from the workers, no env in the parent."""

from __future__ import annotations

import os

import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv, WorkerError
from torchenv.envs import PendulumEnv

PARENT = os.getpid()


def _make_in_worker_only() -> PendulumEnv:
    if os.getpid() == PARENT:
        raise AssertionError("the env was built in the parent process")
    return PendulumEnv()


def _broken() -> PendulumEnv:
    if os.getpid() != PARENT:
        raise ValueError("no simulator in this worker")
    return PendulumEnv()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_specs_come_from_the_workers_and_data_match_the_usual_env():
    env = ParallelEnv(2, _make_in_worker_only, metadata_from_workers=True)
    reference = ParallelEnv(2, PendulumEnv)
    try:
        assert len(env.worker_pids) == 2  # started at construction
        assert env.observation_spec == reference.observation_spec
        assert env.action_spec == reference.action_spec
        assert env.batch_size == reference.batch_size == torch.Size([2])
        outs = []
        for e in (env, reference):
            e.set_seed(3)
            torch.manual_seed(0)
            outs.append(e.rollout(5))
        assert (outs[0] == outs[1]).all()
        env.close()
        assert env.rollout(2, auto_reset=True).batch_size == torch.Size([2, 2])  # restarts
    finally:
        env.close()
        reference.close()


def test_torchrl_errors_for_what_it_cannot_do():
    with pytest.raises(TypeError, match="only supported by ParallelEnv"):
        SerialEnv(2, PendulumEnv, metadata_from_workers=True)
    with pytest.raises(RuntimeError, match="use_buffers=False"):
        ParallelEnv(2, PendulumEnv, metadata_from_workers=True, use_buffers=True)


def test_a_worker_that_cannot_build_its_env_is_reported_and_nothing_leaks():
    before = set(os.listdir("/proc")) if os.path.isdir("/proc") else None
    with pytest.raises(WorkerError, match="no simulator in this worker"):
        ParallelEnv(2, _broken, metadata_from_workers=True)
    if before is not None:  # no worker process of ours is left running
        children = [
            int(p)
            for p in set(os.listdir("/proc")) - before
            if p.isdigit() and _alive(int(p)) and _parent_of(int(p)) == PARENT
        ]
        assert children == []


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
