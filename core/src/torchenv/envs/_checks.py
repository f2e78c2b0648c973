"""``check_env_specs``: run a short rollout and compare every entry with the env's specs."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDictBase

__all__ = ["check_env_specs"]


def _spec_for(env, key: tuple) -> tuple[str, object] | None:
    """The spec describing ``key`` of a rollout entry (root or ``"next"``), with its group."""
    in_next = key[0] == "next"
    inner = key[1:] if in_next else key
    inner = inner[0] if len(inner) == 1 else inner
    groups = (
        ("observation", env.full_observation_spec),
        ("done", env.full_done_spec),
        ("reward", env.full_reward_spec),
    )
    if not in_next:
        groups = (
            ("action", env.full_action_spec),
            ("state", env.full_state_spec),
            *groups[:2],
        )
    for name, spec in groups:
        if inner in spec.keys(True, True):
            return name, spec[inner]
    return None


def check_env_specs(
    env: Any,
    return_contiguous: bool | None = None,
    check_dtype: bool = True,
    seed: int | None = None,
    tensordict: TensorDictBase | None = None,
    break_when_any_done: bool | str = False,
) -> None:
    """Checks that the data an env produces matches its specs; raises ``AssertionError`` if not.

    A 3-step rollout is compared with ``env.fake_tensordict()`` (the structure the specs
    promise): same keys, shapes and dtypes at every step; the values of the last step
    (with a fresh random action, so that action masks apply) must lie inside their specs.

    Args:
        env: the env to check.
        return_contiguous: stack the rollout densely; ``None`` (default): unless the specs
            are dynamic.
        check_dtype: compare dtypes too.
        seed: if given, ``env.set_seed(seed)`` first.
        tensordict: an initial tensordict for the rollout (reset is then skipped).
        break_when_any_done: passed to ``rollout``; ``"both"`` runs both variants.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> check_env_specs(PendulumEnv(), seed=0)  # raises AssertionError on a mismatch
    """
    if break_when_any_done == "both":
        for value in (True, False):
            check_env_specs(env, return_contiguous, check_dtype, seed, tensordict, value)
        return
    if seed is not None:
        env.set_seed(seed)
    if return_contiguous is None:
        return_contiguous = not env._has_dynamic_specs
    if tensordict is not None:
        tensordict = tensordict.copy()
    else:
        reset = env.reset()
        for key in env.reward_keys:
            if key in reset.keys(True, True):
                raise AssertionError(
                    f"reset() returned the reward entry {key!r}: rewards belong to step "
                    "outputs only."
                )
    rollout = env.rollout(
        3,
        return_contiguous=return_contiguous,
        tensordict=tensordict,
        auto_reset=tensordict is None,
        break_when_any_done=break_when_any_done,
    )
    fake = env.fake_tensordict()
    # state entries may or may not be echoed under "next"
    optional = {("next", *((k,) if isinstance(k, str) else k)) for k in env.state_keys}
    fake_keys = {k for k in fake.keys(True, True) if not _private(k)} - optional
    steps = rollout.unbind(rollout.batch_dims - 1)
    for t, step in enumerate(steps):
        real_keys = {k for k in step.keys(True, True) if not _private(k)} - optional
        if fake_keys != real_keys:
            raise AssertionError(
                f"check_env_specs: the keys of rollout step {t} do not match the specs: "
                f"in the specs but not in the data: {sorted(map(str, fake_keys - real_keys))}; "
                f"in the data but not in the specs: {sorted(map(str, real_keys - fake_keys))}."
            )
        lead = step.batch_size[: step.batch_dims - fake.batch_dims]
        for key in sorted(real_keys, key=str):
            expected, values = _members(fake, key), _members(step, key)
            if len(expected) == 1 and len(values) == 1:
                _check_entry(env, key, expected[0], values[0], lead, check_dtype)
                continue
            if len(expected) != len(values):
                raise AssertionError(
                    f"check_env_specs: entry {key!r} stacks {len(values)} heterogeneous "
                    f"members in rollout step {t}, the specs {len(expected)}."
                )
            for want, value in zip(expected, values):  # heterogeneous agents, one by one
                _check_entry(env, key, want, value, lead, check_dtype, member=True)
    last = env.rand_action(steps[-1].copy())
    for key in sorted(fake_keys, key=str):
        for value in _members(last, key):
            _check_range(env, key, value)


def _members(td, key) -> list:
    """``[td.get(key)]``, or the member values of a lazy stack (heterogeneous agents) on the
    way to ``key`` whose entries differ in shape and cannot be read as one tensor."""
    try:
        return [td.get(key)]
    except RuntimeError:
        tkey = (key,) if isinstance(key, str) else tuple(key)
        node = td
        for i, part in enumerate(tkey[:-1]):
            node = node.get(part)
            if isinstance(node, LazyStackedTensorDict):
                rest = tkey[i + 1 :]
                return [v for member in node.tensordicts for v in _members(member, rest)]
        raise


def _private(key) -> bool:
    last = key if isinstance(key, str) else key[-1]
    return last.startswith("_")


def _check_entry(
    env, key, expected, value, lead: torch.Size, check_dtype: bool, member: bool = False
) -> None:
    tkey = (key,) if isinstance(key, str) else key
    found = None if member else _spec_for(env, tkey)
    spec = found[1] if found is not None else None
    if not isinstance(value, torch.Tensor):
        return
    shape = torch.Size((*lead, *expected.shape))
    dynamic = spec is not None and any(d < 0 for d in spec.shape)
    if dynamic:
        spec_shape = torch.Size((*lead, *spec.shape))
        shape_ok = value.ndim == len(spec_shape) and all(
            e < 0 or e == v for e, v in zip(spec_shape, value.shape)
        )
    else:
        shape_ok = value.shape == shape
    if not shape_ok:
        raise AssertionError(
            f"check_env_specs: entry {key!r} has shape {tuple(value.shape)} but the spec "
            f"gives shape {tuple(shape)}; spec: {spec}."
        )
    if check_dtype and value.dtype != expected.dtype:
        raise AssertionError(
            f"check_env_specs: entry {key!r} has dtype {value.dtype} but the spec "
            f"expects dtype {expected.dtype}; spec: {spec}."
        )


def _check_range(env, key, value) -> None:
    found = _spec_for(env, (key,) if isinstance(key, str) else key)
    if found is None or not isinstance(value, torch.Tensor):
        return
    spec = found[1]
    if any(d < 0 for d in spec.shape):
        return
    for i, item in enumerate(value.reshape(-1, *spec.shape)):
        if not bool(spec.is_in(item)):
            raise AssertionError(
                f"check_env_specs: entry {key!r} is out of its spec at flat index {i} of the "
                f"last step: got {item}; expected a value in {spec}."
            )
