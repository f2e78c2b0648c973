"""``AsyncEnvPool(..., restart_failed=True)``: real faults mid-rollout (issue 31).

A sub-env faults once (SIGKILL, SIGSEGV through ctypes, an endless loop past the timeout, an
exception in ``step``) at its third step of an asynchronous ``step_and_maybe_reset`` loop that
receives the first 2 of 4 sub-envs to finish. The loop goes on; the faulty sub-env's episode
ends as truncated with ``("next", "worker_restarted")`` set and a new one starts; every other
sub-env's trajectory (its rows, keyed by ``"env_index"``) is bit for bit that of a run without
the fault (same seeds, same per-sub-env actions). Nothing is left behind after ``close()``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

import pytest
import torch

from torchenv.batched import AsyncEnvPool, WorkerError, WorkerRestartedWarning
from torchenv.envs import PendulumEnv
from torchenv.testing import assert_tensordict_equal

pytestmark = pytest.mark.parallel

N, BAD, STEPS, FAULT_AT = 4, 2, 8, 3


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


def _actions():
    """``[sub-env][step]``: each sub-env's actions, whatever order the sub-envs finish in."""
    g = torch.Generator().manual_seed(1)
    return torch.rand(N, STEPS, 1, generator=g) * 4 - 2


def _async_run(pool, actions):
    """Asynchronous ``step_and_maybe_reset`` loop, ``recv_size`` at a time, until every sub-env
    made ``STEPS`` steps: per sub-env, its steps' rows stacked (``[N, STEPS]``), the last root,
    and the pids seen."""
    pool.set_seed(0)
    root = pool.reset()
    rows: dict[int, list] = {i: [] for i in range(N)}
    pids = set(pool.worker_pids) if pool.backend == "multiprocessing" else set()
    pool.async_step_and_maybe_reset_send(root.set("action", actions[:, 0]))
    last = {}
    while pool.busy:
        out, nxt = pool.async_step_and_maybe_reset_recv()
        ids = out["env_index"].tolist()
        again = []
        for row, i in enumerate(ids):
            rows[i].append(out[row].exclude("env_index").clone())
            if len(rows[i]) < STEPS:
                again.append(row)
            else:
                last[i] = nxt[row].clone()
        if again:
            nxt = nxt[again]
            steps = [len(rows[i]) for i in nxt["env_index"].tolist()]
            nxt.set("action", actions[nxt["env_index"], torch.tensor(steps)])
            pool.async_step_and_maybe_reset_send(nxt)
        if pids:
            pids.update(pool.worker_pids)
    return torch.stack([torch.stack(rows[i]) for i in range(N)]), last, pids


def _check_trajectories(got, expected, last):
    keep = [i for i in range(N) if i != BAD]
    # every other sub-env: the run without the fault, bit for bit
    assert_tensordict_equal(got[keep], expected[keep])
    # the faulty sub-env: identical up to the fault; then truncated, flagged, a new episode
    t = FAULT_AT - 1
    assert_tensordict_equal(got[BAD, :t], expected[BAD, :t])
    flags = got["next", "worker_restarted"]
    assert flags[BAD, t].all() and not flags[keep].any() and not flags[BAD, t + 1 :].any()
    assert got["next", "done"][BAD, t].all()  # (Pendulum has no "truncated" entry)
    assert not got["next", "terminated"][BAD, t].any()
    assert got["next", "reward"][BAD, t].eq(0).all()
    # the new episode starts where the truncated step's "next" observation says
    assert torch.equal(got["observation"][BAD, t + 1], got["next", "observation"][BAD, t])
    assert not torch.equal(got["observation"][BAD, t + 1], expected["observation"][BAD, t + 1])
    assert not any(last[i]["worker_restarted"].any() for i in range(N))


def _pool(backend, tmp_path, fault, **options):
    armed = tmp_path / "armed"
    kwargs = [{"fault": fault, "armed": str(armed)} if i == BAD else {} for i in range(N)]
    options = dict(restart_failed=True, recv_size=2, timeout=2.0, shutdown_timeout=2.0) | options
    return AsyncEnvPool([Faulty] * N, backend=backend, create_env_kwargs=kwargs, **options), armed


