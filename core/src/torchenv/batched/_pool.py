"""The worker processes of a ``ParallelEnv``: start, command, wait, shut down.

Choices made by measurement on the 2-core development machine (CPython 3.11, torch 2.13 CPU),
which other jobs shared (load average 5 to 12), so only rankings and large ratios are meaningful.

Wake-up mechanism: batched round trips per second, each worker doing a ~20 us numpy "step"
(``/tmp`` prototype, fork, several runs):

==========================================  =============  =============
mechanism                                   2 workers      4 workers
==========================================  =============  =============
POSIX semaphores (go/done per worker)        10-17k /s     8.7-10.6k /s
raw ``os.pipe`` bytes, blocking reads        14-23k /s     6.4-9.7k /s
raw ``os.pipe`` bytes + ``select.poll``      8-12k /s       7.3-8.1k /s
``multiprocessing.Pipe`` (``send_bytes``)    9.5-11k /s     3.9-6.2k /s
shared flag, spin + ``sched_yield`` backoff  1.3k /s        1.4k /s
==========================================  =============  =============

Spinning is ruinous once processes outnumber cores; pipes pay for framing and for the extra
``poll`` that timeouts need; semaphores (futexes underneath) are the fastest at 4 workers,
accept a timeout at no extra cost and need no file descriptor. So: one ``go`` and one ``done``
semaphore per worker, opcodes and statuses in shared memory, and a pipe per worker only for
commands that carry arguments or return values. Data commands (step, reset,
step_and_maybe_reset) end with a count-down instead of ``done`` (see
:mod:`torchenv.batched._worker`): the last worker to finish wakes the parent, once, where
waiting on each ``done`` in turn woke it 1.4 (2 workers) to 1.9 (4 workers) times per command.
The parent waits in slices of ``_SLICE`` seconds and checks between slices that the workers are
alive: a worker killed by SIGKILL is reported within one slice. End to end (``ParallelEnv(2, GymEnv("CartPole-v1"))``,
``step_and_maybe_reset`` loop) the parent spends ~13 us releasing and ~17 us acquiring per
batched step, against ~45 us copying the outputs out and ~45 us in ``rand_action``.

Start method, construction to first reset of ``ParallelEnv(4, GymEnv("CartPole-v1"))``:
``fork`` 0.25-0.31 s; ``forkserver`` 23 s without preloading, 7.4 s for the first env and
0.53 s for the next ones with ``torch`` preloaded in the server (done here); ``spawn``
18-26 s (an interpreter and ``import torch`` per worker). Hence ``fork`` when it is safe (Linux,
CUDA not initialised in the parent), else ``forkserver`` (preloaded), else ``spawn``;
``mp_start_method`` overrides. Workers are not daemonic (they may start processes of their own);
our exit hook stops them before ``multiprocessing`` joins them.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchenv.batched import _worker as W
from torchenv.batched._interrupts import deferred_sigint
from torchenv.batched._shared import BufferGroup, FlatBuffer

__all__ = ["WorkerPool", "default_start_method"]

_SLICE = 0.1  # seconds between liveness checks while waiting on a worker
# default for a hung command, s: since the worker's last heartbeat (``torchenv.batched.heartbeat``)
_TIMEOUT = float(os.environ.get("TORCHENV_BATCHED_TIMEOUT", "60"))
_SHUTDOWN_TIMEOUT = 10.0  # grace period for a worker to close its env

_LIVE_POOLS: set = set()  # finalizers of the pools still open, closed at interpreter exit


@atexit.register
def _close_all_pools() -> None:
    """Close the pools still open at exit. Registered after ``multiprocessing.util``'s hook (which
    joins non-daemonic children), so it runs before it: the workers are told to stop first."""
    for finalizer in list(_LIVE_POOLS):
        finalizer()


def default_start_method() -> str:
    """``fork`` when safe (Linux, no CUDA context in this process), else the safest available."""
    methods = mp.get_all_start_methods()
    cuda_ready = torch.cuda.is_available() and torch.cuda.is_initialized()
    if sys.platform.startswith("linux") and "fork" in methods and not cuda_ready:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


class _State:
    """What the shutdown needs; held by the finalizer, so it must not refer to the pool."""

    def __init__(self) -> None:
        self.procs: list = []
        self.gos: list = []
        self.dones: list = []
        self.shared_sems: list = []
        self.conns: list = []
        self.ctl: memoryview | None = None
        self.buffer: FlatBuffer | None = None
        self.hung: set[int] = set()  # processes declared hung: no grace period at shutdown
        self.leads: list[int] = []  # per process: its first sub-env (where close is written)
        self.shutdown_timeout = _SHUTDOWN_TIMEOUT


def _shutdown(state: _State, finalizer_ref: list) -> None:
    """Stop the workers and free what they share. Ctrl-C meanwhile is held back until the end
    (see :mod:`torchenv.batched._interrupts`) and cuts the graceful wait short."""
    with deferred_sigint() as interrupted:
        _shutdown_now(state, finalizer_ref, interrupted)


def _shutdown_now(state: _State, finalizer_ref: list, interrupted: list) -> None:
    procs, ctl = state.procs, state.ctl
    for i, proc in enumerate(procs):
        if proc.pid is not None and proc.is_alive() and ctl is not None:
            ctl[2 * state.leads[i]] = W.OP_CLOSE
            state.gos[i].release()
    deadline = time.monotonic() + state.shutdown_timeout
    for i, proc in enumerate(procs):
        if i in state.hung:
            continue
        while proc.pid is not None and not interrupted and time.monotonic() < deadline:
            proc.join(min(_SLICE, max(0.0, deadline - time.monotonic())))
            if proc.exitcode is not None:
                break
    procs = [proc for proc in procs if proc.pid is not None]  # never started: nothing to stop
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
            proc.join(1.0)
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
            proc.join(1.0)
    for conn in state.conns:
        conn.close()
    for proc in procs:
        with contextlib.suppress(ValueError):
            proc.close()
    state.procs, state.gos, state.dones, state.conns = [], [], [], []
    state.shared_sems = []
    if state.ctl is not None:
        state.ctl.release()
    state.ctl = None
    if state.buffer is not None:
        state.buffer.unlink()
    state.buffer = None
    if finalizer_ref:
        _LIVE_POOLS.discard(finalizer_ref[0])


class WorkerPool:
    """Worker processes, each running one sub-environment, and the buffers they share.

    Args:
        create_env_fns: one callable per worker.
        create_env_kwargs: one dict per worker.
        groups: the buffer groups (``"in"``, ``"next"``, ``"root"``) or ``None`` (no buffers:
            data goes through the pipes).
        start_method: multiprocessing start method.
        num_sub_threads: torch threads in each worker.
        memmap: buffers in a memory-mapped file rather than in shared memory.
        timeout: seconds a command may run past the worker's last heartbeat before the worker
            is declared hung (:class:`WorkerError`); default ``TORCHENV_BATCHED_TIMEOUT``,
            else 60.
        daemon: start daemonic workers.
        shutdown_timeout: seconds a worker has to close its env before it is killed (10).
        envs_per_worker: sub-envs run serially by each process (the last may run fewer).
        restart_failed: replace a process that dies, hangs or raises during a data command
            (step, reset, step_and_maybe_reset) by a new one from the same factories, at most
            ``max_restarts`` times per process (see :mod:`torchenv.batched._restart`);
            :attr:`restarted` then names its sub-envs and the cause.

    Sub-env ``i`` has its own control slots and buffer rows whatever the grouping; ``procs``,
    ``conns``, ``_gos`` and ``_dones`` are indexed by sub-env (sub-envs of one process share
    its entries).
    """

    def __init__(
        self,
        create_env_fns: Sequence[Callable],
        create_env_kwargs: Sequence[dict],
        groups: dict[str, BufferGroup] | None,
        *,
        start_method: str,
        num_sub_threads: int | None = 1,
        memmap: bool = False,
        timeout: float | None = None,
        daemon: bool = False,
        shutdown_timeout: float | None = None,
        envs_per_worker: int = 1,
        restart_failed: bool = False,
        max_restarts: int = 10,
    ) -> None:
        self.num_workers = n = len(create_env_fns)
        self.restart_failed, self.max_restarts = bool(restart_failed), int(max_restarts)
        if restart_failed and memmap and start_method != "fork":
            raise ValueError(
                "restart_failed=True with memmap=True needs the fork start method (the buffer "
                "file is deleted once the first workers mapped it); use shared memory instead."
            )
        self.restarted: dict[int, tuple[str, int | None]] = {}  # sub-env: (cause, old pid)
        k = self.envs_per_worker = int(envs_per_worker)
        self._members = [list(range(s, min(n, s + k))) for s in range(0, n, k)]
        self._restarts = [0] * len(self._members)  # per process
        self._owner = [p for p, members in enumerate(self._members) for _ in members]
        self._lead = [self._members[p][0] for p in self._owner]
        self._daemon = daemon
        self.timeout = float(timeout) if timeout is not None else _TIMEOUT
        self.groups = groups
        self.broken: str | None = None
        state = self._state = _State()
        if shutdown_timeout is not None:
            state.shutdown_timeout = float(shutdown_timeout)
        ctx = mp.get_context(start_method)
        if start_method == "forkserver":
            # the server imports torch once; each worker is then a fork of it
            ctx.set_forkserver_preload(["torchenv.batched._worker"])

        nbytes = 0
        if groups is not None:
            for group in groups.values():
                group.offset = nbytes
                nbytes += group.nbytes
        ctl_offset = nbytes
        nbytes += 8 * self.num_workers
        beat_offset = nbytes  # one heartbeat counter per worker, after the control block
        nbytes += 4 * self.num_workers
        buffer = state.buffer = FlatBuffer(nbytes, shared=True, memmap=memmap)
        if groups is not None:
            for group in groups.values():
                group.bind(buffer, group.offset)
        state.ctl = self.ctl = buffer.int32_view(ctl_offset, 2 * self.num_workers)
        self._beats = buffer.int32_view(beat_offset, self.num_workers)
        self._beat_seen: dict[int, tuple[int, float]] = {}  # worker: (counter, when it moved)

        finalizer_ref: list = []
        finalizer = weakref.finalize(self, _shutdown, state, finalizer_ref)
        finalizer.atexit = False  # our own atexit hook runs before multiprocessing's
        finalizer_ref.append(finalizer)
        _LIVE_POOLS.add(finalizer)
        self._finalizer = finalizer

        # data commands: the workers count down on ``left``; the last one releases ``all_done``
        left, all_done = ctx.Semaphore(0), ctx.Semaphore(0)
        state.shared_sems = [left, all_done]  # kept: spawned workers open them by name
        parent_pid = os.getpid()
        try:
            # Ctrl-C waits until every worker started is recorded (and is then raised here)
            with deferred_sigint():
                self._spawn(
                    ctx,
                    create_env_fns,
                    create_env_kwargs,
                    buffer,
                    groups,
                    ctl_offset,
                    parent_pid,
                    num_sub_threads,
                    beat_offset,
                )
        except BaseException:
            self.close()
            raise
        # a memory-mapped buffer's file goes once every worker has mapped it: forked workers
        # inherited the mapping; the others map it when they start (done by their first reply)
        self._pending_unlink = start_method != "fork" and buffer.path is not None
        if not self._pending_unlink:
            buffer.unlink()
        self._index_processes()
        self._count_down = left.release
        self._all_done = all_done.acquire

    def _index_processes(self) -> None:
        """The per-sub-env views of the per-process lists (after a start or a restart)."""
        state, owner = self._state, self._owner
        self.procs = [state.procs[p] for p in owner]
        self._gos = [state.gos[p].release for p in owner]
        self._dones = [state.dones[p].acquire for p in owner]
        self.conns = [state.conns[p] for p in owner]

    def _spawn(
        self,
        ctx,
        create_env_fns,
        create_env_kwargs,
        buffer,
        groups,
        ctl_offset,
        parent_pid,
        num_sub_threads,
        beat_offset,
    ) -> None:
        # the kernel's parent-death signal follows the thread that starts a worker: safe when
        # that thread lives as long as this process (or is the forkserver's)
        kernel_signal = (
            ctx.get_start_method() == "forkserver"
            or threading.current_thread() is threading.main_thread()
        )
        if ctx.get_start_method() != "fork":  # lambdas and closures travel by cloudpickle
            from torchenv.batched._creator import _PicklableFn

            create_env_fns = [
                fn if isinstance(fn, _PicklableFn) else _PicklableFn(fn) for fn in create_env_fns
            ]
        self._spawn_args = (ctx, create_env_fns, create_env_kwargs, buffer, groups, ctl_offset)
        self._spawn_args += (parent_pid, num_sub_threads, kernel_signal, beat_offset)
        for p in range(len(self._members)):
            self._start_process(p)

    def _start_process(self, p: int) -> None:
        """Start process ``p`` (again, after a restart: it replaces the old one's entries)."""
        state = self._state
        ctx, fns, all_kwargs, buffer, groups, ctl_offset, *rest = self._spawn_args
        parent_pid, num_sub_threads, kernel_signal, beat_offset = rest
        left, all_done = state.shared_sems
        members = self._members[p]
        go, done = ctx.Semaphore(0), ctx.Semaphore(0)
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        if len(members) == 1:
            (i,) = members
            target = (i, fns[i], all_kwargs[i])
        else:
            target = (members, [fns[i] for i in members], [all_kwargs[i] for i in members])
        proc = ctx.Process(
            target=W.worker_main,
            name=f"torchenv-worker-{p}",
            args=(
                *target,
                buffer,
                groups,
                ctl_offset,
                go,
                (done, left, all_done),
                child_conn,
                parent_pid,
                num_sub_threads,
                kernel_signal,
                beat_offset,
            ),
            daemon=self._daemon,  # default False: a worker may start processes of its own
        )
        # recorded before it starts: a failure from here on still stops and closes it
        entries = (proc, members[0], go, done, parent_conn)
        lists = (state.procs, state.leads, state.gos, state.dones, state.conns)
        for entry, where in zip(entries, lists):
            if p < len(where):
                where[p] = entry
            else:
                where.append(entry)
        try:
            proc.start()
        finally:
            child_conn.close()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Stop the workers (they close their envs) and free the buffers. Idempotent."""
        self._finalizer()

    # ------------------------------------------------------------------ commands
    def run(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        """Send ``op`` to ``workers`` (with per-worker ``args`` on the pipes) and wait for them.

        Returns the per-worker replies when ``reply`` is true, else the workers that reported
        ``STATUS_ROOT_WRITTEN``. Raises :class:`WorkerError` naming the worker when one raised
        or died.
        """
        if self.broken is not None:
            raise RuntimeError(f"this ParallelEnv can no longer be used: {self.broken}")
        try:
            return self._run_checked(op, workers, args, reply)
        except W.WorkerError as err:
            if not self.restart_failed or op not in W.COUNTED_OPS or self.closed:
                raise
            from torchenv.batched._restart import recover

            return recover(self, op, workers, err)

    def _run_checked(self, op: int, workers: Sequence[int], args, reply: bool) -> list | None:
        try:
            return self._run(op, workers, args, reply)
        except (ValueError, OSError, EOFError, AttributeError, TypeError) as err:
            # a pipe or process closed under our feet: by close() from another thread, or
            # because a worker died while idle (its end of the pipe went with it)
            if self.closed:
                raise W.EnvClosedError(
                    f"the ParallelEnv was closed (from another thread?) during "
                    f"{W.op_name(op)}; reset() starts new sub-environments"
                ) from err
            deadline = time.monotonic() + 1.0  # a worker that just died: until it is reaped
            while True:
                for i in workers:
                    if self.procs[i].exitcode is not None:
                        self._check_alive(i, op, time.monotonic())
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _run(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None,
        reply: bool,
    ) -> list | None:
        if self.envs_per_worker > 1:
            return self._run_grouped(op, workers, args, reply)
        if not reply:
            if op not in W.COUNTED_OPS:  # pragma: no cover - internal misuse
                raise RuntimeError(f"{W.op_name(op)} answers on its pipe: pass reply=True")
            if not len(workers):
                return []
            count_down = self._count_down
            for _ in range(len(workers) - 1):  # set before any worker can finish
                count_down()
        ctl, gos = self.ctl, self._gos
        for i in workers:
            ctl[2 * i] = op
            gos[i]()
        if args is not None:
            conns = self.conns
            for i, a in zip(workers, args):
                try:
                    conns[i].send(a)
                except (OSError, ValueError):  # dead: found by the wait (the others go on)
                    if not self.restart_failed:
                        raise
        try:
            return self._collect(op, workers, reply)
        except KeyboardInterrupt:
            # the workers still finish the command and answer it: the next command would read
            # those answers, so the pool cannot be trusted any more
            self.broken = f"interrupted while waiting for the workers ({W.op_name(op)})"
            raise

    def _run_grouped(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None,
        reply: bool,
    ) -> list | None:
        """``_run`` for processes running several sub-envs: one wake-up and one end signal per
        process; arguments and replies travel in ascending sub-env order on its pipe."""
        if not reply and op not in W.COUNTED_OPS:  # pragma: no cover - internal misuse
            raise RuntimeError(f"{W.op_name(op)} answers on its pipe: pass reply=True")
        if not len(workers):
            return []
        owner = self._owner
        by_proc: dict[int, list[int]] = {}  # process: positions in ``workers``, by sub-env
        for j in sorted(range(len(workers)), key=workers.__getitem__):
            by_proc.setdefault(owner[workers[j]], []).append(j)
        if not reply:
            count_down = self._count_down
            for _ in range(len(by_proc) - 1):
                count_down()
        ctl = self.ctl
        for i in workers:
            ctl[2 * i] = op
        for positions in by_proc.values():
            self._gos[workers[positions[0]]]()
        if args is not None:
            for positions in by_proc.values():
                conn = self.conns[workers[positions[0]]]
                try:
                    for j in positions:
                        conn.send(args[j])
                except (OSError, ValueError):  # dead: found by the wait (the others go on)
                    if not self.restart_failed:
                        raise
        try:
            if not reply:
                return self._collect(op, workers, False)
            replies: list = [None] * len(workers)
            errors = {}
            for positions in by_proc.values():
                for j in positions:
                    kind, value = self._recv(workers[j], op)
                    if kind == "error":
                        errors[workers[j]] = value
                    replies[j] = value
                first = workers[positions[0]]
                if not self._dones[first](True, _SLICE):
                    self._wait_slow(first, op)
            if self._pending_unlink:
                self._unlink()
            if errors:
                self._raise_errors(op, sorted(errors), errors)
            return replies
        except KeyboardInterrupt:
            self.broken = f"interrupted while waiting for the workers ({W.op_name(op)})"
            raise

    def _collect(self, op: int, workers: Sequence[int], reply: bool) -> list:
        ctl, dones = self.ctl, self._dones
        if not reply:
            # one wake-up, by the last worker to finish (waiting on each worker's ``done`` woke
            # this process 1.4 (2 workers) to 1.9 (4 workers) times per command, measured)
            if not self._all_done(True, _SLICE):
                self._wait_all_slow(op, workers)
            flagged, failed = [], None
            for i in workers:
                status = ctl[2 * i + 1]
                if status:
                    if status == W.STATUS_ERROR:
                        failed = failed or []
                        failed.append(i)
                    else:
                        flagged.append(i)
            if self._pending_unlink:
                self._unlink()
            if failed:
                failed.sort()  # a process sends its sub-envs' errors in ascending order
                self._raise_errors(op, failed, {i: self._recv(i, op)[1] for i in failed})
            return flagged
        replies, errors = [], {}
        for i in workers:
            kind, value = self._recv(i, op)
            if not dones[i](True, _SLICE):
                self._wait_slow(i, op)
            if kind == "error":
                errors[i] = value
            replies.append(value)
        if self._pending_unlink:
            self._unlink()
        if errors:
            self._raise_errors(op, list(errors), errors)
        return replies

    def _unlink(self) -> None:
        self._pending_unlink = False
        if self._state.buffer is not None:
            self._state.buffer.unlink()

    def _raise_errors(self, op: int, failed: list[int], infos: dict) -> None:
        first = failed[0]
        err = W.make_worker_error(first, self.procs[first].pid, op, infos[first])
        if len(failed) > 1:
            err.args = (err.args[0] + f"\n(workers {failed[1:]} failed too)",)
        raise err

    def _recv(self, i: int, op: int) -> tuple[str, Any]:
        conn = self.conns[i]
        if not conn.poll(_SLICE):
            start = time.monotonic()
            while not conn.poll(_SLICE):
                self._check_alive(i, op, start)
        return conn.recv()

    def _wait_all_slow(self, op: int, workers: Sequence[int]) -> None:
        start = time.monotonic()
        acquire = self._all_done
        while not acquire(True, _SLICE):
            for i in workers:
                self._check_alive(i, op, start)

    def _wait_slow(self, i: int, op: int) -> None:
        start = time.monotonic()
        acquire = self._dones[i]
        while not acquire(True, _SLICE):
            self._check_alive(i, op, start)

    def _check_alive(self, i: int, op: int, start: float) -> None:
        """Raise :class:`WorkerError` if worker ``i`` died or has run ``op`` for longer than
        the timeout since ``start``; :class:`EnvClosedError` if the pool was closed meanwhile."""
        if self.closed:
            raise W.EnvClosedError(
                f"the ParallelEnv was closed (from another thread?) during {W.op_name(op)}; "
                "reset() starts new sub-environments"
            )
        proc = self.procs[i]
        if not proc.is_alive():
            code = proc.exitcode
            how, sig = f"exit code {code}", None
            if code is not None and code < 0:
                with contextlib.suppress(ValueError):
                    sig = signal.Signals(-code).name
                    how = f"killed by {sig}"
            self.broken = f"worker {i} (pid {proc.pid}) died ({how}) during {W.op_name(op)}"
            raise W.WorkerError(self.broken, i, pid=proc.pid, signal=sig, exitcode=code)
        if not self.ctl[2 * i]:  # idle: it answered
            return
        now = time.monotonic()
        beat, seen = self._beats[self._lead[i]], self._beat_seen.get(i)
        if seen is None or seen[0] != beat:
            self._beat_seen[i] = seen = (beat, now)
        if now - max(start, seen[1]) > self.timeout:
            self.broken = (
                f"worker {i} (pid {proc.pid}) did not answer {W.op_name(op)} within "
                f"{self.timeout:g} s of its last sign of progress (the batched env's timeout= "
                "argument, default TORCHENV_BATCHED_TIMEOUT or 60 s; env code may call "
                "torchenv.batched.heartbeat() to extend it)"
            )
            self._state.hung.add(self._owner[i])
            raise W.WorkerError(self.broken, i, pid=proc.pid)
