"""The start-time check that every sub-environment has the specs its batched env laid out.

A batched env reads its specs from one env built in the parent (or from
:attr:`EnvCreator.meta_data`) and lays its buffers out from them before the workers build their
own envs. A factory whose env differs from process to process (it reads ``os.getpid()``, a
per-worker keyword argument, a file...) would otherwise have its outputs broadcast into buffers
of another shape, or cast to another dtype, without a word. Each worker therefore compares, once
when it starts, its env's leaves (key, dtype, shape) with the rows it was given: a comparison of
a few dozen tuples, no data. Without buffers the parent compares the specs the workers report
with the ones it announced.
"""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase

from torchenv.batched._shared import leaves_of

__all__ = ["SpecMismatchError", "check_layout", "check_specs", "layout_leaves"]

_GROUP_WHAT = {
    "in": "input (action/state)",
    "next": "step output",
    "root": "reset output",
}


class SpecMismatchError(ValueError):
    """A sub-environment's specs differ from those its batched env was laid out from.

    Attributes:
        worker_index: index of the sub-environment.
        key: the first entry that differs (a tuple of str).
    """

    def __init__(self, message: str, worker_index: int, key: tuple) -> None:
        super().__init__(message)
        self.worker_index = worker_index
        self.key = key


def layout_leaves(input_spec: Any, output_spec: Any) -> dict[str, list]:
    """``{"in": leaves, "next": leaves, "root": leaves}``: the buffer rows of one sub-env.

    Each leaf is ``(key tuple, dtype, shape)``; see :class:`~torchenv.batched._shared.BufferGroup`.
    """
    obs = output_spec["full_observation_spec"].zero()
    done = output_spec["full_done_spec"].zero()
    state = input_spec["full_state_spec"].zero()
    inputs = input_spec["full_action_spec"].zero()
    inputs.update(state)
    for key in done.keys(True, True):
        k = key if isinstance(key, tuple) else (key,)
        if k[-1] == "done":
            inputs.set((*k[:-1], "_reset"), done.get(key))
    nxt = obs.clone()
    nxt.update(output_spec["full_reward_spec"].zero())
    nxt.update(done)
    root = obs.clone()
    root.update(done)
    root.update(state)
    return {"in": leaves_of(inputs), "next": leaves_of(nxt), "root": leaves_of(root)}


def _describe(leaf: tuple | None) -> str:
    if leaf is None:
        return "absent"
    _, dtype, shape = leaf
    return f"{str(dtype).removeprefix('torch.')} of shape {tuple(shape)}"


def _first_difference(mine: list, expected: list) -> tuple | None:
    """``(key, my leaf or None, expected leaf or None)`` for the first key that differs."""
    by_key = {leaf[0]: leaf for leaf in mine}
    wanted = {leaf[0]: leaf for leaf in expected}
    for key, leaf in wanted.items():
        other = by_key.get(key)
        if other is None or other[1] != leaf[1] or tuple(other[2]) != tuple(leaf[2]):
            return key, other, leaf
    for key, leaf in by_key.items():
        if key not in wanted:
            return key, leaf, None
    return None


def _raise(index: int, where: str, what: str, diff: tuple) -> None:
    key, mine, expected = diff
    name = key[0] if len(key) == 1 else key
    raise SpecMismatchError(
        f"worker {index}: its env does not have the specs the batched env {where}: "
        f"{what} entry {name!r} is {_describe(mine)} in worker {index}, "
        f"{_describe(expected)} in the batched env. The batched env read its specs from an env "
        "built in the parent process (or EnvCreator.meta_data); the factory must build the "
        "same env in every process and for every worker's kwargs. For sub-envs whose specs "
        "differ, pass one factory per worker (a list), or metadata_from_workers=True "
        "(ParallelEnv).",
        index,
        key,
    )


def check_layout(env: Any, groups: dict, index: int) -> None:
    """Raise :class:`SpecMismatchError` when ``env`` would not fill worker ``index``'s rows of
    ``groups`` exactly (a key missing or extra, another dtype or shape)."""
    mine = layout_leaves(env.input_spec, env.output_spec)
    for name, group in groups.items():
        diff = _first_difference(mine[name], group.per_worker[index])
        if diff is not None:
            _raise(index, "laid its buffers out from", _GROUP_WHAT.get(name, name), diff)


def _spec_leaves(spec: Any) -> list:
    out = []
    for key in spec.keys(True, True):
        leaf = spec[key]
        k = key if isinstance(key, tuple) else (key,)
        out.append((k, getattr(leaf, "dtype", None), tuple(getattr(leaf, "shape", ()))))
    return out


def check_specs(index: int, meta: dict, input_spec: Any, output_spec: Any) -> None:
    """Raise :class:`SpecMismatchError` when worker ``index``'s specs (as it reports them)
    differ from ``meta``'s (what the batched env announced) in keys, dtypes or shapes."""
    for part, spec in (("input", input_spec), ("output", output_spec)):
        expected = meta[f"{part}_spec"]
        if isinstance(spec, TensorDictBase) or not hasattr(spec, "keys"):
            continue  # pragma: no cover - not a spec
        diff = _first_difference(_spec_leaves(spec), _spec_leaves(expected))
        if diff is not None:
            _raise(index, "announced", part, diff)
