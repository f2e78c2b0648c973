"""``ThreadingAsyncEnvPool``: the asynchronous pool over threads of this process.

Each sub-env is one :class:`~torchenv.batched._worker.EnvRunner` of a
:class:`~torchenv.batched.SerialEnv` (same buffers, same step code) and gets one thread,
started with the sub-envs and stopped at :meth:`close`. A command goes on the thread's own
queue; the thread runs it on its rows and puts ``(index, status, error)`` on one shared queue,
which ``recv`` waits on. Synchronous commands run in the calling thread, as in ``SerialEnv``,
while no asynchronous one is in flight.

Threads pay off for sub-envs that wait (sleep, I/O, a simulator that releases the GIL); a
Python-bound env gains nothing from them (the GIL), use processes then.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import weakref
from typing import Any

import torch

from torchenv.batched import _worker as W
from torchenv.batched._async_pool import _OPS, AsyncEnvPool
from torchenv.batched._restart import RESTART_KEY, check_limit, restart_flags, restart_seed
from torchenv.batched._serial import SerialEnv
from torchenv.batched._worker import _close_env, describe_exception

__all__ = ["ThreadingAsyncEnvPool"]

_JOIN_TIMEOUT = 10.0  # seconds a thread has to finish its command at close


def _thread_main(runners: list, index: int, inbox: queue.SimpleQueue, outbox) -> None:
    torch.set_grad_enabled(False)
    while True:
        item = inbox.get()
        if item is None:
            return
        op, arg = item
        runner = runners[index]  # a restart replaces it between commands
        status, info = W.STATUS_OK, None
        try:
            if op == W.OP_STEP:
                runner.step()
            elif op == W.OP_STEP_AND_MAYBE_RESET:
                if runner.step_and_maybe_reset():
                    status = W.STATUS_ROOT_WRITTEN
            else:
                runner.reset(*arg)
        except BaseException as err:  # reported by the recv that collects it
            status, info = W.STATUS_ERROR, describe_exception(err)
        outbox.put((index, status, info))


def _stop_threads(inboxes: list) -> None:
    for inbox in inboxes:
        inbox.put(None)


class _Book:
    """Restart counts per sub-env, as :func:`~torchenv.batched._restart.check_limit` reads them."""

    def __init__(self, n: int, max_restarts: int) -> None:
        self._restarts, self.max_restarts, self.broken = [0] * n, max_restarts, None


class ThreadingAsyncEnvPool(AsyncEnvPool, SerialEnv):
    """:class:`~torchenv.batched.AsyncEnvPool` with one thread per sub-env, in this process.

    Built by ``AsyncEnvPool(..., backend="threading")`` (or directly, same arguments).
    :attr:`envs` gives the sub-envs themselves. A sub-env stuck in a step cannot be stopped
    (threads cannot be killed): ``recv(timeout=...)`` then raises :class:`TimeoutError`, and
    :meth:`close` gives each thread ``10`` s before leaving it behind (daemonic). With
    ``restart_failed=True`` a sub-env whose command raises is built again by its factory (in
    the asynchronous and the synchronous API); a hang or a crash of the interpreter cannot be
    recovered from in a thread.

    Examples:
        >>> from torchenv.batched import AsyncEnvPool
        >>> from torchenv.envs import PendulumEnv
        >>> pool = AsyncEnvPool([PendulumEnv] * 2)  # threading, TorchRL's default
        >>> type(pool).__name__, pool.rollout(3).batch_size
        ('ThreadingAsyncEnvPool', torch.Size([2, 3]))
        >>> pool.close()
    """

    backend = "threading"

    def _start(self) -> None:
        SerialEnv._start(self)
        d = self.__dict__
        outbox: queue.SimpleQueue = queue.SimpleQueue()
        inboxes, threads = [], []
        for i in range(len(d["_runners"])):
            inbox: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(
                target=_thread_main,
                args=(d["_runners"], i, inbox, outbox),
                name=f"torchenv-async-{i}",
                daemon=True,
            )
            thread.start()
            inboxes.append(inbox)
            threads.append(thread)
        d["_inboxes"], d["_threads"], d["_outbox"] = inboxes, threads, outbox
        # garbage-collected without close(): the threads (which do not refer to the pool) stop
        d["_thread_finalizer"] = weakref.finalize(self, _stop_threads, inboxes)

    def _shutdown(self) -> None:
        d = self.__dict__
        inboxes, threads = d.pop("_inboxes", []), d.pop("_threads", [])
        d.pop("_outbox", None)
        finalizer = d.pop("_thread_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        _stop_threads(inboxes)
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        AsyncEnvPool._shutdown(self)  # closes the sub-envs (SerialEnv), forgets the commands

    def _sync_dispatch(self, op, workers, args, reply):
        d = self.__dict__
        if not d.get("restart_failed"):
            return SerialEnv._dispatch(self, op, workers, args, reply)
        if op == W.OP_SEED:  # the seed of a restarted sub-env derives from it
            seeds = d.setdefault("_sub_seeds", {})
            seeds.update((i, seed) for i, (seed, _) in zip(workers, args))
        if op not in W.COUNTED_OPS or reply or not len(workers):
            return SerialEnv._dispatch(self, op, workers, args, reply)
        # a data command: through the threads, so that a sub-env that raises is restarted
        kind = next(k for k, o in _OPS.items() if o == op)
        ids = list(workers)
        args = list(args) if args is not None else [None] * len(ids)
        now = time.monotonic()
        for i, arg in zip(ids, args):
            d["_busy"][i] = kind
            d["_sent_at"][i] = now
            if op == W.OP_RESET:
                d["_reset_args"][i] = arg
        try:
            self._launch(op, ids, args)
            got = self._collect(kind, len(ids), None, None, None)
            status = d["_status"]
            flagged = [i for i in got if status[i][0] == W.STATUS_ROOT_WRITTEN]
            restarted = d["_flagged"] & set(got)
            d["_flagged"] -= restarted
            d.setdefault("_restarted_rows", set()).update(restarted)
            return flagged
        finally:
            for i in ids:
                self._release(i)

    def _replace(self, i: int, err: W.WorkerError) -> tuple[int | None, int]:
        d = self.__dict__
        book = d.get("_restart_book")
        if book is None:  # what check_limit reads (per sub-env here)
            book = d["_restart_book"] = _Book(self.num_workers, d["max_restarts"])
        check_limit(book, i, err, what="sub-env")
        runners = d["_runners"]
        with contextlib.suppress(Exception):  # the env failed: its close may fail too
            _close_env(runners[i].env)
        env = self.create_env_fn[i](**self.create_env_kwargs[i])
        if hasattr(env, "set_spec_lock_"):
            env.set_spec_lock_(True)
        runners[i] = W.EnvRunner(env, d["_groups"], i)
        book._restarts[i] += 1
        seed = restart_seed(self, i, book._restarts[i])
        if seed is not None:
            runners[i].set_seed(seed, False)
        return None, book._restarts[i]

    def _step(self, tensordict):
        out = super()._step(tensordict)
        d = self.__dict__
        if d.get("restart_failed"):
            rows, d["_restarted_rows"] = d.get("_restarted_rows"), set()
            out.set(RESTART_KEY, restart_flags(self, rows))
        return out

    def _reset(self, tensordict, **kwargs):
        out = super()._reset(tensordict, **kwargs)
        if self.__dict__.get("restart_failed"):
            out.set(RESTART_KEY, restart_flags(self, None))
        return out

    def step_and_maybe_reset(self, tensordict):
        tensordict, root = super().step_and_maybe_reset(tensordict)
        d = self.__dict__
        if d.get("restart_failed"):
            rows, d["_restarted_rows"] = d.get("_restarted_rows"), set()
            tensordict.get("next").set(RESTART_KEY, restart_flags(self, rows))
            root.set(RESTART_KEY, restart_flags(self, None))
        return tensordict, root

    def _launch(self, op: int, ids: list[int], args: list) -> None:
        inboxes = self.__dict__.get("_inboxes")
        if inboxes is None:
            raise W.EnvClosedError(
                f"the {type(self).__name__} was closed (from another thread?); reset() starts "
                "new sub-environments"
            )
        for i, arg in zip(ids, args):
            inboxes[i].put((op, arg))

    def _harvest(self, wait: float | None, need: int = 1) -> list[tuple[int, int, Any]]:
        outbox = self.__dict__.get("_outbox")
        if outbox is None:
            raise W.EnvClosedError(
                f"the {type(self).__name__} was closed (from another thread?) while waiting"
            )
        out = []
        try:
            if wait is None:
                while True:  # in slices: a close from another thread is noticed
                    try:
                        out.append(outbox.get(timeout=0.1))
                        break
                    except queue.Empty:
                        if self.__dict__.get("_outbox") is not outbox:
                            raise W.EnvClosedError(
                                f"the {type(self).__name__} was closed (from another thread?) "
                                "while waiting"
                            ) from None
            elif wait > 0:
                out.append(outbox.get(timeout=wait))
            while True:
                out.append(outbox.get_nowait())
        except queue.Empty:
            pass
        return out
