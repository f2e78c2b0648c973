"""``BatchedEnvBase``: what ``SerialEnv`` and ``ParallelEnv`` share.

Arguments, specs (the sub-envs' specs stacked along a leading worker dim), buffers, the
step / reset / step_and_maybe_reset logic with partial ``"_step"`` / ``"_reset"`` dispatch,
attribute fan-out, seeding and lifecycle. The two subclasses only say how a command reaches
the sub-environments (:meth:`BatchedEnvBase._dispatch`): a direct call (serial) or a worker
process (parallel). Both run each sub-environment through the same
:class:`~torchenv.batched._worker.EnvRunner`.

Meta-data (specs, batch size, device) comes from one env built in the parent and closed at
once (one per task with a list of factories), or from :attr:`EnvCreator.meta_data` when the
factory is an :class:`~torchenv.batched.EnvCreator` called without extra kwargs. Measured here:
``GymEnv("CartPole-v1")`` takes 0.22 s to build the first time (importing gymnasium and its
envs) and 2 ms afterwards, against ~50 ms per ``fork`` on the loaded 2-core machine. Asking the
first worker instead would not save the import (forked workers inherit the parent's imports,
which is what makes their start cheap), and the buffers, laid out from the specs, must exist
before the workers are forked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from torchenv.batched import _worker as W
from torchenv.batched._creator import EnvCreator, _meta_data
from torchenv.batched._shared import BufferGroup, FlatBuffer, build_td, getter
from torchenv.batched._spec_check import check_specs, layout_leaves
from torchenv.batched._view import check_view, close_view
from torchenv.envs import EnvBase
from torchenv.envs._common import _check_seed
from torchenv.envs._finite import check_step
from torchenv.specs import Composite

__all__ = ["BatchedEnvBase"]


def _as_list(value: Any, n: int, what: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{what}: expected {n} items (one per worker); got {len(value)}.")
        return list(value)
    return [value] * n


def _stack_specs(specs: list[Composite]) -> Composite:
    first = specs[0]
    if all(s == first for s in specs[1:]):
        return first.expand(len(specs), *first.shape)
    try:
        return torch.stack(specs, 0)
    except Exception as err:
        raise ValueError(
            "the sub-environments have different specs that cannot be stacked: "
            f"{type(err).__name__}: {err}"
        ) from err


def closed_error(env: BatchedEnvBase, generation: int, err: BaseException) -> None:
    """Raise :class:`EnvClosedError` (from ``err``) when ``env`` was closed since ``generation``:
    a call that failed because another thread closed the env says so, whatever broke first (a
    sub-environment's own ``EnvClosedError`` included)."""
    if isinstance(err, W.WorkerError):
        return
    if isinstance(err, W.EnvClosedError) and getattr(err, "closed_env_id", id(env)) == id(env):
        return  # this env's own (or its views'): only a sub-environment's is translated
    if env.__dict__.get("_generation") != generation:
        raise W.EnvClosedError(
            f"{type(env).__name__} was closed (from another thread?) during the call; "
            "reset() starts new sub-environments"
        ) from err


def check_generation(env: BatchedEnvBase, generation: int) -> None:
    """Raise :class:`EnvClosedError` when ``env`` was closed since ``generation``: a call that
    returns after a close from another thread may have read freed buffers (partial data), so
    it never returns its result."""
    if env.__dict__["_generation"] != generation:
        raise W.EnvClosedError(
            f"{type(env).__name__} was closed (from another thread?) during the call; "
            "reset() starts new sub-environments"
        )


def _tuple(key: Any) -> tuple:
    return key if isinstance(key, tuple) else (key,)


class _Dispatcher:
    """``env.method(*args)`` on every sub-environment; returns one result per worker."""

    def __init__(self, env: BatchedEnvBase, name: str) -> None:
        self._env, self._name = env, name

    def __call__(self, *args: Any, **kwargs: Any) -> list:
        env = self._env
        n = env.num_workers
        return env._dispatch(W.OP_CALL, range(n), [(self._name, args, kwargs)] * n, reply=True)

    def __repr__(self) -> str:
        return f"<method {self._name!r} of {self._env.num_workers} sub-environments>"


class BatchedEnvBase(EnvBase):
    """Runs ``num_workers`` copies of an environment (or one env per task) as one batched env.

    Querying an attribute or method the batched env does not have returns one value per
    sub-environment (``env.g`` → ``[g0, g1, ...]``; ``env.method(x)`` → ``[r0, r1, ...]``).

    Args:
        num_workers: number of sub-environments.
        create_env_fn: a callable returning an env, or a list of them (one per worker:
            multi-task; the specs may differ, the output is then a lazy stack).
        create_env_kwargs: keyword arguments for ``create_env_fn`` (a dict, or one per worker).

    Keyword Args:
        share_individual_td: one buffer per worker and lazily stacked outputs. Default:
            ``False`` when all sub-envs have the same specs, else ``True``.
        shared_memory: place the buffers in shared memory (``ParallelEnv`` requires this or
            ``memmap``). Default ``True``.
        memmap: place the buffers in a memory-mapped file (deleted once the workers have it).
        policy_proof: accepted for compatibility; extra root keys (e.g. a policy's hidden
            state) are carried over by ``step_and_maybe_reset`` whatever its value.
        device: device of the batched env's inputs and outputs; may differ from the
            sub-envs' (data is cast). Default: the sub-envs' device.
        num_threads: torch threads of this process (``ParallelEnv``; unchanged when ``None``).
        num_sub_threads: torch threads of each worker (``ParallelEnv``). Default 1.
        serial_for_single: a ``ParallelEnv`` with one worker is a ``SerialEnv``.
        non_blocking: cast between devices with ``non_blocking=True``. Default ``True``.
        mp_start_method: multiprocessing start method (``ParallelEnv``). Default: ``"fork"``
            where safe (Linux, no CUDA initialised), else ``"forkserver"``/``"spawn"``.
        use_buffers: move data through preallocated buffers laid out from the specs. Default:
            ``True`` unless a sub-env has dynamic specs or non-tensor entries (then data is
            sent as TensorDicts and outputs are lazily stacked). ``True`` is refused for
            dynamic specs and accepted, but without buffers, for non-tensor entries.
        timeout: seconds a worker may take to answer one command (counted from its last
            :func:`~torchenv.batched.heartbeat`, if its env calls it) before it is declared
            hung and a :class:`~torchenv.batched.WorkerError` is raised (``ParallelEnv``; a
            ``SerialEnv`` runs in this process and cannot be interrupted). Default: the
            ``TORCHENV_BATCHED_TIMEOUT`` environment variable, else 60.
        metadata_from_workers: ``ParallelEnv`` only: start the workers at construction and
            take the specs from the envs they build, instead of building one env in this
            process to read them (for envs that cannot or should not be built here). Data
            then moves as TensorDicts (``use_buffers=True`` is refused, as in TorchRL).
        daemon: make the worker processes daemonic (``ParallelEnv``). Default ``False``: a
            worker may then start processes of its own (daemonic processes cannot).
        shutdown_timeout: seconds a worker is given to close its env at :meth:`close` before
            it is killed (``ParallelEnv``). Default 10.

    Closing: :meth:`close` may be called from another thread; an operation in flight, and any
    ``step`` after it, then raises :class:`~torchenv.batched.EnvClosedError`, while
    :meth:`reset` (or :meth:`start`) starts new sub-environments.
    """

    _reset_reopens = True  # reset after close restarts the workers; step refuses (EnvClosedError)

    _needs_shared_buffers = False  # ParallelEnv: its buffers must be shared with the workers

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable | Sequence[Callable] | None = None,
        create_env_kwargs: dict | Sequence[dict] | None = None,
        *,
        share_individual_td: bool | None = None,
        shared_memory: bool = True,
        memmap: bool = False,
        policy_proof: Callable | None = None,
        device: torch.device | str | None = None,
        num_threads: int | None = None,
        num_sub_threads: int = 1,
        serial_for_single: bool = False,
        non_blocking: bool = True,
        mp_start_method: str | None = None,
        use_buffers: bool | None = None,
        timeout: float | None = None,
        metadata_from_workers: bool = False,
        daemon: bool = False,
        shutdown_timeout: float | None = None,
    ) -> None:
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int; got {num_workers!r}.")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}.")
        if create_env_fn is None:
            raise TypeError("create_env_fn is required (a callable or a list of callables).")
        fns = _as_list(create_env_fn, num_workers, "create_env_fn")
        for i, fn in enumerate(fns):
            if isinstance(fn, EnvBase):
                name = type(fn).__name__
                raise TypeError(
                    f"create_env_fn[{i}] is an env instance ({name}), not a constructor: each "
                    f"worker builds its own env, so pass e.g. `lambda: {name}(...)` instead."
                )
            if not callable(fn):
                raise TypeError(f"create_env_fn[{i}] must be callable; got {type(fn).__name__}.")
        kwargs = _as_list(create_env_kwargs or {}, num_workers, "create_env_kwargs")
        kwargs = [dict(k or {}) for k in kwargs]
        multi_task = isinstance(create_env_fn, (list, tuple))

        pool = None
        if metadata_from_workers:
            if not self._needs_shared_buffers:
                raise TypeError(
                    f"metadata_from_workers=True is only supported by ParallelEnv, not "
                    f"{type(self).__name__}."
                )
            if use_buffers:
                raise RuntimeError(
                    "metadata_from_workers=True needs use_buffers=False (or unset): the shared "
                    "buffers are laid out from the specs before the workers start."
                )
            use_buffers = False
            pool = self._start_pool(
                fns,
                kwargs,
                None,
                mp_start_method=mp_start_method,
                num_sub_threads=num_sub_threads,
                memmap=memmap,
                timeout=timeout,
                daemon=daemon,
                shutdown_timeout=shutdown_timeout,
            )
            try:
                metas = pool.run(W.OP_META, range(num_workers), None, reply=True)
            except BaseException:
                pool.close()
                raise
        else:
            metas = self._read_meta(fns, kwargs, multi_task)
        sub_device = metas[0]["device"]
        batch = metas[0]["batch_size"]
        for i, meta in enumerate(metas[1:], 1):
            if meta["batch_size"] != batch:
                raise ValueError(
                    f"all sub-environments must have the same batch_size; worker 0 has "
                    f"{tuple(batch)}, worker {i} has {tuple(meta['batch_size'])}."
                )
        out_device = torch.device(device) if device is not None else sub_device
        super().__init__(device=out_device, batch_size=(num_workers, *batch))

        d = self.__dict__
        d["num_workers"] = num_workers
        d["create_env_fn"] = fns
        d["create_env_kwargs"] = kwargs
        d["share_individual_td"] = share_individual_td
        d["shared_memory"] = shared_memory
        d["memmap"] = memmap
        d["policy_proof"] = policy_proof
        d["num_threads"] = num_threads
        d["num_sub_threads"] = num_sub_threads
        d["serial_for_single"] = serial_for_single
        d["non_blocking"] = non_blocking
        d["mp_start_method"] = mp_start_method
        d["timeout"] = timeout
        d["daemon"] = bool(daemon)
        d["shutdown_timeout"] = None if shutdown_timeout is None else float(shutdown_timeout)
        d["_generation"] = 0  # bumped by close(): operations in flight then fail as closed
        d["_closed_after_start"] = False
        d["_metas"] = metas
        d["_sub_device"] = sub_device
        d["_worker_batch"] = [m["batch_size"] for m in metas]
        d["_started"] = False
        d["_root_stale"] = set()  # workers that stepped since their root rows were written
        d["_env_str"] = metas[0]["env_str"]
        d["_needs_cast"] = out_device is not None and out_device != sub_device

        # specs: the sub-env specs stacked along the worker dim
        self.input_spec = _stack_specs([m["input_spec"] for m in metas])
        self.output_spec = _stack_specs([m["output_spec"] for m in metas])

        d["_all_workers"] = range(num_workers)
        self._set_use_buffers(use_buffers)
        d["metadata_from_workers"] = bool(metadata_from_workers)
        if pool is not None:  # already running: started as start() would
            if num_threads is not None:
                torch.set_num_threads(num_threads)
            d["_pool"] = pool
            d["_started"] = True
            self.is_closed = False

    # ------------------------------------------------------------------ construction
    def _set_use_buffers(self, use_buffers: bool | None) -> None:
        """Resolve ``use_buffers`` (``None``: whenever possible) and lay out the buffers."""
        d = self.__dict__
        metas = d["_metas"]
        dynamic = any(m["has_dynamic_specs"] for m in metas)
        non_tensor = any(
            type(spec).__name__ == "NonTensor"
            for m in metas
            for part in ("input_spec", "output_spec")
            for spec in m[part].values(True, True)
        )
        if use_buffers and dynamic:
            raise ValueError(
                "use_buffers=True is impossible: a sub-environment has dynamic specs (a -1 "
                "dim), whose data cannot live in preallocated buffers; leave use_buffers unset "
                "or pass False."
            )
        if use_buffers is None or non_tensor:
            # non-tensor entries (strings...) have no place in the buffers: such envs move
            # their data as TensorDicts, whether or not use_buffers=True was asked (TorchRL
            # accepts the flag and sends those entries beside the buffers: same data)
            use_buffers = not (dynamic or non_tensor)
        if use_buffers and self._needs_shared_buffers and not (d["shared_memory"] or d["memmap"]):
            raise ValueError(
                f"{type(self).__name__} moves data through shared buffers: shared_memory=False "
                "and memmap=False cannot both be given (or pass use_buffers=False)."
            )
        d["_use_buffers"] = bool(use_buffers)
        d["_groups"] = self._make_groups(metas) if use_buffers else None

    def configure_parallel(
        self,
        *,
        use_buffers: bool | None = None,
        shared_memory: bool | None = None,
        memmap: bool | None = None,
        mp_start_method: str | None = None,
        num_threads: int | None = None,
        num_sub_threads: int | None = None,
        non_blocking: bool | None = None,
        daemon: bool | None = None,
        shutdown_timeout: float | None = None,
    ) -> BatchedEnvBase:
        """Changes the execution options before the sub-environments start; returns ``self``.

        Arguments left ``None`` keep their value; see the class for their meaning.

        Raises:
            RuntimeError: the sub-environments have started (call it before the first
                ``reset``/``step``, or after :meth:`close`).

        Examples:
            >>> from torchenv.batched import SerialEnv
            >>> from torchenv.envs import PendulumEnv
            >>> env = SerialEnv(2, PendulumEnv).configure_parallel(use_buffers=False)
            >>> env.rollout(2).batch_size
            torch.Size([2, 2])
        """
        d = self.__dict__
        if d["_started"] or d.get("_view_link") is not None:
            raise RuntimeError(
                "configure_parallel() cannot be called after the environment has started: "
                "call it before the first reset/step (or after close())."
            )
        previous = {name: d[name] for name in ("shared_memory", "memmap")}
        for name, value in (
            ("shared_memory", shared_memory),
            ("memmap", memmap),
            ("mp_start_method", mp_start_method),
            ("num_threads", num_threads),
            ("num_sub_threads", num_sub_threads),
            ("non_blocking", non_blocking),
            ("daemon", daemon),
        ):
            if value is not None:
                d[name] = value
        if shutdown_timeout is not None:
            d["shutdown_timeout"] = float(shutdown_timeout)
        if use_buffers is not None or shared_memory is not None or memmap is not None:
            try:
                self._set_use_buffers(d["_use_buffers"] if use_buffers is None else use_buffers)
            except ValueError:
                d.update(previous)
                raise
            d["_cache"].pop("batched_root_plan", None)
        return self

    def _start_pool(self, fns, kwargs, groups, *, mp_start_method, **options) -> Any:
        """Worker processes (``ParallelEnv``; also before the specs are known, with
        ``metadata_from_workers=True``)."""
        raise NotImplementedError  # pragma: no cover - refused above for other classes

    @staticmethod
    def _read_meta(fns: list, kwargs: list, multi_task: bool) -> list[dict]:
        """Meta-data of each worker's env: from one env per distinct factory."""
        cache: dict[int, dict] = {}
        metas = []
        for i, fn in enumerate(fns):
            key = id(fn) if multi_task else 0
            if key not in cache:
                if isinstance(fn, EnvCreator) and not kwargs[i]:
                    cache[key] = fn.meta_data
                else:
                    env = fn(**kwargs[i])
                    try:
                        cache[key] = _meta_data(env)
                    finally:
                        try:
                            env.close(raise_if_closed=False)
                        except TypeError:
                            env.close()
                        del env
            metas.append(cache[key])
        return metas

    def _make_groups(self, metas: list[dict]) -> dict[str, BufferGroup]:
        per_worker: dict[str, list] = {"in": [], "next": [], "root": []}
        for meta in metas:
            leaves = layout_leaves(meta["input_spec"], meta["output_spec"])
            for name, rows in per_worker.items():
                rows.append(leaves[name])
        dense = not self.share_individual_td and all(
            per_worker["next"][0] == p for p in per_worker["next"][1:]
        )
        if self.share_individual_td is False and not dense:
            raise ValueError(
                "share_individual_td=False needs sub-environments with identical specs; "
                "they differ. Pass share_individual_td=True or leave it unset."
            )
        dense = dense and all(
            per_worker[g][0] == p for g in ("in", "root") for p in per_worker[g][1:]
        )
        return {name: BufferGroup(leaves, dense=dense) for name, leaves in per_worker.items()}

    def _alloc(self, shared: bool) -> FlatBuffer:
        """Lay the groups out in one flat buffer and bind their views."""
        offset = 0
        for group in self._groups.values():
            group.offset = offset
            offset += group.nbytes
        buffer = FlatBuffer(offset, shared=shared, memmap=self.memmap)
        buffer.unlink()  # only this process maps it
        for group in self._groups.values():
            group.bind(buffer, group.offset)
        return buffer

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Create the sub-environments (workers). Called on first use if not called before."""
        if self.__dict__["_started"]:
            return
        if self.__dict__.get("_view_link") is not None:
            check_view(self)  # a closed view cannot start: it raises
        with self._lifecycle_lock():
            if self.__dict__["_started"]:  # started by another thread meanwhile
                return
            self.__dict__["_cache"].pop("batched_root_plan", None)  # it holds buffer views
            self.__dict__["_root_stale"] = set()
            self._start()
            if self.__dict__.get("_view_link") is None:
                try:
                    self._check_worker_specs()
                except BaseException:
                    self._shutdown()
                    raise
            self.__dict__["_started"] = True
            self.__dict__["_closed_after_start"] = False
            self.is_closed = False

    def _lifecycle_lock(self) -> threading.RLock:
        """The lock that :meth:`start` and :meth:`close` hold: a close from another thread
        never runs in the middle of a start (it would free the buffers of the workers just
        started, whose outputs would then come back empty), nor a start in a close."""
        return self.__dict__.setdefault("_lifecycle", threading.RLock())

    def _check_worker_specs(self) -> None:
        """Compare, once at start, each sub-env's specs (keys, dtypes, shapes) with those the
        batched env announced and laid its buffers out from: a factory that builds another env
        in a worker raises :class:`~torchenv.batched.SpecMismatchError` naming the worker and
        the entry, instead of having its data broadcast or cast into the buffers. Two
        round trips that carry the specs, no data."""
        n = self.num_workers
        workers = range(n)
        inputs = self._dispatch(W.OP_GETATTR, workers, ["input_spec"] * n, reply=True)
        outputs = self._dispatch(W.OP_GETATTR, workers, ["output_spec"] * n, reply=True)
        for i, meta in enumerate(self.__dict__["_metas"]):
            check_specs(i, meta, inputs[i], outputs[i])

    def _start(self) -> None:
        raise NotImplementedError

    def _shutdown(self) -> None:
        raise NotImplementedError

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Close the sub-environments (stop the workers, free the buffers).

        Idempotent: closing a closed env does nothing (``raise_if_closed=True`` raises). The
        env can be used again after ``close``: it then starts new sub-environments.
        """
        if self.is_closed and raise_if_closed:
            raise RuntimeError(f"{type(self).__name__} is already closed.")
        d = self.__dict__
        if d.get("_view_link") is not None:  # a view (env[i]): the workers are the parent's
            close_view(self)
            return
        with self._lifecycle_lock():
            started = d.get("_started")
            # In this order: a call entering now either sees the env not started (step: refused,
            # as _closed_after_start is already set) or holds the old generation (and raises
            # EnvClosedError when it fails or returns: see closed_error / check_generation).
            if started:
                d["_closed_after_start"] = True
            d["_started"] = False
            d["_generation"] = d.get("_generation", 0) + 1
            try:
                if started:
                    self._shutdown()
            finally:
                self.is_closed = True

    def _ensure_started(self) -> None:
        if not self.__dict__["_started"]:
            self.start()

    def _start_for_step(self) -> None:
        """Start before a first step; refuse to restart silently after :meth:`close`."""
        if self.__dict__.get("_closed_after_start"):
            raise W.EnvClosedError(
                f"{type(self).__name__} is closed (close() was called, maybe from another "
                "thread): call reset() to start new sub-environments before stepping."
            )
        self.start()

    def update_kwargs(self, kwargs: dict | Sequence[dict]) -> None:
        """Update the keyword arguments of the env factories (used when workers next start)."""
        for current, new in zip(
            self.create_env_kwargs, _as_list(kwargs, self.num_workers, "kwargs")
        ):
            current.update(new)

    def _dispatch(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        raise NotImplementedError

    # ------------------------------------------------------------------ fan-out
    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # parameters, buffers, submodules
        except AttributeError:
            pass
        if name.startswith("_") or "_started" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        self._ensure_started()
        n = self.num_workers
        try:
            values = self._dispatch(W.OP_GETATTR, range(n), [name] * n, reply=True)
        except W.WorkerError as err:
            if err.exc_type == "AttributeError":
                raise AttributeError(
                    f"{type(self).__name__} and its sub-environments have no attribute {name!r}"
                ) from err
            raise
        if any(isinstance(v, W.CallableMarker) for v in values):
            return _Dispatcher(self, name)
        return values

    # ------------------------------------------------------------------ state
    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        """``{"worker0": state_dict_0, ...}``: the sub-environments' state dicts."""
        self._ensure_started()
        n = self.num_workers
        sds = self._dispatch(W.OP_CALL, range(n), [("state_dict", (), {})] * n, reply=True)
        return {f"worker{i}": sd for i, sd in enumerate(sds)}

    def load_state_dict(self, state_dict: dict, **kwargs: Any) -> None:
        """Load per-worker state dicts (``{"worker0": ...}``), or one state dict for all."""
        self._ensure_started()
        n = self.num_workers
        if "worker0" in state_dict:
            per_worker = [state_dict[f"worker{i}"] for i in range(n)]
        else:
            per_worker = [state_dict] * n
        args = [("load_state_dict", (sd,), kwargs) for sd in per_worker]
        self._dispatch(W.OP_CALL, range(n), args, reply=True)

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seed worker ``i`` with the seed returned by worker ``i - 1`` (chained seeds).

        Returns the seed following the last worker's, so that ``SerialEnv`` and ``ParallelEnv``
        built alike and seeded alike give identical results. The batched env's own random
        actions (``rand_action``, ``rollout`` without a policy) draw from a generator seeded
        with ``seed``.
        """
        _check_seed(seed)
        self._ensure_started()
        self._seed_action_generator(seed)
        for i in range(self.num_workers):
            (seed,) = self._dispatch(W.OP_SEED, [i], [(seed, static_seed)], reply=True)
        return seed

    def _set_seed(self, seed: int | None) -> None:  # pragma: no cover - set_seed is overridden
        self.set_seed(seed)

    # ------------------------------------------------------------------ outputs
    def _cast(self, td: TensorDictBase) -> TensorDictBase:
        if not self.__dict__["_needs_cast"]:
            return td
        device = self.__dict__["_device"]
        return td.to(device, non_blocking=self.non_blocking and device.type == "cuda")

    def to(self, device) -> BatchedEnvBase:
        """Set the device of the batched env's inputs and outputs (the sub-envs stay put)."""
        super().to(device)
        self.__dict__["_needs_cast"] = self.device != self.__dict__["_sub_device"]
        return self

    def _snapshot(self, group: str) -> TensorDictBase:
        return self._groups[group].snapshot(self.batch_size, self._worker_batch)

    def _workers_of(self, mask: torch.Tensor) -> list[int]:
        mask = mask.reshape(self.num_workers, -1).any(-1)
        return mask.nonzero().squeeze(-1).tolist()

    # ------------------------------------------------------------------ step
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        d = self.__dict__
        if not d["_started"]:
            self._start_for_step()
        if type(tensordict) is TensorDict:
            partial = tensordict._tensordict.get("_step")
        else:
            partial = tensordict.get("_step", None)
        n = self.num_workers
        workers = d["_all_workers"] if partial is None else self._workers_of(partial)
        if not d["_use_buffers"]:
            return self._cast(self._step_no_buffers(tensordict, workers, partial))
        groups = d["_groups"]
        if torch.is_grad_enabled():
            with torch.no_grad():
                groups["in"].write(tensordict, workers)
        else:
            groups["in"].write(tensordict, workers)
        self._dispatch(W.OP_STEP, workers)
        d["_root_stale"].update(workers)
        out = groups["next"].snapshot(d["_batch_size"], d["_worker_batch"])
        if partial is not None and len(workers) < n:
            out = self._fill_skipped(out, tensordict, workers)
        return self._cast(out) if d["_needs_cast"] else out

    def _fill_skipped(
        self, out: TensorDictBase, tensordict: TensorDictBase, workers: list[int]
    ) -> TensorDictBase:
        """Rows of workers that did not step: the input's values, or zeros."""
        mask = torch.zeros(self.num_workers, dtype=torch.bool)
        mask[list(workers)] = True
        if isinstance(out, LazyStackedTensorDict):
            for i in range(self.num_workers):
                if not mask[i]:
                    prev = tensordict[i]
                    sub = out.tensordicts[i]
                    for key in list(sub.keys(True, True)):
                        value = prev.get(key, None)
                        sub.set(key, value.clone() if value is not None else sub.get(key) * 0)
            return out
        for key in list(out.keys(True, True)):
            new = out.get(key)
            old = tensordict.get(key, None)
            if old is None or old.shape != new.shape:
                old = torch.zeros_like(new)
            m = mask.reshape(-1, *([1] * (new.ndim - 1)))
            out.set(key, torch.where(m, new, old.to(new.device)))
        return out

    def _step_no_buffers(self, tensordict, workers, partial) -> TensorDictBase:
        sub_tds = tensordict.exclude("_step").unbind(0)
        outs = self._dispatch(
            W.OP_STEP_NO_BUFFERS, workers, [sub_tds[i] for i in workers], reply=True
        )
        if len(workers) < self.num_workers:
            template = outs[0]
            full = []
            it = iter(outs)
            chosen = set(workers)
            for i in range(self.num_workers):
                if i in chosen:
                    full.append(next(it))
                else:
                    prev = sub_tds[i]
                    skipped = template.clone().zero_()
                    for key in skipped.keys(True, True):
                        value = prev.get(key, None)
                        if value is not None and value.shape == skipped.get(key).shape:
                            skipped.set(key, value.clone())
                    full.append(skipped)
            outs = full
        self.__dict__["_last_outputs"] = outs  # what a later partial reset leaves in place
        return LazyStackedTensorDict.maybe_dense_stack(outs, 0)

    # ------------------------------------------------------------------ reset
    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        self._ensure_started()
        n = self.num_workers
        list_of_kwargs = kwargs.pop("list_of_kwargs", None)
        if list_of_kwargs is None:
            per_worker = [kwargs] * n
        else:
            per_worker = [{**w, **kwargs} for w in _as_list(list_of_kwargs, n, "list_of_kwargs")]
        workers: Sequence[int] = range(n)
        reset_entries = []
        if tensordict is not None:
            for key in self.reset_keys:
                value = tensordict.get(key, None)
                if value is not None:
                    reset_entries.append((key, value))
            if reset_entries:
                mask = torch.zeros(n, dtype=torch.bool)
                for _, value in reset_entries:
                    mask |= value.reshape(n, -1).any(-1).cpu()
                workers = mask.nonzero().squeeze(-1).tolist()
        if not self._use_buffers:
            return self._cast(self._reset_no_buffers(tensordict, workers, per_worker))
        keys = None
        if tensordict is not None:
            keys = [_tuple(k) for k in self.state_keys if tensordict.get(k, None) is not None]
            if reset_entries and (self._worker_batch[0] or self._nested_reset):
                keys += [_tuple(k) for k, _ in reset_entries]
            with torch.no_grad():
                self._groups["in"].write(tensordict, workers)
        if workers:
            self._dispatch(W.OP_RESET, workers, [(keys, per_worker[i]) for i in workers])
        out = self._snapshot("root")
        stale = self.__dict__["_root_stale"]
        stale.difference_update(workers)
        if stale:
            out = self._refresh_stale_rows(out, sorted(stale))
        return self._cast(out)

    def _refresh_stale_rows(self, out: TensorDictBase, workers: list[int]) -> TensorDictBase:
        """The rows of ``workers`` (not reset, but stepped since their root rows were written)
        from the next buffer, where the data of their last step is: a partial reset returns
        the current data of what it leaves alone (transforms such as ``ActionMask`` read it)."""
        nxt = self._groups["next"].snapshot(self.batch_size, self._worker_batch, workers)
        if isinstance(out, LazyStackedTensorDict):
            keys = list(out.tensordicts[workers[0]].keys(True, True))
            for sub, i in zip(nxt.unbind(0), workers):
                out.tensordicts[i].update(sub.select(*keys, strict=False))
            return out
        idx = torch.as_tensor(workers, dtype=torch.long)
        for key in out.keys(True, True):
            value = nxt.get(key, None)
            if value is not None:
                out.get(key)[idx] = value
        return out

    @property
    def _nested_reset(self) -> bool:
        return any(isinstance(k, tuple) and len(k) > 1 for k in self.reset_keys)

    def _reset_no_buffers(self, tensordict, workers, per_worker) -> TensorDictBase:
        n = self.num_workers
        subs = tensordict.unbind(0) if tensordict is not None else [None] * n
        args = []
        for i in workers:
            sub = subs[i]
            if sub is not None:
                sub = sub.select(*self.state_keys, *self.reset_keys, strict=False)
                if self._worker_batch[0] == () and not self._nested_reset:
                    sub = sub.exclude(*self.reset_keys)
                if sub.is_empty():
                    sub = None
            args.append((sub, per_worker[i]))
        outs = self._dispatch(W.OP_RESET_NO_BUFFERS, workers, args, reply=True) if workers else []
        if len(workers) < n:
            # workers not reset: their values come from ``tensordict`` (merged by EnvBase.reset)
            template = outs[0] if outs else None
            keys = None if template is None else list(template.keys(True, True))
            last = self.__dict__.get("_last_outputs")
            full, it, chosen = [], iter(outs), set(workers)
            for i in range(n):
                if i in chosen:
                    full.append(next(it))
                    continue
                prev = subs[i].exclude(*self.reset_keys, *self.action_keys)
                if keys is not None:
                    prev = prev.select(*keys, strict=False)
                    if last is not None and len(list(prev.keys(True, True))) < len(keys):
                        # the input was cut to its reset entries (maybe_reset): the worker's
                        # current data is its last output
                        prev = last[i].select(*keys, strict=False)
                full.append(prev)
            outs = full
        self.__dict__["_last_outputs"] = outs
        return LazyStackedTensorDict.maybe_dense_stack(outs, 0)

    # ------------------------------------------------------------------ step_and_maybe_reset
    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Step every sub-environment and reset, inside each, those that are done.

        Returns ``(tensordict, tensordict_)`` like :meth:`EnvBase.step_and_maybe_reset`; the
        reset happens in the sub-environments, so no second round trip is needed.
        """
        d = self.__dict__
        plain = type(tensordict) is TensorDict
        keys = tensordict._tensordict if plain else tensordict.keys()
        if not d["_use_buffers"] or "_step" in keys:
            return super().step_and_maybe_reset(tensordict)
        if not d["_started"]:
            self._start_for_step()
        batch_size = d["_batch_size"]
        plan = d["_cache"].get("plan") or self._plan
        if tensordict.batch_size != batch_size:
            self._check_batch(tensordict, plan)
        # the checks of ``step`` (the buffers would otherwise keep the last step's action, or
        # broadcast / cast whatever comes): one look per action key when all is well
        type_checks = d["_run_type_checks"]
        if type_checks or not plan.actions_ok(tensordict):
            plan.check_actions(self, tensordict, type_checks)
        groups = d["_groups"]
        if torch.is_grad_enabled():
            with torch.no_grad():
                groups["in"].write(tensordict)
        else:
            groups["in"].write(tensordict)
        written = self._dispatch(W.OP_STEP_AND_MAYBE_RESET, d["_all_workers"])
        stale = d["_root_stale"]
        stale.update(d["_all_workers"])
        stale.difference_update(written)
        nxt = groups["next"].snapshot(batch_size, d["_worker_batch"])
        if d["_finite_on"]:  # the sub-envs' outputs, rows named by worker
            check_step(self, tensordict, nxt)
        root = self._root_after_step(nxt, tensordict, written)
        if d["_needs_cast"]:
            nxt, root = self._cast(nxt), self._cast(root)
        if plain and tensordict.device == nxt.device:
            tensordict._set_str("next", nxt, validated=True, inplace=False)
        else:
            tensordict.set("next", nxt)
        extra = self._extra_root_keys(tensordict)
        if extra:
            root.update(tensordict.select(*extra))
        return tensordict, root

    def _root_after_step(
        self, nxt: TensorDictBase, tensordict: TensorDictBase, written: list[int]
    ) -> TensorDictBase:
        """The next input: the step's output (shared tensors, as ``step_mdp``), with the rows
        of the workers that wrote their ``"root"`` rows (after a reset) taken from there."""
        group = self._groups["root"]
        if not group.dense:
            return self._snapshot("root")
        plan, flat, names = self._cached("batched_root_plan", self._root_plan)
        if names is not None and not written and type(nxt) is TensorDict:
            # the common case: every root entry is a step output, no reset: share them
            data = nxt._tensordict
            root = {name: data[name] for name in names}
            return TensorDict._new_unsafe(root, self.__dict__["_batch_size"], nested=False)
        masks = self._row_masks(written) if written else None
        pairs = []
        for key, from_next, block in plan:
            value = from_next(nxt) if from_next is not None else None
            if value is None:  # a state entry: carried from the input
                value = tensordict.get(key, None)
                if value is None:
                    value = block if masks is not None else block.clone()
            if masks is not None:  # one fused op per key: a new tensor, rows picked by mask
                value = torch.where(masks[block.ndim], block, value)
            pairs.append((key, value))
        return build_td(pairs, self.__dict__["_batch_size"], flat=flat)

    def _row_masks(self, workers: list[int]) -> dict[int, torch.Tensor]:
        """``{ndim: bool mask}`` selecting the rows of ``workers``, shaped to broadcast over a
        block of that many dims. Cached per set of workers (measured: building the mask and
        indexing with it cost more than the ``torch.where`` it feeds)."""
        cache = self.__dict__.setdefault("_mask_cache", {})
        key = tuple(workers)
        masks = cache.get(key)
        if masks is None:
            if len(cache) > 256:
                cache.clear()
            n = self.num_workers
            flat = torch.zeros(n, dtype=torch.bool)
            flat[list(workers)] = True
            ndims = {block.ndim for _, block in self._groups["root"].blocks}
            masks = cache[key] = {nd: flat.reshape(n, *([1] * (nd - 1))) for nd in ndims}
        return masks

    def _root_plan(self) -> tuple[list, bool]:
        next_keys = set(self._groups["next"].keys)
        blocks = self._groups["root"].blocks
        plan = [(key, getter(key) if key in next_keys else None, block) for key, block in blocks]
        flat = all(len(key) == 1 for key, _ in blocks)
        from_next = flat and all(key in next_keys for key, _ in blocks)
        return plan, flat, [key[0] for key, _ in blocks] if from_next else None

    def _extra_root_keys(self, tensordict: TensorDictBase) -> list:
        """Root keys that are not env entries (a policy's hidden state...): carried over."""
        known = self._cached("batched_known_root_keys", self._known_root_keys)
        keys = tensordict._tensordict if type(tensordict) is TensorDict else tensordict.keys()
        return [k for k in keys if k not in known]

    def _known_root_keys(self) -> set:
        known = {"next", "_reset", "_step"}
        for spec in (self.full_action_spec, self.output_spec["full_reward_spec"]):
            known.update(_tuple(k)[0] for k in spec.keys(True, True))
        for spec in (self.full_observation_spec, self.full_done_spec, self.full_state_spec):
            known.update(_tuple(k)[0] for k in spec.keys(True, True))
        return known

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_workers={self.num_workers}, device={self.device}, "
            f"batch_size={self.batch_size},\n    env={self._env_str})"
        )
