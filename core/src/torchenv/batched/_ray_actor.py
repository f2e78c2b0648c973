"""The body of a ``RayParallelEnv`` worker: a plain class that Ray turns into an actor.

The actor builds its env from the factory it is given and drives it through the same
:class:`~torchenv.batched._worker.EnvRunner` as ``SerialEnv`` and ``ParallelEnv`` workers, so the
three give identical data seed for seed. Its buffers are private (laid out from the same leaves as
the parent's rows of this worker); data crosses the process boundary as lists of numpy arrays, one
per leaf, which Ray serialises out of band: arrays above Ray's inline limit (100 KiB) go through
the object store and are read there without a copy (read-only), smaller ones ride in the reply.

Every method answers ``("ok", value)`` or ``("error", (type name, message, traceback))``: an
exception raised by the env is reported with its traceback instead of surfacing as a Ray task
error, so the parent can name the worker in a :class:`~torchenv.batched.WorkerError`.

This module imports nothing from Ray: it is importable (and testable) without it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from torchenv.batched import _worker as W
from torchenv.batched._shared import BufferGroup, FlatBuffer

__all__ = ["EnvWorker", "RemoteWorker", "as_arrays", "copy_arrays"]

BEAT_GROUP = "beat"  # the actor's concurrency group that answers ``idle()`` during a command


def as_arrays(rows: Sequence[tuple[tuple, torch.Tensor]]) -> list:
    """Views of a worker's rows that travel well: numpy arrays, or tensors where numpy has no
    equivalent dtype (``bfloat16``...)."""
    out = []
    for _, view in rows:
        try:
            out.append(view.numpy())
        except TypeError:
            out.append(view)
    return out


def copy_arrays(dsts: Sequence[Any], srcs: Sequence[Any]) -> None:
    """Copy ``srcs`` into ``dsts`` (from :func:`as_arrays`), leaf by leaf; ``None`` is skipped."""
    for dst, src in zip(dsts, srcs):
        if src is None:
            continue
        if isinstance(dst, np.ndarray):
            np.copyto(dst, src, casting="unsafe")  # as torch's copy_
        else:
            dst.copy_(src)


def _snapshot(arrays: Sequence[Any]) -> list:
    """What the reply carries: the arrays themselves (Ray serialises them when the method
    returns, before the next command can overwrite them); tensors are cloned."""
    return [a if isinstance(a, np.ndarray) else a.clone() for a in arrays]


class EnvWorker:
    """One sub-environment of a ``RayParallelEnv`` and the commands it answers.

    It leaves process-wide settings alone: :class:`RemoteWorker`, the class Ray runs in an
    actor (a process of its own), adds those.

    Args:
        index: the worker index (in error messages).
        create_env_fn: a picklable callable returning an env.
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        leaves: ``{"in"|"next"|"root": [(key, dtype, shape), ...]}``, this worker's leaves as
            the parent laid them out, or ``None`` when the env runs without buffers.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> worker = EnvWorker(0, PendulumEnv, {}, None)
        >>> worker.ready()[0]
        'ok'
        >>> worker.run(W.OP_SEED, (0, False))[0]
        'ok'
        >>> worker.close()
    """

    def __init__(
        self,
        index: int,
        create_env_fn: Callable,
        create_env_kwargs: dict,
        leaves: dict | None,
    ) -> None:
        self.index = index
        self.runner: W.EnvRunner | None = None
        self._started: float | None = None  # when the running command started
        self._progress = 0.0  # when it started or last called heartbeat()
        self.init_error: tuple[str, str, str] | None = None
        try:
            env = create_env_fn(**create_env_kwargs)
            if hasattr(env, "set_spec_lock_"):
                env.set_spec_lock_(True)
            groups = None
            if leaves is not None:
                groups = {name: BufferGroup([leaves[name]], dense=True) for name in leaves}
                offset = 0
                for group in groups.values():
                    group.offset = offset
                    offset += group.nbytes
                self._buffer = FlatBuffer(offset, shared=False)
                for group in groups.values():
                    group.bind(self._buffer, group.offset)
                self._arrays = {name: as_arrays(g.rows[0]) for name, g in groups.items()}
            self.runner = W.EnvRunner(env, groups, 0)
        except BaseException as err:  # reported by ready() and by every command
            self.init_error = W.describe_exception(err)

    def ready(self) -> tuple[str, Any]:
        """``("ok", pid)`` once the env is built, or the error that building it raised."""
        if self.init_error is not None:
            return "error", self.init_error
        return "ok", os.getpid()

    def run(self, op: int, arg: Any = None, inputs: Sequence[Any] | None = None) -> tuple:
        """Run one command (an opcode of :mod:`torchenv.batched._worker`).

        ``inputs`` are the worker's ``"in"`` rows (copied into the private buffer first). The
        data commands answer with the rows they wrote: ``OP_STEP`` the ``"next"`` rows,
        ``OP_RESET`` the ``"root"`` rows, ``OP_STEP_AND_MAYBE_RESET`` ``(root written, next
        rows, root rows or None)``.
        """
        if self.init_error is not None:
            return "error", self.init_error
        self._progress = self._started = time.monotonic()
        try:
            return "ok", self._run(op, arg, inputs)
        except BaseException as err:
            return "error", W.describe_exception(err)
        finally:
            self._started = None

    def idle(self) -> float | None:
        """Seconds since the running command started or last called
        :func:`~torchenv.batched.heartbeat`; ``None`` when no command runs. Answered from
        another thread (the actor's ``"beat"`` concurrency group) while ``run`` works."""
        if self._started is None:
            return None
        return time.monotonic() - self._progress

    def beat(self) -> None:
        """Progress in the running command (what :func:`~torchenv.batched.heartbeat` calls)."""
        self._progress = time.monotonic()

    def _run(self, op: int, arg: Any, inputs: Sequence[Any] | None) -> Any:
        runner = self.runner
        if inputs is not None:
            copy_arrays(self._arrays["in"], inputs)
        if op == W.OP_STEP_AND_MAYBE_RESET:
            written = runner.step_and_maybe_reset()
            nxt = _snapshot(self._arrays["next"])
            return written, nxt, _snapshot(self._arrays["root"]) if written else None
        if op == W.OP_STEP:
            runner.step()
            return _snapshot(self._arrays["next"])
        if op == W.OP_RESET:
            runner.reset(*arg)
            return _snapshot(self._arrays["root"])
        if op == W.OP_STEP_NO_BUFFERS:
            return runner.step_td(arg)
        if op == W.OP_RESET_NO_BUFFERS:
            return runner.reset_td(*arg)
        if op == W.OP_SMR_NO_BUFFERS:
            return runner.step_and_maybe_reset_td(arg)
        if op == W.OP_SEED:
            seed, static = arg
            torch.manual_seed(seed if seed is not None else torch.seed())  # as ParallelEnv's
            return runner.set_seed(seed, static)
        if op == W.OP_GETATTR:
            return runner.getattr(arg)
        if op == W.OP_CALL:
            result = runner.call(*arg)
            return None if result is runner.env else result  # never ship the env itself
        raise RuntimeError(f"unknown opcode {op}")

    def close(self) -> None:
        """Close the env (errors are swallowed: closing must not keep the actor alive)."""
        runner, self.runner = self.runner, None
        if runner is not None:
            with contextlib.suppress(Exception):
                W._close_env(runner.env)


class RemoteWorker(EnvWorker):
    """The :class:`EnvWorker` a Ray actor runs: the actor's process is its own, so it sets
    torch's thread count there and turns autograd off (envs never need it; the parent's
    tensors carry no graph through Ray). Ray names the actor's process ``ray::RemoteWorker``.

    Args:
        index: the worker index (in error messages).
        create_env_fn: a picklable callable returning an env.
        create_env_kwargs: keyword arguments for ``create_env_fn``.
        leaves: this worker's leaves, as for :class:`EnvWorker`.
        num_threads: torch threads in the actor (``None``: unchanged).
    """

    def __init__(
        self,
        index: int,
        create_env_fn: Callable,
        create_env_kwargs: dict,
        leaves: dict | None,
        num_threads: int | None,
    ) -> None:
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        torch.set_grad_enabled(False)
        W._BEAT[:] = [_Beat(self), 0]  # heartbeat() in env code reaches beat()
        super().__init__(index, create_env_fn, create_env_kwargs, leaves)

    def run(self, op: int, arg: Any = None, inputs: Sequence[Any] | None = None) -> tuple:
        """:meth:`EnvWorker.run` without autograd (grad mode is per thread, and the actor
        runs its methods in threads of its own: it has a ``"beat"`` concurrency group)."""
        if torch.is_grad_enabled():
            torch.set_grad_enabled(False)
        return super().run(op, arg, inputs)


class _Beat:
    """Stands for the shared heartbeat counter of a ``ParallelEnv`` worker in an actor:
    :func:`~torchenv.batched.heartbeat` increments ``self[slot]``, which calls ``beat()``."""

    def __init__(self, worker: EnvWorker) -> None:
        self.worker = worker

    def __getitem__(self, slot: int) -> int:
        return 0

    def __setitem__(self, slot: int, value: int) -> None:
        self.worker.beat()
