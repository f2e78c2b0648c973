"""Workers die with their parent, even when stuck in env code, with every start method.

A parent process (a subprocess of the test) builds a ``ParallelEnv`` whose env hangs in
``_step`` (a pure-Python loop, or ``time.sleep``), prints its workers' pids once they are busy,
and is then killed with SIGKILL: no worker may outlive it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.parallel

_PARENT = textwrap.dedent(
    """
    import sys, threading, time
    import torch
    from torchenv.batched import ParallelEnv
    from torchenv.envs import PendulumEnv

    class HangingEnv(PendulumEnv):
        def __init__(self, how="loop"):
            super().__init__()
            self.how = how

        def _step(self, tensordict):
            if self.how == "sleep":
                time.sleep(3600)
            while True:  # pure Python, never returns to the worker loop
                pass

    if __name__ == "__main__":
        method, how, threaded = sys.argv[1], sys.argv[2], sys.argv[3] == "thread"
        env = ParallelEnv(2, HangingEnv, {"how": how}, mp_start_method=method, timeout=3600)

        def run():
            env.reset()
            print("PIDS", *env.worker_pids, flush=True)
            env.rand_step()  # never returns

        if threaded:  # started from a thread that ends: workers must outlive that thread
            t = threading.Thread(target=lambda: (env.reset(), print("PIDS", *env.worker_pids)))
            t.start()
            t.join()
            time.sleep(1.5)  # the watchdog would have struck by now
            alive = [p.is_alive() for p in env._pool.procs]
            print("ALIVE_AFTER_THREAD", all(alive), flush=True)
            env.rand_step()
        else:
            run()
    """
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (zombies count as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pids, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _start_parent(tmp_path, method: str, how: str, threaded: bool = False):
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    proc = subprocess.Popen(
        [sys.executable, str(script), method, how, "thread" if threaded else "main"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    pids: list[int] = []
    lines = []
    deadline = time.monotonic() + 240  # spawn workers import torch each: slow under load
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("PIDS"):
            pids = [int(p) for p in line.split()[1:]]
            break
    if not pids:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the parent printed no worker pids: {''.join(lines)}\n{err}")
    return proc, pids


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "method, how", [("fork", "loop"), ("fork", "sleep"), ("spawn", "loop"), ("forkserver", "sleep")]
)
def test_workers_die_with_a_sigkilled_parent(tmp_path, method, how):
    proc, pids = _start_parent(tmp_path, method, how)
    try:
        time.sleep(0.5)  # the workers are inside the hanging step now (or about to be)
        assert all(_alive(p) for p in pids)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _wait_gone(pids, timeout=60) == [], f"workers outlived their parent ({method})"
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


@pytest.mark.timeout(300)
def test_workers_started_from_a_thread_outlive_the_thread_not_the_parent(tmp_path):
    proc, pids = _start_parent(tmp_path, "fork", "loop", threaded=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "ALIVE_AFTER_THREAD True"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _wait_gone(pids, timeout=60) == []
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
