"""``ProcessorAsyncEnvPool``: the asynchronous pool over ``ParallelEnv``'s worker processes.

Each sub-env is one worker of a :class:`~torchenv.batched._pool.WorkerPool`, with its rows in
the shared buffers. A command goes to ONE worker: its opcode in the control block, a release of
its ``go`` semaphore (and, for a reset, its arguments on its pipe). The parent never counts the
shared ``left`` semaphore down, so every worker that finishes a data command finds it empty and
releases the shared ``all_done`` semaphore once (see :mod:`torchenv.batched._worker`): that
semaphore counts the finished commands, and the workers whose opcode slot went back to 0 are
the ones that finished (the slot is cleared before the release). Waiting on it, in slices of
0.1 s with the workers' liveness checked between slices, reports a dead worker (SIGKILL,
segfault) or one over the pool's ``timeout`` as :class:`~torchenv.batched.WorkerError`, as
``ParallelEnv`` does.

A finished worker found by scanning the slots may not have released ``all_done`` yet; its
release is then still owed (``_owed``) and is taken before the next synchronous command, whose
single wake-up on ``all_done`` must not be a stale one.
"""

from __future__ import annotations

import time
from typing import Any

from torchenv.batched import _worker as W
from torchenv.batched._async_pool import _OPS, AsyncEnvPool
from torchenv.batched._parallel import ParallelEnv
from torchenv.batched._pool import _SLICE
from torchenv.batched._restart import check_limit, restart_process, restart_seed

__all__ = ["ProcessorAsyncEnvPool"]


class ProcessorAsyncEnvPool(AsyncEnvPool, ParallelEnv):
    """:class:`~torchenv.batched.AsyncEnvPool` with one worker process per sub-env.

    Built by ``AsyncEnvPool(..., backend="multiprocessing")`` (or directly, same arguments).
    Data moves through :class:`~torchenv.batched.ParallelEnv`'s shared-memory buffers; a
    worker that dies or exceeds ``timeout`` raises :class:`~torchenv.batched.WorkerError` from
    the ``recv`` waiting for it; :meth:`close` stops every worker, also with commands in
    flight.

    Examples:
        >>> from torchenv.batched import AsyncEnvPool
        >>> from torchenv.envs import PendulumEnv
        >>> pool = AsyncEnvPool([PendulumEnv] * 2, backend="multiprocessing")
        >>> pool.async_reset_send(env_index=[0, 1])
        >>> pool.async_reset_recv(min_get=2)["env_index"].tolist()
        [0, 1]
        >>> pool.close()
    """

    backend = "multiprocessing"

    def _clear_async(self) -> None:
        super()._clear_async()
        self.__dict__["_owed"] = 0  # all_done releases of workers already harvested

    def _sync_dispatch(self, op, workers, args, reply):
        if self.__dict__["_owed"]:
            self._settle()
        return ParallelEnv._dispatch(self, op, workers, args, reply)

    def _settle(self) -> None:
        """Take the ``all_done`` releases still owed by workers already harvested."""
        d = self.__dict__
        pool = d["_pool"]
        start = time.monotonic()
        while d["_owed"] > 0:
            if pool._all_done(True, _SLICE):
                d["_owed"] -= 1
            elif time.monotonic() - start > 5.0:  # pragma: no cover - a worker lost its way
                raise RuntimeError(
                    "ProcessorAsyncEnvPool: a worker finished without signalling; the pool "
                    "cannot be used any more (close() it)"
                )

    def _pool_or_closed(self):
        pool = self.__dict__.get("_pool")
        if pool is None:
            raise W.EnvClosedError(
                f"the {type(self).__name__} was closed (from another thread?); reset() starts "
                "new sub-environments"
            )
        if pool.broken is not None:
            raise RuntimeError(f"this {type(self).__name__} can no longer be used: {pool.broken}")
        return pool

    def _launch(self, op: int, ids: list[int], args: list) -> None:
        pool = self._pool_or_closed()
        ctl, gos = pool.ctl, pool._gos
        for i in ids:
            ctl[2 * i] = op
            gos[i]()
        if op == W.OP_RESET:
            for i, arg in zip(ids, args):
                try:
                    pool.conns[i].send(arg)
                except (OSError, ValueError):  # dead: found (and restarted) by the wait
                    if not self.__dict__.get("restart_failed"):
                        raise

    def _replace(self, i: int, err: W.WorkerError) -> tuple[int | None, int]:
        pool = self.__dict__.get("_pool")  # (broken by this very failure: mended here)
        if pool is None or pool.closed:
            raise err
        p = pool._owner[i]
        check_limit(pool, p, err)
        old_pid = restart_process(pool, p)
        seed = restart_seed(self, i, pool._restarts[p])
        if seed is not None:
            pool.run(W.OP_SEED, [i], [(seed, False)], reply=True)
        return old_pid, pool._restarts[p]

    def _harvest(self, wait: float | None, need: int = 1) -> list[tuple[int, int, Any]]:
        d = self.__dict__
        pool = self._pool_or_closed()
        ctl, busy, status = pool.ctl, d["_busy"], d["_status"]
        pending = [i for i in busy if i not in status]
        done = [i for i in pending if not ctl[2 * i]]
        if not done and wait != 0.0:
            done = self._wait(pool, pending, wait, min(max(need, 1), len(pending)))
        out = []
        for i in done:
            code = ctl[2 * i + 1]
            info = None
            if code == W.STATUS_ERROR:
                info = pool._recv(i, _OPS[busy[i]])[1]
            out.append((i, code, info))
        d["_owed"] += len(done)
        return out

    def _wait(self, pool, pending: list[int], wait: float | None, need: int) -> list[int]:
        """Sleep until ``need`` of ``pending`` finished (or ``wait`` seconds passed): woken
        once, by the ``need``-th to finish. ``need - 1`` units go into the shared ``left``
        semaphore, which the first finishers take silently (the count-down of
        :mod:`torchenv.batched._worker`); the units left are taken back afterwards."""
        d = self.__dict__
        ctl, busy, sent_at = pool.ctl, d["_busy"], d["_sent_at"]
        left_sem = pool._state.shared_sems[0]
        silent = need - 1
        for _ in range(silent):
            pool._count_down()
        deadline = None if wait is None else time.monotonic() + wait
        try:
            while True:
                remaining = _SLICE if deadline is None else deadline - time.monotonic()
                if remaining <= 0:
                    return [i for i in pending if not ctl[2 * i]]
                if pool._all_done(True, min(remaining, _SLICE)):
                    d["_owed"] -= 1  # a release: a finish, of a worker harvested now or before
                    done = [i for i in pending if not ctl[2 * i]]
                    if done:
                        return done
                    continue
                for i in pending:  # a dead or hung worker: restarted, or WorkerError
                    op = W.OP_RESET if i in d["_restarting"] else _OPS[busy[i]]
                    try:
                        pool._check_alive(i, op, sent_at[i])
                    except W.WorkerError as err:
                        self._on_failure(i, err)
        finally:
            while silent and left_sem.acquire(False):  # units no worker took
                silent -= 1
            d["_owed"] -= silent  # finishes that took a unit released nothing

    def _pid(self, i: int) -> int | None:
        pool = self.__dict__.get("_pool")
        return None if pool is None else pool.procs[i].pid
