"""Hung and dead workers are reported without waiting for a long timeout (issue 37).

A dead worker is found while the parent waits (its process is checked between short waits),
not after the timeout; a busy worker is declared hung ``timeout`` seconds after its last
heartbeat, so a long step that calls :func:`torchenv.batched.heartbeat` is not cut short.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from torchenv.batched import ParallelEnv, WorkerError, _pool, heartbeat
from torchenv.envs import PendulumEnv

pytestmark = pytest.mark.parallel


class SlowEnv(PendulumEnv):
    """Pendulum whose step does ``how`` once ``armed`` (a file exists) in worker ``which``."""

    def __init__(self, how: str = "loop", flag: str = "", beats: int = 0):
        super().__init__()
        self.how, self.flag, self.beats = how, flag, beats

    def _step(self, tensordict):
        if self.flag and os.path.exists(self.flag):
            if self.how == "loop":
                while True:
                    pass
            if self.how == "sleep":
                time.sleep(3600)
            if self.how == "beating":  # long but healthy: 15 x 0.2 s, heartbeat each time
                for _ in range(self.beats):
                    time.sleep(0.2)
                    heartbeat()
        return super()._step(tensordict)


def _gone(pids, bound=30.0) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in "ZX":
                        alive.append(pid)
            except FileNotFoundError:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_default_timeout_is_short_enough_for_a_terminal():
    if "TORCHENV_BATCHED_TIMEOUT" not in os.environ:
        assert _pool._TIMEOUT == 60.0


@pytest.mark.timeout(120)
def test_infinite_loop_is_reported_after_the_timeout(tmp_path):
    flag = tmp_path / "armed"
    kwargs = [{}, {"how": "loop", "flag": str(flag)}]
    env = ParallelEnv(2, SlowEnv, kwargs, timeout=2.0, shutdown_timeout=1.0)
    td = env.reset()
    flag.touch()
    with pytest.raises(WorkerError, match=r"worker 1 .*did not answer step") as info:
        env.step(env.rand_action(td))
    assert info.value.worker_index == 1
    assert "heartbeat" in str(info.value)
    pids = env.worker_pids
    env.close()
    assert _gone(pids)


@pytest.mark.timeout(120)
def test_long_step_with_heartbeats_is_not_killed(tmp_path):
    flag = tmp_path / "armed"
    env = ParallelEnv(2, SlowEnv, {"how": "beating", "flag": str(flag), "beats": 15}, timeout=1.0)
    td = env.reset()
    flag.touch()
    out = env.step(env.rand_action(td))  # 3 s per worker, beating every 0.2 s
    assert out["next", "observation"].shape == (2, 3)
    env.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_death_during_a_long_step_is_found_at_once(tmp_path, sig):
    flag = tmp_path / "armed"
    env = ParallelEnv(2, SlowEnv, {"how": "sleep", "flag": str(flag)}, timeout=3600.0)
    td = env.reset()
    pid = env.worker_pids[0]
    flag.touch()
    threading.Timer(0.5, os.kill, (pid, sig)).start()
    with pytest.raises(WorkerError, match=rf"worker 0 .*died .*{sig.name}") as info:
        env.step(env.rand_action(td))  # well before the hour-long timeout
    assert info.value.signal == sig.name
    pids = env.worker_pids
    env.close()
    assert _gone(pids)


def test_heartbeat_outside_a_worker_is_a_no_op():
    from torchenv.batched import _worker

    heartbeat()
    assert _worker._BEAT == []  # no slot to write in this process
