"""Key transforms: RenameTransform, SelectTransform, ExcludeTransform, RemoveEmptySpecs."""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.specs import Composite
from torchenv.transforms._base import Transform

__all__ = ["ExcludeTransform", "RemoveEmptySpecs", "RenameTransform", "SelectTransform"]

_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
_INPUT_PARTS = ("full_action_spec", "full_state_spec")


def _part_holding(spec: Composite, parts: Sequence[str], key: NestedKey) -> Composite | None:
    for part in parts:
        sub = spec.get(part, None) if hasattr(spec, "get") else spec[part]
        if sub is not None and key in sub.keys(True, True):
            return sub
    return None


def _flat_keys(keys) -> list[NestedKey]:
    if len(keys) == 1 and isinstance(keys[0], list):
        keys = keys[0]
    try:
        return [unravel_key(k) for k in keys]
    except Exception as err:
        raise TypeError(f"keys must be strings or tuples of strings, got {keys!r}") from err


class RenameTransform(Transform):
    """Renames entries of the step and reset outputs (and of the step input via the inverse keys).

    Args:
        in_keys: entries as the base env writes them.
        out_keys: their names outside.
        in_keys_inv: input entries as the base env reads them.
        out_keys_inv: their names outside (what the policy writes). Defaults to ``in_keys_inv``.
        create_copy: keep the original entries as well (needed to rename e.g. ``"done"``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = RenameTransform(["a"], ["b"])
        >>> list(t(TensorDict(a=torch.zeros(1))).keys())
        ['b']
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        create_copy: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv or [], out_keys_inv)
        self.create_copy = create_copy
        if set(self.in_keys) & set(self.out_keys):
            raise ValueError(
                f"RenameTransform: in_keys {self.in_keys} and out_keys {self.out_keys} overlap"
            )
        self._key_pairs  # noqa: B018 - validates the lengths now
        self._key_pairs_inv  # noqa: B018

    def _rename(self, tensordict: TensorDictBase, pairs) -> TensorDictBase:
        for src, dst in pairs:
            value = self._require(tensordict, src)
            if value is None:
                continue
            tensordict.set(dst, value)
            if not self.create_copy:
                del tensordict[src]
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._rename(next_tensordict, self._key_pairs)

    forward = _call

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._rename(tensordict, [(o, i) for i, o in self._key_pairs_inv])

    def _rename_specs(self, spec: Composite, parts: Sequence[str], pairs) -> Composite:
        """Renames, for each ``(in_key, out_key)`` pair, the spec in whichever of ``parts`` holds it."""
        for in_key, out_key in pairs:
            part = _part_holding(spec, parts, in_key)
            if part is None:
                continue
            part[out_key] = part[in_key].clone()
            if not self.create_copy:
                del part[in_key]
        return spec

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._rename_specs(output_spec, _OUTPUT_PARTS, self._key_pairs)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._rename_specs(input_spec, _INPUT_PARTS, self._key_pairs_inv)


class ExcludeTransform(Transform):
    """Removes entries from the step and reset outputs (or, with ``inverse=True``, the input).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> list(ExcludeTransform("a")(TensorDict(a=torch.zeros(1), b=torch.zeros(1))).keys())
        ['b']
    """

    def __init__(self, *excluded_keys: NestedKey, inverse: bool = False) -> None:
        super().__init__()
        self.excluded_keys = _flat_keys(excluded_keys)
        self.inverse = inverse

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.inverse:
            return next_tensordict
        return next_tensordict.exclude(*self.excluded_keys)

    forward = _call

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.inverse:
            return tensordict.exclude(*self.excluded_keys)
        return tensordict

    @property
    def _has_inverse(self) -> bool:
        return self.inverse

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        if self.inverse:
            return output_spec
        for key in self.excluded_keys:
            part = _part_holding(output_spec, _OUTPUT_PARTS, key)
            if part is None:
                raise KeyError(f"ExcludeTransform: {key!r} is not an output entry of the env")
            del part[key]
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if not self.inverse:
            return input_spec
        for key in self.excluded_keys:
            part = _part_holding(input_spec, _INPUT_PARTS, key)
            if part is not None:
                del part[key]
        return input_spec

    def __repr__(self) -> str:
        return f"ExcludeTransform(keys={self.excluded_keys}, inverse={self.inverse})"


class SelectTransform(Transform):
    """Keeps only the given entries (plus rewards, dones and states) of the step and reset outputs.

    Args:
        *selected_keys: the entries to keep.

    Keyword Args:
        keep_rewards: keep the reward entries too. Defaults to ``True``.
        keep_dones: keep the done entries too. Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=torch.zeros(1), b=torch.zeros(1), reward=torch.zeros(1))
        >>> sorted(SelectTransform("a")(td).keys())
        ['a', 'reward']
    """

    _cache_keys = ("_kept_cache",)

    def __init__(
        self, *selected_keys: NestedKey, keep_rewards: bool = True, keep_dones: bool = True
    ) -> None:
        super().__init__()
        self.selected_keys = _flat_keys(selected_keys)
        self.keep_rewards = keep_rewards
        self.keep_dones = keep_dones

    def _kept(self) -> list[NestedKey]:
        kept = self.__dict__.get("_kept_cache")
        if kept is None:
            parent = self.parent
            kept = list(self.selected_keys)
            if parent is not None:
                kept += list(parent.full_state_spec.keys(True, True))
            if self.keep_rewards:
                kept += list(parent.reward_keys) if parent is not None else ["reward"]
            if self.keep_dones:
                kept += (
                    list(parent.done_keys)
                    if parent is not None
                    else ["done", "terminated", "truncated"]
                )
            self.__dict__["_kept_cache"] = kept
        return kept

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.select(*self._kept(), strict=False)

    forward = _call

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        # An observation that is also a state stays in the data (the next step may read it) but
        # leaves the observation spec, as in TorchRL: it is then a state only, carried from the
        # input by step_mdp rather than taken from "next".
        selected = set(self.selected_keys)
        parts = ["full_observation_spec"]
        if not self.keep_rewards:
            parts.append("full_reward_spec")
        if not self.keep_dones:
            parts.append("full_done_spec")
        for name in parts:
            part = output_spec[name]
            for key in list(part.keys(True, True)):
                if key not in selected:
                    del part[key]
        return output_spec

    def __repr__(self) -> str:
        return f"SelectTransform(keys={self.selected_keys})"


class RemoveEmptySpecs(Transform):
    """Removes empty composite entries (specs and data) from the env's outputs and inputs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=torch.zeros(1), empty=TensorDict())
        >>> list(RemoveEmptySpecs()(td).keys())
        ['a']
    """

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.filter_empty_()

    forward = _call

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset.filter_empty_()

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict.filter_empty_()

    @staticmethod
    def _prune(spec: Composite) -> Composite:
        for key in list(spec.keys()):
            sub = spec[key]
            if isinstance(sub, Composite):
                RemoveEmptySpecs._prune(sub)
                if not len(list(sub.keys())):
                    del spec[key]
        return spec

    @staticmethod
    def _prune_parts(spec: Composite, parts: Sequence[str]) -> Composite:
        for name in parts:
            if name in spec:
                RemoveEmptySpecs._prune(spec[name])
        return spec

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._prune_parts(output_spec, _OUTPUT_PARTS)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._prune_parts(input_spec, _INPUT_PARTS)

    def __repr__(self) -> str:
        return "RemoveEmptySpecs()"
