"""Interrupts and threads (issue 20): Ctrl-C during start, close() from another thread, a worker
killed while idle, a hung worker and the ``timeout=`` argument. Checked against the OS."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import EnvClosedError, ParallelEnv, SerialEnv, WorkerError
from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Composite, Unbounded

pytestmark = pytest.mark.parallel


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


class SlowEnv(EnvBase):
    """Each step sleeps ``pause`` seconds (a simulator that takes its time, or hangs)."""

    def __init__(self, pause: float = 0.0):
        super().__init__()
        self.pause = pause
        self.observation_spec = Composite(observation=Unbounded((1,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict(observation=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        time.sleep(self.pause)
        return TensorDict(
            observation=torch.ones(1), reward=torch.zeros(1), done=torch.zeros(1, dtype=torch.bool)
        )

    def _set_seed(self, seed):
        pass


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import gc, os, random, signal, sys, threading, time
    from torchenv.batched import ParallelEnv
    from torchenv.envs import PendulumEnv

    def children():
        me, out = str(os.getpid()), []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] not in "ZX":
                out.append(int(pid))
        return out

    def fds():
        return len(os.listdir("/proc/self/fd"))

    rng = random.Random(0)
    env = ParallelEnv(2, PendulumEnv); env.reset(); env.close(); env = None; gc.collect()
    fd0, interrupted = fds(), 0
    for i in range(30):
        timer = threading.Timer(rng.uniform(0, 0.3), os.kill, (os.getpid(), signal.SIGINT))
        try:
            timer.start()
            env = ParallelEnv(2, PendulumEnv)
            env.reset()
            env.close()
            timer.join()
        except KeyboardInterrupt:
            interrupted += 1
        while True:
            try:
                timer.cancel(); timer.join(); break
            except KeyboardInterrupt:
                interrupted += 1
        env = None
        gc.collect()
    deadline = time.time() + 20
    while time.time() < deadline and (children() or fds() != fd0):
        time.sleep(0.1); gc.collect()
    print(interrupted, children(), fds() - fd0, sep="|")
    """
)


def test_ctrl_c_at_any_point_of_start_leaves_nothing_behind():
    out = subprocess.run(
        [sys.executable, "-c", CTRL_C_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    interrupted, children, fds = out.stdout.strip().splitlines()[-1].split("|")
    assert int(interrupted) >= 20  # the interrupts did land (most runs are cut short)
    assert children == "[]", out.stdout
    assert fds == "0", out.stdout


@pytest.mark.parametrize("kind", [SerialEnv, ParallelEnv], ids=lambda c: c.__name__)
def test_close_from_another_thread_during_a_rollout_says_env_closed(kind):
    env = kind(2, SlowEnv, create_env_kwargs={"pause": 0.01})
    stepped = threading.Event()
    outcome = []

    def roll():
        try:
            env.rollout(2000, callback=lambda *_: stepped.set(), break_when_any_done=False)
            outcome.append("finished")
        except Exception as err:
            outcome.append(err)

    thread = threading.Thread(target=roll)
    thread.start()
    assert stepped.wait(60)
    env.close()
    thread.join(60)
    assert not thread.is_alive()
    (err,) = outcome
    assert isinstance(err, EnvClosedError), repr(err)
    assert "closed" in str(err) and "reset()" in str(err)
    # reset starts new sub-environments; stepping works again
    td = env.reset()
    env.step(td.set("action", torch.zeros(2, 1)))
    env.close()


def test_step_after_close_is_refused_reset_restarts():
    env = ParallelEnv(2, SlowEnv)
    td = env.reset().set("action", torch.zeros(2, 1))
    env.close()
    with pytest.raises(EnvClosedError, match="call reset"):
        env.step(td)
    with pytest.raises(EnvClosedError, match="call reset"):
        env.step_and_maybe_reset(td)
    assert env.reset().batch_size == (2,)
    env.close()


@pytest.mark.parametrize("op", ["reset", "step", "step_and_maybe_reset", "set_seed"])
def test_worker_killed_while_idle_is_a_worker_error_with_index_pid_and_signal(op):
    env = ParallelEnv(2, SlowEnv)
    td = env.reset().set("action", torch.zeros(2, 1))
    pid = env.worker_pids[1]
    os.kill(pid, signal.SIGKILL)
    while _alive(pid):  # until the kernel has made it a zombie: idle and dead for sure
        time.sleep(0.01)
    call = {
        "reset": lambda: env.reset(),
        "step": lambda: env.step(td),
        "step_and_maybe_reset": lambda: env.step_and_maybe_reset(td),
        "set_seed": lambda: env.set_seed(0),
    }[op]
    with pytest.raises(
        WorkerError, match=rf"worker 1 \(pid {pid}\) died \(killed by SIGKILL\)"
    ) as info:
        call()
    assert (info.value.worker_index, info.value.pid, info.value.signal) == (1, pid, "SIGKILL")
    env.close()


def test_timeout_argument_bounds_a_hung_worker():
    env = ParallelEnv(2, SlowEnv, create_env_kwargs=[{}, {"pause": 600.0}], timeout=0.5)
    assert env.timeout == 0.5
    td = env.reset().set("action", torch.zeros(2, 1))
    with pytest.raises(
        WorkerError, match=r"worker 1 \(pid \d+\) did not answer step within 0.5 s"
    ) as info:
        env.step(td)
    assert info.value.worker_index == 1 and info.value.pid == env.worker_pids[1]
    pids = env.worker_pids
    env.close()
    assert not [p for p in pids if _alive(p)]


@pytest.mark.parametrize("bad", [0, -1.0, "10", True])
def test_timeout_argument_is_checked(bad):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        ParallelEnv(2, SlowEnv, timeout=bad)
