"""Direct array I/O: envs that write their outputs straight into preallocated arrays.

Most simulators speak numpy. Turning each of their outputs into tensors and a TensorDict, only
for ``rollout`` to stack them again (or for a ``ParallelEnv`` worker to copy them into shared
memory), costs more than the simulator's own step for the light envs (CartPole: about 11 us of
simulation under 60 us of wrapping). An env may therefore offer three optional hooks:

* ``_direct_io_supported() -> bool``: whether, in its current configuration, the two hooks
  below write exactly what ``_step`` and ``_reset`` would return;
* ``_step_into(action, out) -> bool``: one step with ``action`` (the tensor of the env's single
  action key; a dict key -> tensor when the env has several); writes every observation, reward
  and done entry into ``out[key]``, numpy arrays with the shape and dtype of the specs (batch
  dims included); returns whether the root ``"done"`` of any (sub-)env is set;
* ``_reset_into(out, mask) -> None``: resets the env (``mask``: a numpy boolean array of the
  batch shape selecting the sub-envs to reset, or ``None`` for all of them) and writes the
  observation and done entries of the sub-envs reset into ``out``, leaving other rows alone.

Keys are flat unless the env class sets ``_direct_io_nested_keys = True``: it then writes
``(group, name)`` keys too (multi-agent envs: ``("agents", "observation")``, the agents'
done flags...), and group flags set without the root's ``"done"`` reset nothing (agents that
left an episode that goes on; ``MarlLayout.reset_rows`` documents that convention).

:func:`direct_plan` decides whether an env may be driven that way (the hooks are there, the
keys are flat or ``(group, name)`` pairs, nothing in the env's step chain is overridden, no
type checks, cpu) and lists the keys. Three callers use it: ``rollout`` with random actions
(:func:`rollout_direct`, which writes every step into the rows of the result and builds one
TensorDict at the end), ``step_and_maybe_reset`` (:func:`direct_step_and_maybe_reset`, the
loop of a collector) and the ``ParallelEnv``/``SerialEnv`` runners (flat keys), which point
``out`` at the shared-memory buffers. All give the same data as the TensorDict path, bit for bit
(tested against it).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs._finite import check_step, check_values
from torchenv.envs._step import _plain_get
from torchenv.specs import Composite

__all__ = [
    "DirectPlan",
    "cached_direct_plan",
    "direct_plan",
    "direct_step_and_maybe_reset",
    "rollout_direct",
]

# EnvBase methods that the direct path stands in for: an env class overriding any of them
# changes what a step does, and keeps the TensorDict path.
_STEP_CHAIN = (
    "step",
    "_full_step",
    "step_and_maybe_reset",
    "maybe_reset",
    "any_done",
    "reset",
    "rand_action",
)


class DirectPlan:
    """The keys, shapes and dtypes that the direct hooks of an env read and write.

    Keys are strings, or ``(group, name)`` pairs for envs with nested keys (see the module's
    docstring); ``nodes`` gives each group's batch size.

    Attributes:
        action_keys: the env's action keys.
        action_key: the first of them (the only one for flat envs).
        obs_keys: the observation keys.
        reward_keys: the reward keys.
        done_keys: the done keys (``"done"``, ``"terminated"``, ``"truncated"``, and those of
            each group).
        root_keys: what a reset writes (and what ``step_mdp`` carries): observations and dones.
        next_keys: what a step writes: observations, rewards and dones.
        leaves: ``key -> (shape, dtype)``, shapes with the batch dims.
        nodes: ``group -> batch size`` of each group's sub-tensordict (``(*batch, n_agents)``).
        flat: whether every key is a string.
        batch_size: the env batch size.
        rand: ``() -> action``, what ``rand_action`` draws: a tensor for one action key, a dict
            key -> tensor for several (drawn in the order of the action spec).
    """

    __slots__ = (
        "action_keys",
        "action_key",
        "obs_keys",
        "reward_keys",
        "done_keys",
        "root_keys",
        "next_keys",
        "leaves",
        "nodes",
        "flat",
        "batch_size",
        "rand",
        "_np_cache",
        "next_alloc",
        "root_alloc",
    )

    def __init__(self, env: Any, nodes: dict | None = None) -> None:
        plan = env._plan
        self.action_keys = [leaf.key for leaf in plan.actions]
        self.action_key = self.action_keys[0]
        self.obs_keys = [leaf.key for leaf in plan.observations]
        self.reward_keys = [leaf.key for leaf in plan.rewards]
        self.done_keys = []
        self.leaves = {}
        for leaf in (*plan.observations, *plan.rewards):
            self.leaves[leaf.key] = (leaf.shape, leaf.dtype)
        for group in plan.done_groups:
            for name in group.names:
                key = (*group.prefix, name) if group.prefix else name
                self.done_keys.append(key)
                self.leaves[key] = (group.shapes[name], group.dtypes[name])
        self.root_keys = self.obs_keys + self.done_keys
        self.next_keys = self.obs_keys + self.reward_keys + self.done_keys
        self.nodes = nodes or {}
        self.flat = not self.nodes
        self.batch_size = plan.batch_size
        if plan.rand_nested is not None:
            draws = tuple(((*path, key), rand) for path, _, key, rand in plan.rand_nested)
            self.rand = _draw_all(draws) if len(draws) > 1 else draws[0][1]
        elif len(plan.rand_fast) > 1:
            self.rand = _draw_all(plan.rand_fast)
        else:
            self.rand = plan.rand_fast[0][1]
        self._np_cache: dict = {}
        # (keys, shapes, numpy dtypes) of a step's and of a reset's outputs, for map() below
        self.next_alloc = tuple(zip(*self.np_leaves(self.next_keys)))
        self.root_alloc = tuple(zip(*self.np_leaves(self.root_keys)))

    def np_leaves(self, keys: list) -> list[tuple[Any, tuple[int, ...], np.dtype]]:
        """``(key, shape, numpy dtype)`` of ``keys`` (cached per key list)."""
        cache = self._np_cache
        out = cache.get(id(keys))
        if out is None:
            out = []
            for key in keys:
                shape, dtype = self.leaves[key]
                out.append((key, tuple(shape), torch.empty((), dtype=dtype).numpy().dtype))
            cache[id(keys)] = out
        return out

    def empty(self, keys: list, steps: int) -> dict[Any, torch.Tensor]:
        """Uninitialised tensors for ``keys``, with a leading time dim of size ``steps``."""
        out = {}
        for key in keys:
            shape, dtype = self.leaves[key]
            out[key] = torch.empty((steps, *shape), dtype=dtype)
        return out

    def nest(self, entries: dict, batch_size: torch.Size, device: Any, time: int | None = None):
        """A TensorDict of ``entries`` (``key -> value``), ``(group, name)`` keys gathered in
        their group's sub-tensordict; ``time``: the size of a time dim after the batch dims."""
        if self.flat:
            return TensorDict._new_unsafe(
                entries, batch_size=batch_size, device=device, nested=False
            )
        nb = len(self.batch_size)
        nodes = self.nodes
        if time is not None:
            nodes = {g: torch.Size((*s[:nb], time, *s[nb:])) for g, s in nodes.items()}
        return nest_entries(entries, batch_size, nodes, device)

    def flatten(self, td: TensorDictBase) -> dict | None:
        """``key -> tensor`` of a plain TensorDict whose groups are this plan's (of their batch
        size, holding tensors only); ``None`` for anything else."""
        if type(td) is not TensorDict:
            return None
        out: dict = {}
        tensor, nodes = torch.Tensor, self.nodes
        for key, value in td._tensordict.items():
            if type(value) is tensor:
                out[key] = value
                continue
            if type(value) is not TensorDict or value.batch_size != nodes.get(key):
                return None
            for name, inner in value._tensordict.items():
                if type(inner) is not tensor:
                    return None
                out[(key, name)] = inner
        return out


