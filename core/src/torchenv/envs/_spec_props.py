"""Spec plumbing of :class:`~torchenv.envs.EnvBase`: spec properties, key lists, locking.

The env keeps two :class:`~torchenv.specs.Composite` containers:

* ``input_spec`` = ``{"full_action_spec", "full_state_spec"}``
* ``output_spec`` = ``{"full_observation_spec", "full_reward_spec", "full_done_spec"}``

Everything else (``action_spec``, ``done_keys``, ``reset_keys``, ...) is derived from them
and cached while the specs are locked; assigning a spec erases the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict.utils import NestedKey

from torchenv.envs._utils import _leaf_keys, _prefix, _replace_last, _sort_by_depth
from torchenv.specs import Categorical, Composite, TensorSpec, Unbounded

_INPUT_PARTS = ("full_action_spec", "full_state_spec")
_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
_DEFAULT_LEAF_KEY = {
    "full_observation_spec": "observation",
    "full_action_spec": "action",
    "full_reward_spec": "reward",
    "full_done_spec": "done",
}


def _done_leaf(shape: torch.Size, device) -> TensorSpec:
    return Categorical(n=2, shape=shape, dtype=torch.bool, device=device)


def _complete_done_spec(spec: Composite, device) -> None:
    """Flanks each "done" with a "terminated" (and vice versa) at every level, in place."""
    names = set(spec.keys())
    if "done" in names and "terminated" not in names:
        spec["terminated"] = spec["done"].clone()
    elif "terminated" in names and "done" not in names:
        spec["done"] = spec["terminated"].clone()
    for name in names:
        sub = spec[name]
        if isinstance(sub, Composite):
            _complete_done_spec(sub, device)


class _EnvSpecs:
    """Mixin holding the spec properties of EnvBase (see module docstring)."""

    # ------------------------------------------------------------------ cache & lock
    def _cached(self, name: str, compute: Callable[[], Any]) -> Any:
        cache = self.__dict__["_cache"]
        value = cache.get(name)
        if value is None:
            value = compute()
            if self.__dict__.get("_is_spec_locked", False):
                cache[name] = value
        return value

    def empty_cache(self) -> None:
        """Erases the cached key lists and step plans (they are rebuilt on next use)."""
        self.__dict__["_cache"].clear()

    @property
    def spec_locked(self) -> bool:
        """Whether the specs are locked (the cached key lists are then trusted)."""
        return self.__dict__.get("_is_spec_locked", False)

    @spec_locked.setter
    def spec_locked(self, value: bool) -> None:
        self.set_spec_lock_(value)

    is_spec_locked = spec_locked

    def set_spec_lock_(self, mode: bool = True):
        """Locks (``True``) or unlocks (``False``) the input and output specs; returns the env."""
        self.empty_cache()
        for name in ("_input_spec", "_output_spec"):
            spec = self.__dict__.get(name)
            if spec is not None:
                spec.lock_(recurse=True) if mode else spec.unlock_(recurse=True)
        self.__dict__["_is_spec_locked"] = bool(mode)
        return self

    def _set_spec_part(self, parent: str, part: str, value: Composite) -> None:
        """Unlocks, writes ``value`` as ``parent[part]``, relocks; erases the cache."""
        locked = self.spec_locked
        if locked:
            self.set_spec_lock_(False)
        try:
            self.__dict__[parent][part] = value
            if part == "full_done_spec" and self.__dict__.get("_post_init_done", False):
                self._complete_done_specs()
        finally:
            self.empty_cache()
            if locked:
                self.set_spec_lock_(True)

    def _check_and_wrap(self, value: TensorSpec, part: str) -> Composite:
        if not isinstance(value, TensorSpec):
            raise TypeError(
                f"{part} must be a TensorSpec (a leaf spec or a Composite); got {type(value).__name__}."
            )
        batch_size = self.batch_size
        nb = len(batch_size)
        if tuple(value.shape[:nb]) != tuple(batch_size):
            raise ValueError(
                f"The shape of the spec assigned to {part} must start with the env batch_size "
                f"{tuple(batch_size)}; got shape {tuple(value.shape)}."
            )
        device = self.device
        if device is not None and value.device != device:
            value = value.to(device)
        if not isinstance(value, Composite):
            key = _DEFAULT_LEAF_KEY.get(part)
            if key is None:
                raise TypeError(f"{part} must be a Composite; got {type(value).__name__}.")
            leaves = {key: value}
            if part == "full_done_spec":
                leaves["terminated"] = value.clone()
            value = Composite(leaves, shape=batch_size, device=device)
        elif tuple(value.shape) != tuple(batch_size):
            # a Composite whose shape has extra dims is re-rooted on the batch size
            value = Composite(dict(value.items()), shape=batch_size, device=device)
        if part in ("full_reward_spec", "full_done_spec"):
            for key in value.keys(True, True):
                if len(value[key].shape) == 0:
                    raise ValueError(
                        f"The leaves of {part} cannot have an empty shape (key {key!r}); "
                        "use a trailing singleton dim, e.g. shape=(*batch_size, 1)."
                    )
        return value

    # ------------------------------------------------------------------ containers
    @property
    def input_spec(self) -> Composite:
        """``Composite(full_action_spec=..., full_state_spec=...)`` with the env batch size."""
        return self.__dict__["_input_spec"]

    @input_spec.setter
    def input_spec(self, value: Composite) -> None:
        self._set_container("_input_spec", _INPUT_PARTS, value)

    @property
    def output_spec(self) -> Composite:
        """``Composite(full_observation_spec=..., full_reward_spec=..., full_done_spec=...)``."""
        return self.__dict__["_output_spec"]

    @output_spec.setter
    def output_spec(self, value: Composite) -> None:
        self._set_container("_output_spec", _OUTPUT_PARTS, value)

    def _set_container(self, name: str, parts: tuple[str, ...], value: Composite) -> None:
        if not isinstance(value, Composite):
            raise TypeError(f"{name[1:]} must be a Composite; got {type(value).__name__}.")
        for part in value:
            if part not in parts:
                raise KeyError(f"{name[1:]} only holds {parts}; got the entry {part!r}.")
        for part in parts:
            if part in value:
                self._set_spec_part(name, part, self._check_and_wrap(value[part], part))

    # ------------------------------------------------------------------ full specs
    @property
    def full_action_spec(self) -> Composite:
        """All action leaves, as a Composite."""
        return self.__dict__["_input_spec"]["full_action_spec"]

    @full_action_spec.setter
    def full_action_spec(self, value: TensorSpec) -> None:
        part = "full_action_spec"
        self._set_spec_part("_input_spec", part, self._check_and_wrap(value, part))

    @property
    def full_state_spec(self) -> Composite:
        """All non-action inputs (states), as a Composite (often empty)."""
        return self.__dict__["_input_spec"]["full_state_spec"]

    @full_state_spec.setter
    def full_state_spec(self, value: TensorSpec) -> None:
        part = "full_state_spec"
        self._set_spec_part("_input_spec", part, self._check_and_wrap(value, part))

    @property
    def full_observation_spec(self) -> Composite:
        """All observation leaves, as a Composite."""
        return self.__dict__["_output_spec"]["full_observation_spec"]

    @full_observation_spec.setter
    def full_observation_spec(self, value: TensorSpec) -> None:
        part = "full_observation_spec"
        self._set_spec_part("_output_spec", part, self._check_and_wrap(value, part))

    @property
    def full_reward_spec(self) -> Composite:
        """All reward leaves, as a Composite."""
        return self.__dict__["_output_spec"]["full_reward_spec"]

    @full_reward_spec.setter
    def full_reward_spec(self, value: TensorSpec) -> None:
        part = "full_reward_spec"
        self._set_spec_part("_output_spec", part, self._check_and_wrap(value, part))

    @property
    def full_done_spec(self) -> Composite:
        """All done / terminated / truncated leaves, as a Composite."""
        return self.__dict__["_output_spec"]["full_done_spec"]

    @full_done_spec.setter
    def full_done_spec(self, value: TensorSpec) -> None:
        part = "full_done_spec"
        self._set_spec_part("_output_spec", part, self._check_and_wrap(value, part))

    # ------------------------------------------------------------------ leaf-or-composite views
    @property
    def observation_spec(self) -> Composite:
        """The observation Composite (same object as ``full_observation_spec``)."""
        return self.full_observation_spec

    @observation_spec.setter
    def observation_spec(self, value: TensorSpec) -> None:
        self.full_observation_spec = value

    @property
    def state_spec(self) -> Composite:
        """The state Composite (same object as ``full_state_spec``)."""
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, value: Composite) -> None:
        self.full_state_spec = value

    @property
    def action_spec(self) -> TensorSpec:
        """The action leaf spec if there is a single action, else the full Composite."""
        keys = self.action_keys
        full = self.full_action_spec
        return full[keys[0]] if len(keys) == 1 else full

    @action_spec.setter
    def action_spec(self, value: TensorSpec) -> None:
        self.full_action_spec = value

    @property
    def reward_spec(self) -> TensorSpec:
        """The reward leaf spec if there is a single reward, else the full Composite."""
        keys = self.reward_keys
        full = self.full_reward_spec
        return full[keys[0]] if len(keys) == 1 else full

    @reward_spec.setter
    def reward_spec(self, value: TensorSpec) -> None:
        self.full_reward_spec = value

    @property
    def done_spec(self) -> TensorSpec:
        """The done leaf spec if there is a single done leaf, else the full Composite."""
        keys = self.done_keys
        full = self.full_done_spec
        return full[keys[0]] if len(keys) == 1 else full

    @done_spec.setter
    def done_spec(self, value: TensorSpec) -> None:
        self.full_done_spec = value

    def _unbatched(self, spec: TensorSpec) -> TensorSpec:
        nb = len(self.batch_size)
        if not nb:
            return spec
        return spec[(0,) * nb]

    def _batched(self, spec: TensorSpec) -> TensorSpec:
        """Expands a spec without batch dims to the env batch size."""
        if not self.batch_size:
            return spec
        return spec.expand(*self.batch_size, *spec.shape)

    @property
    def specs(self) -> Composite:
        """``Composite(output_spec=..., input_spec=...)``: all the specs in one container."""
        return Composite(
            output_spec=self.output_spec, input_spec=self.input_spec, shape=self.batch_size
        )

    # ------------------------------------------------------------------ keys
    @property
    def action_keys(self) -> list[NestedKey]:
        """Action leaf keys, root first."""
        return self._cached("action_keys", lambda: _leaf_keys(self.full_action_spec))

    @property
    def state_keys(self) -> list[NestedKey]:
        """State leaf keys, root first."""
        return self._cached("state_keys", lambda: _leaf_keys(self.full_state_spec))

    @property
    def observation_keys(self) -> list[NestedKey]:
        """Observation leaf keys, root first."""
        return self._cached("observation_keys", lambda: _leaf_keys(self.full_observation_spec))

    @property
    def reward_keys(self) -> list[NestedKey]:
        """Reward leaf keys, root first."""
        return self._cached("reward_keys", lambda: _leaf_keys(self.full_reward_spec))

    @property
    def done_keys(self) -> list[NestedKey]:
        """Done / terminated / truncated leaf keys, root first."""
        return self._cached("done_keys", lambda: _leaf_keys(self.full_done_spec))

    @staticmethod
    def _single(keys: list[NestedKey], what: str) -> NestedKey:
        if len(keys) != 1:
            raise KeyError(
                f"{what}_key requested but the env has {len(keys)} {what} keys: {keys}. "
                f"Use {what}_keys instead."
            )
        return keys[0]

    @property
    def action_key(self) -> NestedKey:
        """The action key; raises ``KeyError`` if there is not exactly one."""
        return self._single(self.action_keys, "action")

    @property
    def reward_key(self) -> NestedKey:
        """The reward key; raises ``KeyError`` if there is not exactly one."""
        return self._single(self.reward_keys, "reward")

    @property
    def done_key(self) -> NestedKey:
        """The done key; raises ``KeyError`` if there is not exactly one."""
        return self._single(self.done_keys, "done")

    @property
    def done_keys_groups(self) -> list[list[NestedKey]]:
        """Done keys grouped by the level (tensordict node) that holds them, root first."""

        def compute():
            groups: dict[tuple, list] = {}
            for key in self.done_keys:
                groups.setdefault(_prefix(key), []).append(key)
            return list(groups.values())

        return self._cached("done_keys_groups", compute)

    @property
    def reset_keys(self) -> list[NestedKey]:
        """One ``"_reset"`` key per level holding done entries, root first."""
        return self._cached(
            "reset_keys",
            lambda: _sort_by_depth(_replace_last(g[0], "_reset") for g in self.done_keys_groups),
        )

    @property
    def _filtered_reset_keys(self) -> list[NestedKey]:
        """The reset keys that matter (TorchRL's): a reset key nested under the level of
        another one is left out, the outer one resets it too. Transforms that track episodes
        (``StepCounter``, ``InitTracker``, ``RewardSum``) keep one entry per key here."""

        def compute():
            roots: list[tuple] = []
            kept = []
            for key in self.reset_keys:
                level = () if isinstance(key, str) else tuple(key[:-1])
                if any(level[: len(root)] == root for root in roots):
                    continue
                roots.append(level)
                kept.append(key)
            return kept

        return self._cached("filtered_reset_keys", compute)

    @property
    def _has_dynamic_specs(self) -> bool:
        """Whether any leaf spec has a ``-1`` (variable) dim."""

        def compute():
            for parent in (self.output_spec, self.input_spec):
                for key in parent.keys(True, True):
                    if any(d < 0 for d in parent[key].shape):
                        return True
            return False

        return self._cached("has_dynamic_specs", compute)

    # ------------------------------------------------------------------ done flanking
    def _complete_done_specs(self) -> None:
        """Default done spec when empty; "done" and "terminated" flank each other."""
        full = self.__dict__["_output_spec"]["full_done_spec"]
        if full.is_empty():
            shape = (*self.batch_size, 1)
            full["done"] = _done_leaf(shape, self.device)
            full["terminated"] = _done_leaf(shape, self.device)
            return
        _complete_done_spec(full, self.device)

    def _complete_reward_specs(self) -> None:
        full = self.__dict__["_output_spec"]["full_reward_spec"]
        if full.is_empty():
            full["reward"] = Unbounded(shape=(*self.batch_size, 1), device=self.device)

    def add_truncated_keys(self):
        """Adds a ``"truncated"`` entry next to every ``"done"`` entry of the done spec."""
        spec = self.full_done_spec.clone()
        spec.unlock_(recurse=True)
        added = 0
        for key in self.done_keys:
            truncated = _replace_last(key, "truncated")
            if truncated not in spec.keys(True, True):
                spec[truncated] = spec[key].clone()
                added += 1
        if not self.done_keys:
            raise KeyError("add_truncated_keys: the env has no done keys.")
        self.full_done_spec = spec
        return self


def _unbatched_property(name: str, doc: str) -> property:
    def getter(self):
        return self._unbatched(getattr(self, name))

    def setter(self, value):
        setattr(self, name, self._batched(value))

    return property(getter, setter, doc=doc)


for _name in (
    "observation_spec",
    "action_spec",
    "reward_spec",
    "done_spec",
    "state_spec",
    "full_observation_spec",
    "full_action_spec",
    "full_reward_spec",
    "full_done_spec",
    "full_state_spec",
    "input_spec",
    "output_spec",
):
    _prop = _unbatched_property(_name, f"``{_name}`` without the batch dims (settable).")
    setattr(_EnvSpecs, f"{_name}_unbatched", _prop)
    if not _name.startswith("full_") and _name not in ("input_spec", "output_spec"):
        setattr(_EnvSpecs, f"single_{_name}", _prop)
del _name, _prop
