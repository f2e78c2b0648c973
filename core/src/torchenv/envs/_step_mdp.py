"""``step_mdp``: moves the ``"next"`` data of a step to the root, ready for the next step."""

from __future__ import annotations

import functools
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey, unravel_key

from torchenv.envs._utils import _replace_last

__all__ = ["step_mdp"]

_MISSING = object()


def _tree(keys) -> dict:
    """``[("a", "b"), "c"] -> {"a": {"b": None}, "c": None}`` (``None`` marks a leaf)."""
    tree: dict = {}
    for key in keys:
        key = (key,) if isinstance(key, str) else key
        node = tree
        for part in key[:-1]:
            sub = node.get(part, _MISSING)
            if sub is None:  # a parent already selected as a whole
                break
            if sub is _MISSING:
                sub = node[part] = {}
            node = sub
        else:
            node[key[-1]] = None
    return tree


def _items(td: TensorDictBase):
    if type(td) is TensorDict:
        return td._tensordict.items()
    return td.items()


def _new_like(td: TensorDictBase, source: dict) -> TensorDictBase:
    if type(td) is TensorDict:
        return TensorDict._new_unsafe(
            source, batch_size=td.batch_size, device=td.device, nested=False
        )
    out = td.empty()
    for key, value in source.items():
        out.set(key, value)
    return out


def _copy_excluding(td: TensorDictBase, tree: dict) -> dict:
    """Shallow copy of ``td``'s entries, without those named (as leaves) in ``tree``."""
    out = {}
    for key, value in _items(td):
        sub = tree.get(key, _MISSING)
        if sub is None:
            continue
        if sub is _MISSING:
            tensor = type(value) is torch.Tensor
            out[key] = value if tensor or not is_tensor_collection(value) else value.copy()
        elif type(value) is torch.Tensor:
            out[key] = value
        elif isinstance(value, LazyStackedTensorDict):
            # heterogeneous agents: entries may not stack, so filter each member
            members = [_copy_excluding(member, sub) for member in value.tensordicts]
            if any(members):
                out[key] = LazyStackedTensorDict(
                    *[_new_like(m, inner) for m, inner in zip(value.tensordicts, members)],
                    stack_dim=value.stack_dim,
                )
        elif is_tensor_collection(value):
            inner = _copy_excluding(value, sub)
            if inner:
                out[key] = _new_like(value, inner)
        else:
            out[key] = value
    return out


def _per_member(
    fill: Any, value: LazyStackedTensorDict, prev: Any, tree: dict
) -> LazyStackedTensorDict:
    """``fill`` applied member by member to a lazy stack (heterogeneous agents, whose entries
    may not stack), merging into the matching members of ``prev`` when it is a like stack."""
    members = value.tensordicts
    prevs: list[Any] = [None] * len(members)
    if (
        isinstance(prev, LazyStackedTensorDict)
        and prev.stack_dim == value.stack_dim
        and len(prev.tensordicts) == len(members)
    ):
        prevs = list(prev.tensordicts)
    out = []
    for member, before in zip(members, prevs):
        inner = (
            dict(_items(before))
            if before is not None and before.batch_size == member.batch_size
            else {}
        )
        fill(member, tree, inner)
        out.append(_new_like(member, inner))
    return LazyStackedTensorDict(*out, stack_dim=value.stack_dim)


def _grab(source: TensorDictBase, tree: dict, out: dict) -> None:
    """Copies the entries of ``source`` named in ``tree`` into the dict ``out``."""
    for key, sub in tree.items():
        value = (
            source._get_str(key, None)
            if type(source) is not TensorDict
            else source._tensordict.get(key)
        )
        if value is None:
            continue
        if type(value) is torch.Tensor:
            if sub is None:
                out[key] = value
            continue
        if sub is None:
            out[key] = value.copy() if is_tensor_collection(value) else value
            continue
        if not is_tensor_collection(value):
            continue
        prev = out.get(key)
        if isinstance(value, LazyStackedTensorDict):
            out[key] = _per_member(_grab, value, prev, sub)
            continue
        inner = (
            dict(_items(prev)) if prev is not None and prev.batch_size == value.batch_size else {}
        )
        _grab(value, sub, inner)
        out[key] = _new_like(value, inner)


