"""``AsyncEnvPool``: batched envs whose sub-environments are stepped and collected separately.

TorchRL 0.14.1's names and semantics: ``async_step_send`` / ``async_step_recv``,
``async_reset_send`` / ``async_reset_recv``, ``async_step_and_maybe_reset_send`` / ``..._recv``;
what ``recv`` returns carries each row's sub-env index under ``"env_index"``; the synchronous
``reset`` / ``step`` / ``step_and_maybe_reset`` / ``rollout`` make it a plain batched env.
``AsyncEnvPool(..., backend=...)`` builds a :class:`ThreadingAsyncEnvPool` (threads in this
process, over :class:`~torchenv.batched.SerialEnv`'s runners) or a
:class:`ProcessorAsyncEnvPool` (processes, over :class:`~torchenv.batched.ParallelEnv`'s
shared-memory workers); this module holds what both share: argument checks, the bookkeeping
of what is in flight, writing the inputs into the buffer rows of the sub-envs sent, and
building the outputs of the sub-envs received. A backend only says how one command reaches
sub-envs (:meth:`AsyncEnvPool._launch`) and how finished ones are found
(:meth:`AsyncEnvPool._harvest`).

``recv_size=k`` (envpool's ``batch_size``, a name ``EnvBase`` already uses for the pool's shape)
makes every ``recv`` return exactly the first ``k`` sub-envs to finish: the policy sees a fixed
batch and a slow sub-env never holds the others back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.batched import _worker as W
from torchenv.batched._base import BatchedEnvBase, _tuple
from torchenv.batched._parallel import ParallelEnv, _ParallelMeta
from torchenv.batched._restart import RESTART_KEY, _end_episodes, warn_restarted
from torchenv.batched._shared import build_td, getter, write_row
from torchenv.envs import EnvBase
from torchenv.envs._common import _EnvMeta
from torchenv.specs import Categorical

__all__ = ["AsyncEnvPool"]

ENV_INDEX_KEY = "env_index"  # TorchRL's key for the sub-env index of each row

# kinds of asynchronous command, and the worker opcode each one runs
STEP, STEP_AND_MAYBE_RESET, RESET = "step", "step_and_maybe_reset", "reset"
_OPS = {STEP: W.OP_STEP, STEP_AND_MAYBE_RESET: W.OP_STEP_AND_MAYBE_RESET, RESET: W.OP_RESET}
_BACKENDS = ("threading", "multiprocessing")
_STACKS = {"dense": False, "maybe_dense": None, "lazy": True}  # -> share_individual_td


class _AsyncMeta(_ParallelMeta):
    """``AsyncEnvPool(...)`` builds the subclass its ``backend`` names."""

    def __call__(cls, *args: Any, **kwargs: Any):
        if cls is AsyncEnvPool:
            backend = kwargs.pop("backend", "threading")
            if backend == "threading":
                from torchenv.batched._async_threads import ThreadingAsyncEnvPool as cls
            elif backend == "multiprocessing":
                from torchenv.batched._async_processes import ProcessorAsyncEnvPool as cls
            elif backend == "asyncio":
                raise NotImplementedError(
                    "AsyncEnvPool(backend='asyncio') is not implemented (nor is it in TorchRL "
                    "0.14.1); use backend='threading' or 'multiprocessing'."
                )
            else:
                raise ValueError(
                    f"AsyncEnvPool: backend must be one of {_BACKENDS}; got {backend!r}."
                )
        return _EnvMeta.__call__(cls, *args, **kwargs)


class AsyncEnvPool(BatchedEnvBase, metaclass=_AsyncMeta):
    """A pool of sub-environments that can be stepped and collected one by one, or as a batch.

    ``AsyncEnvPool(env_makers, backend="threading")`` returns a :class:`ThreadingAsyncEnvPool`
    (each sub-env stepped by its own thread of this process: for envs that release the GIL,
    sleep or wait on I/O), ``backend="multiprocessing"`` a :class:`ProcessorAsyncEnvPool`
    (one worker process per sub-env, data through shared memory).

    Asynchronous use: ``async_*_send(td, env_index=...)`` starts the command on the sub-envs
    ``env_index`` names (an int, a list, or the ``"env_index"`` entry of ``td``; without
    either, a ``td`` of the pool's batch size is for every sub-env) and returns at once;
    ``async_*_recv(min_get=..., max_get=..., env_index=..., timeout=...)`` waits for at least
    ``min_get`` of them and returns the finished ones (at most ``max_get``), sorted by index,
    each row tagged with its ``"env_index"``. A sub-env can have one command in flight.
    Synchronous use (``reset``, ``step``, ``step_and_maybe_reset``, ``rollout``) is that of a
    :class:`~torchenv.batched.ParallelEnv` (row ``i`` is sub-env ``i``; no ``"env_index"``),
    allowed while no asynchronous command is in flight.

    Args:
        env_makers: a callable returning an env, or a list of them (one per sub-env; their
            number is the pool's size).

    ``backend`` (read by the metaclass, which picks the subclass): ``"threading"`` (default, as
    in TorchRL) or ``"multiprocessing"``.

    Keyword Args:
        stack: ``"dense"`` (default: the sub-envs must have identical specs), ``"lazy"``
            (lazily stacked outputs) or ``"maybe_dense"`` (dense when the specs allow).
        create_env_kwargs: keyword arguments for the makers (a dict, or one per sub-env).
        recv_size: default ``min_get`` and ``max_get`` of every ``recv``: each returns exactly
            the first ``recv_size`` sub-envs to finish. Default: ``min_get=1`` and no
            ``max_get`` (every finished sub-env), as in TorchRL.
        restart_failed (bool): replace a sub-env whose worker dies, hangs or raises during a
            command by a new one from the same factory (processes: a new worker process;
            threads: the env built again, after an exception only), with a
            :class:`~torchenv.batched.WorkerRestartedWarning`; the ``recv`` that collects it
            returns its episode ended as truncated, ``("next", "worker_restarted")`` true (an
            observation entry, false otherwise). As ``ParallelEnv``'s. Default ``False``.
        max_restarts (int): restarts allowed per sub-env before the error is raised as without
            ``restart_failed``. Default 10.
        **kwargs: the other arguments of :class:`~torchenv.batched.ParallelEnv` (``device``,
            ``timeout``, ``mp_start_method``, ``num_sub_threads``...).

    Attributes:
        min_get (int): the default ``min_get`` of ``recv``.
        max_get (int | None): the default ``max_get`` of ``recv``.
        num_envs (int): the number of sub-envs (``num_workers``).
        backend (str): ``"threading"`` or ``"multiprocessing"``.

    Examples:
        >>> import torch
        >>> from torchenv.batched import AsyncEnvPool
        >>> from torchenv.envs import PendulumEnv
        >>> pool = AsyncEnvPool([PendulumEnv] * 3, backend="threading", recv_size=2)
        >>> root = pool.reset()
        >>> pool.async_step_send(pool.rand_action(root))  # all three sub-envs
        >>> out = pool.async_step_recv()  # the first two to finish
        >>> out.batch_size, out["env_index"].shape, out["next", "observation"].shape
        (torch.Size([2]), torch.Size([2]), torch.Size([2, 3]))
        >>> last = pool.async_step_recv()  # the third
        >>> sorted(out["env_index"].tolist() + last["env_index"].tolist())
        [0, 1, 2]
        >>> pool.close()
    """

    _env_idx_key = ENV_INDEX_KEY
    backend: str = ""

    def __init__(
        self,
        env_makers: Callable[[], EnvBase] | Sequence[Callable[[], EnvBase]],
        *,
        stack: str = "dense",
        create_env_kwargs: dict | Sequence[dict] | None = None,
        recv_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        backend = kwargs.pop("backend", self.backend)
        if backend != self.backend:
            raise ValueError(
                f"{type(self).__name__} has backend {self.backend!r}; got backend={backend!r} "
                "(AsyncEnvPool(..., backend=...) picks the class)."
            )
        makers = list(env_makers) if isinstance(env_makers, (list, tuple)) else [env_makers]
        if not makers:
            raise ValueError("AsyncEnvPool needs at least one env maker; got an empty list.")
        for i, maker in enumerate(makers):
            if isinstance(maker, EnvBase):
                name = type(maker).__name__
                raise TypeError(
                    f"env_makers[{i}] is an env instance ({name}); AsyncEnvPool builds its own "
                    f"sub-envs: pass a factory, e.g. `lambda: {name}(...)` or `{name}`."
                )
        if kwargs.get("envs_per_worker", 1) != 1:
            raise NotImplementedError(
                "AsyncEnvPool does not support envs_per_worker= (one sub-env per worker); use "
                "ParallelEnv for it."
            )
        kwargs.pop("envs_per_worker", None)
        restart_failed = bool(kwargs.pop("restart_failed", False))
        max_restarts = kwargs.pop("max_restarts", 10)
        if not isinstance(max_restarts, int) or isinstance(max_restarts, bool) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an int >= 0; got {max_restarts!r}.")
        if isinstance(self, ParallelEnv):  # its workers restart (torchenv.batched._restart)
            kwargs.update(restart_failed=restart_failed, max_restarts=max_restarts)
        if stack not in _STACKS:
            raise ValueError(f"stack must be one of {tuple(_STACKS)}; got {stack!r}.")
        n = len(makers)
        if recv_size is not None and (
            isinstance(recv_size, bool) or not isinstance(recv_size, int) or not 1 <= recv_size <= n
        ):
            raise ValueError(
                f"recv_size must be an int between 1 and the number of sub-envs ({n}); "
                f"got {recv_size!r}."
            )
        kwargs.setdefault("share_individual_td", _STACKS[stack])
        d = self.__dict__
        d["restart_failed"], d["max_restarts"] = restart_failed, max_restarts
        super().__init__(n, makers, create_env_kwargs, **kwargs)
        if restart_failed and not isinstance(self, ParallelEnv):  # ParallelEnv adds its own
            flag = Categorical(2, shape=(*self.batch_size, 1), dtype=torch.bool)
            self.observation_spec[RESTART_KEY] = flag.to(self.device) if self.device else flag
        d["stack"] = stack
        d["recv_size"] = recv_size
        d["min_get"] = 1 if recv_size is None else recv_size
        d["max_get"] = recv_size
        self._clear_async()

    # ------------------------------------------------------------------ bookkeeping
    @property
    def num_envs(self) -> int:
        """The number of sub-environments."""
        return self.num_workers

    @property
    def env_makers(self) -> list:
        """The factories of the sub-environments."""
        return self.create_env_fn

    def _clear_async(self) -> None:
        d = self.__dict__
        d["_busy"] = {}  # sub-env -> kind of the command in flight (until received)
        d["_sent_at"] = {}  # sub-env -> time.monotonic() of the send
        d["_sent"] = {}  # sub-env -> (input tensordict, row, store signature) of a step
        d["_store"] = {}  # name -> [num_envs, ...]: the inputs of the steps in flight
        d["_store_gen"] = 0  # bumped when a store tensor is replaced (older rows then lost)
        d["_finished"] = {STEP: [], STEP_AND_MAYBE_RESET: [], RESET: []}  # in finishing order
        d["_status"] = {}  # finished sub-env -> (status, error info or None)
        d["_reset_args"] = {}  # sub-env -> the arguments of its reset in flight
        d["_restarting"] = set()  # restarted sub-envs whose reset (of the new env) is in flight
        d["_flagged"] = set()  # finished sub-envs whose command ended with a restart
        d.setdefault("_index_cache", {})
        d.setdefault("_index_ids", {})  # id(cached index tensor) -> (tensor, ids)
        d["_cache"].pop("async_in_writers", None)  # buffer views: rebuilt after a restart

    @property
    def busy(self) -> list[int]:
        """The sub-envs with a command in flight or not yet received, sorted."""
        return sorted(self.__dict__["_busy"])

    def _check_idle(self, what: str) -> None:
        busy = self.__dict__.get("_busy")
        if busy:
            kinds = sorted(set(busy.values()))
            raise RuntimeError(
                f"{type(self).__name__}.{what}: sub-envs {sorted(busy)} are still processing "
                f"an asynchronous {' / '.join(kinds)}; receive them first "
                f"(async_{kinds[0]}_recv(min_get=len(pool.busy)))."
            )

    def _dispatch(self, op, workers, args=None, reply=False):
        # every synchronous command (step, reset, set_seed, attributes...) passes here
        self._check_idle(W.op_name(op))
        return self._sync_dispatch(op, workers, args, reply)

    def _sync_dispatch(self, op, workers, args, reply):  # pragma: no cover - backends
        raise NotImplementedError

    def _shutdown(self) -> None:
        try:
            super()._shutdown()
        finally:
            self._clear_async()

    # ------------------------------------------------------------------ backend hooks
    def _launch(self, op: int, ids: list[int], args: list) -> None:  # pragma: no cover
        """Start ``op`` on the sub-envs ``ids`` (their input rows written); ``args``: one per
        sub-env, sent along with a reset."""
        raise NotImplementedError

    def _harvest(  # pragma: no cover - backends
        self, wait: float | None, need: int = 1
    ) -> list[tuple[int, int, Any]]:
        """``(sub-env, status, error info)`` of sub-envs that finished since the last call,
        waiting up to ``wait`` seconds (``None``: until one does) when none has; ``need``: how
        many the caller waits for (a backend may sleep until that many finished)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ send
    def _indices(self, tensordict: TensorDictBase | None, env_index: Any, what: str) -> list[int]:
        n = self.num_workers
        if env_index is None:
            if tensordict is None:
                return list(range(n))
            value = tensordict.get(ENV_INDEX_KEY, None)
            if value is None and tensordict.batch_size == self.batch_size:
                return list(range(n))  # one row per sub-env, in order
            if value is None:
                raise KeyError(
                    f"{what}: say which sub-envs the rows are for: pass env_index= or set the "
                    f"{ENV_INDEX_KEY!r} entry of the tensordict (as async_*_recv returns it)."
                )
            env_index = value
            known = self.__dict__["_index_ids"].get(id(value))
            if known is not None and known[0] is value:  # a tag of ours, as recv returned it
                return list(known[1])
        if isinstance(env_index, torch.Tensor):
            if env_index.ndim == 1 and not env_index.is_floating_point():  # as recv tags them
                ids = env_index.tolist()
                if (
                    ids
                    and min(ids) >= 0
                    and max(ids) < n
                    and len(set(ids)) == len(ids)
                    and env_index.dtype != torch.bool
                ):
                    return ids
            ids = env_index.reshape(env_index.shape[0], -1)[:, 0] if env_index.ndim else env_index
            ids = ids.tolist()
        elif hasattr(env_index, "tolist"):  # NonTensorStack, numpy
            ids = env_index.tolist()
        else:
            ids = env_index
        if isinstance(ids, int) and not isinstance(ids, bool):
            ids = [ids]
        flat = []
        for x in ids:
            while isinstance(x, list) and x:  # per-row lists (sub-envs with a batch)
                x = x[0]
            flat.append(x)
        for x in flat:
            if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < n:
                raise IndexError(
                    f"{what}: env_index must hold sub-env indices in [0, {n}); got {flat}."
                )
        if len(set(flat)) != len(flat):
            raise ValueError(f"{what}: env_index names a sub-env twice: {flat}.")
        return flat

    def _send(
        self, kind: str, tensordict: TensorDictBase | None, env_index: Any, kwargs: dict
    ) -> None:
        what = f"async_{kind}_send"
        d = self.__dict__
        if d.get("_view_link") is not None:
            raise TypeError(
                f"{what}: asynchronous commands go to the pool itself, not to a view over some "
                "of its sub-envs (pool[...]); pass env_index= to the pool instead."
            )
        if kind == RESET:
            self._ensure_started()
        elif not d["_started"]:
            self._start_for_step()
        if not d["_use_buffers"]:
            raise NotImplementedError(
                f"{what}: the asynchronous API needs the shared buffers, which these sub-envs "
                "cannot use (dynamic specs or non-tensor entries); use the synchronous "
                "step/reset, or a ParallelEnv."
            )
        single = isinstance(env_index, int) and not isinstance(env_index, bool)
        if single and tensordict is not None:
            tensordict = tensordict.unsqueeze(0)
        ids = self._indices(tensordict, env_index, what)
        busy = d["_busy"]
        clash = [i for i in ids if i in busy]
        if clash:
            raise RuntimeError(
                f"{what}: sub-envs {clash} are still processing an asynchronous "
                f"{' / '.join(sorted({busy[i] for i in clash}))}; receive them first."
            )
        if tensordict is not None:
            expected = torch.Size([len(ids), *self._worker_batch[0]])
            if tensordict.batch_size != expected:
                raise ValueError(
                    f"{what}: the tensordict has batch_size {tuple(tensordict.batch_size)}; "
                    f"expected {tuple(expected)} (one row per sub-env in env_index={ids})."
                )
        if kind != RESET:
            if tensordict is None:
                raise TypeError(f"{what}: a tensordict with the actions is required.")
            self._check_actions(tensordict, len(ids), what)
            self._write_rows(tensordict, ids)
            sig = self._store_inputs(tensordict, ids)
            if sig is None:  # kept as sent (entries set on the caller's td later stay out)
                tensordict = tensordict.copy()
            args: list = [None] * len(ids)
        else:
            keys = None
            if tensordict is not None:
                keys = [_tuple(k) for k in self.state_keys if tensordict.get(k, None) is not None]
                self._write_rows(tensordict, ids)
            args = [(keys, kwargs)] * len(ids)
        now = time.monotonic()
        sent, sent_at = d["_sent"], d["_sent_at"]
        for row, i in enumerate(ids):
            busy[i] = kind
            sent_at[i] = now
            if kind != RESET:
                sent[i] = (tensordict, row, sig)
        if kind == RESET and d.get("restart_failed"):
            d["_reset_args"].update(zip(ids, args))
        try:
            self._launch(_OPS[kind], ids, args)
        except BaseException:
            for i in ids:
                busy.pop(i, None)
                sent.pop(i, None)
            raise

    def _action_shapes(self) -> list:
        spec = self.full_action_spec
        return [(key, spec[key].shape[1:]) for key in self.action_keys]

    def _check_actions(self, tensordict: TensorDictBase, k: int, what: str) -> None:
        for key, tail in self._cached("async_action_shapes", self._action_shapes):
            value = tensordict.get(key, None)
            if value is not None and value.shape[0] == k and value.shape[1:] == tail:
                continue
            shape = torch.Size([k, *tail])
            if value is None:
                raise KeyError(
                    f"{what}: the tensordict has no action {key!r} (expected shape {tuple(shape)})."
                )
            if value.shape != shape:
                raise ValueError(
                    f"{what}: action {key!r} has shape {tuple(value.shape)}; expected "
                    f"{tuple(shape)}."
                )

    def _in_writers(self) -> list:
        """``(getter, block)`` of the input rows a send writes (not the ``"_reset"`` flags)."""
        return [(getter(k), b) for k, b in self._groups["in"].blocks if k[-1] != "_reset"]

    def _write_rows(self, tensordict: TensorDictBase, ids: list[int]) -> None:
        group = self._groups["in"]
        with _NoGrad():
            if group.dense:
                idx = self._index(ids)
                for get, block in self._cached("async_in_writers", self._in_writers):
                    value = get(tensordict)
                    if value is not None:
                        if value.dtype != block.dtype or value.device != block.device:
                            value = value.to(block.device, block.dtype)
                        if value.shape[1:] != block.shape[1:]:
                            value = value.reshape(len(ids), *block.shape[1:])
                        block.index_copy_(0, idx, value)
            else:
                for row, i in enumerate(ids):
                    write_row(group.writers[i], tensordict[row])

    # ------------------------------------------------------------------ receive
    def _collect(
        self,
        kind: str,
        min_get: int | None,
        env_index: int | None,
        max_get: int | None,
        timeout: float | None,
    ) -> list[int]:
        """Wait for, and take, finished sub-envs of ``kind``; raise the first error among them."""
        what = f"async_{kind}_recv"
        d = self.__dict__
        if not d["_started"] and d.get("_closed_after_start"):
            raise W.EnvClosedError(
                f"{what}: the {type(self).__name__} is closed; nothing is in flight."
            )
        busy, finished = d["_busy"], d["_finished"][kind]
        in_flight = [i for i, k in busy.items() if k == kind]
        if env_index is not None:
            if isinstance(env_index, bool) or not isinstance(env_index, int):
                raise TypeError(f"{what}: env_index must be an int; got {env_index!r}.")
            if busy.get(env_index) != kind:
                raise RuntimeError(
                    f"{what}: sub-env {env_index} has no {kind} in flight "
                    f"(in flight: {self._describe_busy()}); call async_{kind}_send first."
                )
        else:
            if not in_flight:
                raise RuntimeError(
                    f"{what}: no {kind} in flight (in flight: {self._describe_busy()}); call "
                    f"async_{kind}_send first."
                )
            if min_get is None:  # the pool's default: recv_size, or fewer if fewer are left
                min_get = min(d["min_get"], len(in_flight))
            if max_get is None and d["max_get"] is not None:
                max_get = max(d["max_get"], min_get)
            if min_get > len(in_flight):
                raise RuntimeError(
                    f"{what}: cannot await {min_get} sub-envs when only {len(in_flight)} "
                    f"are processing a {kind}."
                )
            if max_get is not None and max_get < min_get:
                raise ValueError(f"{what}: max_get={max_get} is below min_get={min_get}.")
        deadline = None if timeout is None else time.monotonic() + timeout

        def enough() -> bool:
            if env_index is not None:
                return env_index in finished
            return len(finished) >= min_get

        self._absorb(self._harvest(0.0))
        while not enough():
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                got = len(finished) if env_index is None else int(env_index in finished)
                raise TimeoutError(
                    f"{what}: {got} of the {1 if env_index is not None else min_get} "
                    f"sub-envs awaited finished within {timeout} s; the results stay "
                    "available to the next recv."
                )
            need = 1 if env_index is not None else min_get - len(finished)
            self._absorb(self._harvest(wait, need))
        if env_index is not None:
            taken = [env_index]
        else:
            taken = finished[:max_get] if max_get is not None else list(finished)
        taken_set = set(taken)
        finished[:] = [i for i in finished if i not in taken_set]
        status = d["_status"]
        errors = [i for i in taken if status[i][1] is not None]
        if errors:  # the failed sub-envs are released; the others stay available
            finished[:0] = [i for i in taken if i not in errors]
            first, info = errors[0], status[errors[0]][1]
            for i in errors:
                self._release(i)
            err = W.make_worker_error(first, self._pid(first), _OPS[kind], info)
            if len(errors) > 1:
                err.args = (err.args[0] + f"\n(sub-envs {errors[1:]} failed too)",)
            raise err
        return sorted(taken)

    def _absorb(self, harvested: list[tuple[int, int, Any]]) -> None:
        d = self.__dict__
        busy, finished, status = d["_busy"], d["_finished"], d["_status"]
        restarting = d["_restarting"]
        for i, code, info in harvested:
            if d.get("restart_failed"):
                if code == W.STATUS_ERROR:  # restarted (reset relaunched), or raised past the limit
                    op = W.OP_RESET if i in restarting else _OPS[busy[i]]
                    self._on_failure(i, W.make_worker_error(i, self._pid(i), op, info))
                    continue
                if i in restarting:  # the new env's reset is done: end the episode
                    restarting.discard(i)
                    kind = busy[i]
                    if kind != RESET:
                        _end_episodes(self, [i])
                        d["_flagged"].add(i)
                    code = W.STATUS_ROOT_WRITTEN if kind == STEP_AND_MAYBE_RESET else W.STATUS_OK
            status[i] = (code, info)
            finished[busy[i]].append(i)

    def _on_failure(self, i: int, err: W.WorkerError) -> None:
        """Sub-env ``i`` died, hung or raised (``err``) during its command: replace it by a new
        one from the same factory (``restart_failed=True``; else, or past ``max_restarts``,
        ``err`` is raised) and start the new one's reset; when that is done its command counts
        as finished, the episode ended as truncated (see :mod:`torchenv.batched._restart`)."""
        d = self.__dict__
        if not d.get("restart_failed"):
            self._release(i)
            raise err
        cause = str(err).split("\n\nTraceback", 1)[0].split("\n", 1)[0]
        try:
            old_pid, restarts = self._replace(i, err)
        except BaseException:
            self._release(i)
            raise
        warn_restarted(self, [i], old_pid, cause, restarts, d["max_restarts"])
        d["_restarting"].add(i)
        d["_sent_at"][i] = time.monotonic()
        self._launch(W.OP_RESET, [i], [d["_reset_args"].get(i, (None, {}))])

    def _replace(self, i: int, err: W.WorkerError) -> tuple[int | None, int]:  # pragma: no cover
        """Replace sub-env ``i`` (seeded as :func:`~torchenv.batched._restart.restart_seed`
        says); returns the old worker's pid and its restart count. Raises ``err`` past
        ``max_restarts``."""
        raise NotImplementedError

    def _flags(self, ids: list[int], flagged: bool) -> torch.Tensor:
        """``(len(ids), *sub-batch, 1)`` bool: the ``"worker_restarted"`` entry of a recv."""
        flags = torch.zeros((len(ids), *self._worker_batch[0], 1), dtype=torch.bool)
        mine = self.__dict__["_flagged"]
        if flagged and mine:
            for row, i in enumerate(ids):
                if i in mine:
                    flags[row] = True
                    mine.discard(i)
        return flags

    def _release(self, i: int) -> tuple | None:
        d = self.__dict__
        d["_busy"].pop(i, None)
        d["_sent_at"].pop(i, None)
        d["_status"].pop(i, None)
        d["_reset_args"].pop(i, None)
        d["_restarting"].discard(i)
        return d["_sent"].pop(i, None)

    def _release_all(self, ids: list[int]) -> None:
        """:meth:`_release` of each of ``ids`` (received)."""
        d = self.__dict__
        busy, sent_at, status, sent = d["_busy"], d["_sent_at"], d["_status"], d["_sent"]
        reset_args, restarting = d["_reset_args"], d["_restarting"]
        for i in ids:
            del busy[i], status[i]
            sent_at.pop(i, None)
            sent.pop(i, None)
        if reset_args or restarting:
            for i in ids:
                reset_args.pop(i, None)
                restarting.discard(i)

    def _pid(self, i: int) -> int | None:
        return None

    def _describe_busy(self) -> str:
        busy = self.__dict__["_busy"]
        return ", ".join(f"{i}: {k}" for i, k in sorted(busy.items())) or "nothing"

    def _store_inputs(self, tensordict: TensorDictBase, ids: list[int]) -> tuple | None:
        """Copy the entries of a flat ``tensordict`` into the rows ``ids`` of the input store
        (one op per key; ``recv`` then gathers the inputs of any mix of sub-envs with one op
        per key). Returns the rows' signature, or ``None`` when the tensordict does not fit
        (nested entries, or a type other than ``TensorDict``)."""
        if type(tensordict) is not TensorDict:
            return None
        data = tensordict._tensordict
        d = self.__dict__
        store, n = d["_store"], self.num_workers
        idx = self._index(ids)
        names = []
        with _NoGrad():
            for name, value in data.items():
                if name == ENV_INDEX_KEY:
                    continue
                if type(value) is not torch.Tensor and (
                    not isinstance(value, torch.Tensor) or isinstance(value, TensorDictBase)
                ):
                    return None
                block = store.get(name)
                if (
                    block is None
                    or block.shape[1:] != value.shape[1:]
                    or block.dtype != value.dtype
                    or block.device != value.device
                ):
                    if block is not None:
                        d["_store_gen"] += 1  # rows of this key sent before are lost
                    block = store[name] = value.new_zeros((n, *value.shape[1:]))
                block.index_copy_(0, idx, value)
                names.append(name)
        return (d["_store_gen"], tuple(names))

    def _inputs(self, ids: list[int]) -> TensorDictBase:
        """The rows sent for ``ids``: from the input store, or gathered from the tensordicts
        they came in."""
        d = self.__dict__
        sent = d["_sent"]
        batch = torch.Size([len(ids), *self._worker_batch[0]])
        sig = sent[ids[0]][2]
        if sig is not None and sig[0] == d["_store_gen"] and all(sent[i][2] == sig for i in ids):
            idx, store = self._index(ids), d["_store"]
            data = {name: store[name].index_select(0, idx) for name in sig[1]}
            return TensorDict._new_unsafe(data, batch, nested=False)
        parts: list = []  # [tensordict, [rows]] in order of ids
        for i in ids:
            td, row, _ = sent[i]
            if parts and parts[-1][0] is td:
                parts[-1][1].append(row)
            else:
                parts.append([td, [row]])
        if all(type(td) is TensorDict for td, _ in parts):
            leaves = [
                (key, [td.get(key, None) for td, _ in parts])
                for key in parts[0][0].keys(True, True, is_leaf=_is_tensor)
                if key != ENV_INDEX_KEY  # tagged again
            ]
            if all(v is not None for _, vs in leaves for v in vs):
                pairs = []
                for key, values in leaves:
                    pieces = [v[self._index(rows)] for v, (_, rows) in zip(values, parts)]
                    pairs.append((key, pieces[0] if len(pieces) == 1 else torch.cat(pieces)))
                return build_td([(_tuple(k), v) for k, v in pairs], batch)
        pieces = [td[self._index(rows)] for td, rows in parts]
        if len(pieces) == 1:
            return pieces[0]
        common = set(pieces[0].keys(True, True))
        for p in pieces[1:]:
            common &= set(p.keys(True, True))
        return torch.cat([p.select(*common) for p in pieces], 0)

    def _index(self, ids: Sequence[int]) -> torch.Tensor:
        """``ids`` as a long tensor, cached (building it costs more than indexing with it)."""
        d = self.__dict__
        cache = d["_index_cache"]
        key = tuple(ids)
        idx = cache.get(key)
        if idx is None:
            if len(cache) > 4096:
                cache.clear()
                d["_index_ids"].clear()
            idx = cache[key] = torch.as_tensor(key, dtype=torch.long)
            d["_index_ids"][id(idx)] = (idx, key)
        return idx

    def _tag(self, td: TensorDictBase, ids: list[int]) -> TensorDictBase:
        idx = self._index(ids)
        sub = self._worker_batch[0]
        if sub:
            idx = idx.reshape(-1, *([1] * len(sub))).expand(len(ids), *sub)
        if type(td) is TensorDict:  # the tag is never written to: one tensor for every output
            td._set_str(ENV_INDEX_KEY, idx, validated=True, inplace=False)
        else:
            td.set(ENV_INDEX_KEY, idx.clone())
        return td

    def _rows(self, group: str, ids: list[int]) -> TensorDictBase:
        g = self._groups[group]
        batch = torch.Size([len(ids), *self._worker_batch[0]])
        flat = g._flat_blocks
        if flat is not None:  # the common case: one index_select per key (cached index)
            idx = self._index(ids)
            data = {name: block.index_select(0, idx) for name, block in flat}
            return TensorDict._new_unsafe(data, batch, nested=False)
        return g.snapshot(batch, self._worker_batch, ids)

    # ------------------------------------------------------------------ public API
    def async_step_send(
        self, tensordict: TensorDictBase, env_index: int | Sequence[int] | None = None
    ) -> None:
        """Start a step of the sub-envs ``env_index`` names (default: ``tensordict["env_index"]``).

        ``tensordict`` has one row per sub-env (an int ``env_index``: that sub-env's own
        tensordict) holding the actions. Returns at once; :meth:`async_step_recv` collects.
        """
        self._send(STEP, tensordict, env_index, {})

    def async_step_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The steps finished: at least ``min_get`` (default :attr:`min_get`), at most
        ``max_get`` (default :attr:`max_get`; ``None``: all finished), or the one of sub-env
        ``env_index``. Rows sorted by sub-env, as ``step`` returns them (the input sent, with
        ``"next"``), each tagged with its ``"env_index"``.

        Raises:
            RuntimeError: no step in flight (or none for ``env_index``).
            TimeoutError: fewer than ``min_get`` finished within ``timeout`` seconds; those
                that did stay available.
            WorkerError: a sub-env's step raised (the others stay available).
        """
        ids = self._collect(STEP, min_get, env_index, max_get, timeout)
        nxt = self._rows("next", ids)
        if self.__dict__.get("restart_failed"):
            nxt.set(RESTART_KEY, self._flags(ids, True))
        td = self._inputs(ids)
        self._release_all(ids)
        _set_next(td, self._cast(self._tag(nxt, ids)))
        return self._tag(td, ids)

    def async_step_and_maybe_reset_send(
        self, tensordict: TensorDictBase, env_index: int | Sequence[int] | None = None
    ) -> None:
        """Start a step of the sub-envs ``env_index`` names, each reset when done (as
        :meth:`step_and_maybe_reset`); :meth:`async_step_and_maybe_reset_recv` collects."""
        self._send(STEP_AND_MAYBE_RESET, tensordict, env_index, {})

    def async_step_and_maybe_reset_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """``(tensordict, tensordict_)`` of the finished sub-envs, as
        :meth:`step_and_maybe_reset` returns them (the step, and the next input: reset where
        done), both tagged with ``"env_index"``. Waits as :meth:`async_step_recv`."""
        ids = self._collect(STEP_AND_MAYBE_RESET, min_get, env_index, max_get, timeout)
        status = self.__dict__["_status"]
        written = [row for row, i in enumerate(ids) if status[i][0] == W.STATUS_ROOT_WRITTEN]
        nxt = self._rows("next", ids)
        td = self._inputs(ids)
        root = self._root_of(nxt, td, ids, written)
        if self.__dict__.get("restart_failed"):
            nxt.set(RESTART_KEY, self._flags(ids, True))
            root.set(RESTART_KEY, self._flags(ids, False))
        self._release_all(ids)
        nxt, root = self._cast(nxt), self._cast(root)
        _set_next(td, self._tag(nxt, ids))
        extra = [k for k in self._extra_root_keys(td) if k != ENV_INDEX_KEY]
        if extra:
            root.update(td.select(*extra))
        return self._tag(td, ids), self._tag(root, ids)

    def _root_of(
        self, nxt: TensorDictBase, td: TensorDictBase, ids: list[int], written: list[int]
    ) -> TensorDictBase:
        """The next input of sub-envs ``ids``: their step's output, with the state entries
        carried from the input, and the rows in ``written`` (reset) from the root rows."""
        group = self._groups["root"]
        if not group.dense:
            root = self._rows("root", ids)
            if len(written) < len(ids):
                for row in range(len(ids)):
                    if row not in written:
                        sub = root.tensordicts[row]
                        src = nxt.tensordicts[row]
                        for key in sub.keys(True, True):
                            value = src.get(key, None)
                            if value is None:
                                value = td[row].get(key, None)
                            if value is not None:
                                sub.set(key, value.clone())
            return root
        batch = torch.Size([len(ids), *self._worker_batch[0]])
        flat = group._flat_blocks
        if (
            not written and flat is not None and type(nxt) is TensorDict and type(td) is TensorDict
        ):  # no reset (the usual step): the step's outputs, and the states carried
            nd, tdd = nxt._tensordict, td._tensordict
            data = {}
            for name, _ in flat:
                value = nd.get(name)
                if value is None:
                    value = tdd.get(name)
                if value is None or type(value) is not torch.Tensor:
                    break
                data[name] = value
            else:
                return TensorDict._new_unsafe(data, batch, nested=False)
        every = len(written) == len(ids)
        if written and not every:
            pos = self._index(written)
            wid = self._index([ids[r] for r in written])
        pairs = []
        for key, block in group.blocks:
            value = nxt.get(key, None)
            if value is None:
                value = td.get(key, None)
            if value is None or (every and value.dtype == block.dtype):
                value = block.index_select(0, self._index(ids))  # every row reset (or none)
            elif written:
                value = value.clone()
                value[pos] = block.index_select(0, wid)
            pairs.append((key, value))
        return build_td(pairs, batch)

    def async_reset_send(
        self,
        tensordict: TensorDictBase | None = None,
        env_index: int | Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        """Start a reset of the sub-envs ``env_index`` names (default: the ``"env_index"`` of
        ``tensordict``, or every sub-env when both are ``None``); ``kwargs`` go to each
        sub-env's ``reset``. :meth:`async_reset_recv` collects."""
        self._send(RESET, tensordict, env_index, kwargs)

    def async_reset_recv(
        self,
        min_get: int | None = None,
        env_index: int | None = None,
        *,
        max_get: int | None = None,
        timeout: float | None = None,
    ) -> TensorDictBase:
        """The resets finished, rows sorted by sub-env and tagged with ``"env_index"``; waits
        as :meth:`async_step_recv`."""
        ids = self._collect(RESET, min_get, env_index, max_get, timeout)
        root = self._rows("root", ids)
        if self.__dict__.get("restart_failed"):
            root.set(RESTART_KEY, self._flags(ids, False))
        self._release_all(ids)
        return self._tag(self._cast(root), ids)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_envs={self.num_workers}, backend={self.backend!r}, "
            f"recv_size={self.recv_size}, batch_size={self.batch_size},\n    env={self._env_str})"
        )


class _NoGrad:
    """``torch.no_grad()`` at a fraction of its cost when gradients are already off (the
    usual case in a collection loop): the state is only touched when it is on."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = torch.is_grad_enabled()
        if self.enabled:
            torch._C._set_grad_enabled(False)

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            torch._C._set_grad_enabled(True)


def _is_tensor(cls: type) -> bool:
    """``is_leaf`` for ``keys``: plain tensors only (sub-tensordicts are walked)."""
    return issubclass(cls, torch.Tensor)


def _set_next(td: TensorDictBase, nxt: TensorDictBase) -> None:
    """``td["next"] = nxt``, without re-validating a plain ``TensorDict`` built here."""
    if type(td) is TensorDict and type(nxt) is TensorDict and td.device == nxt.device:
        td._set_str("next", nxt, validated=True, inplace=False)
    else:
        td.set("next", nxt)