def nest_entries(entries: dict, batch_size: torch.Size, nodes: dict, device: Any) -> TensorDict:
    """A TensorDict of ``entries`` (``key -> value``) whose ``(group, name)`` keys go to the
    sub-tensordict ``group`` of batch size ``nodes[group]``; built without validation (the
    values have the shapes of the specs)."""
    root: dict = {}
    groups: dict = {}
    for key, value in entries.items():
        if type(key) is str:
            root[key] = value
        else:
            inner = groups.get(key[0])
            if inner is None:
                inner = groups[key[0]] = {}
            inner[key[1]] = value
    for group, inner in groups.items():
        root[group] = TensorDict._new_unsafe(
            inner, batch_size=nodes[group], device=device, nested=False
        )
    return TensorDict._new_unsafe(root, batch_size=batch_size, device=device, nested=False)


def _draw_all(draws: tuple) -> Any:
    """``(generator=None) -> {key: sample}``, drawing in the order of ``draws`` (``(key,
    rand)`` pairs)."""

    def rand(generator: torch.Generator | None = None) -> dict:
        if generator is None:
            return {key: draw() for key, draw in draws}
        return {key: draw(generator=generator) for key, draw in draws}

    return rand


def direct_plan(env: Any) -> DirectPlan | None:
    """The :class:`DirectPlan` of ``env``, or ``None`` when it must go through TensorDicts."""
    from torchenv.envs._common import EnvBase

    if not isinstance(env, EnvBase):
        return None
    cls = type(env)
    if cls._step_into is EnvBase._step_into or cls._reset_into is EnvBase._reset_into:
        return None
    if any(getattr(cls, name) is not getattr(EnvBase, name) for name in _STEP_CHAIN):
        return None
    d = env.__dict__
    if d["_run_type_checks"] or d["_auto_reset"] or not env.batch_locked:
        return None
    device = d["_device"]
    if device is not None and device.type != "cpu":
        return None
    if not env._direct_io_supported():
        return None
    plan = env._plan
    roots = [group for group in plan.done_groups if not group.prefix]
    if len(roots) != 1 or "done" not in roots[0].names:
        return None
    if list(env.full_state_spec.keys(True, True)):
        return None
    leaves = (*plan.actions, *plan.observations, *plan.rewards)
    if any(leaf.dynamic for leaf in leaves):
        return None
    nodes = None
    if getattr(cls, "_direct_io_nested_keys", False):
        if plan.rand_fast is None and plan.rand_nested is None:
            return None
        nodes = _group_nodes(env, leaves, plan.done_groups)
        if nodes is None:
            return None
    elif (
        len(plan.done_groups) != 1
        or plan.reset_keys != ["_reset"]
        or len(plan.actions) != 1
        or plan.rand_fast is None
        or not all(leaf.is_str for leaf in leaves)
    ):
        return None
    try:
        direct = DirectPlan(env, nodes)
        for shape, dtype in direct.leaves.values():
            torch.empty((), dtype=dtype).numpy()  # a dtype numpy can hold
            if any(d < 0 for d in shape):
                return None
    except (TypeError, RuntimeError, AttributeError, IndexError):
        return None
    return direct


