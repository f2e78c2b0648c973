"""AsyncEnvPool: construction, first-ready batches, rows kept with their sub-env, errors, and
nothing left behind after close (checked against the OS)."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import threading
import time

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import (
    AsyncEnvPool,
    EnvClosedError,
    ProcessorAsyncEnvPool,
    ThreadingAsyncEnvPool,
    WorkerError,
)
from torchenv.envs import EnvBase, PendulumEnv
from torchenv.specs import Bounded, Categorical, Composite, Unbounded

pytestmark = pytest.mark.parallel

BACKENDS = ("threading", "multiprocessing")


class TaggedEnv(EnvBase):
    """Observation ``ident`` (its own id), ``acc`` (sum of its actions) and ``count``.

    ``gate`` (an Event): the step blocks until it is set. ``fail_at`` raises at that step,
    ``die_at`` kills the process at that step.
    """

    def __init__(self, ident=0, gate=None, fail_at=None, die_at=None, length=1000):
        super().__init__(batch_size=())
        self.ident, self.gate, self.fail_at, self.die_at = ident, gate, fail_at, die_at
        self.length = length
        self.count = 0
        self.acc = torch.zeros(1)
        self.observation_spec = Composite(
            ident=Unbounded(shape=(1,)),
            acc=Unbounded(shape=(1,)),
            count=Unbounded(shape=(1,), dtype=torch.int64),
        )
        self.action_spec = Bounded(-10.0, 10.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))
        self.full_done_spec = Composite(
            done=Categorical(2, shape=(1,), dtype=torch.bool),
            terminated=Categorical(2, shape=(1,), dtype=torch.bool),
        )

    def _set_seed(self, seed):
        pass

    def _obs(self, done=False):
        d = torch.tensor([done])
        return TensorDict(
            ident=torch.tensor([float(self.ident)]),
            acc=self.acc.clone(),
            count=torch.tensor([self.count]),
            done=d,
            terminated=d.clone(),
        )

    def _reset(self, tensordict=None, **kwargs):
        self.count, self.acc = 0, torch.zeros(1)
        return self._obs()

    def _step(self, tensordict):
        if self.gate is not None:
            self.gate.wait(60)
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            raise ValueError(f"deliberate failure in sub-env {self.ident}")
        if self.die_at is not None and self.count == self.die_at:
            os.kill(os.getpid(), 9)
        self.acc = self.acc + tensordict["action"]
        out = self._obs(self.count >= self.length)
        out.set("reward", torch.ones(1))
        return out


def _pool(n, backend, kwargs=None, **options):
    kwargs = kwargs or [{"ident": i} for i in range(n)]
    return AsyncEnvPool([TaggedEnv] * n, backend=backend, create_env_kwargs=kwargs, **options)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pids, timeout=10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _shm_fds() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        n += target.startswith("/dev/shm/") or "torch_" in target
    return n


def _shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _pool_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("torchenv-async-")]


# ---------------------------------------------------------------------- construction
def test_backend_picks_the_class():
    pools = [AsyncEnvPool([PendulumEnv] * 2, backend=b) for b in BACKENDS]
    try:
        assert type(pools[0]) is ThreadingAsyncEnvPool
        assert type(pools[1]) is ProcessorAsyncEnvPool
        assert all(isinstance(p, AsyncEnvPool) for p in pools)
        assert [p.backend for p in pools] == list(BACKENDS)
        assert [p.num_envs for p in pools] == [2, 2]
        assert type(AsyncEnvPool([PendulumEnv])) is ThreadingAsyncEnvPool  # TorchRL's default
    finally:
        for p in pools:
            p.close()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"backend": "gevent"}, ValueError, "backend must be one of"),
        ({"backend": "asyncio"}, NotImplementedError, "asyncio"),
        ({"recv_size": 0}, ValueError, "recv_size must be an int between 1 and"),
        ({"recv_size": 3}, ValueError, r"\(2\); got 3"),
        ({"stack": "tight"}, ValueError, "stack must be one of"),
        ({"envs_per_worker": 2}, NotImplementedError, "does not support envs_per_worker"),
        ({"max_restarts": -1}, ValueError, "max_restarts must be an int >= 0"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        AsyncEnvPool([PendulumEnv] * 2, **kwargs)


def test_env_instance_is_refused():
    with pytest.raises(TypeError, match=r"env_makers\[0\] is an env instance \(PendulumEnv\)"):
        AsyncEnvPool([PendulumEnv()])
    with pytest.raises(ValueError, match="has backend 'threading'; got backend='multiprocessing'"):
        ThreadingAsyncEnvPool([PendulumEnv], backend="multiprocessing")


# ---------------------------------------------------------------------- first ready
@pytest.mark.parametrize("backend", BACKENDS)
def test_recv_size_returns_the_first_ready(backend):
    """Sub-env 0 is held back: the first recv returns sub-envs 1 and 2 without waiting for it;
    a recv with a timeout raises and loses nothing; once released, sub-env 0 comes."""
    gate = mp.Event()
    kwargs = [{"ident": 0, "gate": gate}, {"ident": 1}, {"ident": 2}]
    pool = _pool(3, backend, kwargs, recv_size=2)
    try:
        root = pool.reset()
        pool.async_step_send(root.set("action", torch.ones(3, 1)))
        out = pool.async_step_recv()
        assert out["env_index"].tolist() == [1, 2]
        assert out["next", "ident"].squeeze(-1).tolist() == [1.0, 2.0]
        assert pool.busy == [0]
        with pytest.raises(TimeoutError, match="stay available"):
            pool.async_step_recv(timeout=0.05)
        gate.set()
        last = pool.async_step_recv()  # recv_size=2, but only one is left: that one
        assert last["env_index"].tolist() == [0]
        assert last["next", "count"].tolist() == [[1]]
        assert pool.busy == []
    finally:
        gate.set()
        pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_stay_with_their_sub_env(backend):
    """A first-ready loop (recv_size=2 of 4, step_and_maybe_reset): every row received is its
    sub-env's, with its own count and the sum of the actions sent to it (action = index + 1)."""
    n = 4
    pool = _pool(n, backend, [{"ident": i, "length": 5 + i} for i in range(n)], recv_size=2)
    try:
        pool.async_reset_send()
        root = pool.async_reset_recv(min_get=n)
        assert root["env_index"].tolist() == list(range(n))
        acc = [0.0] * n
        count = [0] * n
        steps = 0

        def send(root):
            ids = root["env_index"]
            pool.async_step_and_maybe_reset_send(
                root.set("action", (ids.float() + 1).unsqueeze(-1))
            )

        send(root)
        while steps < 60:
            td, root = pool.async_step_and_maybe_reset_recv()
            assert td.batch_size[0] == 2
            for row, i in enumerate(td["env_index"].tolist()):
                count[i] += 1
                acc[i] += i + 1
                assert td["ident"][row].item() == i == td["next", "ident"][row].item()
                assert td["next", "count"][row].item() == count[i]
                assert td["next", "acc"][row].item() == acc[i]
                assert td["action"][row].item() == i + 1
                if td["next", "done"][row].item():  # reset inside: the root starts again
                    count[i], acc[i] = 0, 0.0
                    assert root["count"][row].item() == 0
                else:
                    assert root["count"][row].item() == count[i]
                steps += 1
            send(root)
        left = pool.busy
        td, _ = pool.async_step_and_maybe_reset_recv(min_get=len(left))
        assert td["env_index"].tolist() == left and pool.busy == []
    finally:
        pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_single_env_send_and_recv(backend):
    pool = _pool(3, backend)
    try:
        root = pool.reset()
        pool.async_step_send(root[1].set("action", torch.full((1,), 2.0)), env_index=1)
        out = pool.async_step_recv(env_index=1)
        assert out.batch_size == (1,)
        assert out["env_index"].tolist() == [1]
        assert out["next", "acc"].tolist() == [[2.0]]
    finally:
        pool.close()