def _copy_all_excluding(source: TensorDictBase, tree: dict, out: dict) -> None:
    """Merges every entry of ``source`` but those in ``tree`` into ``out`` (nested merge)."""
    tensor = torch.Tensor
    for key, value in _items(source):
        sub = tree.get(key, _MISSING)
        if sub is None:
            continue
        if type(value) is tensor or not is_tensor_collection(value) or _is_non_tensor(value):
            out[key] = value
            continue
        prev = out.get(key)
        if isinstance(value, LazyStackedTensorDict):
            out[key] = _per_member(
                _copy_all_excluding, value, prev, _EMPTY if sub is _MISSING else sub
            )
            continue
        inner = dict(_items(prev)) if prev is not None and is_tensor_collection(prev) else {}
        _copy_all_excluding(value, _EMPTY if sub is _MISSING else sub, inner)
        if inner:
            out[key] = _new_like(value, inner)


_EMPTY: dict = {}


@functools.lru_cache(maxsize=64)
def _exclusion_tree(excluded: tuple) -> dict:
    return _tree(excluded)


def _hashable_keys(keys) -> tuple:
    if type(keys) is str:
        return (keys,)
    if isinstance(keys, tuple):
        keys = [keys]
    return tuple(k if type(k) is str else unravel_key(k) for k in keys)


def _is_non_tensor(value) -> bool:
    return type(value).__name__ in ("NonTensorData", "NonTensorStack")


def step_mdp(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None = None,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: NestedKey | list[NestedKey] = "reward",
    done_keys: NestedKey | list[NestedKey] = "done",
    action_keys: NestedKey | list[NestedKey] = "action",
) -> TensorDictBase:
    """Builds the input of the next step from the output of ``env.step``.

    The content of ``tensordict["next"]`` is moved to the root of a new tensordict.

    Args:
        tensordict: the output of a step (with a ``"next"`` entry).
        next_tensordict: if given, the result is written into it (and it is returned).
        keep_other: keep the root entries of ``tensordict`` other than ``"next"``.
        exclude_reward: drop the reward entries.
        exclude_done: drop the done entries.
        exclude_action: drop the action entries.
        reward_keys: the reward key(s). Defaults to ``"reward"``.
        done_keys: the done key(s). Defaults to ``"done"``.
        action_keys: the action key(s). Defaults to ``"action"``.

    Returns:
        a new tensordict (or ``next_tensordict``) holding the data of the next step.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(
        ...     {
        ...         "obs": torch.zeros(1),
        ...         "action": torch.ones(1),
        ...         "next": {"obs": torch.ones(1), "reward": torch.ones(1), "done": torch.zeros(1, dtype=torch.bool)},
        ...     },
        ...     [],
        ... )
        >>> sorted(step_mdp(td).keys())
        ['done', 'obs']
    """
    if isinstance(tensordict, LazyStackedTensorDict):
        parts = [
            step_mdp(
                td,
                keep_other=keep_other,
                exclude_reward=exclude_reward,
                exclude_done=exclude_done,
                exclude_action=exclude_action,
                reward_keys=reward_keys,
                done_keys=done_keys,
                action_keys=action_keys,
            )
            for td in tensordict.tensordicts
        ]
        out = LazyStackedTensorDict.lazy_stack(parts, tensordict.stack_dim)
        return out if next_tensordict is None else next_tensordict.update(out)
    excluded: tuple = ()
    if exclude_reward:
        excluded += _hashable_keys(reward_keys)
    if exclude_done:
        excluded += _hashable_keys(done_keys)
    if exclude_action:
        excluded += _hashable_keys(action_keys)
    if keep_other and next_tensordict is None:
        fast = _flat_step_mdp(tensordict, excluded)
        if fast is not None:
            return fast
    tree = _exclusion_tree(excluded)
    next_td = tensordict.get("next")
    out: dict = {}
    if keep_other:
        _copy_all_excluding(tensordict, _exclusion_tree((*excluded, "next")), out)
    elif not exclude_action:
        _grab(tensordict, _tree(_hashable_keys(action_keys)), out)
    _copy_all_excluding(next_td, tree, out)
    result = _new_like(tensordict, out)
    if next_tensordict is not None:
        return next_tensordict.update(result)
    return result