def _group_nodes(env: Any, leaves: tuple, done_groups: list) -> dict | None:
    """``group -> batch size`` for the ``(group, name)`` keys of ``leaves`` and ``done_groups``,
    or ``None`` when a key is deeper, a group is not a plain Composite, or its specs disagree
    on its batch size."""
    specs = (
        env.full_action_spec,
        env.full_observation_spec,
        env.full_reward_spec,
        env.full_done_spec,
    )
    groups = {leaf.key[0] for leaf in leaves if not leaf.is_str}
    groups.update(group.prefix[0] for group in done_groups if group.prefix)
    if any(not leaf.is_str and len(leaf.key) != 2 for leaf in leaves):
        return None
    if any(len(group.prefix) > 1 for group in done_groups):
        return None
    nodes: dict = {}
    for group in groups:
        for spec in specs:
            node = spec._specs.get(group) if type(spec) is Composite else None
            if node is None:
                continue
            if type(node) is not Composite or node.data_cls is not None:
                return None
            if nodes.setdefault(group, torch.Size(node.shape)) != node.shape:
                return None
        if group not in nodes:
            return None
    return nodes


def cached_direct_plan(env: Any) -> DirectPlan | None:
    """``direct_plan(env)``, kept in the env's cache while its specs are locked (the cache is
    emptied when specs change); ``None`` as well when, at the time of the call, type checks are
    on or the env no longer supports the hooks (e.g. an info reader was added)."""
    d = env.__dict__
    if not d["_is_spec_locked"] or d["_run_type_checks"]:
        return None
    plan = d["_cache"].get("direct")
    if plan is None:
        plan = d["_cache"]["direct"] = direct_plan(env) or False
    return plan if plan and env._direct_io_supported() else None


