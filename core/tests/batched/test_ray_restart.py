"""``RayParallelEnv(..., restart_failed=True)``: real faults mid-rollout (issue 31).

As ``test_worker_restart.py`` for ``ParallelEnv``: a sub-env faults once (SIGKILL of its actor
process, an endless loop past the timeout, an exception in ``step``) at a given step of a
``step_and_maybe_reset`` loop; the loop goes on, the faulty sub-env's episode ends truncated
with ``("next", "worker_restarted")`` set, every other sub-env's trajectory is bit for bit that
of a run without the fault, and no actor is left after ``close()``.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
import torch

from torchenv.batched import RayParallelEnv, WorkerError, WorkerRestartedWarning, heartbeat
from torchenv.envs import PendulumEnv
from torchenv.testing import assert_tensordict_equal

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local"), pytest.mark.xdist_group("ray")]

STEPS, FAULT_AT = 6, 3


@pytest.fixture(autouse=True)
def _by_value(ray_local):
    """This module's envs cannot be imported by Ray's workers: ship them by value."""
    ray_local.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Faulty(PendulumEnv):
    """Pendulum that faults once, at its ``at``-th step, while the file ``armed`` exists."""

    def __init__(self, fault: str = "", armed: str = "", at: int = FAULT_AT):
        super().__init__()
        self.fault, self.armed, self.at, self.count = fault, armed, at, 0

    def _step(self, tensordict):
        self.count += 1
        if self.fault and self.count == self.at and os.path.exists(self.armed):
            os.remove(self.armed)  # once: the new actor does not fault again
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.fault == "loop":
                while True:
                    pass
            elif self.fault == "raise":
                raise FloatingPointError("the simulator diverged")
        return super()._step(tensordict)


class LongStep(PendulumEnv):
    """Each step takes ``seconds``, calling ``heartbeat()`` every 0.2 s."""

    def __init__(self, seconds: float = 0.0):
        super().__init__()
        self.seconds = seconds

    def _step(self, tensordict):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            time.sleep(0.2)
            heartbeat()
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


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize("fault", ["kill", "loop", "raise"])
def test_a_fault_mid_rollout_restarts_only_that_actor(tmp_path, fault):
    n, bad = 3, 1
    armed = tmp_path / "armed"
    kwargs = [{"fault": fault, "armed": str(armed)} if i == bad else {} for i in range(n)]
    actions = _actions(n)

    clean = RayParallelEnv(n, Faulty, kwargs, num_cpus=0.5, restart_failed=True)
    expected, _, _ = _run(clean, actions)  # not armed: no fault
    clean.close()

    env = RayParallelEnv(n, Faulty, kwargs, num_cpus=0.5, restart_failed=True)
    env.reset()
    env.timeout = 3.0  # a hang is declared after 3 s without progress
    armed.touch()
    with pytest.warns(WorkerRestartedWarning, match=rf"worker {bad} \(pid \d+\) failed") as record:
        got, last_root, pids = _run(env, actions)
    assert not armed.exists()  # the fault happened
    assert len([w for w in record if issubclass(w.category, WorkerRestartedWarning)]) == 1
    cause = {"kill": "died", "loop": "did not answer", "raise": "FloatingPointError"}[fault]
    assert cause in str(record[0].message)
    keep = [i for i in range(n) if i != bad]
    assert_tensordict_equal(got[keep], expected[keep])  # bit for bit
    t = FAULT_AT - 1
    assert_tensordict_equal(got[bad, :t], expected[bad, :t])
    flags = got["next", "worker_restarted"]
    assert flags[bad, t].all() and not flags[keep].any() and not flags[bad, t + 1 :].any()
    assert got["next", "done"][bad, t].all()  # Pendulum has no "truncated" entry
    assert not got["next", "terminated"][bad, t].any()
    assert got["next", "reward"][bad, t].eq(0).all()
    assert torch.equal(got["observation"][bad, t + 1], got["next", "observation"][bad, t])
    assert not torch.equal(got["observation"][bad, t + 1], expected["observation"][bad, t + 1])
    assert last_root["worker_restarted"].eq(False).all()
    assert len(pids) == n + 1  # one actor replaced
    env.close()
    assert env.actors == []
    assert _gone(pids)


@pytest.mark.timeout(180)
def test_past_max_restarts_the_error_is_raised():
    class AlwaysRaises(PendulumEnv):
        def _step(self, tensordict):
            raise FloatingPointError("diverged again")

    env = RayParallelEnv(
        2, [PendulumEnv, AlwaysRaises], num_cpus=0.5, restart_failed=True, max_restarts=1
    )
    td = env.reset()
    with pytest.warns(WorkerRestartedWarning, match=r"worker 1 .*restart 1 of at most 1"):
        td = env.step_and_maybe_reset(env.rand_action(td))[1]
    with pytest.raises(WorkerError, match=r"(?s)worker 1 .*FloatingPointError.*max_restarts=1"):
        env.step_and_maybe_reset(env.rand_action(td))
    with pytest.raises(RuntimeError, match="can no longer be used"):
        env.step(env.rand_action(td))
    pids = env.worker_pids
    env.close()
    assert _gone(pids)


@pytest.mark.timeout(180)
def test_off_by_default_and_arguments_checked():
    env = RayParallelEnv(2, PendulumEnv, num_cpus=0.5)
    assert "worker_restarted" not in list(env.observation_spec.keys())
    td = env.reset()
    os.kill(env.worker_pids[1], signal.SIGKILL)
    with pytest.raises(WorkerError, match=r"worker 1 \(Ray actor\) died during step"):
        env.step(env.rand_action(td))
    env.close()
    with pytest.raises(ValueError, match="max_restarts must be an int >= 0"):
        RayParallelEnv(2, PendulumEnv, restart_failed=True, max_restarts=-1)
    with pytest.raises(ValueError, match="start_timeout must be a positive number"):
        RayParallelEnv(2, PendulumEnv, start_timeout=0)


@pytest.mark.timeout(180)
def test_a_long_step_with_heartbeats_is_not_a_hang():
    """``timeout`` counts from the last ``heartbeat()`` in the actor, as in ParallelEnv."""
    env = RayParallelEnv(2, LongStep, [{}, {"seconds": 4.0}], num_cpus=0.5)
    td = env.reset()
    env.timeout = 1.5
    out = env.step(env.rand_action(td))
    assert out["next", "observation"].shape[0] == 2
    env.close()
