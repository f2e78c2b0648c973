"""Partial resets: merging the output of ``_reset`` into the input data through ``"_reset"`` masks.

Convention (TorchRL's): a ``"_reset"`` entry lives next to the done entries of its level.
Where it is ``True`` the output of ``_reset`` is taken; where it is ``False`` the previous
content of the input tensordict is kept (or zeros, if the input lacks the entry). A
``"_reset"`` at a level supersedes the ``"_reset"`` entries of the levels below it. The
``"_reset"`` entries are removed from the result.
"""

from __future__ import annotations

import warnings

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_tensor_collection

from torchenv.envs._utils import _align_mask, _any, _get_nested, _prefix

__all__: list[str] = []


def _under(key_prefix: tuple, roots: list[tuple]) -> bool:
    return any(key_prefix[: len(r)] == r for r in roots)


def check_done_after_reset(env, tensordict: TensorDictBase | None, out: TensorDictBase) -> None:
    """Raises if a done entry is ``True`` where a reset happened (unless allowed)."""
    allow = env._allow_done_after_reset
    checked: list[tuple] = []
    for reset_key, group in zip(env.reset_keys, env.done_keys_groups):
        prefix = _prefix(reset_key)
        if _under(prefix, checked):
            continue
        checked.append(prefix)
        mask = None if tensordict is None else _get_nested(tensordict, reset_key)
        if mask is None:
            if allow:
                continue
            for done_key in group:
                value = _get_nested(out, done_key)
                if value is not None and _any(value):
                    raise RuntimeError(
                        f"{type(env).__name__}: the done entry {done_key!r} is True after reset(); "
                        "an env must not be done right after a reset (pass "
                        "allow_done_after_reset=True to the constructor to allow it)."
                    )
            continue
        lacking = []
        for done_key in group:
            value = _get_nested(out, done_key)
            if value is None:
                continue
            aligned = _align_mask(mask, value.shape, _node_ndim(tensordict, prefix))
            if not allow and _any(value) and _any(value & aligned):
                raise RuntimeError(
                    f"{type(env).__name__}: the done entry {done_key!r} is True after a "
                    f"reset on the dims selected by {reset_key!r}; this is not allowed "
                    "(pass allow_done_after_reset=True to the constructor to allow it)."
                )
            if _get_nested(tensordict, done_key) is None:
                # keep the env's value where nothing is reset (rather than a zero pad)
                if _any(value & ~aligned):
                    lacking.append(done_key)
                tensordict.set(done_key, value)
        if lacking:
            warnings.warn(
                f"A partial {reset_key!r} was passed to reset() but the input lacks "
                f"{lacking}: the input should hold the data of what is not reset.",
                stacklevel=3,
            )


def _node_ndim(td: TensorDictBase, prefix: tuple) -> int:
    node = td if not prefix else _get_nested(td, prefix)
    return node.batch_dims if node is not None else td.batch_dims


def update_during_reset(
    out: TensorDictBase, tensordict: TensorDictBase, reset_keys: list
) -> TensorDictBase:
    """Writes the reset data ``out`` into ``tensordict`` following its ``"_reset"`` entries."""
    if not reset_keys:
        return tensordict.update(out)
    strip_reset_entries(out, reset_keys)
    done: list[tuple] = []
    for reset_key in reset_keys:
        prefix = _prefix(reset_key)
        mask = tensordict.pop(reset_key, None)
        if _under(prefix, done):
            continue
        done.append(prefix)
        if prefix:
            node_out = out.get(prefix, None)
            if node_out is None:
                continue
            node = tensordict.get(prefix, None)
            if node is None:
                tensordict.set(prefix, node_out)
                continue
        else:
            node_out, node = out, tensordict
        if mask is None or bool(mask.all()):
            _drop_reset_entries(node_out)
            node.update(node_out, update_batch_size=True)
        else:
            _masked_merge(node, node_out, mask, node.batch_dims)
    return tensordict


def _drop_reset_entries(td: TensorDictBase) -> None:
    if "_reset" in td:
        td.del_("_reset")


def strip_reset_entries(td: TensorDictBase, reset_keys: list) -> None:
    """Removes the ``"_reset"`` entries an env may have echoed in its ``_reset`` output."""
    for key in reset_keys:
        if _get_nested(td, key) is not None:
            td.del_(key)


def _masked_merge(
    node: TensorDictBase, node_out: TensorDictBase, mask: torch.Tensor, node_ndim: int
) -> None:
    """``node[k] = where(mask, node_out[k], node[k])`` for every leaf; where ``node`` lacks a
    leaf, ``node_out``'s is taken whole (where ``node_out`` lacks one, zeros are merged in)."""
    if isinstance(node, LazyStackedTensorDict):
        # heterogeneous agents: their entries may not stack, merge member by member (the
        # reset output may be stacked otherwise, e.g. over the workers of a batched env)
        dim = node.stack_dim
        if (
            isinstance(node_out, LazyStackedTensorDict)
            and node_out.stack_dim == dim
            and len(node_out.tensordicts) == len(node.tensordicts)
        ):
            outs = node_out.tensordicts
        else:
            outs = node_out.unbind(dim)
        for i, (member, member_out) in enumerate(zip(node.tensordicts, outs)):
            if dim < node_ndim:
                sub_mask = mask.select(dim, i) if mask.ndim > dim else mask
                _masked_merge(member, member_out, sub_mask, node_ndim - 1)
            else:
                _masked_merge(member, member_out, mask, node_ndim)
        return
    for key in set(node_out.keys()) | set(node.keys()):
        if key == "_reset":
            continue
        new = _get_nested(node_out, key)
        old = _get_nested(node, key)
        if is_tensor_collection(new) or is_tensor_collection(old):
            if not (is_tensor_collection(new) or new is None) or not (
                is_tensor_collection(old) or old is None
            ):
                continue
            if old is None:
                old = new.empty()
                node.set(key, old)
            _masked_merge(old, new if new is not None else old.empty(), mask, node_ndim)
            continue
        if new is None and old is None:
            continue
        if new is None:
            if not isinstance(old, torch.Tensor):
                continue
            new = torch.zeros_like(old)
        elif old is None:
            # the input does not hold this entry (e.g. a reset input cut to its "_reset"
            # entries): keep what the env returned for every row rather than a zero pad, as for
            # the done entries (an env returns its current data where it resets nothing)
            node.set(key, new)
            continue
        elif not isinstance(new, torch.Tensor) or not isinstance(old, torch.Tensor):
            node.set(key, new)
            continue
        ref = new
        if new.shape != old.shape:
            node.set(key, ref)
            continue
        aligned = _align_mask(mask.to(new.device), new.shape, node_ndim)
        node.set(key, torch.where(aligned, new, old))


