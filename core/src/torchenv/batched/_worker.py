"""What runs next to one sub-environment: the runner (shared by both batched envs) and the
worker process loop of ``ParallelEnv``.

``EnvRunner`` owns one sub-environment and its rows of the buffers. ``SerialEnv`` calls its
runners in-process; a ``ParallelEnv`` worker calls the very same runner from ``worker_main``.
Both batched envs therefore run the same code for a step, a reset and a
``step_and_maybe_reset``, which is why they give identical results seed for seed.

Protocol of a worker (all objects created by the parent before the process starts):

* ``go`` (a semaphore) wakes the worker; the opcode is read from the shared control block.
* Data commands (step, reset, step_and_maybe_reset; :data:`COUNTED_OPS`) read their input from
  the ``"in"`` rows and write the ``"next"``/``"root"`` rows, then set the status slot and count
  down: each worker takes one unit from the shared ``left`` semaphore (the parent put one fewer
  than the number of workers commanded); the one that finds it empty is the last and releases
  the shared ``all_done``, so the parent is woken once per command.
* Other commands (seeding, attribute access, method calls; reset kwargs too) receive their
  arguments on the worker's pipe; replies come back on the pipe, then the worker's own ``done``
  is released.
* An exception sets status ``ERROR`` and sends ``(type name, message, traceback text)`` on the
  pipe (bounded in size, so the send never blocks) before the worker signals its end.
* The worker ignores SIGINT (the parent handles Ctrl-C and closes it) and dies with its parent,
  even when stuck in env code (:func:`die_with_parent`): on Linux the kernel sends it SIGKILL
  when its parent thread exits (``prctl(PR_SET_PDEATHSIG)``), and a watchdog thread checks the
  parent's pid twice a second (every platform; it covers env code that loops in Python or
  sleeps, not C code that holds the GIL forever).

Only ``torch``, ``tensordict`` and ``numpy`` are imported here; the environment's own imports
happen when its constructor runs in the worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.batched._shared import Key, build_td, write_row
from torchenv.envs._closed import EnvClosedError  # one class for every env

__all__ = [
    "CallableMarker",
    "EnvClosedError",
    "EnvRunner",
    "WorkerError",
    "heartbeat",
    "worker_main",
]

# opcodes (control block slot ``2 * index``)
OP_STEP = 1
OP_STEP_AND_MAYBE_RESET = 2
OP_RESET = 3
OP_SEED = 4
OP_GETATTR = 5
OP_CALL = 6
OP_CLOSE = 7
OP_STEP_NO_BUFFERS = 8
OP_RESET_NO_BUFFERS = 9
OP_SMR_NO_BUFFERS = 10
OP_META = 11  # the sub-env's meta-data (``metadata_from_workers=True``)

# commands without a reply: the workers signal their end by counting down (see ``_pool``)
COUNTED_OPS = frozenset({OP_STEP, OP_STEP_AND_MAYBE_RESET, OP_RESET})

# status (control block slot ``2 * index + 1``)
STATUS_OK = 0
STATUS_ERROR = 1
STATUS_ROOT_WRITTEN = 2  # step_and_maybe_reset wrote the "root" rows (a reset happened)

_MAX_TRACEBACK = 16_000  # characters; keeps an error message under the pipe's buffer size

_OP_NAMES = {
    OP_STEP: "step",
    OP_STEP_AND_MAYBE_RESET: "step_and_maybe_reset",
    OP_RESET: "reset",
    OP_SEED: "set_seed",
    OP_GETATTR: "getattr",
    OP_CALL: "method call",
    OP_CLOSE: "close",
    OP_STEP_NO_BUFFERS: "step",
    OP_RESET_NO_BUFFERS: "reset",
    OP_SMR_NO_BUFFERS: "step_and_maybe_reset",
    OP_META: "meta-data",
}


class CallableMarker:
    """Sent instead of a method when an attribute asked for is callable (it is then called)."""


def op_name(op: int) -> str:
    return _OP_NAMES.get(op, f"opcode {op}")


class WorkerError(RuntimeError):
    """An error raised in, or the death of, a sub-environment of a batched env.

    Attributes:
        worker_index: index of the sub-environment.
        worker_traceback: the traceback text from the worker (empty when it died).
        exc_type: name of the exception type raised in the worker (empty when it died).
        pid: the worker's process id (``None`` for in-process sub-environments).
        signal: the name of the signal that killed the worker (``"SIGKILL"``), or ``None``.
        exitcode: the worker's exit code when it died, else ``None``.
    """

    def __init__(
        self,
        message: str,
        worker_index: int,
        worker_traceback: str = "",
        exc_type: str = "",
        *,
        pid: int | None = None,
        signal: str | None = None,
        exitcode: int | None = None,
    ) -> None:
        super().__init__(message)
        self.worker_index = worker_index
        self.worker_traceback = worker_traceback
        self.exc_type = exc_type
        self.pid = pid
        self.signal = signal
        self.exitcode = exitcode


def describe_exception(err: BaseException) -> tuple[str, str, str]:
    """``(type name, message, traceback text)``, the traceback text bounded in size."""
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    if len(text) > _MAX_TRACEBACK:
        text = "...\n" + text[-_MAX_TRACEBACK:]
    msg = str(err)
    if len(msg) > _MAX_TRACEBACK // 4:
        msg = msg[: _MAX_TRACEBACK // 4] + "..."
    return type(err).__name__, msg, text


# What an error of the env's construction says instead of "during <command>": the worker builds
# its env when it starts and reports a failure at the first command (often a reset).
BUILDING = "while building the env (create_env_fn)"


def make_worker_error(index: int, pid: int | None, op: int, info: tuple[str, ...]):
    """The :class:`WorkerError` for ``info``: ``(type name, message, traceback)``, and a fourth
    item that says when it happened (:data:`BUILDING`) instead of ``during <op>``."""
    name, msg, text, *when = info
    doing = when[0] if when else f"during {op_name(op)}"
    where = f"worker {index}" + (f" (pid {pid})" if pid is not None else "")
    return WorkerError(
        f"{where} raised {name} {doing}: {msg}\n\nTraceback in {where}:\n{text}",
        index,
        text,
        name,
        pid=pid,
    )


class EnvRunner:
    """One sub-environment and its rows of the buffers.

    Args:
        env: the sub-environment.
        groups: the buffer groups (``"in"``, ``"next"``, ``"root"``), bound, or ``None`` when
            buffers are not used.
        index: the worker index (which rows are this env's).
    """

    def __init__(self, env: Any, groups: dict | None, index: int) -> None:
        self.env = env
        self.batch_size = env.batch_size
        self.device = env.device
        if groups is not None:
            self._in = groups["in"].rows[index]
            # a step's input: actions and states, without the "_reset" flags
            self._step_in = [(k, v) for k, v in self._in if k[-1] != "_reset"]
            # no nested key: the input TensorDict is made from this dict of views at each step
            flat = all(len(k) == 1 for k, _ in self._step_in)
            self._step_in_flat = {k[0]: v for k, v in self._step_in} if flat else None
            self._next = groups["next"].writers[index]
            self._root = groups["root"].writers[index]
            root_rows = groups["root"].rows[index]
            in_views = dict(self._in)
            # state entries the step does not output are carried from the input (as step_mdp)
            self._carry = [(in_views[k], v) for k, v in root_rows if k in in_views]
            self._root_always = not groups["root"].dense
            # The env's last outputs (observations, dones) join the input of its next _step, as
            # in TorchRL, whose sub-envs step on a tensordict that still holds them: envs that
            # keep their state in observations (not declared as state) read it there. They are
            # the "root" rows after a reset, the "next" rows after a step without one.
            next_views = dict(groups["next"].rows[index])
            after_reset = [(k, v) for k, v in root_rows if k not in in_views]
            after_step = [(k, next_views[k]) for k, _ in after_reset if k in next_views]
            if flat and all(len(k) == 1 for k, _ in after_reset):
                # flat keys: the input is one dict merge away
                self._seen_after_reset = {k[0]: v for k, v in after_reset}
                self._seen_after_step = {k[0]: v for k, v in after_step}
            else:  # nested keys: the input is built from (key, view) pairs
                self._step_in_flat = None
                self._seen_after_reset, self._seen_after_step = after_reset, after_step
            self._seen = self._seen_after_reset
        self._lean = _supports_lean_step(env)
        self._direct = self._bind_direct(groups, index) if groups is not None else None

    def _bind_direct(self, groups: dict, index: int) -> tuple | None:
        """``(action view, next arrays, root arrays)`` when the env's direct array I/O can fill
        this worker's rows (see :mod:`torchenv.envs._direct`), else ``None``."""
        from torchenv.envs._direct import direct_plan

        plan = direct_plan(self.env) if self._lean else None
        if plan is None or not plan.flat:  # nested keys: the TensorDict runner
            return None
        views = {name: dict(groups[name].rows[index]) for name in ("in", "next", "root")}
        try:
            action = views["in"][(plan.action_key,)]
            nxt = {k: views["next"].pop((k,)).numpy() for k in plan.next_keys}
            root = {k: views["root"].pop((k,)).numpy() for k in plan.root_keys}
        except (KeyError, RuntimeError, TypeError):
            return None
        if views["next"] or views["root"]:  # entries the hooks would not write
            return None
        for key, array in (*nxt.items(), *root.items()):
            if tuple(array.shape) != tuple(plan.leaves[key][0]):
                return None
        return action, nxt, root, tuple(plan.batch_size)

    # ------------------------------------------------------------------ with buffers
    def _input(self) -> TensorDictBase:
        flat = self._step_in_flat
        if flat is not None:
            seen = self._seen
            source = {**seen, **flat} if seen else flat
            td = TensorDict._new_unsafe(source, self.batch_size, nested=False)
        else:
            td = build_td([*self._seen, *self._step_in], self.batch_size, flat=False)
        device = self.device
        if device is not None and device.type != "cpu":
            td = td.to(device)
        return td

    def step(self) -> None:
        """``env._step`` on the input rows; the output goes to the ``"next"`` rows."""
        direct = self._direct
        if direct is not None:
            self.env._step_into(direct[0], direct[1])
            return
        write_row(self._next, self.env._step(self._input()))
        self._seen = self._seen_after_step

    def reset(self, keys: Sequence[Key] | None, kwargs: dict) -> None:
        """``env.reset``; ``keys`` selects the input rows passed as the reset tensordict."""
        td = None
        if keys:
            wanted = set(keys)
            td = build_td([(k, v.clone()) for k, v in self._in if k in wanted], self.batch_size)
            if self.device is not None:
                td = td.to(self.device)
        write_row(self._root, self.env.reset(td, **kwargs))
        self._seen = self._seen_after_reset

    def step_and_maybe_reset(self) -> bool:
        """Step, then reset if done; returns whether the ``"root"`` rows were written.

        The ``"next"`` rows always receive the step's output. The ``"root"`` rows (the next
        input) are written only when they differ from the ``"next"`` rows: after a reset, for
        envs stepped through their own ``step_and_maybe_reset``, or for per-worker layouts.
        Otherwise the parent builds the root from the ``"next"`` data, as ``step_mdp`` does.

        For an env that keeps ``EnvBase``'s own ``step`` / ``step_and_maybe_reset`` /
        ``maybe_reset`` (and has no auto-reset or type checks), the tensordicts that
        ``EnvBase.step_and_maybe_reset`` would build are skipped: ``_step`` plus ``EnvBase``'s
        output completion, written straight into the buffers, and ``env.reset`` on done.
        """
        env = self.env
        direct = self._direct
        if direct is not None:  # the env writes straight into the shared rows
            action, nxt, root, batch = direct
            if env._step_into(action, nxt):
                if batch:  # the rows that are not reset carry on
                    for key, array in root.items():
                        np.copyto(array, nxt[key])
                    env._reset_into(root, nxt["done"].reshape(batch))
                else:
                    env._reset_into(root, None)
                return True
            if self._root_always:
                for key, array in root.items():
                    np.copyto(array, nxt[key])
                return True
            return False
        if not self._lean:
            td, td_ = env.step_and_maybe_reset(self._input())
            write_row(self._next, td._tensordict["next"] if type(td) is TensorDict else td["next"])
            write_row(self._root, td_)
            return True
        out = env._step(self._input())
        env._plan.complete_output(env, out, step=True)
        write_row(self._next, out)
        if env.any_done(out):
            for src, dst in self._carry:
                dst.copy_(src)
            write_row(self._root, env.reset(out, select_reset_only=True))
            self._seen = self._seen_after_reset
            return True
        if self._root_always:
            for src, dst in self._carry:
                dst.copy_(src)
            write_row(self._root, out)
            self._seen = self._seen_after_reset
            return True
        self._seen = self._seen_after_step
        return False

    # ------------------------------------------------------------------ without buffers
    def step_td(self, td: TensorDictBase) -> TensorDictBase:
        return self.env._step(td)

    def reset_td(self, td: TensorDictBase | None, kwargs: dict) -> TensorDictBase:
        return self.env.reset(td, **kwargs)

    def step_and_maybe_reset_td(self, td: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        return self.env.step_and_maybe_reset(td)

    # ------------------------------------------------------------------ generic
    def set_seed(self, seed: int | None, static_seed: bool) -> int | None:
        return self.env.set_seed(seed, static_seed=static_seed)

    def getattr(self, name: str) -> Any:
        value = getattr(self.env, name)
        if inspect.ismethod(value) or inspect.isfunction(value) or inspect.isbuiltin(value):
            return CallableMarker()
        return value

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        return getattr(self.env, name)(*args, **kwargs)


def _supports_lean_step(env: Any) -> bool:
    """Whether ``EnvRunner.step_and_maybe_reset`` may skip ``EnvBase.step``'s wrapping."""
    from torchenv.envs import EnvBase

    cls = type(env)
    return (
        isinstance(env, EnvBase)
        and cls.step is EnvBase.step
        and cls.step_and_maybe_reset is EnvBase.step_and_maybe_reset
        and cls.maybe_reset is EnvBase.maybe_reset
        and cls.any_done is EnvBase.any_done
        and not env.auto_reset
        and not env.run_type_checks
        and (env.device is None or env.device.type == "cpu")
    )


def _close_env(env: Any) -> None:
    close = getattr(env, "close", None)
    if close is None:
        return
    try:
        close(raise_if_closed=False)
    except TypeError:
        close()


def _parent_alive(parent_pid: int, first_ppid: int) -> bool:
    if os.getppid() != first_ppid:
        return False
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else (cannot happen for our parent)
        return True
    return True


_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_BEAT: list = []  # in a worker process: [heartbeat slot view, its index]


def heartbeat() -> None:
    """Tell the batched env waiting on this worker that its long command is progressing.

    ``ParallelEnv`` and ``RayParallelEnv`` declare a worker hung when a command has run for
    ``timeout`` seconds (default 60) since the worker's last heartbeat: env code with steps that
    may legitimately take longer (a long physics integration, a planner) calls this now and
    then. A no-op outside such a worker (a ``ParallelEnv`` process or a ``RayParallelEnv``
    actor), so env code may call it unconditionally.

    Examples:
        >>> from torchenv.batched import heartbeat
        >>> heartbeat()  # in this process: nothing to tell
    """
    if _BEAT:
        view, slot = _BEAT
        view[slot] = (view[slot] + 1) & 0x3FFFFFFF


_WATCHDOG_PERIOD = 0.5  # seconds between two looks at the parent's pid


def die_with_parent(parent_pid: int, first_ppid: int, kernel_signal: bool) -> None:
    """Make this worker die when its parent does, whatever the worker is doing.

    ``kernel_signal``: also ask the kernel for SIGKILL when the parent *thread* exits (Linux).
    That is only safe when the thread that started the worker lives as long as its process (the
    main thread, or the forkserver), so the caller says so; the watchdog thread runs always.
    """
    if kernel_signal and sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):  # no libc / no prctl: the watchdog remains
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if not _parent_alive(parent_pid, first_ppid):  # died before the request above
        os.kill(os.getpid(), signal.SIGKILL)

    def watch() -> None:
        while True:
            time.sleep(_WATCHDOG_PERIOD)
            if not _parent_alive(parent_pid, first_ppid):
                os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="torchenv-parent-watchdog", daemon=True).start()


