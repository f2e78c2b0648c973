"""Indexing a batched env: ``env[1:]`` is a view over some of its sub-environments.

A view is a batched env of the same type (a ``SerialEnv`` view of a ``SerialEnv``, a
``ParallelEnv`` view of a ``ParallelEnv``) whose batch size is the number of selected
sub-environments. It starts nothing: it sends its commands to the parent's sub-environments
(worker processes for ``ParallelEnv``), as TorchRL's ``BatchedEnvBase.__getitem__`` does.

Design (simple rather than fast, a view is not the hot path): the view keeps a link to the
root parent and the parent-side indices of its workers; its specs are the sub-envs' specs
stacked for those workers; it has no buffers of its own and moves data through the workers'
pipes (the ``*_NO_BUFFERS`` commands), so stepping a view never touches the parent's buffers
or the rows of the other workers. Each command checks that the parent was not closed since
the view was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from torchenv.batched import _worker as W

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.batched._base import BatchedEnvBase

__all__ = ["ViewLink", "check_view", "close_view", "make_view", "normalize_index"]

_ACCEPTED = "an int, a slice, or a 1-D sequence / tensor of ints"
_PIPE_OPS = frozenset(
    {
        W.OP_STEP_NO_BUFFERS,
        W.OP_RESET_NO_BUFFERS,
        W.OP_SMR_NO_BUFFERS,
        W.OP_SEED,
        W.OP_GETATTR,
        W.OP_CALL,
    }
)


def _check_int(index: int, num_workers: int) -> int:
    position = index + num_workers if index < 0 else index
    if not 0 <= position < num_workers:
        raise IndexError(
            f"index {index} is out of range for a batched env of {num_workers} envs "
            f"(expected {-num_workers} <= index < {num_workers})."
        )
    return position


def normalize_index(item: Any, num_workers: int) -> list[int]:
    """The worker positions that ``item`` selects, as TorchRL's batched env indexing reads it.

    Args:
        item: an int (negative counts from the end), a slice, or a 1-D sequence or tensor of
            ints (repeats allowed, order kept).
        num_workers: how many sub-environments the batched env has.

    Returns:
        The selected positions, in ``[0, num_workers)``.

    Raises:
        NotImplementedError: for a boolean or a boolean mask (as TorchRL).
        IndexError: for an out-of-range position, an empty selection, or a tensor of more
            than one dim.
        TypeError: for a float or any other non-integer index (TorchRL reads a float as
            ``int(item)``; see docs/migrating-from-torchrl.md), or a string.
        RuntimeError: for ``None``, ``...`` and other objects that are no indices (TorchRL's
            type for them).

    Examples:
        >>> normalize_index(-1, 3), normalize_index(slice(1, None), 3), normalize_index([0, 2], 3)
        ([2], [1, 2], [0, 2])
    """
    if isinstance(item, bool) or (isinstance(item, torch.Tensor) and item.dtype == torch.bool):
        raise NotImplementedError(
            f"Boolean masks are not supported for batched envs (got {item!r}); pass the "
            "positions instead, e.g. mask.nonzero().squeeze(-1)."
        )
    if isinstance(item, int):
        return [_check_int(item, num_workers)]
    if isinstance(item, slice):
        indices = list(range(num_workers))[item]
        if not indices:
            raise IndexError(
                f"Empty batched env indexing is not supported: {item!r} selects none of the "
                f"{num_workers} envs."
            )
        return indices
    if isinstance(item, (float, str, bytes)):
        raise TypeError(
            f"batched env indices must be {_ACCEPTED}; got {type(item).__name__} {item!r}."
        )
    try:
        index = torch.as_tensor(item)
    except (TypeError, RuntimeError, ValueError) as err:
        error = RuntimeError if isinstance(err, RuntimeError) else TypeError
        raise error(
            f"batched env indices must be {_ACCEPTED}; got {type(item).__name__} {item!r}."
        ) from err
    if index.dtype == torch.bool:
        raise NotImplementedError(
            f"Boolean masks are not supported for batched envs (got {item!r}); pass the "
            "positions instead, e.g. mask.nonzero().squeeze(-1)."
        )
    if index.ndim > 1:
        raise IndexError(
            f"Batched env indices must be scalar or 1D, got shape {tuple(index.shape)}."
        )
    if index.numel() == 0:
        raise IndexError(
            f"Empty batched env indexing is not supported: {item!r} selects none of the "
            f"{num_workers} envs."
        )
    if index.is_floating_point() or index.is_complex():
        raise TypeError(
            f"batched env indices must be {_ACCEPTED}; got {item!r} (dtype {index.dtype})."
        )
    if index.ndim == 0:
        return [_check_int(int(index), num_workers)]
    return [_check_int(int(i), num_workers) for i in index.tolist()]


class ViewLink:
    """What a view knows of its parent: the root batched env and the positions it selects.

    Args:
        root: the batched env that owns the sub-environments (never a view).
        workers: the root's worker positions, one per row of the view.
    """

    def __init__(self, root: BatchedEnvBase, workers: list[int]) -> None:
        self.root = root
        self.workers = workers
        self.generation = root.__dict__["_generation"]

    def parent_closed(self) -> bool:
        """Whether the root was closed (maybe restarted since) after the view was made."""
        d = self.root.__dict__
        return d["_generation"] != self.generation or not d["_started"]


class _ViewDispatch:
    """The view's ``_dispatch``: its commands, on the root's workers (pipe commands only)."""

    def __init__(self, view: BatchedEnvBase, link: ViewLink) -> None:
        self.view, self.link = view, link

    def __call__(
        self,
        op: int,
        workers: Sequence[int],
        args: Sequence[Any] | None = None,
        reply: bool = False,
    ) -> list | None:
        check_view(self.view)
        if op not in _PIPE_OPS:  # pragma: no cover - internal misuse
            raise RuntimeError(f"a batched env view cannot run {W.op_name(op)}")
        mapped = [self.link.workers[i] for i in workers]
        root = self.link.root
        if len(set(mapped)) == len(mapped):
            return root._dispatch(op, mapped, args, reply)
        # a worker selected twice (env[[0, 0]]): one command at a time, in order
        out: list = []
        for n, i in enumerate(mapped):
            arg = None if args is None else [args[n]]
            out.extend(root._dispatch(op, [i], arg, reply) or [])
        return out


def check_view(view: BatchedEnvBase) -> None:
    """Raise :class:`~torchenv.batched.EnvClosedError` if ``view`` or its parent was closed.

    Args:
        view: a batched env view (made by indexing).
    """
    link: ViewLink = view.__dict__["_view_link"]
    if view.is_closed:
        raise W.EnvClosedError(
            f"Cannot use a closed indexed batched environment view ({type(view).__name__} "
            f"of workers {link.workers}). Create a new view from the parent environment instead."
        )
    if link.parent_closed():
        close_view(view)
        raise W.EnvClosedError(
            f"Cannot use an indexed batched environment view ({type(view).__name__} of workers "
            f"{link.workers}) after its parent environment has been closed."
        )


def close_view(view: BatchedEnvBase) -> None:
    """Close a view: it can no longer be used; the parent's sub-environments keep running.

    Args:
        view: a batched env view (made by indexing).
    """
    d = view.__dict__
    d["_generation"] += 1
    d["_started"] = False
    view.is_closed = True


_COPIED = (
    "share_individual_td",
    "shared_memory",
    "memmap",
    "policy_proof",
    "num_threads",
    "num_sub_threads",
    "serial_for_single",
    "non_blocking",
    "mp_start_method",
    "timeout",
    "_sub_device",
    "_env_str",
    "_run_type_checks",
    "_allow_done_after_reset",
)


def make_view(parent: BatchedEnvBase, item: Any) -> BatchedEnvBase:
    """A batched env of ``type(parent)`` over the sub-environments that ``item`` selects.

    The parent is started first if needed (as TorchRL does). The view shares the parent's
    sub-environments (no new process); closing it leaves them running; closing the parent
    makes the view raise :class:`~torchenv.batched.EnvClosedError`.

    Args:
        parent: a ``SerialEnv`` or ``ParallelEnv`` (or a view of one).
        item: see :func:`normalize_index`.

    Returns:
        The view, of batch size ``[len(selected), *sub_env_batch_size]``.

    Examples:
        >>> from torchenv.batched import SerialEnv
        >>> from torchenv.envs import PendulumEnv
        >>> env = SerialEnv(3, PendulumEnv)
        >>> view = make_view(env, slice(1, None))  # env[1:]
        >>> type(view).__name__, view.batch_size, view.reset().batch_size
        ('SerialEnv', torch.Size([2]), torch.Size([2]))
        >>> env.close()
    """
    from torchenv.batched._base import _stack_specs
    from torchenv.envs import EnvBase

    indices = normalize_index(item, parent.num_workers)
    link: ViewLink | None = parent.__dict__.get("_view_link")
    if link is not None:
        check_view(parent)
        root, workers = link.root, [link.workers[i] for i in indices]
    else:
        parent._ensure_started()
        root, workers = parent, indices
    rd = root.__dict__
    cls = type(parent)
    view = cls.__new__(cls)
    EnvBase.__init__(
        view,
        device=parent.device,
        batch_size=(len(workers), *rd["_worker_batch"][workers[0]]),
    )
    d = view.__dict__
    for name in _COPIED:
        d[name] = rd[name]
    if "_batch_locked" in parent.__dict__:
        d["_batch_locked"] = parent.__dict__["_batch_locked"]
    metas = [rd["_metas"][i] for i in workers]
    d["num_workers"] = len(workers)
    d["create_env_fn"] = [rd["create_env_fn"][i] for i in workers]
    d["create_env_kwargs"] = [rd["create_env_kwargs"][i] for i in workers]
    d["_metas"] = metas
    d["_worker_batch"] = [rd["_worker_batch"][i] for i in workers]
    d["_needs_cast"] = view.device is not None and view.device != rd["_sub_device"]
    d["_generation"] = 0
    d["_closed_after_start"] = False
    d["_started"] = True
    d["_root_stale"] = set()
    d["_use_buffers"] = False  # data goes through the pipes: the parent's buffers stay put
    d["_all_workers"] = range(len(workers))
    d["_groups"] = None
    d["_view_link"] = view_link = ViewLink(root, workers)
    d["_dispatch"] = _ViewDispatch(view, view_link)
    view.input_spec = _stack_specs([m["input_spec"] for m in metas])
    view.output_spec = _stack_specs([m["output_spec"] for m in metas])
    view._post_init(
        spec_locked=parent.spec_locked,
        auto_reset=parent.auto_reset,
        auto_reset_replace=parent.__dict__["_auto_reset_replace"],
    )
    view.is_closed = False
    return view