_BLOCK_CHECKED: dict = {}  # (spec class, dtype, shape) -> whether blocks equal successive draws


def block_sampler(spec: Any) -> Any:
    """``spec._rand_block`` when one draw of ``n`` samples gives what ``n`` calls of
    ``spec.rand()`` give (same values, same generator state after), else ``None``.

    torch's cpu generator fills uniform and integer samples element by element, so a block is
    the concatenation of the single draws; that is checked once per kind of spec (on a saved
    and restored generator state) rather than assumed, and a spec with a mask never qualifies.
    """
    block = getattr(spec, "_rand_block", None)
    if block is None or getattr(spec, "device", None) not in (None, torch.device("cpu")):
        return None
    key = (type(spec), spec.dtype, tuple(spec.shape))
    ok = _BLOCK_CHECKED.get(key)
    if ok is None:
        state = torch.get_rng_state()
        try:
            one_by_one = torch.stack([spec.rand() for _ in range(3)])
            after_one_by_one = torch.get_rng_state()
            torch.set_rng_state(state)
            drawn = block(3)
            ok = (
                drawn is not None
                and drawn.dtype == one_by_one.dtype
                and drawn.shape == one_by_one.shape
                and torch.equal(drawn, one_by_one)
                and torch.equal(torch.get_rng_state(), after_one_by_one)
            )
        except Exception:  # a spec that cannot: draw one by one
            ok = False
        finally:
            torch.set_rng_state(state)
        _BLOCK_CHECKED[key] = ok
    return block if ok else None


