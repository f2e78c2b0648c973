"""A dead local Ray (raylet SIGKILLed) is reported at once, not after RayParallelEnv's timeout.

Runs in a subprocess with a Ray of its own: killing the raylet of the session's shared Ray would
break every other Ray test of this test process.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]


def _processes_mentioning(text: str) -> list[int]:
    """Pids of the live processes whose command line contains ``text``."""
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


_SCRIPT = """
import os, signal, sys, threading, time
import ray
import torch
from ray._private import ray_constants, worker
from torchenv.batched import RayParallelEnv, WorkerError
from torchenv.envs.builtin import PendulumEnv


class SlowPendulum(PendulumEnv):
    def __init__(self, seconds=0.0):
        super().__init__()
        self.seconds = seconds

    def _step(self, tensordict):
        time.sleep(self.seconds)
        return super()._step(tensordict)


temp_dir, when = sys.argv[1], sys.argv[2]
ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", _temp_dir=temp_dir,
         log_to_driver=False, configure_logging=False)
seconds = 300.0 if when == "during" else 0.0  # a step that outlasts the test's timeout
env = RayParallelEnv(2, SlowPendulum, {"seconds": seconds}, num_cpus=0.5, timeout=600)
td = env.reset().set("action", torch.zeros(2, 1))
assert env.timeout == 600
pids = env.worker_pids
(raylet,) = worker._global_node.all_processes[ray_constants.PROCESS_TYPE_RAYLET]
if when == "during":  # killed while step() waits
    threading.Timer(3.0, os.kill, (raylet.process.pid, signal.SIGKILL)).start()
else:
    os.kill(raylet.process.pid, signal.SIGKILL)
    raylet.process.wait(60)  # dead (the actors may still answer a while: direct calls)
t0 = time.monotonic()
try:
    if when == "before":
        env.reset()
    else:
        env.step(td)
except WorkerError as err:
    print("error", type(err).__name__, str(err).splitlines()[0])
    print("worker", err.worker_index)
else:
    print("error none")
print("seconds", round(time.monotonic() - t0, 1))
try:
    env.step(td)
except RuntimeError as err:
    print("after", str(err).splitlines()[0])
t0 = time.monotonic()
env.close()
print("close", round(time.monotonic() - t0, 1))
ray.shutdown()
print("shutdown", round(time.monotonic() - t0, 1))
"""


@pytest.mark.slow
@pytest.mark.timeout(240)  # the env's timeout is 600 s: a regression fails here, not hangs
@pytest.mark.parametrize("when", ["before", "during"])
def test_dead_raylet_is_reported_at_once(tmp_path, when):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("RayParallelEnv tests need ray (pip install 'torchenv[ray]')")
    import secrets

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must be short
    script = tmp_path / "raylet_death.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",  # as the session's Ray: nothing written to ~/.ray
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.run(
            [sys.executable, str(script), temp_dir, when],
            capture_output=True,
            text=True,
            env=env,
            timeout=200,
            check=False,
        )
    finally:
        deadline = time.monotonic() + 20
        while _processes_mentioning(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _processes_mentioning(temp_dir)
        for pid in left:  # never leave a Ray behind, even when the test fails
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        shutil.rmtree(temp_dir, ignore_errors=True)
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert "error" in out, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert out["error"].startswith("WorkerError worker 0 (Ray actor"), out["error"]
    assert "the local Ray's raylet (pid" in out["error"]
    assert "died (killed by SIGKILL)" in out["error"]
    assert out["worker"] == "0"
    assert "can no longer be used" in out["after"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert left == [], f"Ray processes left after the test: {left}"