# ---------------------------------------------------------------------- misuse
@pytest.mark.parametrize("backend", BACKENDS)
def test_input_errors(backend):
    pool = _pool(3, backend)
    try:
        root = pool.reset().set("action", torch.zeros(3, 1))
        with pytest.raises(ValueError, match="names a sub-env twice"):
            pool.async_step_send(root[:2], env_index=[1, 1])
        with pytest.raises(IndexError, match=r"in \[0, 3\); got \[0, 5\]"):
            pool.async_step_send(root[:2], env_index=[0, 5])
        with pytest.raises(KeyError, match="pass env_index= or set the 'env_index' entry"):
            pool.async_step_send(root[:2])
        with pytest.raises(ValueError, match=r"batch_size \(3,\); expected \(2,\)"):
            pool.async_step_send(root, env_index=[0, 1])
        with pytest.raises(KeyError, match="no action 'action'"):
            pool.async_step_send(root[:2].exclude("action"), env_index=[0, 1])
        with pytest.raises(ValueError, match=r"action 'action' has shape \(2, 2\)"):
            pool.async_step_send(root[:2].set("action", torch.zeros(2, 2)), env_index=[0, 1])
        with pytest.raises(RuntimeError, match="no reset in flight"):
            pool.async_reset_recv()
        assert pool.busy == []  # nothing was sent by the failed calls
        pool.async_step_send(root[:2], env_index=[0, 1])
        with pytest.raises(RuntimeError, match="sub-env 2 has no step in flight"):
            pool.async_step_recv(env_index=2)
        with pytest.raises(RuntimeError, match="no step_and_maybe_reset in flight"):
            pool.async_step_and_maybe_reset_recv()
        with pytest.raises(ValueError, match="max_get=1 is below min_get=2"):
            pool.async_step_recv(min_get=2, max_get=1)
        with pytest.raises(RuntimeError, match=r"sub-envs \[0, 1\] are still processing"):
            pool.set_seed(0)
        assert pool.async_step_recv(min_get=2)["env_index"].tolist() == [0, 1]
    finally:
        pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_closed_pool(backend):
    pool = _pool(2, backend)
    root = pool.reset().set("action", torch.zeros(2, 1))
    pool.close()
    with pytest.raises(EnvClosedError, match="closed"):
        pool.async_step_send(root)
    with pytest.raises(EnvClosedError, match="closed; nothing is in flight"):
        pool.async_step_recv()
    pool.async_reset_send()  # like reset(): starts new sub-envs
    assert pool.async_reset_recv(min_get=2)["env_index"].tolist() == [0, 1]
    pool.close()