@pytest.mark.timeout(180)
@pytest.mark.parametrize("fault", ["kill", "segv", "loop", "raise"])
def test_processes_a_fault_mid_rollout_restarts_only_that_worker(tmp_path, fault):
    actions = _actions()
    clean, _ = _pool("multiprocessing", tmp_path, fault)
    expected, _, _ = _async_run(clean, actions)  # not armed: no fault
    clean.close()

    pool, armed = _pool("multiprocessing", tmp_path, fault)
    armed.touch()
    with pytest.warns(WorkerRestartedWarning, match=rf"worker {BAD} \(pid \d+\)") as record:
        got, last, pids = _async_run(pool, actions)
    assert not armed.exists()  # the fault happened
    restarts = [w for w in record if issubclass(w.category, WorkerRestartedWarning)]
    assert len(restarts) == 1
    cause = {"kill": "SIGKILL", "segv": "SIGSEGV", "loop": "did not answer", "raise": "diverged"}
    assert cause[fault] in str(restarts[0].message)
    _check_trajectories(got, expected, last)
    assert len(pids) == N + 1  # one process replaced
    pool.close()
    assert _gone(pids)


@pytest.mark.timeout(120)
def test_threads_an_exception_mid_rollout_restarts_that_sub_env(tmp_path):
    actions = _actions()
    clean, _ = _pool("threading", tmp_path, "raise")
    expected, _, _ = _async_run(clean, actions)
    clean.close()

    pool, armed = _pool("threading", tmp_path, "raise")
    old_env = pool.envs[BAD]
    armed.touch()
    with pytest.warns(WorkerRestartedWarning, match=rf"worker {BAD} failed: .*diverged"):
        got, last, _ = _async_run(pool, actions)
    assert not armed.exists()
    assert pool.envs[BAD] is not old_env  # built again by the factory
    _check_trajectories(got, expected, last)
    pool.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("torchenv-async-")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("backend", ["threading", "multiprocessing"])
def test_synchronous_steps_restart_too(tmp_path, backend):
    """The pool's ``step_and_maybe_reset`` (the synchronous API) restarts as ParallelEnv."""
    pool, armed = _pool(backend, tmp_path, "raise")
    pool.set_seed(0)
    td = pool.reset()
    assert not td["worker_restarted"].any()
    armed.touch()
    flags = []
    with pytest.warns(WorkerRestartedWarning, match=rf"worker {BAD}"):
        for _ in range(FAULT_AT + 1):
            out, td = pool.step_and_maybe_reset(pool.rand_action(td))
            flags.append(out["next", "worker_restarted"].flatten().tolist())
    assert not armed.exists()
    expected = [[False] * N for _ in range(FAULT_AT + 1)]
    expected[FAULT_AT - 1][BAD] = True
    assert flags == expected
    assert out["next", "done"].shape == out["next", "worker_restarted"].shape
    pool.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("backend", "fault", "match"),
    [
        ("multiprocessing", "kill", r"worker 1 .*died.*SIGKILL.*\n.*max_restarts=1"),
        ("threading", "raise", r"(?s)worker 1 raised FloatingPointError.*sub-env 1 .*restarts=1"),
    ],
)
def test_past_max_restarts_the_error_is_raised(backend, fault, match):
    class AlwaysFails(PendulumEnv):
        def _step(self, tensordict):
            if fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise FloatingPointError("the simulator diverged")

    pool = AsyncEnvPool(
        [PendulumEnv, AlwaysFails], backend=backend, restart_failed=True, max_restarts=1
    )
    root = pool.reset()
    with pytest.warns(WorkerRestartedWarning, match=r"restart 1 of at most 1"):
        pool.async_step_send(pool.rand_action(root))
        out = pool.async_step_recv(min_get=2)  # sub-env 1 restarted once
    assert out["next", "worker_restarted"].flatten().tolist() == [False, True]
    pool.async_step_send(pool.rand_action(root))
    with pytest.raises(WorkerError, match=match):
        pool.async_step_recv(min_get=2)
    pids = pool.worker_pids if backend == "multiprocessing" else []
    pool.close()
    assert _gone(pids)


@pytest.mark.timeout(120)
def test_a_worker_killed_while_idle_is_restarted_at_its_next_command():
    pool = AsyncEnvPool([PendulumEnv] * 3, backend="multiprocessing", restart_failed=True)
    pool.set_seed(0)
    root = pool.reset()
    old = pool.worker_pids[1]
    os.kill(old, signal.SIGKILL)
    _gone([old])
    # a reset: the new worker's reset is the answer (no flag: nothing was cut short)
    with pytest.warns(WorkerRestartedWarning, match=rf"worker 1 \(pid {old}\)"):
        pool.async_reset_send(env_index=[0, 1])
        again = pool.async_reset_recv(min_get=2)
    assert again["env_index"].tolist() == [0, 1] and not again["worker_restarted"].any()
    assert pool.worker_pids[1] != old
    pool.async_step_send(pool.rand_action(root))
    out = pool.async_step_recv(min_get=3)
    assert not out["next", "worker_restarted"].any()
    pids = pool.worker_pids
    pool.close()
    assert _gone(pids + [old])