def worker_main(
    index: int | Sequence[int],
    create_env_fn: Callable | Sequence[Callable],
    create_env_kwargs: dict | Sequence[dict],
    buffer: Any,
    groups: dict | None,
    ctl_offset: int,
    go: Any,
    signals: tuple,
    conn: Any,
    parent_pid: int,
    num_threads: int | None,
    kernel_signal: bool = True,
    beat_offset: int | None = None,
) -> None:
    """Body of a ``ParallelEnv`` worker process (see the module docstring).

    ``index`` is the sub-env this process runs, or a list of them (``envs_per_worker``), with
    one factory and one kwargs dict each. Each sub-env has its own control slots and rows; a
    command wakes the process once, which runs it on each sub-env whose op slot is set (in
    ascending index order: arguments and replies travel on the pipe in that order), then
    signals its end once.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first_ppid = os.getppid()  # the env's process, or the forkserver started by it
    die_with_parent(parent_pid, first_ppid, kernel_signal)
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    torch.set_grad_enabled(False)

    if isinstance(index, int):
        indices, fns, all_kwargs = [index], [create_env_fn], [create_env_kwargs]
    else:
        indices, fns, all_kwargs = list(index), list(create_env_fn), list(create_env_kwargs)
    lead = indices[0]
    ctl = buffer.int32_view(ctl_offset, 2 * (max(indices) + 1))
    if beat_offset is not None:
        _BEAT[:] = [buffer.int32_view(beat_offset, lead + 1), lead]

    init_errors: dict[int, tuple[str, ...]] = {}
    runners: dict[int, EnvRunner] = {}
    if groups is not None:
        for group in groups.values():
            group.bind(buffer, group.offset)
    for i, fn, kwargs in zip(indices, fns, all_kwargs):
        try:
            env = fn(**kwargs)
            if hasattr(env, "set_spec_lock_"):
                env.set_spec_lock_(True)
            runners[i] = EnvRunner(env, groups, i)
        except BaseException as err:  # reported at the first command
            init_errors[i] = (*describe_exception(err), BUILDING)

    done, left, all_done = signals
    send = conn.send
    recv = conn.recv

    def run(i: int, op: int) -> None:
        """Run ``op`` on sub-env ``i``; its status goes to its slot, replies to the pipe."""
        status_slot = 2 * i + 1
        runner = runners.get(i)
        try:
            if runner is None:
                send(("error", init_errors[i]))
                ctl[status_slot] = STATUS_ERROR
                return
            status = STATUS_OK
            if op == OP_STEP_AND_MAYBE_RESET:
                if runner.step_and_maybe_reset():
                    status = STATUS_ROOT_WRITTEN
            elif op == OP_STEP:
                runner.step()
            elif op == OP_RESET:
                runner.reset(*recv())
            elif op == OP_STEP_NO_BUFFERS:
                send(("ok", runner.step_td(recv())))
            elif op == OP_RESET_NO_BUFFERS:
                td, kwargs = recv()
                send(("ok", runner.reset_td(td, kwargs)))
            elif op == OP_SMR_NO_BUFFERS:
                send(("ok", runner.step_and_maybe_reset_td(recv())))
            elif op == OP_SEED:
                seed, static = recv()
                torch.manual_seed(seed if seed is not None else torch.seed())
                send(("ok", runner.set_seed(seed, static)))
            elif op == OP_GETATTR:
                send(("ok", runner.getattr(recv())))
            elif op == OP_META:
                from torchenv.batched._creator import _meta_data

                send(("ok", _meta_data(runner.env)))
            elif op == OP_CALL:
                name, args, kwargs = recv()
                result = runner.call(name, args, kwargs)
                if result is runner.env:
                    result = None  # never ship the env itself through the pipe
                send(("ok", result))
            else:
                raise RuntimeError(f"unknown opcode {op}")
            ctl[status_slot] = status
        except BaseException as err:
            ctl[status_slot] = STATUS_ERROR
            with contextlib.suppress(BaseException):
                send(("error", describe_exception(err)))

    single = len(indices) == 1
    while True:
        if not go.acquire(timeout=1.0):
            if not _parent_alive(parent_pid, first_ppid):
                break  # orphaned: the parent died without closing us
            continue
        if single:
            active = indices if ctl[2 * lead] else ()
        else:
            active = [i for i in indices if ctl[2 * i]]
        op = ctl[2 * active[0]] if active else 0
        # 0 on a wake-up: a close raced the clear below (only the parent's shutdown writes
        # without waiting for the worker to be idle), so it is a close as well.
        if op in (OP_CLOSE, 0):
            for runner in runners.values():
                with contextlib.suppress(BaseException):  # closing must not hang the parent
                    _close_env(runner.env)
            ctl[2 * lead + 1] = STATUS_OK
            done.release()
            break
        for i in active:
            run(i, op)
        # Idle again: the parent tells a hung worker from one that answered. A close sent from
        # another thread while this command ran has overwritten a slot: leave it for the loop.
        for i in active:
            if ctl[2 * i] == op:
                ctl[2 * i] = 0
        if op in COUNTED_OPS:
            if not left.acquire(False):  # the last of the workers sent this command
                all_done.release()
        else:
            done.release()
    with contextlib.suppress(OSError):
        conn.close()
