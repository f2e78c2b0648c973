"""The private members of TorchRL's ``EnvBase`` that TorchRL's own classes call on an env.

TorchRL's ``TransformedEnv``, batched envs and collectors, handed a torchenv env (which passes
their ``isinstance`` checks once :mod:`torchenv.interop` has registered it), reach past the public
API for a few private members of the env they wrap. This mixin gives EnvBase those members with
TorchRL's meaning, so that TorchRL wrappers work around torchenv envs. None of them is on
torchenv's own hot path.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.envs._utils import _leaf_keys

__all__ = ["TorchRLInternals", "complete_done"]


def complete_done(done_spec: Any, data: TensorDictBase) -> TensorDictBase:
    """Fills, in place, the done entries of ``data`` that ``done_spec`` lists but ``data`` lacks.

    TorchRL's rule: a missing ``"terminated"`` copies ``"done"`` (and the reverse); any other
    missing done entry is ``False``; ``"done"`` and ``"truncated"`` without ``"terminated"`` is
    ambiguous and raises. Entries of the wrong shape are reshaped to the spec's.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from torchenv.specs import Categorical, Composite
    >>> spec = Composite(done=Categorical(2, (1,), dtype=torch.bool),
    ...                  terminated=Categorical(2, (1,), dtype=torch.bool),
    ...                  truncated=Categorical(2, (1,), dtype=torch.bool))
    >>> data = complete_done(spec, TensorDict(done=torch.ones(1, dtype=torch.bool)))
    >>> data["terminated"].item(), data["truncated"].item()
    (True, False)
    """
    from torchenv.specs import Composite

    leading = data.shape[: data.ndim - done_spec.ndim] if done_spec.ndim else data.shape
    present = {}
    for key, item in done_spec.items():
        value = data.get(key, None)
        if isinstance(item, Composite):
            if value is not None:
                complete_done(item, value)
            continue
        if value is not None:
            shape = (*leading, *item.shape)
            if value.shape != shape:
                value = value.reshape(shape)
                data.set(key, value)
            present[key] = value
    for key, item in done_spec.items():
        if isinstance(item, Composite) or key in present:
            continue
        if key == "terminated" and "done" in present:
            if "truncated" in present:
                raise RuntimeError(
                    "Cannot infer the value of terminated when only done and truncated are present."
                )
            value = present["done"]
        elif key == "done" and "terminated" in present:
            value = present["terminated"]
        else:
            value = torch.zeros((*leading, *item.shape), dtype=item.dtype, device=data.device)
        data.set(key, value)
    return data


class TorchRLInternals:
    """Mixin: the private members of TorchRL's EnvBase that TorchRL wrappers read."""

    # TorchRL: whether ``set_state`` can restore a simulator state (torchenv has no set_state).
    _supports_set_state: bool = False
    # TorchRL: an optional ``(tensordict, tensordict_) -> (tensordict, tensordict_)`` hook.
    _post_step_mdp_hooks = None
    # TorchRL: write step outputs into the input TensorDict (torchenv never does).
    _inplace_update: bool = False

    @classmethod
    def _complete_done(cls, done_spec: Any, data: TensorDictBase) -> TensorDictBase:
        return complete_done(done_spec, data)

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        if tensordict is None:
            return False
        state_keys = list(self.full_state_spec.keys(True, True))
        if not state_keys:
            return False
        present = set(tensordict.keys(True, False))
        return any(key in present for key in state_keys)

    @property
    def _observation_keys_step_mdp(self) -> list[NestedKey]:
        return _leaf_keys(self.full_observation_spec)

    @property
    def _state_keys_step_mdp(self) -> list[NestedKey]:
        return _leaf_keys(self.full_state_spec)

    @property
    def _action_keys_step_mdp(self) -> list[NestedKey]:
        return _leaf_keys(self.full_action_spec)

    @property
    def _done_keys_step_mdp(self) -> list[NestedKey]:
        return _leaf_keys(self.full_done_spec)

    @property
    def _reward_keys_step_mdp(self) -> list[NestedKey]:
        return _leaf_keys(self.full_reward_spec)
