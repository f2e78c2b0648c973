"""``EnvBase.rollout``: run a policy in an env and stack the steps along a trailing "time" dim."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase
from tensordict.nn import TensorDictModuleBase

from torchenv.envs._direct import cached_direct_plan, rollout_direct
from torchenv.envs._utils import _any, _replace_last, terminated_or_truncated

__all__: list[str] = []


class _TensorPolicy:
    """Wraps a policy on tensors: reads the observations positionally, writes the actions."""

    def __init__(self, module: Callable, in_keys: list, out_keys: list) -> None:
        self.module = module
        self.in_keys = in_keys
        self.out_keys = out_keys

    def __call__(self, td: TensorDictBase) -> TensorDictBase:
        result = self.module(*(td.get(k) for k in self.in_keys))
        if not isinstance(result, tuple):
            result = (result,)
        for key, value in zip(self.out_keys, result):
            td.set(key, value)
        return td

    def parameters(self):
        params = getattr(self.module, "parameters", None)
        return params() if params is not None else iter(())


def _is_td_signature(fn: Callable) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    params = list(sig.parameters.values())
    if len(params) != 1:
        return False
    param = params[0]
    if param.name in ("tensordict", "td", "data"):
        return True
    ann = param.annotation
    return (
        isinstance(ann, type)
        and issubclass(ann, TensorDictBase)
        or (isinstance(ann, str) and "TensorDict" in ann)
    )


def make_policy(env, policy: Callable | None, trust_policy: bool) -> Callable:
    """Returns a callable ``td -> td`` from a TensorDict module, a tensor module or ``None``."""
    if policy is None:
        return env.rand_action
    if trust_policy or isinstance(policy, TensorDictModuleBase):
        return policy
    if hasattr(policy, "in_keys") and hasattr(policy, "out_keys"):
        return policy
    forward = getattr(policy, "forward", policy)
    if _is_td_signature(forward):
        return policy
    obs_keys = list(env.full_observation_spec.keys())
    try:
        n_params = len(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        n_params = len(obs_keys)
    if n_params != len(obs_keys):
        raise TypeError(
            f"rollout: the policy takes {n_params} argument(s) but the env has the observation "
            f"entries {obs_keys}; pass a TensorDictModule, a callable taking one tensor per "
            "observation entry, or trust_policy=True."
        )
    return _TensorPolicy(policy, obs_keys, list(env.action_keys))


def _policy_device(policy) -> torch.device | None:
    params = getattr(policy, "parameters", None)
    if params is None:
        return None
    for p in params():
        return p.device
    return None


def rollout(
    env,
    max_steps: int,
    policy: Callable | None = None,
    callback: Callable[[Any, TensorDictBase], Any] | None = None,
    *,
    progress: bool | str = False,
    **kwargs: Any,
) -> TensorDictBase:
    """Runs ``policy`` in ``env`` for up to ``max_steps`` steps (see ``EnvBase.rollout``).

    ``progress=True`` (or a label) shows a progress bar on stderr (tqdm), one tick per step,
    when stderr is a terminal.
    """
    if env.is_closed and not env._reset_reopens:
        from torchenv.envs._closed import closed_error

        raise closed_error(env)
    if not progress:
        return _rollout(env, max_steps, policy, callback, **kwargs)
    from tqdm import tqdm

    label = progress if isinstance(progress, str) else type(env).__name__
    # disable=None: no bar when stderr is not a terminal (no "\r" lines in logs and files)
    with tqdm(total=max_steps, desc=label, unit="step", leave=False, disable=None) as bar:

        def tick(env_: Any, tensordict: TensorDictBase) -> Any:
            bar.update(1)
            return None if callback is None else callback(env_, tensordict)

        return _rollout(env, max_steps, policy, tick, **kwargs)


def _rollout(
    env,
    max_steps: int,
    policy: Callable | None = None,
    callback: Callable[[Any, TensorDictBase], Any] | None = None,
    *,
    auto_reset: bool = True,
    auto_cast_to_device: bool = False,
    break_when_any_done: bool | None = None,
    break_when_all_done: bool | None = None,
    return_contiguous: bool | None = True,
    tensordict: TensorDictBase | None = None,
    set_truncated: bool = False,
    out: TensorDictBase | None = None,
    trust_policy: bool = False,
    actions: Iterable[Any] | None = None,
    storing_device: torch.device | str | None = None,
    set_state: bool | None = None,
) -> TensorDictBase:
    if actions is not None:
        if policy is not None:
            raise ValueError("rollout: pass either a policy or actions, not both.")
        policy, max_steps = _replay(env, actions, max_steps)
        trust_policy = True
    if storing_device is not None:
        storing_device = torch.device(storing_device)
    reset_kwargs = {} if set_state is None else {"set_state": set_state}
    if break_when_any_done is None:
        break_when_any_done = not break_when_all_done
    break_when_all_done = bool(break_when_all_done)
    if break_when_any_done and break_when_all_done:
        raise TypeError("rollout: break_when_any_done and break_when_all_done are exclusive.")
    if return_contiguous is None:
        return_contiguous = not env._has_dynamic_specs
    if max_steps < 1:
        raise ValueError(f"rollout: max_steps must be >= 1; got {max_steps}.")
    if (
        policy is None
        and callback is None
        and auto_reset
        and tensordict is None
        and out is None
        and return_contiguous
        and not break_when_all_done
        and env._post_step_mdp_hooks is None
        and not reset_kwargs
    ):
        plan = cached_direct_plan(env)
        if plan is not None:
            first = env.reset()
            result = rollout_direct(env, plan, first, max_steps, break_when_any_done)
            if result is not None:
                if set_truncated:
                    _set_truncated(env, result)
                result.refine_names(..., "time")
                return _store(result, storing_device)
            tensordict, auto_reset = first, False  # general path, from this reset
    policy = make_policy(env, policy, trust_policy)
    policy_device = _policy_device(policy) if auto_cast_to_device else None
    env_device = env.device
    if auto_reset:
        tensordict = env.reset(tensordict, **reset_kwargs)
    elif tensordict is None:
        raise RuntimeError("rollout: with auto_reset=False, a tensordict must be given.")
    else:
        tensordict = env.maybe_reset(tensordict)

    def act(td: TensorDictBase) -> TensorDictBase:
        if auto_cast_to_device:
            td = td.to(policy_device) if policy_device is not None else td.clear_device_()
        result = policy(td)
        if result is not td and result is not None:
            td = td.update(result)
        if auto_cast_to_device:
            td = td.to(env_device) if env_device is not None else td.clear_device_()
        return td

    if break_when_any_done or break_when_all_done:
        steps = _rollout_stop_early(env, tensordict, act, max_steps, callback, break_when_all_done)
    else:
        steps = _rollout_nonstop(env, tensordict, act, max_steps, callback)
    time_dim = steps[0].batch_dims
    if return_contiguous:
        result = _fast_stack(steps, time_dim) if out is None else None
        try:
            if result is None:
                result = torch.stack(steps, time_dim, out=out)
        except RuntimeError as err:
            if env._has_dynamic_specs:
                raise RuntimeError(
                    "rollout: the env has dynamic specs (a -1 dim); call rollout with "
                    "return_contiguous=False."
                ) from err
            raise
    else:
        result = LazyStackedTensorDict.lazy_stack(steps, time_dim, out=out)
    if set_truncated:
        _set_truncated(env, result)
    result.refine_names(..., "time")
    return _store(result, storing_device)


def _replay(env, actions: Iterable[Any], max_steps: int) -> tuple[Callable, int]:
    """A policy writing ``actions`` one by one under the env's top-level action key, and the
    number of steps they allow (at most ``max_steps``; an iterator is read that far only)."""
    if not isinstance(actions, Iterable):
        raise TypeError(
            f"rollout: actions must be an iterable of actions (a list, a tensor whose first "
            f"dim is time...); got {type(actions).__name__}."
        )
    todo = list(itertools.islice(actions, max_steps))
    if not todo:
        raise ValueError("rollout: actions is empty; at least one action is needed.")
    key = next(iter(env.full_action_spec.keys()))
    feed = iter(todo)

    def replay(tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set(key, next(feed))
        return tensordict

    return replay, len(todo)


def _store(result: TensorDictBase, device: torch.device | None) -> TensorDictBase:
    if device is None or result.device == device:
        return result
    return result.to(device)


def _fast_stack(tds: list, dim: int) -> TensorDictBase | None:
    """Stacks plain TensorDicts of identical structure key by key; ``None`` if not possible."""
    first = tds[0]
    if any(type(td) is not TensorDict for td in tds):
        return None
    keys = list(first._tensordict.keys())
    n = len(keys)
    if any(len(td._tensordict) != n for td in tds):
        return None
    out = {}
    try:
        for key in keys:
            values = [td._tensordict[key] for td in tds]
            head = values[0]
            if type(head) is torch.Tensor:
                out[key] = torch.stack(values, dim)
            elif type(head) is TensorDict:
                sub = _fast_stack(values, dim)
                if sub is None:
                    return None
                out[key] = sub
            else:
                return None
    except (KeyError, RuntimeError):
        return None
    bs = first.batch_size
    batch = torch.Size((*bs[:dim], len(tds), *bs[dim:]))
    return TensorDict._new_unsafe(out, batch_size=batch, device=first.device, nested=False)


def _rollout_stop_early(env, tensordict, act, max_steps, callback, all_done) -> list:
    steps = []
    step_mask = None
    full_done_spec = env.output_spec["full_done_spec"]
    simple_done = env._plan.simple_done
    hooks = env._post_step_mdp_hooks
    for i in range(max_steps):
        tensordict = act(tensordict)
        tensordict = env.step(tensordict)
        next_td = env._step_mdp(tensordict)
        if hooks is not None:
            tensordict, next_td = hooks(tensordict, next_td)
        record = tensordict
        if all_done and step_mask is not None:
            record.pop("_step", None)
            if steps:
                record = torch.where(step_mask.view(record.shape), record, steps[-1])
        steps.append(record)
        if i == max_steps - 1:
            break
        tensordict = next_td
        if not all_done:
            if simple_done:
                done = tensordict._get_str("done", None)
                if done is not None and _any(done):
                    break
            elif terminated_or_truncated(tensordict, full_done_spec, key=None):
                break
        else:
            terminated_or_truncated(tensordict, full_done_spec, key="_neg_step")
            not_done = tensordict.pop("_neg_step", None)
            if not_done is not None:
                live = ~not_done
                live = (
                    live.reshape(*tensordict.batch_size, -1).all(-1)
                    if live.ndim > tensordict.batch_dims
                    else live
                )
                step_mask = live if step_mask is None else step_mask & live
            if step_mask is not None:
                if not _any(step_mask):
                    break
                tensordict.set("_step", step_mask)
        if callback is not None:
            callback(env, tensordict)
    return steps


def _rollout_nonstop(env, tensordict_, act, max_steps, callback) -> list:
    steps = []
    step_and_maybe_reset = env.step_and_maybe_reset
    for i in range(max_steps):
        tensordict_ = act(tensordict_)
        if i == max_steps - 1:
            tensordict = env.step(tensordict_)
            hooks = env._post_step_mdp_hooks
            if hooks is not None:  # the last step must look like the others
                tensordict, _ = hooks(tensordict, env._step_mdp(tensordict))
            steps.append(tensordict)
            break
        tensordict, tensordict_ = step_and_maybe_reset(tensordict_)
        steps.append(tensordict)
        if callback is not None:
            callback(env, tensordict)
    return steps


def _set_truncated(env, result: TensorDictBase) -> None:
    found = False
    index = (slice(None),) * (result.batch_dims - 1) + (-1,)
    for key in env.done_keys:
        last = key if isinstance(key, str) else key[-1]
        if last != "truncated":
            continue
        found = True
        truncated = result.get(("next", *((key,) if isinstance(key, str) else key)))
        truncated = truncated.clone()
        truncated[index] = True
        result.set(("next", *((key,) if isinstance(key, str) else key)), truncated)
        done_key = _replace_last(key, "done")
        done_full = ("next", *((done_key,) if isinstance(done_key, str) else done_key))
        done = result.get(done_full, None)
        if done is not None:
            result.set(done_full, done | truncated)
    if not found:
        raise RuntimeError(
            "rollout(set_truncated=True) needs a 'truncated' entry in the done spec; "
            "call env.add_truncated_keys() first."
        )
