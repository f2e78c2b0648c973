"""Worker errors, dead workers, close and garbage collection: checked against the OS."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv, WorkerError

pytestmark = pytest.mark.parallel


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pids, timeout=5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _open_shm_fds() -> int:
    """File descriptors of this process that point at shared-memory segments."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/shm/") or "torch_" in target:
            n += 1
    return n


def test_exception_in_worker_names_index_and_traceback(noise_env_cls):
    env = ParallelEnv(2, noise_env_cls, create_env_kwargs=[{}, {"fail_at": 2}])
    td = env.reset()
    td.set("action", torch.zeros(2, 1))
    _, td = env.step_and_maybe_reset(td)
    with pytest.raises(WorkerError, match="worker 1") as info:
        env.step_and_maybe_reset(td.set("action", torch.zeros(2, 1)))
    assert info.value.worker_index == 1
    assert "deliberate failure at step 2" in str(info.value)
    assert "_step" in info.value.worker_traceback  # the worker's own frames
    assert "Traceback" in str(info.value)
    # the env still works after an error (the failing step is past)
    env.step(td.set("action", torch.zeros(2, 1)))
    pids = env.worker_pids
    env.close()
    assert _wait_gone(pids) == []


def test_exception_in_worker_reset_and_construction(noise_env_cls):
    def broken():
        raise RuntimeError("cannot build this env")

    env = ParallelEnv(2, noise_env_cls)
    with pytest.raises(WorkerError, match="worker 0"):
        env.reset(list_of_kwargs=[{"scale": "not a number"}, {}])
    env.close()
    env = ParallelEnv(2, noise_env_cls)
    env.__dict__["create_env_fn"] = [noise_env_cls, broken]  # the workers' factory fails
    with pytest.raises(WorkerError, match="worker 1.*cannot build this env"):
        env.reset()
    env.close()


def test_sigkill_surfaces_as_error_not_hang(noise_env_cls):
    env = ParallelEnv(2, noise_env_cls)
    td = env.reset()
    pid = env.worker_pids[1]
    os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="worker 1.*died.*SIGKILL"):
        env.step(td.set("action", torch.zeros(2, 1)))
    assert time.monotonic() - start < 30  # bounded (one wait slice in practice)
    with pytest.raises(RuntimeError, match="no longer be used"):
        env.reset()
    pids = env.worker_pids
    env.close()
    env.close(raise_if_closed=False)  # closing again after a failure is harmless
    assert _wait_gone(pids) == []


def test_worker_dying_inside_step(noise_env_cls):
    env = ParallelEnv(2, noise_env_cls, create_env_kwargs=[{"die_at": 1}, {}])
    td = env.reset()
    with pytest.raises(WorkerError, match="worker 0.*died"):
        env.step_and_maybe_reset(td.set("action", torch.zeros(2, 1)))
    pids = env.worker_pids
    env.close()
    assert _wait_gone(pids) == []


def test_close_is_idempotent_and_leaves_nothing(noise_env_cls):
    shm_before = _shm_entries()
    fds_before = _open_shm_fds()
    env = ParallelEnv(3, noise_env_cls)
    env.reset()
    pids = env.worker_pids
    assert len(pids) == 3 and all(_alive(p) for p in pids)
    env.close()
    assert env.is_closed
    assert _wait_gone(pids) == []
    env.close()  # idempotent
    with pytest.raises(RuntimeError, match="already closed"):
        env.close(raise_if_closed=True)
    gc.collect()
    assert _shm_entries() - shm_before == set()
    assert _open_shm_fds() <= fds_before


def test_garbage_collection_without_close(noise_env_cls):
    shm_before = _shm_entries()
    env = ParallelEnv(2, noise_env_cls)
    env.reset()
    pids = env.worker_pids
    del env
    gc.collect()
    assert _wait_gone(pids) == []
    assert _shm_entries() - shm_before == set()


def test_reuse_after_close_restarts_workers(noise_env_cls):
    env = ParallelEnv(2, noise_env_cls)
    env.reset()
    first = env.worker_pids
    env.close()
    assert env.reset().batch_size == torch.Size([2])
    assert set(env.worker_pids).isdisjoint(first)
    env.close()


@pytest.mark.slow
def test_spawn_start_method(noise_env_cls):
    env = ParallelEnv(1, noise_env_cls, mp_start_method="spawn")
    td = env.reset()
    assert td.batch_size == torch.Size([1])
    pids = env.worker_pids
    env.close()
    assert _wait_gone(pids) == []


def test_serial_close_closes_sub_envs(noise_env_cls):
    env = SerialEnv(2, noise_env_cls)
    subs = env.envs
    env.close()
    assert all(e.is_closed for e in subs)


def test_interpreter_exit_without_close_leaves_no_worker(tmp_path):
    script = tmp_path / "leak.py"
    script.write_text(
        "import torch\n"
        "from torchenv.batched import ParallelEnv\n"
        "from torchenv.envs.builtin import PendulumEnv\n"
        "env = ParallelEnv(2, PendulumEnv)\n"
        "env.reset()\n"
        "print(*env.worker_pids)\n"
        "GLOBAL = env  # still referenced at exit, never closed\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2
    assert _wait_gone(pids) == []


def test_memmap_buffers(noise_env_cls, tmp_path):
    env = ParallelEnv(2, noise_env_cls, memmap=True)
    td = env.reset()
    td.set("action", torch.zeros(2, 1))
    assert env.step(td)["next", "count"].squeeze(-1).tolist() == [1, 1]
    assert not [f for f in os.listdir(tempfile.gettempdir()) if f.startswith("torchenv-batched-")]
    env.close()


@pytest.mark.slow
def test_forkserver_workers_survive_idle_periods():
    from torchenv.envs.builtin import PendulumEnv

    env = ParallelEnv(2, PendulumEnv, mp_start_method="forkserver")
    env.reset()
    time.sleep(1.5)  # longer than a worker's orphan check: its parent is the fork server
    assert env.rollout(3).batch_size == torch.Size([2, 3])
    pids = env.worker_pids
    env.close()
    assert _wait_gone(pids) == []