# ----------------------------------------------------------------------------- fast path
def merge_root_reset(
    env, tensordict: TensorDictBase, out: TensorDictBase, names: list[str]
) -> TensorDictBase | None:
    """``check_done_after_reset`` + ``update_during_reset`` for envs with one root ``"_reset"``.

    Covers plain TensorDicts whose entries are all tensors, with a boolean ``"_reset"`` of
    shape ``batch`` or ``(*batch, 1)``: one ``torch.where`` per entry with a mask view per
    rank, no key traversal. ``names`` are the root done entries. Returns ``None``, with
    nothing modified, when the case is not covered (or a done entry is set after the reset,
    which the general path reports): the caller then takes the general path.
    """
    if type(tensordict) is not TensorDict or type(out) is not TensorDict or tensordict.is_locked:
        return None
    batch = tensordict.batch_size
    if out.batch_size != batch:
        return None
    dst = tensordict._tensordict
    src = out._tensordict
    tensor = torch.Tensor
    for value in dst.values():
        if type(value) is not tensor:
            return None
    for value in src.values():
        if type(value) is not tensor:
            return None
    for name in names:
        if name in src and name not in dst:
            return None  # the general path keeps the env's value there (and may warn)
    mask = dst.get("_reset")
    nb = len(batch)
    if mask is not None:
        mshape = mask.shape
        if mask.dtype is not torch.bool or mshape[:nb] != batch or mshape[nb:] not in ((), (1,)):
            return None
    if not env._allow_done_after_reset:
        for name in names:
            value = src.get(name)
            if value is not None and _any(value):
                return None
    src.pop("_reset", None)
    if mask is None or _all(mask):
        dst.pop("_reset", None)
        dst.update(src)
        return tensordict
    del dst["_reset"]
    # the mask viewed for each (rank, device) met, e.g. (*batch, 1) for (*batch, n) entries
    views: dict[tuple, torch.Tensor] = {(mask.ndim, mask.device): mask} if mshape[nb:] else {}

    def aligned(like: torch.Tensor) -> torch.Tensor:
        key = (like.ndim, like.device)
        view = views.get(key)
        if view is None:
            view = mask.to(like.device).reshape(*batch, *((1,) * (like.ndim - nb)))
            views[key] = view
        return view

    for key, new in src.items():
        old = dst.get(key)
        if old is None or old.shape != new.shape:
            # missing from the input (or reshaped): the env's value for every row, as the
            # general path does
            dst[key] = new
        elif new is old or _same_memory(new, old):
            continue  # the env handed back the very data of the input: nothing to merge
        else:
            dst[key] = torch.where(aligned(new), new, old)
    for key, old in dst.items():
        if key not in src:  # entries the reset does not produce: zeros where reset
            dst[key] = old.masked_fill(aligned(old), 0)
    return tensordict


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors of one shape view the same memory the same way (same values)."""
    return (
        a.data_ptr() == b.data_ptr()
        and a.dtype == b.dtype
        and a.stride() == b.stride()
        and a.device == b.device
    )


def _all(value: torch.Tensor) -> bool:
    if value.numel() == 1:
        return bool(value.item())
    return bool(value.all())


# ----------------------------------------------------------------------------- auto-resetting envs
def save_auto_reset(next_td: TensorDictBase, plan, replace: bool) -> TensorDictBase | None:
    """For an env that resets itself: keeps the observations that start the next episode.

    Returns them (the next ``reset`` hands them out instead of calling ``_reset``) and, when
    ``replace``, overwrites them in ``next_td`` where done with NaN / -1 / ``False``.
    Returns ``None`` when nothing is done.
    """
    masks = {}
    any_done = False
    for group in plan.done_groups:
        node = next_td if not group.prefix else _get_nested(next_td, group.prefix)
        done = _get_nested(node, "done") if node is not None else None
        if done is not None:
            masks[group.prefix] = done
            any_done = any_done or _any(done)
    if not any_done:
        return None
    saved = TensorDict(batch_size=next_td.batch_size, device=next_td.device)
    by_depth = sorted(masks, key=len, reverse=True)
    for leaf in plan.observations:
        value = _get_nested(next_td, leaf.key)
        if not isinstance(value, torch.Tensor):
            continue
        saved.set(leaf.key, value.clone())
        prefix = _prefix(leaf.key)
        mask = next((masks[p] for p in by_depth if prefix[: len(p)] == p), None)
        if not replace or mask is None:
            continue
        if value.is_floating_point():
            fill = float("nan")
        elif value.dtype is torch.bool:
            fill = False
        else:
            fill = -1
        aligned = _align_mask(mask, value.shape, next_td.batch_dims)
        next_td.set(leaf.key, torch.where(aligned, torch.full_like(value, fill), value))
    return saved
