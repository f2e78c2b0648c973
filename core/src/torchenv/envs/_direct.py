"""Direct array I/O: envs that write their outputs straight into preallocated arrays.

Most simulators speak numpy. Turning each of their outputs into tensors and a TensorDict, only
for ``rollout`` to stack them again (or for a ``ParallelEnv`` worker to copy them into shared
memory), costs more than the simulator's own step for the light envs (CartPole: about 11 us of
simulation under 60 us of wrapping). An env may therefore offer three optional hooks:

* ``_direct_io_supported() -> bool``: whether, in its current configuration, the two hooks
  below write exactly what ``_step`` and ``_reset`` would return;
* ``_step_into(action, out) -> bool``: one step with ``action`` (the tensor of the env's single
  action key); writes every observation, reward and done entry into ``out[key]``, numpy arrays
  with the shape and dtype of the specs (batch dims included); returns whether any (sub-)env is
  done;
* ``_reset_into(out, mask) -> None``: resets the env (``mask``: a numpy boolean array of the
  batch shape selecting the sub-envs to reset, or ``None`` for all of them) and writes the
  observation and done entries of the sub-envs reset into ``out``, leaving other rows alone.

:func:`direct_plan` decides whether an env may be driven that way (the hooks are there, the
keys are flat, nothing in the env's step chain is overridden, no type checks, cpu) and lists the
keys. Two callers use it: ``rollout`` with random actions (:func:`rollout_direct`, which writes
every step into the rows of the result and builds one TensorDict at the end) and the
``ParallelEnv``/``SerialEnv`` runners, which point ``out`` at the shared-memory buffers. Both
give the same data as the TensorDict path, bit for bit (tested against it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

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

    Attributes:
        action_key: the env's single (flat) action key.
        obs_keys: the observation keys.
        reward_keys: the reward keys.
        done_keys: the done keys (``"done"``, ``"terminated"``, ``"truncated"``...).
        root_keys: what a reset writes (and what ``step_mdp`` carries): observations and dones.
        next_keys: what a step writes: observations, rewards and dones.
        leaves: ``key -> (shape, dtype)``, shapes with the batch dims.
        batch_size: the env batch size.
        rand: ``() -> tensor``, the action spec's sampler (what ``rand_action`` calls).
    """

    __slots__ = (
        "action_key",
        "obs_keys",
        "reward_keys",
        "done_keys",
        "root_keys",
        "next_keys",
        "leaves",
        "batch_size",
        "rand",
        "_np_cache",
        "next_alloc",
        "root_alloc",
    )

    def __init__(self, env: Any) -> None:
        plan = env._plan
        self.action_key = plan.actions[0].key
        self.obs_keys = [leaf.key for leaf in plan.observations]
        self.reward_keys = [leaf.key for leaf in plan.rewards]
        self.done_keys = list(plan.done_groups[0].names)
        self.root_keys = self.obs_keys + self.done_keys
        self.next_keys = self.obs_keys + self.reward_keys + self.done_keys
        self.leaves = {}
        for leaf in (*plan.observations, *plan.rewards):
            self.leaves[leaf.key] = (leaf.shape, leaf.dtype)
        group = plan.done_groups[0]
        for name in group.names:
            self.leaves[name] = (group.shapes[name], group.dtypes[name])
        self.batch_size = plan.batch_size
        self.rand = plan.rand_fast[0][1] if plan.rand_fast else None
        self._np_cache: dict = {}
        # (keys, shapes, numpy dtypes) of a step's and of a reset's outputs, for map() below
        self.next_alloc = tuple(zip(*self.np_leaves(self.next_keys)))
        self.root_alloc = tuple(zip(*self.np_leaves(self.root_keys)))

    def np_leaves(self, keys: list[str]) -> list[tuple[str, tuple[int, ...], np.dtype]]:
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

    def empty(self, keys: list[str], steps: int) -> dict[str, torch.Tensor]:
        """Uninitialised tensors for ``keys``, with a leading time dim of size ``steps``."""
        out = {}
        for key in keys:
            shape, dtype = self.leaves[key]
            out[key] = torch.empty((steps, *shape), dtype=dtype)
        return out


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
    if not plan.simple_done or len(plan.done_groups) != 1 or plan.reset_keys != ["_reset"]:
        return None
    if len(plan.actions) != 1 or plan.rand_fast is None:
        return None
    if list(env.full_state_spec.keys(True, True)):
        return None
    leaves = (*plan.actions, *plan.observations, *plan.rewards)
    if not all(leaf.is_str and not leaf.dynamic for leaf in leaves):
        return None
    try:
        direct = DirectPlan(env)
        for shape, dtype in direct.leaves.values():
            torch.empty((), dtype=dtype).numpy()  # a dtype numpy can hold
            if any(d < 0 for d in shape):
                return None
    except (TypeError, RuntimeError, AttributeError, IndexError):
        return None
    return direct


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
    if type(first) is not TensorDict or set(first._tensordict) != set(plan.root_keys):
        return None
    root = plan.empty(plan.root_keys, max_steps)
    nxt = plan.empty(plan.next_keys, max_steps)
    root_np = {k: v.numpy() for k, v in root.items()}
    next_np = {k: v.numpy() for k, v in nxt.items()}
    for key, array in root_np.items():
        array[0] = first._tensordict[key].numpy()

    rand, step_into, reset_into = plan.rand, env._step_into, env._reset_into
    # the actions: one draw for the whole rollout when that equals one draw per step
    block = block_sampler(plan.rand.__self__) if hasattr(plan.rand, "__self__") else None
    drawn = None
    if block is not None:
        rng_state = torch.get_rng_state()
        drawn = block(max_steps)
        if drawn is None:
            torch.set_rng_state(rng_state)
        else:
            rand = iter(drawn.unbind(0)).__next__
    next_items = list(next_np.items())
    root_items = list(root_np.items())
    done_rows = next_np["done"]
    batch = tuple(plan.batch_size)
    actions = []
    reset_rows = []  # time indices whose root row was written by a reset
    steps = max_steps
    for t in range(max_steps):
        action = rand()
        actions.append(action)
        if not step_into(action, {key: array[t, ...] for key, array in next_items}):
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
    if drawn is None:
        action = torch.stack(actions, nb)
    else:
        action = drawn
        if steps < max_steps:  # stopped early: leave the generator as `steps` draws would
            torch.set_rng_state(rng_state)
            block(steps)
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
    out[plan.action_key] = action
    out["next"] = TensorDict._new_unsafe(nxt, batch_size=batch_size, device=device, nested=False)
    return TensorDict._new_unsafe(out, batch_size=batch_size, device=device, nested=False)


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
    tensor = torch.Tensor
    for value in src.values():
        if type(value) is not tensor:
            return None
    # numpy allocations wrapped by from_numpy: several times cheaper than torch.empty + .numpy()
    from_numpy, empty = torch.from_numpy, np.empty
    keys, shapes, dtypes = plan.next_alloc
    arrays = dict(zip(keys, map(empty, shapes, dtypes)))
    nxt = dict(zip(keys, map(from_numpy, arrays.values())))
    done = env._step_into(src[plan.action_key], arrays)
    tensordict._set_str(
        "next",
        TensorDict._new_unsafe(nxt, batch_size=batch, device=device, nested=False),
        validated=True,
        inplace=False,
    )
    # step_mdp: the root entries that are not outputs, then the outputs it carries over
    mdp = env._step_mdp
    excluded = mdp.excluded_set
    root = {key: value for key, value in src.items() if key not in excluded}
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
    return tensordict, TensorDict._new_unsafe(root, batch_size=batch, device=device, nested=False)
