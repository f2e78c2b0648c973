"""``ParallelEnv(..., restart_failed=True)``: real faults mid-rollout (issue 31).

A sub-env faults once (SIGKILL, SIGSEGV through ctypes, an endless loop past the timeout, an
exception in ``step``) at a given step of a ``step_and_maybe_reset`` loop. The loop goes on,
the faulty sub-env's episode ends as truncated with ``("next", "worker_restarted")`` set and a
new one starts, and every other sub-env's trajectory is bit for bit that of a run without the
fault (same seeds, same actions). Nothing is left behind after ``close()``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

import pytest
import torch

from torchenv.batched import ParallelEnv, WorkerError, WorkerRestartedWarning
from torchenv.envs import PendulumEnv
from torchenv.testing import assert_tensordict_equal

pytestmark = pytest.mark.parallel

STEPS, FAULT_AT = 8, 3


class Faulty(PendulumEnv):
    """Pendulum that faults once, at its ``at``-th step, while the file ``armed`` exists."""

    def __init__(self, fault: str = "", armed: str = "", at: int = FAULT_AT):
        super().__init__()
        self.fault, self.armed, self.at, self.count = fault, armed, at, 0

    def _step(self, tensordict):
        self.count += 1
        if self.fault and self.count == self.at and os.path.exists(self.armed):
            os.remove(self.armed)  # once: the new worker does not fault again
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.fault == "segv":
                ctypes.string_at(0)  # reads address 0: SIGSEGV
            elif self.fault == "loop":
                while True:
                    pass
            elif self.fault == "raise":
                raise FloatingPointError("the simulator diverged")
        return super()._step(tensordict)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _gone(pids, bound: float = 30.0) -> bool:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _run(env, actions):
    """``step_and_maybe_reset`` over ``actions``: the steps' tensordicts and the pids seen."""
    env.set_seed(0)
    td = env.reset()
    steps, pids = [], set(env.worker_pids)
    for action in actions:
        out, td = env.step_and_maybe_reset(td.set("action", action))
        steps.append(out.clone())
        pids.update(env.worker_pids)
    return torch.stack(steps, 1), td, pids


def _actions(n: int):
    g = torch.Generator().manual_seed(1)
    return [torch.rand(n, 1, generator=g) * 4 - 2 for _ in range(STEPS)]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["kill", "segv", "loop", "raise"])
@pytest.mark.parametrize("per_worker", [1, 2])
def test_a_fault_mid_rollout_restarts_only_that_worker(tmp_path, fault, per_worker):
    n, bad = 4, 2
    armed = tmp_path / "armed"
    kwargs = [{"fault": fault, "armed": str(armed)} if i == bad else {} for i in range(n)]
    options = dict(restart_failed=True, timeout=2.0, shutdown_timeout=2.0)
    actions = _actions(n)

    clean = ParallelEnv(n, Faulty, kwargs, envs_per_worker=per_worker, **options)
    expected, _, _ = _run(clean, actions)  # not armed: no fault
    clean.close()

    env = ParallelEnv(n, Faulty, kwargs, envs_per_worker=per_worker, **options)
    armed.touch()
    with pytest.warns(WorkerRestartedWarning, match=rf"worker {bad} \(pid \d+\)") as record:
        got, last_root, pids = _run(env, actions)
    assert not armed.exists()  # the fault happened
    # one restart warning (a killed process may add others, e.g. a RuntimeWarning)
    assert len([w for w in record if issubclass(w.category, WorkerRestartedWarning)]) == 1
    lost = {bad} if per_worker == 1 else {bad, bad + 1}  # the sub-envs of the lost process
    keep = [i for i in range(n) if i not in lost]
    # every other sub-env: the run without the fault, bit for bit
    assert_tensordict_equal(got[keep], expected[keep])
    # the faulty sub-env: identical up to the fault; then truncated, flagged, a new episode
    t = FAULT_AT - 1
    assert_tensordict_equal(got[bad, :t], expected[bad, :t])
    flags = got["next", "worker_restarted"]
    assert flags[bad, t].all() and not flags[keep].any() and not flags[bad, t + 1 :].any()
    assert got["next", "done"][bad, t].all() and not got["next", "terminated"][bad, t].any()
    assert got["next", "reward"][bad, t].eq(0).all()
    # the new episode starts where the truncated step's "next" observation says
    assert torch.equal(got["observation"][bad, t + 1], got["next", "observation"][bad, t])
    assert not torch.equal(got["observation"][bad, t + 1], expected["observation"][bad, t + 1])
    assert last_root["worker_restarted"].eq(False).all()
    assert len(pids) == env.num_processes + 1  # one process replaced
    env.close()
    assert _gone(pids)


@pytest.mark.timeout(120)
def test_past_max_restarts_the_error_is_raised(tmp_path):
    class AlwaysDies(PendulumEnv):
        def _step(self, tensordict):
            os.kill(os.getpid(), signal.SIGKILL)

    env = ParallelEnv(2, [PendulumEnv, AlwaysDies], restart_failed=True, max_restarts=2)
    td = env.reset()
    with pytest.warns(WorkerRestartedWarning):
        for _ in range(2):  # each step loses worker 1, which is restarted
            td = env.step_and_maybe_reset(env.rand_action(td))[1]
    with pytest.raises(WorkerError, match=r"worker 1 .*died.*\n.*max_restarts=2") as info:
        env.step_and_maybe_reset(env.rand_action(td))
    assert info.value.signal == "SIGKILL"
    pids = env.worker_pids
    env.close()
    assert _gone(pids)


@pytest.mark.timeout(120)
def test_off_by_default(tmp_path):
    armed = tmp_path / "armed"
    env = ParallelEnv(2, Faulty, [{}, {"fault": "kill", "armed": str(armed), "at": 1}])
    assert "worker_restarted" not in list(env.observation_spec.keys())
    td = env.reset()
    armed.touch()
    with pytest.raises(WorkerError, match="worker 1 .*SIGKILL"):
        env.step(env.rand_action(td))
    env.close()


@pytest.mark.timeout(120)
def test_a_worker_dead_before_reset_is_restarted_and_reset(tmp_path):
    env = ParallelEnv(3, PendulumEnv, restart_failed=True)
    env.set_seed(0)
    env.reset()
    old = env.worker_pids[0]
    os.kill(old, signal.SIGKILL)
    with pytest.warns(WorkerRestartedWarning, match=rf"worker 0 \(pid {old}\)"):
        td = env.reset()
    assert td["worker_restarted"].eq(False).all()
    assert env.worker_pids[0] != old
    assert env.rollout(3).batch_size == (3, 3)
    env.close()


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="max_restarts must be an int >= 0"):
        ParallelEnv(2, PendulumEnv, restart_failed=True, max_restarts=-1)