def rollout_direct(
    env: Any, plan: DirectPlan, first: TensorDictBase, max_steps: int, stop_on_done: bool
) -> TensorDictBase | None:
    """``rollout`` with random actions, each step written into the rows of the result.

    ``first`` is the reset output. Gives what the TensorDict path of ``rollout`` gives: the same
    actions (drawn in the same order from the same sampler), observations, rewards and dones,
    with the time dim after the batch dims. Returns ``None`` (nothing stepped) when ``first``
    holds other entries than the plan's, so that the caller takes the general path.

    The steps are written time-major (each step's rows are contiguous) and moved behind the
    batch dims at the end. Measured with ``GymEnv("CartPole-v1", num_envs=1024)``: writing
    straight into the batch-major result (strided rows) was 20-25% slower, the cache misses of
    the strided writes costing more than the final copy.
    """
    entries = plan.flatten(first)
    if entries is None or set(entries) != set(plan.root_keys):
        return None
    root = plan.empty(plan.root_keys, max_steps)
    nxt = plan.empty(plan.next_keys, max_steps)
    root_np = {k: v.numpy() for k, v in root.items()}
    next_np = {k: v.numpy() for k, v in nxt.items()}
    for key, array in root_np.items():
        array[0] = entries[key].numpy()

    rand, step_into, reset_into = plan.rand, env._step_into, env._reset_into
    single = len(plan.action_keys) == 1
    # the env's seeded generator (set_seed), else torch's global one
    generator = env._action_generator()
    rng = torch.default_generator if generator is None else generator
    # the actions: one draw for the whole rollout when that equals one draw per step
    block = block_sampler(rand.__self__) if single and hasattr(rand, "__self__") else None
    drawn = None
    if block is not None:
        rng_state = rng.get_state()
        drawn = block(max_steps, generator=generator)
        if drawn is None:
            rng.set_state(rng_state)
        else:
            rand = iter(drawn.unbind(0)).__next__
    if drawn is None and generator is not None:
        rand = functools.partial(rand, generator=generator)
    next_items = list(next_np.items())
    root_items = list(root_np.items())
    done_rows = next_np["done"]
    batch = tuple(plan.batch_size)
    actions = []
    reset_rows = []  # time indices whose root row was written by a reset
    steps = max_steps
    # the agents' own flags end a rollout stopped on done, as the TensorDict path's check of
    # every done entry does, even when the root's is not set
    group_flags = (
        []
        if plan.flat or not stop_on_done
        else [next_np[key] for key in plan.done_keys if type(key) is not str]
    )
    for t in range(max_steps):
        action = rand()
        actions.append(action)
        if not step_into(action, {key: array[t, ...] for key, array in next_items}):
            if group_flags and any(flags[t].any() for flags in group_flags):
                steps = t + 1
                break
            continue
        if stop_on_done:
            steps = t + 1
            break
        if t + 1 == max_steps:
            break
        row = {}
        for key, array in root_items:
            array[t + 1] = next_np[key][t]  # rows that are not reset carry on
            row[key] = array[t + 1, ...]
        reset_into(row, done_rows[t].reshape(batch) if batch else None)
        reset_rows.append(t + 1)

    # step_mdp: the root of step t + 1 is the "next" of step t, unless a reset wrote it
    if steps > 1:
        keep = np.ones(steps - 1, dtype=bool)
        keep[[t - 1 for t in reset_rows]] = False
        for key, array in root_items:
            if keep.all():
                array[1:steps] = next_np[key][: steps - 1]
            elif keep.any():
                array[1:steps][keep] = next_np[key][: steps - 1][keep]
    nb = len(batch)
    if drawn is None and not single:
        action = {key: torch.stack([a[key] for a in actions], nb) for key in plan.action_keys}
    elif drawn is None:
        action = torch.stack(actions, nb)
    else:
        action = drawn
        if steps < max_steps:  # stopped early: leave the generator as `steps` draws would
            rng.set_state(rng_state)
            block(steps, generator=generator)
            action = drawn[:steps]
        if nb:
            action = action.movedim(0, nb).contiguous()
    if steps < max_steps:
        root = {k: v[:steps] for k, v in root.items()}
        nxt = {k: v[:steps] for k, v in nxt.items()}
    if nb:  # time-major -> batch-major, contiguous as torch.stack would give
        root = {k: v.movedim(0, nb).contiguous() for k, v in root.items()}
        nxt = {k: v.movedim(0, nb).contiguous() for k, v in nxt.items()}
    batch_size = torch.Size((*batch, steps))
    device = first.device
    out = dict(root)
    if single:
        out[plan.action_key] = action
    else:
        out.update(action)
    out["next"] = plan.nest(nxt, batch_size, device, time=steps)
    result = plan.nest(out, batch_size, device, time=steps)
    if env.__dict__["_finite_on"]:  # one look at the whole rollout (batch and time rows)
        check_step(env, result, result.get("next"))
    return result


