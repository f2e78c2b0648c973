"""Workers that restart: ``ParallelEnv(..., restart_failed=True, max_restarts=10)``.

A worker process that dies (segfault, ``SIGKILL``, out of memory), hangs (no answer within
``timeout`` seconds of its last heartbeat) or raises during a data command (``step``,
``reset``, ``step_and_maybe_reset``) is replaced by a new process built from the same factories
(:func:`recover`, on the pool's side). The batched env then (:func:`after_restart`):

* warns (:class:`WorkerRestartedWarning`) naming the worker, its pid and the cause;
* seeds the new sub-env, when the batched env was seeded, with a seed derived from its own
  and the restart count (so runs stay reproducible);
* resets it, and for a step ends its episode: its ``"next"`` rows hold the first observation
  of the new episode, reward 0, ``done`` and ``truncated`` true, ``terminated`` false, and
  ``("next", "worker_restarted")`` true (false everywhere else, always present when
  ``restart_failed=True``). The other sub-envs' data are untouched.

Past ``max_restarts`` restarts of one process the error is raised as without restarts. The
restart bookkeeping of the shared count-down (see :mod:`torchenv.batched._pool`): a process
that died or hung mid-command never took its unit of ``left``; the live ones each take one,
so ``d`` lost processes leave ``d - 1`` units, which are taken back here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from torchenv.batched import _worker as W

__all__ = [
    "RESTART_KEY",
    "WorkerRestartedWarning",
    "after_restart",
    "check_limit",
    "recover",
    "restart_process",
    "restart_seed",
    "warn_restarted",
]

RESTART_KEY = "worker_restarted"
_SEED_STRIDE = 1_000_003  # seed of a restarted sub-env: its seed + stride * restarts


class WorkerRestartedWarning(RuntimeWarning):
    """A worker of a batched env failed and was replaced (``restart_failed=True``)."""


def _lost(pool: Any, p: int, i: int, op: int, start: float) -> str | None:
    """Why process ``p`` (running sub-env ``i``) is lost: died, or hung past the timeout since
    ``start`` or before; ``None`` while it is alive and within its time."""
    try:
        pool._check_alive(i, op, start)
    except W.WorkerError as err:
        return str(err)
    if p in pool._state.hung:
        return pool.broken or f"worker {i} did not answer {W.op_name(op)} in time"
    return None


def recover(pool: Any, op: int, workers: Sequence[int], err: W.WorkerError) -> list[int]:
    """Replace the processes that failed during ``op``; returns the other sub-envs that wrote
    their ``"root"`` rows, as ``WorkerPool.run`` does. Raises ``err`` past ``max_restarts``."""
    state, owner, ctl = pool._state, pool._owner, pool.ctl
    wanted = set(workers)
    commanded = sorted({owner[i] for i in workers})
    start = time.monotonic()
    counted_down = bool(err.exc_type)  # raised in env code: every worker finished the command
    silent: dict[int, str] = {}  # died or hung: did not count down
    if not counted_down:
        first = {}
        for i in sorted(workers):
            first.setdefault(owner[i], i)
        for p in commanded:
            cause = _lost(pool, p, first[p], op, start)
            if cause is not None:
                silent[p] = cause
        # the others finish the command first (their outputs are part of this step)
        pending = [p for p in commanded if p not in silent]
        while pending:
            busy = []
            for p in pending:
                if any(ctl[2 * i] for i in pool._members[p] if i in wanted):
                    cause = _lost(pool, p, first[p], op, start)
                    if cause is not None:
                        silent[p] = cause
                    else:
                        busy.append(p)
            pending = busy
            if pending:
                time.sleep(0.002)
        left = state.shared_sems[0]
        for _ in range(len(silent) - 1):
            left.acquire(True, 5.0)
    failed = dict(silent)
    for i in workers:
        p = owner[i]
        if p not in failed and ctl[2 * i + 1] == W.STATUS_ERROR:
            if counted_down and i == err.worker_index:
                failed[p] = str(err).split("\n\nTraceback", 1)[0]
            else:
                failed[p] = f"worker {i} raised an exception during {W.op_name(op)}"
    for p in failed:
        check_limit(pool, p, err)
    restarted: dict[int, tuple[str, int | None]] = {}
    for p, cause in failed.items():
        old_pid = restart_process(pool, p)
        for i in pool._members[p]:
            restarted[i] = (cause.split("\n", 1)[0], old_pid)
    pool.restarted.update(restarted)
    return [
        i for i in workers if owner[i] not in failed and ctl[2 * i + 1] == W.STATUS_ROOT_WRITTEN
    ]


def check_limit(pool: Any, p: int, err: W.WorkerError, what: str = "worker process") -> None:
    """Raise ``err`` (noting the limit, the pool then unusable) if ``what`` ``p`` of ``pool``
    (``_restarts`` per process, ``max_restarts``, ``broken``) was already restarted
    ``max_restarts`` times."""
    if pool._restarts[p] >= pool.max_restarts:
        pool.broken = str(err).split("\n", 1)[0]
        err.args = (
            f"{err.args[0]}\n(restart_failed: {what} {p} was already restarted "
            f"{pool._restarts[p]} times, max_restarts={pool.max_restarts})",
        )
        raise err


def restart_process(pool: Any, p: int) -> int | None:
    """Kill process ``p`` of ``pool`` if still alive and start a new one from the same
    factories (its sub-envs' control slots cleared); returns the old pid."""
    state, ctl = pool._state, pool.ctl
    proc = state.procs[p]
    old_pid = proc.pid
    if proc.exitcode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    proc.join(5.0)
    state.hung.discard(p)
    with contextlib.suppress(OSError):
        state.conns[p].close()
    for i in pool._members[p]:
        ctl[2 * i] = ctl[2 * i + 1] = 0
        pool._beat_seen.pop(i, None)
    with contextlib.suppress(ValueError):
        proc.close()
    pool._start_process(p)
    pool._restarts[p] += 1
    pool._index_processes()
    pool.broken = None
    return old_pid


def warn_restarted(
    env: Any, subs: Sequence[int], pid: int | None, cause: str, restarts: int, limit: int
) -> None:
    """The :class:`WorkerRestartedWarning` for sub-envs ``subs`` (one worker, ``pid``)."""
    which = f"worker {subs[0]}" if len(subs) == 1 else f"workers {list(subs)} (one process)"
    where = "" if pid is None else f" (pid {pid})"
    warnings.warn(
        f"{type(env).__name__}: {which}{where} failed: {cause}. Replaced by a new "
        f"worker from the same factory (restart {restarts} of at most "
        f"{limit}); its episode ends as truncated with "
        f"('next', {RESTART_KEY!r}) set.",
        WorkerRestartedWarning,
        stacklevel=5,
    )


def restart_seed(env: Any, i: int, restarts: int) -> int | None:
    """The seed of sub-env ``i`` restarted ``restarts`` times (``None``: it was never seeded)."""
    seed = env.__dict__.get("_sub_seeds", {}).get(i)
    return None if seed is None else seed + _SEED_STRIDE * restarts


def after_restart(
    env: Any,
    pool: Any,
    op: int,
    workers: Sequence[int],
    args: Sequence[Any] | None,
    result: Any,
) -> Any:
    """Seed, reset and (for a step) end the episode of the sub-envs ``pool`` restarted."""
    d = env.__dict__
    flagged = d.setdefault("_restarted_rows", set())
    reset_args = dict(zip(workers, args)) if op == W.OP_RESET and args is not None else {}
    while pool.restarted:
        restarted, pool.restarted = dict(pool.restarted), {}
        by_pid: dict[Any, list[int]] = {}
        for i, (_, pid) in restarted.items():
            by_pid.setdefault(pid, []).append(i)
        for pid, subs in by_pid.items():
            p = pool._owner[subs[0]]
            cause = restarted[subs[0]][0]
            warn_restarted(env, subs, pid, cause, pool._restarts[p], pool.max_restarts)
        subs = sorted(restarted)
        for i in subs:
            seed = restart_seed(env, i, pool._restarts[pool._owner[i]])
            if seed is not None:
                pool.run(W.OP_SEED, [i], [(seed, False)], reply=True)
        pool.run(W.OP_RESET, subs, [reset_args.get(i, (None, {})) for i in subs])
        if op != W.OP_RESET:
            _end_episodes(env, subs)
            flagged.update(i for i in subs if i in set(workers))
    if op == W.OP_STEP_AND_MAYBE_RESET:
        return sorted(set(result or ()) | flagged)
    return result


def _end_episodes(env: Any, subs: list[int]) -> None:
    """The ``"next"`` rows of ``subs``: the new episode's first observation, reward 0, done and
    truncated true, terminated false."""
    groups = env.__dict__["_groups"]
    done_keys = {k if isinstance(k, tuple) else (k,) for k in env.done_keys}
    for i in subs:
        root = dict(groups["root"].rows[i])
        for key, view in groups["next"].rows[i]:
            if key in done_keys:
                view.fill_(key[-1] != "terminated")
            elif key in root:
                view.copy_(root[key])
            else:
                view.zero_()


def restart_flags(env: Any, rows: set[int] | None) -> torch.Tensor:
    """``(*batch_size, 1)`` bool: true on the rows of sub-envs in ``rows``."""
    flags = torch.zeros((*env.batch_size, 1), dtype=torch.bool)
    if rows:
        flags[sorted(rows)] = True
    return flags
