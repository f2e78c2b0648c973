"""The per-step plan of an env: what ``step`` checks and completes, computed once from the specs.

``_StepPlan`` is built when first needed and cached while the specs are locked, so the hot
path does no spec traversal: it walks short lists of ``(key, shape, dtype)`` tuples.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey

from torchenv.envs._coerce import coerce_action
from torchenv.envs._utils import _fast_get, _get_nested, _prefix
from torchenv.specs import Composite

__all__: list[str] = []


class EnvKeyError(KeyError):
    """A ``KeyError`` whose message prints as written (not as a quoted repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _fmt_key(key: NestedKey) -> str:
    return repr(key)


def _td_keys(td: TensorDictBase) -> list:
    return sorted(str(k) for k in td.keys(True, True))


class _Leaf:
    __slots__ = ("key", "shape", "dtype", "dynamic", "spec", "is_str")

    def __init__(self, key: NestedKey, spec) -> None:
        self.key = key
        self.is_str = isinstance(key, str)
        self.spec = spec
        self.shape = torch.Size(spec.shape)
        self.dtype = getattr(spec, "dtype", None)
        self.dynamic = any(d < 0 for d in self.shape)


class _DoneGroup:
    __slots__ = ("prefix", "names", "shapes", "dtypes", "flank")

    def __init__(self, prefix: tuple, node_spec: Composite) -> None:
        self.prefix = prefix
        self.names = [k for k in node_spec if not isinstance(node_spec[k], Composite)]
        self.shapes = {k: torch.Size(node_spec[k].shape) for k in self.names}
        self.dtypes = {k: node_spec[k].dtype for k in self.names}
        self.flank = "done" in self.names and "terminated" in self.names


class _StepPlan:
    """Key lists and shapes needed by ``step`` / ``reset``, read once from the specs."""

    def __init__(self, env) -> None:
        self.batch_size = torch.Size(env.batch_size)
        self.nb = len(self.batch_size)
        self.batch_locked = env.batch_locked
        full_action = env.full_action_spec
        self.actions = [_Leaf(k, full_action[k]) for k in env.action_keys]
        full_reward = env.full_reward_spec
        self.rewards = [_Leaf(k, full_reward[k]) for k in env.reward_keys]
        full_obs = env.full_observation_spec
        self.observations = [_Leaf(k, full_obs[k]) for k in env.observation_keys]
        full_done = env.full_done_spec
        self.done_keys = list(env.done_keys)
        self.done_groups = []
        for group in env.done_keys_groups:
            prefix = _prefix(group[0])
            node_spec = full_done[prefix] if prefix else full_done
            self.done_groups.append(_DoneGroup(prefix, node_spec))
        self.reset_keys = list(env.reset_keys)
        root = self.done_groups[0] if self.done_groups else None
        # "simple" done: a single root level with done (+ terminated / truncated)
        self.simple_done = len(self.done_groups) == 1 and root.prefix == () and "done" in root.names
        # a single root "_reset" beside the root done entries: partial resets take the fast path
        self.root_reset = self.simple_done and self.reset_keys == ["_reset"]
        # Fast paths for batch-locked envs with static shapes: (key, shape, dtype) triples
        # checked with plain dict lookups (a nested key walks the plain TensorDicts on its
        # path); anything unusual falls back to the general code, which also words the errors.
        leaves = (*self.actions, *self.rewards)
        static = all(not leaf.dynamic for leaf in leaves)
        self.fast_actions = None
        self.fast_outputs = None
        self.rand_fast = None
        self.rand_nested = None
        self.device = env.device
        if self.batch_locked and static:
            self.fast_actions = tuple((x.key, x.shape, x.dtype) for x in self.actions)
            if not all(x.is_str for x in self.actions):
                # nested action keys (multi-agent groups): rand_action writes each sample
                # into its sub-tensordict, in the order the Composite draws them
                self.rand_nested = _nested_rand_plan(full_action)
            elif all(
                tuple(x.spec.shape[: self.nb]) == tuple(self.batch_size) for x in self.actions
            ):
                # (key, spec.rand) of every action: rand_action's fast path
                self.rand_fast = tuple((x.key, x.spec.rand) for x in self.actions)
            outputs = [(x.key, x.shape) for x in self.rewards]
            for group in self.done_groups:
                prefix = group.prefix
                outputs += [((*prefix, n) if prefix else n, group.shapes[n]) for n in group.names]
            if all(d >= 0 for _, shape in outputs for d in shape):
                self.fast_outputs = tuple(outputs)

    def actions_ok(self, td: TensorDictBase) -> bool:
        """Whether the actions of a plain TensorDict pass the cheap checks (fast path)."""
        fast = self.fast_actions
        if fast is None or type(td) is not TensorDict:
            return False
        source = td._tensordict
        device = self.device
        for key, shape, dtype in fast:
            value = source.get(key) if type(key) is str else _plain_get(td, key)
            if value is None or type(value) is not torch.Tensor:
                return False
            if value.shape != shape or value.dtype != dtype:
                return False
            if value.device != device if device is not None else value.is_meta:
                return False
        return True

    def outputs_ok(self, data: TensorDictBase) -> bool:
        """Whether ``_step``'s output already has every reward / done entry at its shape."""
        fast = self.fast_outputs
        if fast is None or type(data) is not TensorDict:
            return False
        source = data._tensordict
        for key, shape in fast:
            value = source.get(key) if type(key) is str else _plain_get(data, key)
            if value is None or value.shape != shape:
                return False
        return True

    # ------------------------------------------------------------------ leading dims
    def leading(self, td: TensorDictBase) -> torch.Size:
        """Batch dims of ``td`` in front of the env batch dims (batch-unlocked envs)."""
        bs = td.batch_size
        if self.nb:
            return bs[: len(bs) - self.nb]
        return bs

    # ------------------------------------------------------------------ actions
    def check_actions(self, env, td: TensorDictBase, full: bool) -> None:
        """Action check: presence, shape, dtype and device; range only when ``full``.

        An action of another dtype or device is cast in ``td`` where no value is lost (see
        :mod:`torchenv.envs._coerce`), else refused. Batch-unlocked envs want the input's
        leading batch dims in front of the spec shape.
        """
        locked = self.batch_locked
        leading = None if locked else self.leading(td)
        where = f"{type(env).__name__}.step"
        source = td._tensordict if type(td) is TensorDict else None
        for leaf in self.actions:
            try:
                if leaf.is_str:
                    value = (
                        source.get(leaf.key) if source is not None else td._get_str(leaf.key, None)
                    )
                else:
                    value = _get_nested(td, leaf.key)
            except RuntimeError:
                # agents of a lazily stacked group with actions of different shapes (a
                # heterogeneous Stacked spec): no single tensor to check; the env reads each
                if leaf.dynamic and _is_stacked_spec(leaf.spec):
                    continue
                raise
            if value is None:
                raise EnvKeyError(
                    f"{type(env).__name__}.step: the action entry {_fmt_key(leaf.key)} is missing "
                    f"from the input tensordict (expected {leaf.spec.__class__.__name__} with "
                    f"shape {tuple(leaf.shape)}, dtype {leaf.dtype}); got keys {_td_keys(td)}."
                )
            if type(value) is not torch.Tensor and not isinstance(value, torch.Tensor):
                continue
            shape = value.shape
            expected = leaf.shape if locked else torch.Size((*leading, *leaf.shape))
            if leaf.dynamic:
                ok = _match_dynamic(shape, expected, True)
            else:
                ok = shape == expected
            if not ok and _singleton_broadcast(shape, expected):
                # TorchRL takes an action that broadcasts to the spec: one without the spec's
                # singleton dims (e.g. a MultiCategorical sample of one variable) is expanded
                value = value.expand(expected)
                td.set(leaf.key, value)
                ok = True
            if not ok:
                raise ValueError(
                    f"{where}: the action {_fmt_key(leaf.key)} has shape "
                    f"{tuple(shape)} but the spec expects shape {tuple(expected)}"
                    + ("" if locked else f" (the input's batch dims {tuple(leading)} + spec)")
                    + f" ({leaf.spec.__class__.__name__}, dtype {leaf.dtype})."
                )
            cast = coerce_action(where, leaf.key, value, leaf.dtype, self.device)
            if cast is not value:
                td.set(leaf.key, cast)
                value = cast
            if full and not _is_in(leaf.spec, value, locked):
                raise ValueError(
                    f"{type(env).__name__}.step: the action {_fmt_key(leaf.key)} is out of its "
                    f"spec: expected a value in {leaf.spec}; got {value}."
                )

    # ------------------------------------------------------------------ outputs
    def complete_output(self, env, data: TensorDictBase, *, step: bool) -> TensorDictBase:
        """Reshapes rewards / dones to their spec shape and adds missing done entries."""
        bs = data.batch_size
        if self.nb:
            leading = bs[: len(bs) - self.nb] if len(bs) != self.nb else ()
        else:
            leading = bs
        source = data._tensordict if type(data) is TensorDict else None
        if step:
            for leaf in self.rewards:
                if leaf.is_str and source is not None:
                    value = source.get(leaf.key)
                else:
                    value = _get_nested(data, leaf.key)
                if value is None:
                    # TorchRL accepts a _step without reward; a zero of the spec keeps every
                    # step (and every batched row) with the entries the specs announce
                    if leaf.dynamic:
                        raise EnvKeyError(
                            f"{type(env).__name__}._step did not return the reward entry "
                            f"{_fmt_key(leaf.key)}, whose spec shape {tuple(leaf.shape)} is "
                            f"dynamic (no default can be made); got keys {_td_keys(data)}."
                        )
                    data.set(leaf.key, leaf.spec.zero(leading) if leading else leaf.spec.zero())
                    continue
                if leaf.dynamic:
                    continue
                expected = leaf.shape if not leading else torch.Size((*leading, *leaf.shape))
                if value.shape != expected:
                    data.set(leaf.key, _reshape(value, expected, leaf.key, env, "reward"))
        for group in self.done_groups:
            if not group.prefix:
                node = data
            else:
                node = _get_nested(data, group.prefix)
            if node is None:
                for name in group.names:
                    shape = (*leading, *group.shapes[name])
                    value = torch.zeros(shape, dtype=group.dtypes[name], device=data.device)
                    data.set((*group.prefix, name), value)
                continue
            _complete_group(env, node, group, leading)
        return data


def _plain_get(td: TensorDict, key: tuple) -> Any:
    """``td.get(key, None)`` for a nested key through plain TensorDicts only: ``None`` as soon
    as a level is missing or of another kind (a lazy stack: the general path handles it)."""
    node = td
    for k in key[:-1]:
        node = node._tensordict.get(k)
        if type(node) is not TensorDict:
            return None
    return node._tensordict.get(key[-1])


def _nested_rand_plan(spec: Composite, path: tuple = (), shapes: tuple = ()) -> tuple | None:
    """``(path, node shapes, leaf name, spec.rand)`` of every leaf of an action Composite, in the
    order ``Composite.rand`` draws them (depth first, insertion order), so that writing the
    samples one by one gives its values and leaves the generator where it would. ``path`` leads
    to the sub-tensordict that holds the leaf, ``node shapes`` are the batch sizes of the
    tensordicts along it. ``None`` where a node is not a plain Composite (lazy stacks, custom
    data classes, dim names): ``Composite.rand`` builds those."""
    if type(spec) is not Composite or spec.data_cls is not None or spec._names is not None:
        return None
    out: list = []
    for key, sub in spec._specs.items():
        if sub is None:
            continue
        if isinstance(sub, Composite):
            inner = _nested_rand_plan(sub, (*path, key), (*shapes, torch.Size(sub.shape)))
            if inner is None:
                return None
            out += inner
        elif _is_stacked_spec(sub):
            return None
        else:
            out.append((path, shapes, key, sub.rand))
    return tuple(out)


def nested_rand_targets(td: TensorDict, plan: tuple) -> list | None:
    """The sub-tensordicts of ``td`` that :func:`_nested_rand_plan`'s leaves go to, or ``None``
    when one is missing, not a plain TensorDict or not of the spec's batch size."""
    targets = []
    for path, shapes, _, _ in plan:
        node = td
        for k, shape in zip(path, shapes, strict=True):
            node = node._tensordict.get(k)
            if type(node) is not TensorDict or node.batch_size != shape:
                return None
        targets.append(node)
    return targets


def _is_stacked_spec(spec: Any) -> bool:
    """Whether ``spec`` is a lazy stack of specs (TorchRL's heterogeneous ``Stacked``)."""
    return type(spec).__name__.startswith("Stacked")


def _complete_group(env, node: TensorDictBase, group: _DoneGroup, leading: torch.Size) -> None:
    values = {}
    missing = False
    source = node._tensordict if type(node) is TensorDict else None
    for name in group.names:
        value = source.get(name) if source is not None else node._get_str(name, None)
        if value is None:
            missing = True
            continue
        expected = group.shapes[name]
        if leading:
            expected = torch.Size((*leading, *expected))
        if value.shape != expected and all(d >= 0 for d in expected):
            value = _reshape(value, expected, (*group.prefix, name), env, "done")
            node._set_str(name, value, validated=True, inplace=False)
        values[name] = value
    if not missing:
        return
    if group.flank:
        done = values.get("done")
        terminated = values.get("terminated")
        truncated = values.get("truncated")
        if done is not None and terminated is None:
            if truncated is not None:
                raise RuntimeError(
                    f"{type(env).__name__}: cannot infer 'terminated' at {group.prefix or 'root'} "
                    "when only 'done' and 'truncated' are returned."
                )
            node.set("terminated", done)
            values["terminated"] = done
        elif terminated is not None and done is None:
            done = terminated | truncated if truncated is not None else terminated
            node.set("done", done)
            values["done"] = done
    for name in group.names:
        if name not in values:
            shape = (*leading, *group.shapes[name])
            node.set(name, torch.zeros(shape, dtype=group.dtypes[name], device=node.device))


def _reshape(value: torch.Tensor, expected: torch.Size, key, env, what: str) -> torch.Tensor:
    if value.numel() != expected.numel():
        raise ValueError(
            f"{type(env).__name__}: the {what} entry {_fmt_key(key)} has shape "
            f"{tuple(value.shape)} which cannot be viewed as the spec shape {tuple(expected)}."
        )
    return value.reshape(expected)


def _match_dynamic(shape: torch.Size, expected: torch.Size, locked: bool) -> bool:
    n = len(expected)
    if len(shape) < n or (locked and len(shape) != n):
        return False
    tail = shape[len(shape) - n :]
    return all(e < 0 or e == s for s, e in zip(tail, expected))


def _is_in(spec, value: torch.Tensor, locked: bool) -> bool:
    if locked or value.shape == spec.shape:
        return bool(spec.is_in(value))
    # batch-unlocked: check every leading element against the spec
    flat = value.reshape(-1, *spec.shape)
    return all(bool(spec.is_in(v)) for v in flat)


def check_observations(env, data: TensorDictBase, plan: _StepPlan) -> None:
    """``run_type_checks``: every observation must be inside its spec."""
    for leaf in plan.observations:
        value = _get_nested(data, leaf.key)
        if not isinstance(value, torch.Tensor) or leaf.dynamic:
            continue
        n = len(leaf.shape)
        ok = value.shape[value.ndim - n :] == leaf.shape and all(
            bool(leaf.spec.is_in(v)) for v in value.reshape(-1, *leaf.shape)
        )
        if not ok:
            raise ValueError(
                f"{type(env).__name__}: the observation {leaf.key!r} does not match "
                f"its spec {leaf.spec}; got shape {tuple(value.shape)}, dtype {value.dtype}."
            )


# ----------------------------------------------------------------------------- partial steps
def _merge_sub_next(
    full: TensorDictBase | None,
    sub_next: TensorDictBase,
    mask: torch.Tensor,
    batch: torch.Size | None = None,
) -> TensorDictBase:
    """Builds the full-batch "next" data from the stepped sub-batch.

    ``sub_next`` holds the ``mask``-selected elements (one leading dim); the other elements
    take the previous content of ``full`` (the step input, same key) or zeros. ``batch`` is
    the full batch size (default: ``full.batch_size``).
    """
    if batch is None:
        batch = full.batch_size
    out = TensorDict(batch_size=(*batch, *sub_next.batch_size[1:]), device=sub_next.device)
    for key, value in sub_next.items():
        prev = _fast_get(full, key) if full is not None else None
        if is_tensor_collection(value):
            prev = prev if is_tensor_collection(prev) else None
            out.set(key, _merge_sub_next(prev, value, mask, batch))
            continue
        if not isinstance(value, torch.Tensor):
            continue
        shape = (*batch, *value.shape[1:])
        if isinstance(prev, torch.Tensor) and prev.shape == shape:
            base = prev.to(dtype=value.dtype, copy=True)
        else:
            base = torch.zeros(shape, dtype=value.dtype, device=value.device)
        base[mask] = value
        out.set(key, base)
    return out


def _skip_next(env, td: TensorDictBase) -> TensorDictBase:
    """The "next" data of a step skipped entirely: previous content, or zeros."""
    leading = env._plan.leading(td)
    parts = []
    for name in ("full_done_spec", "full_observation_spec", "full_reward_spec"):
        spec = env.output_spec[name]
        parts.append(spec.zero(leading) if leading else spec.zero())
    out = parts[0]
    out.update(parts[1])
    out.update(parts[2])
    for key in list(out.keys(True, True)):
        prev = _get_nested(td, key)
        if isinstance(prev, torch.Tensor) and prev.shape == out.get(key).shape:
            out.set(key, prev.clone())
    out.batch_size = td.batch_size
    return out


def _singleton_broadcast(shape: torch.Size, expected: torch.Size) -> bool:
    """Whether ``shape`` differs from ``expected`` only by missing or singleton dims."""
    if len(shape) > len(expected) or shape.numel() != expected.numel():
        return False
    try:
        return torch.broadcast_shapes(shape, expected) == expected
    except RuntimeError:
        return False