# ---------------------------------------------------------------------- failures
@pytest.mark.parametrize("backend", BACKENDS)
def test_exception_in_a_step_leaves_the_others_available(backend):
    kwargs = [{"ident": 0}, {"ident": 1, "fail_at": 1}, {"ident": 2}]
    pool = _pool(3, backend, kwargs)
    try:
        root = pool.reset().set("action", torch.zeros(3, 1))
        pool.async_step_send(root)
        with pytest.raises(WorkerError, match="deliberate failure in sub-env 1") as info:
            pool.async_step_recv(min_get=3)
        assert info.value.worker_index == 1 and info.value.exc_type == "ValueError"
        assert (info.value.pid is None) == (backend == "threading")
        assert pool.busy == [0, 2]
        assert pool.async_step_recv(min_get=2)["env_index"].tolist() == [0, 2]
        assert pool.reset()["count"].tolist() == [[0], [0], [0]]  # still usable
    finally:
        pool.close()


def test_worker_killed_during_an_async_step():
    kwargs = [{"ident": 0}, {"ident": 1, "die_at": 1}]
    pool = _pool(2, "multiprocessing", kwargs)
    try:
        pids = pool.worker_pids
        pool.async_step_send(pool.reset().set("action", torch.zeros(2, 1)))
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+\) died \(killed by SIGKILL\)"):
            pool.async_step_recv(min_get=2)
    finally:
        pool.close()
    assert _wait_gone(pids) == []


def test_hung_worker_times_out():
    gate = mp.Event()  # never set: sub-env 1 hangs in its step
    pool = _pool(2, "multiprocessing", [{"ident": 0}, {"ident": 1, "gate": gate}], timeout=0.5)
    try:
        pids = pool.worker_pids
        pool.async_step_send(pool.reset().set("action", torch.zeros(2, 1)))
        with pytest.raises(WorkerError, match=r"worker 1 \(pid \d+\) did not answer step within"):
            pool.async_step_recv(min_get=2)
    finally:
        pool.close()
    assert _wait_gone(pids) == []


# ---------------------------------------------------------------------- nothing left
def test_close_with_steps_in_flight_leaves_nothing_processes():
    shm, fds = _shm_entries(), _shm_fds()
    gate = mp.Event()
    pool = _pool(3, "multiprocessing", [{"ident": i, "gate": gate} for i in range(3)])
    pool.async_step_send(pool.reset().set("action", torch.zeros(3, 1)))
    pids = pool.worker_pids
    assert len(pids) == 3 and all(_alive(p) for p in pids)
    gate.set()
    pool.close()
    assert pool.worker_pids == []
    assert _wait_gone(pids) == []
    del pool
    gc.collect()
    assert _shm_entries() <= shm
    assert _shm_fds() <= fds


def test_garbage_collected_pool_stops_its_workers():
    pool = _pool(2, "multiprocessing")
    pool.async_step_send(pool.reset().set("action", torch.zeros(2, 1)))
    pids = pool.worker_pids
    del pool
    gc.collect()
    assert _wait_gone(pids) == []


def test_close_with_steps_in_flight_leaves_nothing_threads():
    before = _pool_threads()
    gate = threading.Event()
    pool = _pool(3, "threading", [{"ident": i, "gate": gate} for i in range(3)])
    pool.async_step_send(pool.reset().set("action", torch.zeros(3, 1)))
    assert len(_pool_threads()) == len(before) + 3
    envs = pool.envs
    gate.set()
    pool.close()
    assert _pool_threads() == before
    assert all(env.is_closed for env in envs)


def test_garbage_collected_threading_pool_stops_its_threads():
    before = _pool_threads()
    pool = _pool(2, "threading")
    pool.async_step_send(pool.reset().set("action", torch.zeros(2, 1)))
    pool.async_step_recv(min_get=2)
    assert len(_pool_threads()) == len(before) + 2
    del pool
    gc.collect()
    deadline = time.monotonic() + 10
    while _pool_threads() != before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _pool_threads() == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_are_synchronous_only(backend):
    pool = _pool(3, backend)
    try:
        pool.reset()
        view = pool[1:]
        assert view.rollout(2).batch_size == (2, 2)
        with pytest.raises(TypeError, match="not to a view"):
            view.async_reset_send()
    finally:
        pool.close()