def direct_step_and_maybe_reset(
    env: Any, plan: DirectPlan, tensordict: TensorDictBase
) -> tuple[TensorDictBase, TensorDictBase] | None:
    """``EnvBase.step_and_maybe_reset`` through the direct hooks, or ``None`` (nothing done).

    Covers a plain TensorDict of tensors with the env's batch size, valid actions, no
    ``"next"``, ``"_step"`` or ``"_reset"`` entry, on the cpu; anything else goes the general
    way, which also raises the errors. The outputs are those of the general path: the step's
    entries under ``"next"``; the next input built as ``step_mdp`` does (root entries kept,
    observations and dones from ``"next"``), reset where done, with the other root entries
    zeroed in the sub-envs reset when only some are (``EnvBase.reset``'s merge).

    This is the loop of every collector (a policy, then this), so each line counts: with
    ``GymEnv("CartPole-v1")`` the simulator's step takes about 5 us of the 15 us spent here.
    """
    src = tensordict._tensordict
    if "next" in src or "_step" in src or "_reset" in src:
        return None
    device = tensordict.device
    if device is not None and device.type != "cpu":
        return None
    batch = plan.batch_size
    if tensordict.batch_size != batch or not env._plan.actions_ok(tensordict):
        return None
    # step_mdp: the root entries that are not outputs (read before the step writes "next")
    mdp = env._step_mdp
    if plan.flat:
        tensor = torch.Tensor
        for value in src.values():
            if type(value) is not tensor:
                return None
        excluded = mdp.excluded_set
        root = {key: value for key, value in src.items() if key not in excluded}
        action = src[plan.action_key]
    else:
        root = _kept_entries(tensordict, mdp.exclude_from_root, plan.nodes)
        if root is None:
            return None
        keys = plan.action_keys
        action = (
            _plain_action(tensordict, keys[0])
            if len(keys) == 1
            else {key: _plain_action(tensordict, key) for key in keys}
        )
    # numpy allocations wrapped by from_numpy: several times cheaper than torch.empty + .numpy()
    from_numpy, empty = torch.from_numpy, np.empty
    keys, shapes, dtypes = plan.next_alloc
    arrays = dict(zip(keys, map(empty, shapes, dtypes)))
    nxt = dict(zip(keys, map(from_numpy, arrays.values())))
    done = env._step_into(action, arrays)
    tensordict._set_str("next", plan.nest(nxt, batch, device), validated=True, inplace=False)
    if env.__dict__["_finite_on"]:  # on the arrays: cheaper than through the TensorDict
        check_values(env, tensordict, arrays, len(batch))
    # then the outputs it carries over
    for key in mdp.next_keys:
        value = nxt.get(key)
        if value is not None:
            root[key] = value
    if done:
        keys, shapes, dtypes = plan.root_alloc
        if batch:
            mask = arrays["done"].reshape(tuple(batch))
            fresh_arrays = {key: arrays[key].copy() for key in keys}
            env._reset_into(fresh_arrays, mask)
            if not mask.all():  # the entries a reset does not write: zeros where reset
                rows = torch.from_numpy(mask)
                nb = len(batch)
                for key, value in root.items():
                    if key not in fresh_arrays:
                        view = rows.reshape(*batch, *((1,) * (value.ndim - nb)))
                        root[key] = value.masked_fill(view, 0)
        else:
            fresh_arrays = dict(zip(keys, map(empty, shapes, dtypes)))
            env._reset_into(fresh_arrays, None)
        root.update(zip(keys, map(from_numpy, fresh_arrays.values())))
    return tensordict, plan.nest(root, batch, device)


_MISSING = object()
_NOTHING: dict = {}


def _plain_action(td: TensorDict, key: Any) -> torch.Tensor:
    return td._tensordict[key] if type(key) is str else _plain_get(td, key)


def _kept_entries(td: TensorDict, excluded: dict, nodes: dict) -> dict | None:
    """The entries of ``td`` that ``step_mdp`` keeps at the root (``excluded``: its tree of the
    keys it drops), as ``key -> tensor`` with ``(group, name)`` keys; ``None`` for an entry
    that is not a tensor or a plain group of tensors (the general path handles those)."""
    out: dict = {}
    tensor, device = torch.Tensor, td.device
    for key, value in td._tensordict.items():
        dropped = excluded.get(key, _MISSING)
        if dropped is None:
            continue
        if type(value) is tensor:
            out[key] = value
            continue
        if (
            type(value) is not TensorDict
            or value.batch_size != nodes.get(key)
            or value.device != device
        ):
            return None
        if dropped is _MISSING:
            dropped = _NOTHING
        for name, inner in value._tensordict.items():
            if type(inner) is not tensor:
                return None
            if dropped.get(name, _MISSING) is not None:
                out[(key, name)] = inner
    return out