def _flat_step_mdp(tensordict: TensorDictBase, excluded: tuple) -> TensorDictBase | None:
    """``step_mdp`` for plain, flat TensorDicts (no nested level); ``None`` if not applicable."""
    if type(tensordict) is not TensorDict:
        return None
    source = tensordict._tensordict
    next_td = source.get("next")
    if type(next_td) is not TensorDict:
        return None
    skip = _excluded_set(excluded)
    if skip is None:
        return None
    tensor = torch.Tensor
    out = {}
    for key, value in source.items():
        if key == "next" or key in skip:
            continue
        if type(value) is not tensor:
            return None
        out[key] = value
    for key, value in next_td._tensordict.items():
        if key in skip:
            continue
        if type(value) is not tensor:
            return None
        out[key] = value
    return TensorDict._new_unsafe(
        out, batch_size=tensordict.batch_size, device=tensordict.device, nested=False
    )


@functools.lru_cache(maxsize=64)
def _excluded_set(excluded: tuple) -> frozenset | None:
    if any(type(k) is not str for k in excluded):
        return None
    return frozenset(excluded)


class _EnvStepMDP:
    """The env's own step_mdp: keeps root entries (action included), takes observations and
    done entries (and rewards that are also states) from ``"next"``; key trees are built once.
    """

    def __init__(self, env) -> None:
        state_keys = set(env.state_keys)
        reward_not_state = [k for k in env.reward_keys if k not in state_keys]
        reward_state = [k for k in env.reward_keys if k in state_keys]
        reset_keys = [_replace_last(k, "_reset") for k in env.done_keys]
        excluded = ["next", "_step", *env.done_keys, *reset_keys, *reward_not_state]
        from_next = [*env.observation_keys, *reward_state, *env.done_keys]
        self.exclude_from_root = _tree(excluded)
        self.keys_from_next = _tree(from_next)
        # flat fast path: every key is a string (no nested level to merge)
        self.flat = all(isinstance(k, str) for k in (*excluded, *from_next))
        self.excluded_set = frozenset(excluded)
        self.next_keys = tuple(from_next)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        if type(tensordict) is TensorDict and self.flat:
            source = tensordict._tensordict
            next_td = source.get("next")
            if type(next_td) is TensorDict:
                excluded = self.excluded_set
                out = {}
                for key, value in source.items():
                    if key in excluded:
                        continue
                    if type(value) is not torch.Tensor and is_tensor_collection(value):
                        value = value.copy()
                    out[key] = value
                next_source = next_td._tensordict
                for key in self.next_keys:
                    value = next_source.get(key)
                    if value is not None:
                        out[key] = value
                return TensorDict._new_unsafe(
                    out,
                    batch_size=tensordict.batch_size,
                    device=tensordict.device,
                    nested=False,
                )
        if isinstance(tensordict, LazyStackedTensorDict):
            return LazyStackedTensorDict.lazy_stack(
                [self(td) for td in tensordict.tensordicts], tensordict.stack_dim
            )
        out = _copy_excluding(tensordict, self.exclude_from_root)
        next_td = tensordict._get_str("next", None)
        if next_td is not None:
            _grab(next_td, self.keys_from_next, out)
        return _new_like(tensordict, out)
