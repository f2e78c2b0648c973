"""``ParallelEnv``: one sub-environment per worker process.

The parent writes inputs into shared buffers, wakes the workers concerned, waits for them and
copies the outputs out (see :mod:`torchenv.batched._pool` for the wake-up mechanism and start
method, both chosen by measurement, and :mod:`torchenv.batched._shared` for the buffers).

Measured with ``benchmarks/bench_batched.py`` (2-core machine shared with other jobs, load
average 1.2 to 2.6; ``torchenv_gym.GymEnv`` sub-envs; the same pre-drawn actions for everyone;
env steps per second, three runs, each the best of 3 alternated with gymnasium's):

=============  ===========  ====================  ===================  ======================
env, workers   torchenv     x gymnasium Async     x TorchRL (1 run)    start-up / TorchRL's
=============  ===========  ====================  ===================  ======================
CartPole, 2    8.0-9.6k     0.92-1.12             6.0                  1.0 %
CartPole, 4    9.0-9.6k     1.06-1.16             6.3                  0.8 %
Pendulum, 2    7.1-10.2k    1.42-1.62             4.9                  1.1 %
Pendulum, 4    10.1-10.6k   1.37-1.66             4.6                  0.9 %
=============  ===========  ====================  ===================  ======================

Start-up (construction to first reset) is 0.03-0.07 s with ``fork``, like gymnasium's; TorchRL
(spawn) takes 3.6-7.6 s on this machine (10-27 s under heavier load). Per batched step the
parent runs ~24 us of Python (``step_and_maybe_reset`` with the workers' answers faked; 53 us
before the hot path was trimmed) but spends 75-100 us of CPU in the running loop: each process
resumes with cold caches after the others ran, which roughly doubles to triples the cost of
every op. Each worker spends ~95 us per step, half of it in the sub-env's ``_step``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from torchenv.batched import _worker as W
from torchenv.batched._base import BatchedEnvBase, check_generation, closed_error
from torchenv.batched._pool import WorkerPool, default_start_method
from torchenv.batched._restart import RESTART_KEY, after_restart, restart_flags
from torchenv.batched._serial import SerialEnv
from torchenv.batched._view import make_view
from torchenv.batched._worker import EnvClosedError
from torchenv.envs._common import _EnvMeta
from torchenv.specs import Categorical

__all__ = ["ParallelEnv"]


def _without_grad(method: Callable) -> Callable:
    """``torch.no_grad()`` as a decorator, at a fraction of its cost (measured: 0.15 us when
    gradients are off and 0.5 us when on, against 2.8 us per call for ``@torch.no_grad()``).

    Also turns any failure of a call during which the env was closed (by another thread) into
    :class:`EnvClosedError` (:func:`~torchenv.batched._base.closed_error`), and so does a call
    that returns after such a close (:func:`~torchenv.batched._base.check_generation`): it
    may have read freed buffers, so its result is never returned."""
    set_grad_enabled = torch._C._set_grad_enabled

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        generation = self.__dict__["_generation"]
        enabled = torch.is_grad_enabled()
        if enabled:
            set_grad_enabled(False)
        try:
            out = method(self, *args, **kwargs)
        except Exception as err:
            closed_error(self, generation, err)
            raise
        finally:
            if enabled:
                set_grad_enabled(True)
        if self.__dict__["_generation"] != generation:
            check_generation(self, generation)
        return out

    return wrapper


_PARALLEL_ONLY = ("envs_per_worker", "restart_failed", "max_restarts")  # not SerialEnv's


class _ParallelMeta(_EnvMeta):
    def __call__(cls, *args: Any, **kwargs: Any):
        num_workers = args[0] if args else kwargs.get("num_workers")
        if kwargs.get("serial_for_single") and num_workers == 1:
            for name in _PARALLEL_ONLY:
                kwargs.pop(name, None)
            return SerialEnv(*args, **kwargs)
        return super().__call__(*args, **kwargs)


class ParallelEnv(BatchedEnvBase, metaclass=_ParallelMeta):
    """Runs ``num_workers`` environments in worker processes, as one batched env.

    Data moves through shared-memory buffers laid out from the specs; each worker sleeps on a
    semaphore between commands. ``step_and_maybe_reset`` steps and resets inside the workers in
    one round trip. Gradients are disabled. A worker that raises surfaces as
    :class:`~torchenv.batched.WorkerError` naming the worker and carrying its traceback; a worker
    that dies surfaces within a fraction of a second. Workers are stopped by :meth:`close`, or
    when the env is garbage-collected, or at interpreter exit.

    See :class:`~torchenv.batched._base.BatchedEnvBase` for the arguments; in addition:

    Keyword Args:
        envs_per_worker: sub-environments each worker process runs one after the other
            (PufferLib's name; TorchRL has no equivalent). ``num_workers`` keeps TorchRL's
            meaning, the number of sub-environments (the batch size), so
            ``ParallelEnv(64, make_env, envs_per_worker=32)`` runs 64 envs in 2 processes:
            cheap envs then pay one process round trip per 32 envs instead of one each.
            Default 1 (one process per sub-env).
        restart_failed: replace a worker that dies, hangs or raises during ``step``,
            ``reset`` or ``step_and_maybe_reset`` by a new one from the same factory, with a
            :class:`~torchenv.batched.WorkerRestartedWarning`; its sub-env's episode ends as
            truncated with ``("next", "worker_restarted")`` true (an observation entry, false
            otherwise). See :mod:`torchenv.batched._restart`. Default ``False``.
        max_restarts: restarts allowed per worker process before the error is raised as
            without ``restart_failed``. Default 10.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> env = ParallelEnv(2, PendulumEnv)
        >>> next_seed = env.set_seed(0)
        >>> env.rollout(3).batch_size
        torch.Size([2, 3])
        >>> env.close()
    """

    _needs_shared_buffers = True

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable | Sequence[Callable] | None = None,
        create_env_kwargs: dict | Sequence[dict] | None = None,
        *,
        envs_per_worker: int = 1,
        restart_failed: bool = False,
        max_restarts: int = 10,
        **kwargs: Any,
    ) -> None:
        if (
            not isinstance(envs_per_worker, int)
            or isinstance(envs_per_worker, bool)
            or envs_per_worker < 1
        ):
            raise ValueError(f"envs_per_worker must be a positive int; got {envs_per_worker!r}.")
        if not isinstance(max_restarts, int) or isinstance(max_restarts, bool) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0; got {max_restarts!r}.")
        d = self.__dict__
        d["envs_per_worker"] = envs_per_worker  # read by _start_pool
        d["restart_failed"], d["max_restarts"] = bool(restart_failed), max_restarts
        super().__init__(num_workers, create_env_fn, create_env_kwargs, **kwargs)
        if restart_failed:
            flag = Categorical(2, shape=(*self.batch_size, 1), dtype=torch.bool)
            self.observation_spec[RESTART_KEY] = flag.to(self.device) if self.device else flag

    @property
    def num_processes(self) -> int:
        """Number of worker processes: ``ceil(num_workers / envs_per_worker)``."""
        return -(-self.num_workers // self.__dict__.get("envs_per_worker", 1))

    def _start(self) -> None:
        if self.num_threads is not None:
            torch.set_num_threads(self.num_threads)
        self.__dict__["_pool"] = self._start_pool(
            self.create_env_fn,
            self.create_env_kwargs,
            self._groups,
            mp_start_method=self.mp_start_method,
            num_sub_threads=self.num_sub_threads,
            memmap=self.memmap,
            timeout=self.timeout,
            daemon=self.daemon,
            shutdown_timeout=self.shutdown_timeout,
        )

    def _start_pool(self, fns, kwargs, groups, *, mp_start_method, **options) -> WorkerPool:
        """The worker processes, with ``groups`` as their buffers (``None``: no buffers)."""
        method = mp_start_method or default_start_method()
        d = self.__dict__
        k = d.get("envs_per_worker", 1)
        options["restart_failed"] = d.get("restart_failed", False)
        options["max_restarts"] = d.get("max_restarts", 10)
        return WorkerPool(fns, kwargs, groups, start_method=method, envs_per_worker=k, **options)

    def _shutdown(self) -> None:
        pool = self.__dict__.pop("_pool", None)
        if pool is not None:
            pool.close()
        for group in (self._groups or {}).values():
            group.unbind()

    @property
    def worker_pids(self) -> list[int]:
        """Process id of each sub-env's worker (empty before start and after close); with
        ``envs_per_worker > 1`` the sub-envs of one process share its pid."""
        link = self.__dict__.get("_view_link")
        if link is not None:  # a view: the parent's workers it selects
            if self.is_closed or link.parent_closed():
                return []
            pids = link.root.worker_pids
            return [pids[i] for i in link.workers]
        pool = self.__dict__.get("_pool")
        return [] if pool is None else pool.pids

    def __getitem__(self, item: Any) -> ParallelEnv:
        """A ``ParallelEnv`` view over the workers ``item`` selects (int, slice, list).

        The view starts no process: it sends its commands to this env's workers; see
        :func:`~torchenv.batched._view.make_view`.

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> env = ParallelEnv(3, PendulumEnv)
            >>> view = env[1:]
            >>> view.batch_size, view.worker_pids == env.worker_pids[1:]
            (torch.Size([2]), True)
            >>> env.close()
        """
        return make_view(self, item)

    def _dispatch(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        pool = self.__dict__.get("_pool")
        if pool is None:
            raise EnvClosedError(
                "the ParallelEnv was closed (from another thread?); reset() starts new "
                "sub-environments"
            )
        out = pool.run(op, workers, args, reply)
        if pool.restarted:  # restart_failed=True replaced some workers
            out = after_restart(self, pool, op, workers, args, out)
        if op == W.OP_SEED and pool.restart_failed:  # the seed of a restarted sub-env
            seeds = self.__dict__.setdefault("_sub_seeds", {})
            for i, (seed, _) in zip(workers, args):
                seeds[i] = seed
        return out

    @_without_grad
    def _step(self, tensordict):
        out = super()._step(tensordict)
        if self.__dict__.get("restart_failed"):
            rows, self.__dict__["_restarted_rows"] = self.__dict__.get("_restarted_rows"), set()
            out.set(RESTART_KEY, restart_flags(self, rows))
        return out

    @_without_grad
    def _reset(self, tensordict, **kwargs):
        out = super()._reset(tensordict, **kwargs)
        if self.__dict__.get("restart_failed"):
            out.set(RESTART_KEY, restart_flags(self, None))
        return out

    @_without_grad
    def step_and_maybe_reset(self, tensordict):
        tensordict, root = super().step_and_maybe_reset(tensordict)
        if self.__dict__.get("restart_failed"):
            rows, self.__dict__["_restarted_rows"] = self.__dict__.get("_restarted_rows"), set()
            tensordict.get("next").set(RESTART_KEY, restart_flags(self, rows))
            root.set(RESTART_KEY, restart_flags(self, None))
        return tensordict, root

    @_without_grad
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the sub-environments as :meth:`BatchedEnvBase.set_seed`; a close from another
        thread meanwhile raises :class:`~torchenv.batched.EnvClosedError`."""
        return super().set_seed(seed, static_seed)
