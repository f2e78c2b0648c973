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
from torchenv.batched._ray_actor import RemoteWorker, as_arrays, copy_arrays
from torchenv.batched._shared import build_td

__all__ = ["RayParallelEnv"]

# seconds; longer than ParallelEnv's 60: the first command also waits for the actor to start
# (a Ray worker process importing torch and building the env: minutes on a busy machine)
_TIMEOUT = float(os.environ.get("TORCHENV_BATCHED_TIMEOUT", "600"))
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
        timeout: seconds to wait for a worker's answer before raising ``WorkerError``.
            Default: ``$TORCHENV_BATCHED_TIMEOUT`` or 600 (the first command also waits for
            the actors to start).
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
        **kwargs: Any,
    ) -> None:
        if isinstance(create_env_fn, str):
            create_env_fn = _from_registry(create_env_fn)
        elif isinstance(create_env_fn, (list, tuple)):
            create_env_fn = [_from_registry(f) if isinstance(f, str) else f for f in create_env_fn]
        for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number >= 0; got {value!r}.")
        super().__init__(num_workers, create_env_fn, create_env_kwargs, timeout=timeout, **kwargs)
        d = self.__dict__
        d["address"] = address
        d["num_cpus"] = num_cpus
        d["num_gpus"] = num_gpus
        d["actor_options"] = dict(actor_options or {})
        d["ray_init_kwargs"] = dict(ray_init_kwargs or {})
        d["timeout"] = float(timeout) if timeout is not None else _TIMEOUT
        d["_actors"] = []
        d["_pids"] = []
        d["_broken"] = None
        d["_hung"] = frozenset()  # workers that did not answer in time: killed without waiting
        d["_inflight"] = {}  # async mode: worker -> (ref, kind, input row)

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
        actor_cls = ray.remote(RemoteWorker).options(**options)
        actors: list = []
        d["_actors"] = actors
        d["_finalizer"] = weakref.finalize(self, _kill_actors, actors, False)
        d["_broken"] = None
        d["_hung"] = frozenset()
        d["_inflight"] = {}
        try:
            with deferred_sigint():  # every actor created is in ``actors``, which close() kills
                for i in range(self.num_workers):
                    leaves = None
                    if groups is not None:
                        leaves = {name: group.per_worker[i] for name, group in groups.items()}
                    actors.append(
                        actor_cls.remote(
                            i,
                            self.create_env_fn[i],
                            self.create_env_kwargs[i],
                            leaves,
                            self.num_sub_threads,
                        )
                    )
            d["_pids"] = self._gather(
                [a.ready.remote() for a in actors], range(self.num_workers), "start"
            )
        except BaseException:
            _kill_actors(actors, False)
            raise

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
    def _gather(self, refs: list, workers: Sequence[int], what: Any) -> list:
        """The values of ``refs`` (one per worker), or a ``WorkerError`` naming the worker;
        :class:`EnvClosedError` when the env was closed (by another thread) meanwhile."""
        generation = self.__dict__["_generation"]
        try:
            return self._gather_now(refs, workers, what)
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

    def _gather_now(self, refs: list, workers: Sequence[int], what: Any) -> list:
        ray = _import_ray()
        timeout = self.timeout
        try:
            answers = ray.get(refs, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            done = set(ready)
            late = [i for i, ref in zip(workers, refs) if ref not in done]
            self.__dict__["_hung"] = frozenset(late)
            self._fail(
                W.WorkerError(
                    f"{self._where(late[0])} did not answer {self._what(what)} within "
                    f"{timeout:g} s (timeout=...; $TORCHENV_BATCHED_TIMEOUT)",
                    late[0],
                    pid=self._pid(late[0]),
                )
            )
        except Exception:
            answers = [self._get_one(ray, ref, i, what) for i, ref in zip(workers, refs)]
        failed = [i for i, (kind, _) in zip(workers, answers) if kind == "error"]
        if failed:
            infos = dict(zip(workers, answers))
            first = failed[0]
            name, msg, text = infos[first][1]
            where = self._where(first)
            err = W.WorkerError(
                f"{where} raised {name} during {self._what(what)}: {msg}\n\n"
                f"Traceback in {where}:\n{text}",
                first,
                text,
                name,
                pid=self._pid(first),
            )
            if len(failed) > 1:
                err.args = (err.args[0] + f"\n(workers {failed[1:]} failed too)",)
            raise err
        return [value for _, value in answers]

    @staticmethod
    def _what(what: Any) -> str:
        return what if isinstance(what, str) else W.op_name(what)

    def _get_one(self, ray: Any, ref: Any, i: int, what: Any) -> tuple:
        try:
            return ray.get(ref, timeout=self.timeout)
        except ray.exceptions.RayActorError as err:
            self._fail(
                W.WorkerError(
                    f"worker {i} (Ray actor) died during {self._what(what)}: {err}",
                    i,
                    str(err),
                    type(err).__name__,
                    pid=self._pid(i),
                )
            )
        except ray.exceptions.RayError as err:
            self._fail(
                W.WorkerError(
                    f"worker {i} (Ray actor) failed during {self._what(what)}: {err}",
                    i,
                    str(err),
                    type(err).__name__,
                    pid=self._pid(i),
                )
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
        answers = self._gather(refs, workers, op)
        if op == W.OP_STEP:
            for i, arrays in zip(workers, answers):
                copy_arrays(rows["next"][i], arrays)
            return []
        if op == W.OP_STEP_AND_MAYBE_RESET:
            written = []
            for i, (wrote, nxt, root) in zip(workers, answers):
                copy_arrays(rows["next"][i], nxt)
                if wrote:
                    copy_arrays(rows["root"][i], root)
                    written.append(i)
            return written
        if op == W.OP_RESET:
            for i, arrays in zip(workers, answers):
                copy_arrays(rows["root"][i], arrays)
            return []
        return answers

    @_without_grad
    def _step(self, tensordict):
        return super()._step(tensordict)

    @_without_grad
    def _reset(self, tensordict, **kwargs):
        return super()._reset(tensordict, **kwargs)

    @_without_grad
    def step_and_maybe_reset(self, tensordict):
        return super().step_and_maybe_reset(tensordict)

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
        ready, rest = ray.wait(refs, num_returns=want, timeout=timeout)
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
