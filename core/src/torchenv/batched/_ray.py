"""``RayParallelEnv``: one sub-environment per Ray actor, on this machine or across a cluster.

The parent keeps the buffers laid out from the specs (private, as ``SerialEnv``'s) and talks to
each actor with one Ray call per command: the worker's ``"in"`` rows go out as a list of numpy
arrays, the rows the command wrote come back the same way (see
:mod:`torchenv.batched._ray_actor`). Everything else (specs, partial steps and resets,
``step_and_maybe_reset``, seeding, attribute fan-out) is :class:`BatchedEnvBase`'s, shared with
``SerialEnv`` and ``ParallelEnv``.

Each command costs a Ray round trip per worker, issued to all workers before waiting on any:
about 1.5 ms more than ``ParallelEnv`` on one machine, plus the network on a cluster (see
``benchmarks/bench_ray.py`` and ``docs/distributed.md``). Give each actor a natively batched env (``GymEnv(num_envs=...)``,
VMAS, batched MuJoCo) so that the round trip is shared by many envs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

from torchenv.batched import _worker as W
from torchenv.batched._base import BatchedEnvBase
from torchenv.batched._interrupts import deferred_sigint
from torchenv.batched._parallel import _without_grad
from torchenv.batched._ray_actor import BEAT_GROUP, RemoteWorker, as_arrays, copy_arrays
from torchenv.batched._restart import RESTART_KEY, after_restart, check_limit, restart_flags
from torchenv.batched._shared import build_td
from torchenv.specs import Categorical

__all__ = ["RayParallelEnv"]

# seconds a command may run since the actor's last heartbeat (torchenv.batched.heartbeat), as
# ParallelEnv's; starting the actors (a Ray worker process importing torch and building the env:
# a minute or more on a busy machine) gets _START_TIMEOUT unless timeout= is given
_TIMEOUT = float(os.environ.get("TORCHENV_BATCHED_TIMEOUT", "60"))
_START_TIMEOUT = 300.0
_SLICE = 0.2  # seconds between liveness checks while waiting on actors
_IDLE_TIMEOUT = 10.0  # seconds an actor gets to say how long its command has been idle
_CLOSE_TIMEOUT = 10.0  # seconds an actor gets to close its env before it is killed
_CONNECT_TIMEOUT = 10.0  # seconds to open a TCP connection to an explicit "host:port" address


def _import_ray():
    try:
        import ray
    except ImportError as err:
        raise ImportError(
            "RayParallelEnv needs Ray: pip install 'torchenv[ray]' (or pip install ray)"
        ) from err
    return ray


def _from_registry(name: str) -> Callable:
    from torchenv.registry import make

    return functools.partial(make, name)


def _check_reachable(address: str | None) -> None:
    """Fail fast on an explicit ``"host:port"`` that nothing answers: Ray itself retries a
    missing GCS for minutes (20 tries of ~40 s in Ray 2.60) before giving up."""
    if not address or "://" in address or address == "auto" or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT).close()
    except OSError as err:
        raise ConnectionError(f"nothing answers at {address} ({err})") from err


def _dead_local_ray() -> str | None:
    """Why the Ray that this process started cannot answer any more (its raylet or GCS server
    died), or ``None``. Ray started elsewhere (``address=...``) is not looked at: its node
    processes are not ours; Ray reports its lost actors itself."""
    try:
        from ray._private import ray_constants, worker

        node = worker._global_node
        processes = dict(node.all_processes) if node is not None else {}
        kinds = (ray_constants.PROCESS_TYPE_RAYLET, ray_constants.PROCESS_TYPE_GCS_SERVER)
    except Exception:  # pragma: no cover - another Ray version: no check
        return None
    for kind in kinds:
        for info in processes.get(kind, ()):
            code = info.process.poll()
            if code is not None:
                how = f"exit code {code}"
                if code < 0:
                    with contextlib.suppress(ValueError):
                        how = f"killed by {signal.Signals(-code).name}"
                return f"the local Ray's {kind} (pid {info.process.pid}) died ({how})"
    return None


def _kill_actors(actors: list, close_first: bool, hung: frozenset = frozenset()) -> None:
    """Ask the actors to close their envs (bounded wait; not the ``hung`` ones, whose queue is
    blocked), then kill them. Idempotent. Ctrl-C meanwhile is held back until every actor is
    killed (see :mod:`torchenv.batched._interrupts`) and cuts the graceful wait short."""
    if not actors:
        return
    with deferred_sigint() as interrupted:
        ray = _import_ray()
        handles, actors[:] = list(actors), []
        if not ray.is_initialized():  # Ray shut down already: its actors went with it
            return
        if close_first:
            refs = [a.close.remote() for i, a in enumerate(handles) if i not in hung]
            deadline = time.monotonic() + _CLOSE_TIMEOUT
            try:
                while refs and not interrupted and time.monotonic() < deadline:
                    _, refs = ray.wait(refs, num_returns=len(refs), timeout=0.1)
            except Exception:
                pass
        for actor in handles:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)


class RayParallelEnv(BatchedEnvBase):
    """Runs ``num_workers`` environments in Ray actors, as one batched env.

    The same API and the same data, seed for seed, as :class:`ParallelEnv`; each worker is a
    Ray actor that builds its env itself from a picklable factory (a class or function, a
    lambda or closure (Ray pickles it with cloudpickle), an :class:`EnvCreator`, or a registry
    name such as ``"gym:CartPole-v1"`` with ``create_env_kwargs``). A worker may hold a natively
    batched env (``GymEnv(..., num_envs=8)``): the batch dims are concatenated.

    Ray is started (``ray.init(address=address, **ray_init_kwargs)``) only when this process is
    not connected yet; otherwise the current connection is used and ``address`` is ignored.
    A local Ray started here (``address=None``) is bound to 127.0.0.1 and runs no dashboard
    unless ``ray_init_kwargs`` says otherwise. :meth:`close` closes the envs and kills the
    actors; Ray itself stays up (for other envs) until ``ray.shutdown()`` or the end of the
    interpreter.

    A worker whose env raises, whose actor dies, or a cluster that cannot be reached surface as
    :class:`~torchenv.batched.WorkerError` naming the worker, with the remote traceback.

    Args:
        num_workers: number of actors (sub-environments).
        create_env_fn: a factory, a registry name, or one of them per worker.
        create_env_kwargs: keyword arguments for the factory (a dict, or one per worker).

    Keyword Args:
        address: the Ray cluster to connect to when not connected (``"auto"``, ``"ray://..."``,
            ``"host:port"``); ``None`` starts a local Ray.
        num_cpus: CPUs reserved by each actor. Default 1.
        num_gpus: GPUs reserved by each actor. Default 0.
        actor_options: more options for the actors (Ray's ``.options(...)``: ``resources``,
            ``scheduling_strategy``, ``runtime_env``...).
        ray_init_kwargs: more arguments for ``ray.init`` when this env starts Ray.
        timeout: seconds a worker may run one command since its last sign of progress (the
            command's start, or :func:`~torchenv.batched.heartbeat` called by the env, as in
            ``ParallelEnv``) before ``WorkerError``. Default: ``$TORCHENV_BATCHED_TIMEOUT`` or
            60. A dead actor, or a dead raylet or GCS server of a Ray this process started, is
            reported at once, whatever the timeout.
        start_timeout: seconds an actor may take to start (Ray schedules it, its process
            imports torch and builds the env: a minute or more on a busy machine), at start
            and when restarted. Default 300.
        restart_failed: replace an actor that dies, hangs or raises during ``step``,
            ``reset`` or ``step_and_maybe_reset`` by a new one from the same factory, as
            ``ParallelEnv(restart_failed=True)`` does (see :mod:`torchenv.batched._restart`):
            a :class:`~torchenv.batched.WorkerRestartedWarning`, its sub-env's episode ends
            as truncated with ``("next", "worker_restarted")`` true, the other sub-envs'
            data are untouched. The restart is ours, not Ray's (actors run with Ray's
            ``max_restarts=0``): it also covers hangs and exceptions, and reseeds the
            sub-env. A dead local Ray is not restarted. Default ``False``.
        max_restarts: restarts allowed per worker before the error is raised as without
            ``restart_failed``. Default 10.
        **kwargs: the other arguments of :class:`~torchenv.batched._base.BatchedEnvBase`
            (``device``, ``num_sub_threads`` (torch threads per actor), ``use_buffers``...).

    Examples:
        >>> import ray  # doctest: +SKIP
        >>> ray.init(num_cpus=2, include_dashboard=False)  # doctest: +SKIP
        >>> env = RayParallelEnv(2, "builtin:Pendulum")  # doctest: +SKIP
        >>> next_seed = env.set_seed(0)  # doctest: +SKIP
        >>> env.rollout(3).batch_size  # doctest: +SKIP
        torch.Size([2, 3])
        >>> env.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable | str | Sequence[Callable | str] | None = None,
        create_env_kwargs: dict | Sequence[dict] | None = None,
        *,
        address: str | None = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
        actor_options: dict | None = None,
        ray_init_kwargs: dict | None = None,
        timeout: float | None = None,
        start_timeout: float | None = None,
        restart_failed: bool = False,
        max_restarts: int = 10,
        **kwargs: Any,
    ) -> None:
        if not isinstance(max_restarts, int) or isinstance(max_restarts, bool) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0; got {max_restarts!r}.")
        if isinstance(create_env_fn, str):
            create_env_fn = _from_registry(create_env_fn)
        elif isinstance(create_env_fn, (list, tuple)):
            create_env_fn = [_from_registry(f) if isinstance(f, str) else f for f in create_env_fn]
        for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number >= 0; got {value!r}.")
        if start_timeout is not None and (
            isinstance(start_timeout, bool)
            or not isinstance(start_timeout, (int, float))
            or not start_timeout > 0
        ):
            raise ValueError(
                f"start_timeout must be a positive number of seconds; got {start_timeout!r}."
            )
        super().__init__(num_workers, create_env_fn, create_env_kwargs, timeout=timeout, **kwargs)
        d = self.__dict__
        d["address"] = address
        d["num_cpus"] = num_cpus
        d["num_gpus"] = num_gpus
        d["actor_options"] = dict(actor_options or {})
        d["ray_init_kwargs"] = dict(ray_init_kwargs or {})
        d["timeout"] = float(timeout) if timeout is not None else _TIMEOUT
        d["start_timeout"] = _START_TIMEOUT if start_timeout is None else float(start_timeout)
        d["_actors"] = []
        d["_pids"] = []
        d["_broken"] = None
        d["_hung"] = frozenset()  # workers that did not answer in time: killed without waiting
        d["_inflight"] = {}  # async mode: worker -> (ref, kind, input row)
        d["restart_failed"], d["max_restarts"] = bool(restart_failed), max_restarts
        d["_restarter"] = None
        if restart_failed:
            flag = Categorical(2, shape=(*self.batch_size, 1), dtype=torch.bool)
            self.observation_spec[RESTART_KEY] = flag.to(self.device) if self.device else flag

    # ------------------------------------------------------------------ lifecycle
    def _connect(self) -> Any:
        ray = _import_ray()
        if not ray.is_initialized():
            try:
                _check_reachable(self.address)
                kwargs = dict(self.ray_init_kwargs)
                if self.address is None:  # a local Ray: private, no web server
                    kwargs.setdefault("include_dashboard", False)
                    kwargs.setdefault("_node_ip_address", "127.0.0.1")
                ray.init(address=self.address, **kwargs)
            except Exception as err:
                where = f"the Ray cluster at {self.address!r}" if self.address else "a local Ray"
                raise W.WorkerError(
                    f"worker 0 could not start: cannot connect to {where}: "
                    f"{type(err).__name__}: {err}",
                    0,
                    exc_type=type(err).__name__,
                ) from err
        return ray

    def _start(self) -> None:
        ray = self._connect()
        d = self.__dict__
        groups = d["_groups"]
        if groups is not None:
            d["_buffer"] = self._alloc(shared=False)
            d["_rows"] = {
                name: [as_arrays(row) for row in group.rows] for name, group in groups.items()
            }
        options = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus, "max_restarts": 0}
        options.update(self.actor_options)
        actor_cls = ray.remote(concurrency_groups={BEAT_GROUP: 1})(RemoteWorker)
        actor_cls = actor_cls.options(**options)
        d["_actor_cls"] = actor_cls
        actors: list = []
        d["_actors"] = actors
        d["_finalizer"] = weakref.finalize(self, _kill_actors, actors, False)
        d["_broken"] = None
        d["_hung"] = frozenset()
        d["_inflight"] = {}
        d["_restarter"] = _Restarts(self) if d.get("restart_failed") else None
        try:
            with deferred_sigint():  # every actor created is in ``actors``, which close() kills
                for i in range(self.num_workers):
                    actors.append(self._new_actor(i))
            d["_pids"] = self._gather(
                [a.ready.remote() for a in actors], range(self.num_workers), "start"
            )
        except BaseException:
            _kill_actors(actors, False)
            raise

    def _new_actor(self, i: int) -> Any:
        """A new actor for worker ``i`` (at start, or replacing a failed one)."""
        groups = self.__dict__["_groups"]
        leaves = None
        if groups is not None:
            leaves = {name: group.per_worker[i] for name, group in groups.items()}
        return self.__dict__["_actor_cls"].remote(
            i, self.create_env_fn[i], self.create_env_kwargs[i], leaves, self.num_sub_threads
        )

    def _restart_actors(self, failures: dict) -> None:
        """Replace the actors of ``failures`` (``{worker: (WorkerError, lost)}``) by new ones
        from the same factory (``restart_failed=True``); past ``max_restarts`` raise."""
        ray = _import_ray()
        d = self.__dict__
        restarter, actors = d["_restarter"], d["_actors"]
        failed = sorted(failures)
        for i in failed:
            check_limit(restarter, i, failures[i][0], "worker")
        with deferred_sigint():  # the new actors are in ``actors``, which close() kills
            for i in failed:
                with contextlib.suppress(Exception):
                    ray.kill(actors[i], no_restart=True)
                actors[i] = self._new_actor(i)
        d["_hung"] = d["_hung"] - set(failed)
        try:
            pids = self._gather([actors[i].ready.remote() for i in failed], failed, "start")
        except W.WorkerError as err:  # the factory fails now: nothing more to try
            self._fail(err)
        for i, pid in zip(failed, pids):
            old_pid, d["_pids"][i] = d["_pids"][i], pid
            restarter._restarts[i] += 1
            restarter.restarted[i] = (str(failures[i][0]).split("\n", 1)[0], old_pid)

    def _shutdown(self) -> None:
        d = self.__dict__
        finalizer = d.pop("_finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        _kill_actors(d["_actors"], close_first=True, hung=d["_hung"])
        d["_pids"] = []
        d["_inflight"] = {}
        d.pop("_rows", None)
        d.pop("_buffer", None)
        for group in (d["_groups"] or {}).values():
            group.unbind()

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the actors (on their nodes; empty before start and after close)."""
        return list(self.__dict__["_pids"])

    @property
    def actors(self) -> list:
        """The Ray actor handles (empty before start and after close)."""
        return list(self.__dict__["_actors"])

    # ------------------------------------------------------------------ commands
    def _gather(self, refs: list, workers: Sequence[int], what: Any, restart: bool = False) -> list:
        """The values of ``refs`` (one per worker), or a ``WorkerError`` naming the worker;
        :class:`EnvClosedError` when the env was closed (by another thread) meanwhile. With
        ``restart``, failed workers are replaced instead (their value: ``None``)."""
        generation = self.__dict__["_generation"]
        try:
            return self._gather_now(refs, workers, what, restart)
        except Exception as err:
            if self.__dict__["_generation"] != generation and not isinstance(err, W.EnvClosedError):
                raise W.EnvClosedError(
                    f"the RayParallelEnv was closed (from another thread?) during "
                    f"{self._what(what)}; reset() starts new sub-environments"
                ) from err
            raise

    def _pid(self, i: int) -> int | None:
        pids = self.__dict__["_pids"]
        return pids[i] if i < len(pids) else None

    def _where(self, i: int) -> str:
        pid = self._pid(i)
        return f"worker {i} (Ray actor" + (f", pid {pid})" if pid else ")")

    def _gather_now(self, refs: list, workers: Sequence[int], what: Any, restart: bool) -> list:
        answers, failures = self._collect(refs, workers, what, keep_going=restart)
        if failures:
            if not restart:
                self._raise(failures, what)
            self._restart_actors(failures)
        return [answers.get(i) for i in workers]

    def _raise(self, failures: dict, what: Any) -> None:
        """Raise the first of ``failures`` (``{worker: (WorkerError, lost)}``); a lost actor
        (dead, hung) leaves the env unusable."""
        first = min(failures)
        err, lost = failures[first]
        if len(failures) > 1:
            err.args = (err.args[0] + f"\n(workers {sorted(failures)[1:]} failed too)",)
        if lost:
            self._fail(err)
        raise err

    def _command_timeout(self, what: Any) -> float:
        return self.start_timeout if what == "start" else self.timeout

    def _collect(
        self, refs: list, workers: Sequence[int], what: Any, keep_going: bool
    ) -> tuple[dict, dict]:
        """Wait for ``refs`` (one per worker) in slices, checking between slices that the local
        Ray is up and that the workers still running the command are making progress (their
        last :func:`~torchenv.batched.heartbeat` within ``timeout``).

        Returns ``({worker: value}, {worker: (WorkerError, lost)})``: ``lost`` for an actor that
        died or hung, not for an env that raised. Without ``keep_going`` it returns at the
        first lost actor; a dead local Ray raises at once."""
        ray = _import_ray()
        d = self.__dict__
        timeout = self._command_timeout(what)
        start = time.monotonic()
        due = {i: start + timeout for i in workers}
        pending = dict(zip(refs, workers))
        answers: dict = {}
        failures: dict = {}
        if pending:  # the actors may still answer a while after their raylet died
            self._check_ray(workers[0], what)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=_SLICE)
            if ready:
                self._take(ray, ready, pending, what, answers, failures)
                if not pending or (not keep_going and any(v[1] for v in failures.values())):
                    break
            self._check_ray(next(iter(pending.values())), what)
            now = time.monotonic()
            for ref, i in list(pending.items()):
                if now < due[i]:
                    continue
                idle = self._idle(ray, i) if what != "start" else timeout
                if idle is None or idle < timeout:  # None: done, its answer is on the way
                    due[i] = time.monotonic() + (_SLICE if idle is None else timeout - idle)
                    continue
                del pending[ref]
                d["_hung"] = d["_hung"] | {i}
                hint = (
                    f" (start_timeout=..., default {_START_TIMEOUT:g} s)"
                    if what == "start"
                    else " of its last sign of progress (timeout=..., default "
                    f"$TORCHENV_BATCHED_TIMEOUT or {_TIMEOUT:g} s; env code may call "
                    "torchenv.batched.heartbeat() to extend it)"
                )
                failures[i] = (
                    W.WorkerError(
                        f"{self._where(i)} did not answer {self._what(what)} within "
                        f"{timeout:g} s{hint}",
                        i,
                        pid=self._pid(i),
                    ),
                    True,
                )
                if not keep_going:
                    return answers, failures
        return answers, failures

    def _check_ray(self, i: int, what: Any) -> None:
        """Raise ``WorkerError`` (naming worker ``i``, which waits) if the local Ray is dead."""
        cause = _dead_local_ray()
        if cause is not None:
            self._fail(
                W.WorkerError(
                    f"{self._where(i)} cannot answer {self._what(what)}: {cause}; Ray must be "
                    "started again (ray.shutdown(), then a new env)",
                    i,
                    cause,
                    pid=self._pid(i),
                )
            )

    def _take(self, ray: Any, ready: list, pending: dict, what: Any, answers, failures) -> None:
        """Move the ``ready`` refs' answers (or failures) out of ``pending``."""
        try:
            values = ray.get(ready)
        except Exception:
            values = [self._get_one(ray, ref, pending[ref], what) for ref in ready]
        for ref, value in zip(ready, values):
            i = pending.pop(ref)
            if isinstance(value, W.WorkerError):
                failures[i] = (value, True)
            elif value[0] == "error":
                name, msg, text = value[1]
                where = self._where(i)
                failures[i] = (
                    W.WorkerError(
                        f"{where} raised {name} during {self._what(what)}: {msg}\n\n"
                        f"Traceback in {where}:\n{text}",
                        i,
                        text,
                        name,
                        pid=self._pid(i),
                    ),
                    False,
                )
            else:
                answers[i] = value[1]

    def _idle(self, ray: Any, i: int) -> float | None:
        """Seconds since worker ``i``'s command started or last showed progress (asked from the
        actor's ``"beat"`` thread); ``None`` if it has no command running (its answer is on the
        way); ``inf`` if it cannot say."""
        try:
            actor = self.__dict__["_actors"][i]
            ref = actor.idle.options(concurrency_group=BEAT_GROUP).remote()
            return ray.get(ref, timeout=_IDLE_TIMEOUT)
        except Exception:
            return float("inf")

    @staticmethod
    def _what(what: Any) -> str:
        return what if isinstance(what, str) else W.op_name(what)

    def _get_one(self, ray: Any, ref: Any, i: int, what: Any) -> Any:
        """The answer of a ready ref, or the ``WorkerError`` of a lost actor."""
        try:
            return ray.get(ref, timeout=_IDLE_TIMEOUT)
        except Exception as err:
            how = "died" if isinstance(err, ray.exceptions.RayActorError) else "failed"
            return W.WorkerError(
                f"worker {i} (Ray actor) {how} during {self._what(what)}: {err}",
                i,
                str(err),
                type(err).__name__,
                pid=self._pid(i),
            )

    def _fail(self, err: W.WorkerError) -> None:
        """A lost worker: the env cannot go on (as ``ParallelEnv`` after a worker died)."""
        self.__dict__["_broken"] = str(err).split("\n", 1)[0]
        raise err

    def _check_usable(self) -> None:
        d = self.__dict__
        if d["_broken"] is not None:
            raise RuntimeError(
                f"this RayParallelEnv can no longer be used: {d['_broken']}; close() it and "
                "use it again to start new actors"
            )
        if d["_inflight"]:
            raise RuntimeError(
                f"workers {sorted(d['_inflight'])} have async commands in flight: collect them "
                "with async_step_recv / async_reset_recv first"
            )

    def _dispatch(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        out = self._run(op, workers, args)
        d = self.__dict__
        restarter = d.get("_restarter")
        if restarter is not None:
            if restarter.restarted:  # restart_failed=True replaced some workers
                out = after_restart(self, restarter, op, workers, args, out)
            if op == W.OP_SEED:  # the seed of a restarted sub-env
                seeds = d.setdefault("_sub_seeds", {})
                for i, (seed, _) in zip(workers, args):
                    seeds[i] = seed
        return out

    def _run(self, op: int, workers: Sequence[int], args: Sequence[Any] | None) -> list:
        """Send ``op`` to ``workers`` and wait for their answers; the data commands' answers
        go to the buffers (returns the workers whose ``"root"`` rows were written)."""
        self._check_usable()
        d = self.__dict__
        actors = d["_actors"]
        if not actors:
            raise W.EnvClosedError(
                "the RayParallelEnv was closed (from another thread?); reset() starts new "
                "sub-environments"
            )
        rows = d.get("_rows")
        refs = []
        for n, i in enumerate(workers):
            arg = args[n] if args is not None else None
            inputs = None
            if op in (W.OP_STEP, W.OP_STEP_AND_MAYBE_RESET) or (op == W.OP_RESET and arg[0]):
                inputs = rows["in"][i]  # Ray serialises them now: the buffer may be reused
            refs.append(actors[i].run.remote(op, arg, inputs))
        restart = d.get("restart_failed") and op in W.COUNTED_OPS
        answers = self._gather(refs, workers, op, restart)
        # a restarted worker's answer is None: after_restart writes its rows
        if op == W.OP_STEP:
            for i, arrays in zip(workers, answers):
                if arrays is not None:
                    copy_arrays(rows["next"][i], arrays)
            return []
        if op == W.OP_STEP_AND_MAYBE_RESET:
            written = []
            for i, answer in zip(workers, answers):
                if answer is None:
                    continue
                wrote, nxt, root = answer
                copy_arrays(rows["next"][i], nxt)
                if wrote:
                    copy_arrays(rows["root"][i], root)
                    written.append(i)
            return written
        if op == W.OP_RESET:
            for i, arrays in zip(workers, answers):
                if arrays is not None:
                    copy_arrays(rows["root"][i], arrays)
            return []
        return answers

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

    # ------------------------------------------------------------------ async mode
    def async_step_send(
        self, tensordict: TensorDictBase, env_index: Sequence[int] | None = None
    ) -> None:
        """Send a step to some workers without waiting for them.

        Args:
            tensordict: the inputs (actions, states), batch ``[len(env_index), *sub_batch]``
                (``[num_workers, *sub_batch]`` when ``env_index`` is ``None``).
            env_index: the workers to step. Default: all. A worker may have one command in
                flight at a time.

        Collect the results with :meth:`async_step_recv`.
        """
        if not self.__dict__["_started"]:
            self._start_for_step()  # EnvClosedError after close(), as step
        self._async_send("step", tensordict, env_index)

    def async_reset_send(
        self, tensordict: TensorDictBase | None = None, env_index: Sequence[int] | None = None
    ) -> None:
        """Send a reset to some workers (default: all) without waiting; see
        :meth:`async_reset_recv`. ``tensordict`` may carry state entries and ``"_reset"``
        masks for natively batched sub-envs (batch ``[len(env_index), *sub_batch]``)."""
        self._async_send("reset", tensordict, env_index)

    def async_step_recv(self, min_get: int = 1, timeout: float | None = None) -> TensorDictBase:
        """The steps that are ready: at least ``min_get`` (or all that are in flight).

        Returns the inputs sent, with ``"next"`` holding the step's output, for the workers
        that answered, in worker order, batch ``[k, *sub_batch]``; ``"env_index"`` (expanded
        over the sub-batch) says which worker each row is. Raises ``TimeoutError`` when fewer
        than ``min_get`` answers arrive within ``timeout`` seconds.
        """
        return self._async_recv("step", min_get, timeout)

    def async_reset_recv(self, min_get: int = 1, timeout: float | None = None) -> TensorDictBase:
        """The resets that are ready (see :meth:`async_step_recv`): their root data, with
        ``"env_index"``."""
        return self._async_recv("reset", min_get, timeout)

    @property
    def async_pending(self) -> list[int]:
        """The workers with an async command in flight."""
        return sorted(self.__dict__["_inflight"])

    def _async_send(
        self, kind: str, tensordict: TensorDictBase | None, env_index: Sequence[int] | None
    ) -> None:
        self._ensure_started()
        d = self.__dict__
        if d["_broken"] is not None:
            self._check_usable()
        ids = list(range(self.num_workers)) if env_index is None else [int(i) for i in env_index]
        bad = [i for i in ids if not 0 <= i < self.num_workers]
        if bad:
            raise IndexError(
                f"env_index: workers {bad} do not exist (num_workers={self.num_workers})"
            )
        busy = [i for i in ids if i in d["_inflight"]]
        if busy or len(set(ids)) != len(ids):
            raise RuntimeError(
                f"env_index: workers {busy or ids} already have (or would get two) commands in "
                "flight: receive their results first"
            )
        if tensordict is not None and tensordict.batch_size[:1] != torch.Size([len(ids)]):
            raise ValueError(
                f"tensordict: expected a leading batch dim of {len(ids)} (one row per worker in "
                f"env_index); got batch_size {tuple(tensordict.batch_size)}"
            )
        with torch.no_grad():
            for row, i in enumerate(ids):
                sub = tensordict[row] if tensordict is not None else None
                if kind == "step":
                    if sub is None:
                        raise TypeError("async_step_send needs a tensordict with the actions")
                    op, arg, inputs = self._step_payload(sub, i)
                else:
                    op, arg, inputs = self._reset_payload(sub, i)
                ref = d["_actors"][i].run.remote(op, arg, inputs)
                d["_inflight"][i] = (ref, kind, sub)

    def _step_payload(self, sub: TensorDictBase, i: int) -> tuple:
        if not self._use_buffers:
            return W.OP_STEP_NO_BUFFERS, sub.exclude("_step"), None
        leaves = self._groups["in"].per_worker[i]
        inputs = [_leaf(sub, key) if key[-1] != "_reset" else None for key, _, _ in leaves]
        return W.OP_STEP, None, inputs

    def _reset_payload(self, sub: TensorDictBase | None, i: int) -> tuple:
        if not self._use_buffers:
            if sub is not None:
                sub = sub.select(*self.state_keys, *self.reset_keys, strict=False)
                sub = None if sub.is_empty() else sub
            return W.OP_RESET_NO_BUFFERS, (sub, {}), None
        if sub is None:
            return W.OP_RESET, (None, {}), None
        wanted = [*self.state_keys, *self.reset_keys]
        keys = [k if isinstance(k, tuple) else (k,) for k in wanted if sub.get(k, None) is not None]
        leaves = self._groups["in"].per_worker[i]
        inputs = [_leaf(sub, key) if key in keys else None for key, _, _ in leaves]
        return W.OP_RESET, (keys or None, {}), inputs if keys else None

    def _async_recv(self, kind: str, min_get: int, timeout: float | None) -> TensorDictBase:
        ray = _import_ray()
        d = self.__dict__
        mine = {i: entry for i, entry in d["_inflight"].items() if entry[1] == kind}
        if not mine:
            raise RuntimeError(f"no async {kind} in flight: call async_{kind}_send first")
        want = max(1, min(int(min_get), len(mine)))
        by_ref = {entry[0]: i for i, entry in mine.items()}
        refs = list(by_ref)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:  # in slices: a dead local Ray is reported at once
            left = _SLICE if deadline is None else min(_SLICE, deadline - time.monotonic())
            ready, rest = ray.wait(refs, num_returns=want, timeout=max(0.0, left))
            if len(ready) >= want or (deadline is not None and time.monotonic() >= deadline):
                break
            self._check_ray(by_ref[rest[0]], kind)
        if len(ready) < want:
            raise TimeoutError(
                f"async_{kind}_recv: {len(ready)} of the {want} answers wanted arrived within "
                f"{timeout} s; the others stay in flight"
            )
        if rest:  # take whatever else is ready too
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready = [*ready, *more]
        workers = sorted(by_ref[ref] for ref in ready)
        for i in workers:
            del d["_inflight"][i]
        answers = self._gather([mine[i][0] for i in workers], workers, kind)
        tds = []
        for i, value in zip(workers, answers):
            if self._use_buffers:
                group = self._groups["next" if kind == "step" else "root"]
                pairs = [
                    (key, torch.from_numpy(a.copy()) if not isinstance(a, torch.Tensor) else a)
                    for (key, _, _), a in zip(group.per_worker[i], value)
                ]
                value = build_td(pairs, self._worker_batch[i])
            if kind == "step":
                sub = mine[i][2].exclude("next", "_step")
                sub.set("next", value)
                value = sub
            tds.append(value)
        out = LazyStackedTensorDict.maybe_dense_stack(tds, 0)
        index = torch.tensor(workers).reshape(-1, *([1] * (out.batch_dims - 1)))
        out.set("env_index", index.expand(out.batch_size).clone())
        return self._cast(out)

    def __repr__(self) -> str:
        return super().__repr__().replace("(num_workers", "(ray, num_workers", 1)


class _Restarts:
    """What :mod:`torchenv.batched._restart` reads from a worker pool (``after_restart``,
    ``check_limit``), for a ``RayParallelEnv``: one actor per sub-env."""

    def __init__(self, env: RayParallelEnv) -> None:
        self._env = weakref.ref(env)
        self.max_restarts = env.max_restarts
        self.restarted: dict[int, tuple[str, int | None]] = {}  # worker: (cause, old pid)
        self._restarts = [0] * env.num_workers
        self._owner = list(range(env.num_workers))

    @property
    def broken(self) -> str | None:
        return self._env().__dict__["_broken"]

    @broken.setter
    def broken(self, value: str | None) -> None:
        self._env().__dict__["_broken"] = value

    def run(self, op: int, workers: Sequence[int], args=None, reply: bool = False) -> Any:
        return self._env()._run(op, workers, args)


def _leaf(td: TensorDictBase, key: tuple) -> Any:
    value = td.get(key, None)
    if value is None:
        return None
    value = value.detach()
    if value.device.type != "cpu":
        value = value.cpu()
    try:
        return value.numpy()
    except TypeError:
        return value
