"""Gradients through a JAX step into torch: ``jax.vjp`` inside a ``torch.autograd.Function``.

With ``requires_grad=True`` the env keeps the floating-point leaves of its state as torch
tensors that carry their autograd history; each step runs the batched step under ``jax.vjp``
(the forward is jitted once per env), returns the observation, the reward and the new state
leaves as torch tensors, and the backward pass hands torch's output gradients to the vjp.
Gradients therefore flow to the step's action and, through the kept state, to every earlier
action and state since the last reset of the sub-env (backpropagation through time). Integer
leaves (step counters, random keys) carry no gradient.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from torchenv_jax._bridge import to_jax, to_torch, tree_to_torch

__all__ = ["differentiable_step", "merge_after_reset"]


def _is_float(leaf: Any) -> bool:
    import jax.numpy as jnp

    return jnp.issubdtype(leaf.dtype, jnp.floating)


class _GradPlan:
    """How a carry splits into float leaves (differentiable) and the others, and the jitted
    batched step over that split."""

    def __init__(self, env: Any) -> None:
        import jax

        leaves, self.treedef = jax.tree_util.tree_flatten(env._carry)
        self.is_float = [_is_float(leaf) for leaf in leaves]
        init, step, observe = env._init_fn, env._step_fn, env._observe
        n, limit = env._n, env.max_episode_steps
        del init
        treedef, is_float = self.treedef, self.is_float

        def join(floats, others):
            fl, ot = iter(floats), iter(others)
            return treedef.unflatten([next(fl) if f else next(ot) for f in is_float])

        def split(carry):
            leaves = jax.tree_util.tree_leaves(carry)
            floats = [x for x, f in zip(leaves, is_float, strict=True) if f]
            others = [x for x, f in zip(leaves, is_float, strict=True) if not f]
            return floats, others

        def forward(floats, action, others):
            inner, steps = join(floats, others)
            inner, reward, terminated, truncated = jax.vmap(step)(inner, action)
            steps = steps + 1
            if limit is not None:
                truncated = truncated | (steps >= limit)
            terminated, truncated = terminated.reshape(n, 1), truncated.reshape(n, 1)
            new_floats, new_others = split((inner, steps))
            obs = observe(inner)
            reward = reward.reshape(n, 1).astype("float32")
            aux = (new_others, terminated, truncated, terminated | truncated)
            return (new_floats, obs, reward), aux

        self.forward = jax.jit(forward)
        self.join, self.split = join, split


class _JaxStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, plan, others, box, action, *floats):
        import jax

        jfloats = [to_jax(x.detach()) for x in floats]
        out, vjp, aux = jax.vjp(
            lambda f, a: plan.forward(f, a, others), jfloats, to_jax(action.detach()), has_aux=True
        )
        ctx.vjp = vjp
        ctx.out_tree = jax.tree_util.tree_structure(out)
        box["aux"] = aux
        new_floats, obs, reward = out
        return (*map(to_torch, new_floats), to_torch(obs), to_torch(reward))

    @staticmethod
    def backward(ctx, *grads):
        cot = ctx.out_tree.unflatten([to_jax(g.contiguous()) for g in grads])
        g_floats, g_action = ctx.vjp(cot)
        ctx.vjp = None
        return (None, None, None, to_torch(g_action), *map(to_torch, g_floats))


def _plan(env: Any) -> _GradPlan:
    plan = env.__dict__.get("_grad_plan")
    if plan is None:
        plan = env.__dict__["_grad_plan"] = _GradPlan(env)
    return plan


def merge_after_reset(env: Any, rows: torch.Tensor | None) -> None:
    """After a reset: the torch float leaves of the reset rows start afresh (no history); the
    other rows keep theirs."""
    old = env.__dict__.get("_grad_floats")
    if old is None or rows is None:
        env.__dict__["_grad_floats"] = None
        return
    plan = _plan(env)
    fresh, _ = plan.split(env._carry)
    merged = []
    for new, prev in zip(fresh, old, strict=True):
        new = to_torch(new)
        mask = rows.reshape(rows.shape + (1,) * (new.ndim - 1))
        merged.append(torch.where(mask, new, prev))
    env.__dict__["_grad_floats"] = merged


def differentiable_step(env: Any, tensordict: TensorDictBase) -> TensorDictBase:
    """One step whose observation, reward and next state are differentiable w.r.t. the action
    and the previous state (see the module's docstring)."""
    if env._carry is None:
        raise RuntimeError(f"{type(env).__name__}: call reset() before step()")
    plan = _plan(env)
    action = tensordict.get("action")
    expected = (*env.batch_size, *env._action_shape)
    if tuple(action.shape) != expected:
        raise ValueError(f"'action': expected shape {expected}, got {tuple(action.shape)}")
    action = action.reshape(env._n, *env._action_shape).to(env._action_torch_dtype)
    floats = env.__dict__.get("_grad_floats")
    jfloats, others = plan.split(env._carry)
    if floats is None:
        floats = [to_torch(x) for x in jfloats]
    box: dict = {}
    *new_floats, obs, reward = _JaxStep.apply(plan, others, box, action, *floats)
    new_others, terminated, truncated, done = box["aux"]
    env.__dict__["_grad_floats"] = new_floats
    env.__dict__["_carry"] = plan.join([to_jax(x.detach()) for x in new_floats], new_others)
    out = {"observation": obs, "reward": reward}
    flags = tree_to_torch((terminated, truncated, done))
    out["terminated"], out["truncated"], out["done"] = flags
    return env._shaped(out)
