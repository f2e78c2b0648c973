"""TorchRL's ``EnvBase`` conveniences: ``step_mdp``, ``auto_specs_``, ``all_actions``,
``cardinality``, deterministic resets (``set_state``), collectors and parallel construction.

None of them is on a hot path: they are the small public methods that code written for
``torchrl.envs`` calls on an env, with TorchRL's meaning.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.utils import NestedKey

__all__ = ["EnvConveniences"]

_DEFAULT_DONE_KEYS = ("done", "terminated", "truncated")


def _leaf_spec(value: Any, other: Any) -> Any:
    """The spec of one entry seen in two samples: dims that differ become ``-1``."""
    from torchenv.specs import NonTensor, Unbounded

    if not isinstance(value, torch.Tensor) or is_tensor_collection(value):
        return NonTensor(shape=getattr(value, "shape", ()))
    shape = list(value.shape)
    if isinstance(other, torch.Tensor) and other.ndim == value.ndim:
        shape = [a if a == b else -1 for a, b in zip(shape, other.shape)]
    return Unbounded(shape, device=value.device, dtype=value.dtype)


def _specs_of(first: TensorDictBase, second: TensorDictBase, batch_size: torch.Size) -> Any:
    """A Composite holding the spec of every entry of ``first`` (compared with ``second``)."""
    from torchenv.specs import Composite

    spec = Composite(shape=batch_size)
    for key in first.keys(True, True, is_leaf=_is_leaf):
        spec[key] = _leaf_spec(first.get(key), second.get(key, None))
    return spec


def _is_leaf(cls: type) -> bool:
    from tensordict import NonTensorData, NonTensorStack

    return not is_tensor_collection(cls) or issubclass(cls, (NonTensorData, NonTensorStack))


def _as_keys(keys: NestedKey | Sequence[NestedKey]) -> list:
    return [keys] if isinstance(keys, (str, tuple)) else list(keys)


class EnvConveniences:
    """Mixin of :class:`~torchenv.envs.EnvBase`: the conveniences listed in the module docstring."""

    #: whether ``_reset`` honours a state passed in the reset tensordict (``set_state=True``)
    _supports_set_state: bool = False
    #: complete missing done specs at construction (batched envs leave it to their workers)
    auto_complete_done_specs: bool = True

    # ------------------------------------------------------------------ stepping helpers
    def step_mdp(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """The input of the next step, from the output of :meth:`step` (actions kept).

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> env = PendulumEnv()
            >>> data = env.step_mdp(env.rand_step(env.reset()))
            >>> "next" in data.keys(), "action" in data.keys()
            (False, True)
        """
        return self._step_mdp(next_tensordict)

    def all_actions(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Every action of a discrete action spec, stacked along a new leading dim.

        ``tensordict``, when given, is passed to :meth:`reset` first (as a state where the env
        supports deterministic resets). Masked actions are left out.

        Examples:
            >>> from torchenv.envs import CartPoleEnv
            >>> CartPoleEnv(categorical_action_encoding=True).all_actions()["action"]
            tensor([0, 1])
        """
        if tensordict is not None:
            self.reset(tensordict, set_state=True if self._supports_set_state else None)
        return self.full_action_spec.enumerate(use_mask=True)

    def cardinality(self, tensordict: TensorDictBase | None = None) -> int:
        """The number of distinct actions (``full_action_spec.cardinality()``); envs whose
        action set depends on the state override it."""
        return self.full_action_spec.cardinality()

    # ------------------------------------------------------------------ deterministic resets
    def set_state(self) -> None:
        """Not implemented by default (TorchRL's placeholder): envs restore a state through
        ``reset(tensordict, set_state=True)``."""
        raise NotImplementedError

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        if tensordict is None:
            return False
        state_keys = list(self.state_spec.keys(True, True))
        if not state_keys:
            return False
        present = set(tensordict.keys(include_nested=True, leaves_only=False))
        return any(key in present for key in state_keys)

    def _resolve_set_state(
        self, set_state: bool | None, tensordict: TensorDictBase | None, select_reset_only: bool
    ) -> bool | None:
        """The ``set_state`` to pass to ``_reset`` (``None``: pass nothing), TorchRL's rules:
        ``True`` needs an env that supports it and a full input; an unsupported env never sees
        the argument; unspecified, a state present in the input is honoured with a
        ``FutureWarning`` (TorchRL's transition behaviour)."""
        if set_state is True:
            if not self._supports_set_state:
                raise NotImplementedError(
                    f"{type(self).__name__} does not support deterministic resets via "
                    "set_state=True: its _reset cannot honour a state passed in the reset "
                    "tensordict (set _supports_set_state = True on envs whose _reset does)."
                )
            if select_reset_only:
                raise ValueError(
                    "set_state=True is incompatible with select_reset_only=True: the latter "
                    "strips the state from the reset tensordict."
                )
        if not self._supports_set_state:
            return None
        if select_reset_only:
            return False
        if set_state is None:
            if self._input_td_has_state(tensordict):
                warnings.warn(
                    "reset() got a tensordict carrying state without set_state: the state is "
                    "honoured (TorchRL 0.14 behaviour); pass set_state=True to keep it, "
                    "set_state=False to ignore it.",
                    FutureWarning,
                    stacklevel=3,
                )
                return True
            return False
        return bool(set_state)

    # ------------------------------------------------------------------ specs from data
    def auto_specs_(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        *,
        tensordict: TensorDictBase | None = None,
        action_key: NestedKey | list[NestedKey] = "action",
        done_key: NestedKey | list[NestedKey] | None = None,
        observation_key: NestedKey | list[NestedKey] = "observation",
        reward_key: NestedKey | list[NestedKey] = "reward",
    ) -> Any:
        """Sets the specs from two steps driven by ``policy`` (TorchRL's ``auto_specs_``).

        Every spec found is ``Unbounded`` (``NonTensor`` for non-tensor data) with the dtype seen;
        a dim whose size differs between the two steps becomes ``-1``. Inputs that are not
        actions become the state spec; outputs are split into done (``done_key``, default
        done/terminated/truncated), reward and observation entries.

        Raises:
            RuntimeError: an output entry is none of these.

        Examples:
            >>> import torch
            >>> from tensordict import TensorDict
            >>> from torchenv.envs import EnvBase
            >>> class Blind(EnvBase):
            ...     def _reset(self, td):
            ...         return TensorDict(observation=torch.zeros(3), done=torch.zeros(1, dtype=torch.bool))
            ...     def _step(self, td):
            ...         return TensorDict(observation=torch.ones(3), reward=torch.ones(1),
            ...                           done=torch.zeros(1, dtype=torch.bool))
            ...     def _set_seed(self, seed):
            ...         pass
            >>> env = Blind().auto_specs_(lambda td: td.set("action", torch.zeros(2)))
            >>> env.action_spec.shape, env.observation_spec["observation"].shape
            (torch.Size([2]), torch.Size([3]))
        """
        if self.batch_locked or tensordict is None:
            batch_size = self.batch_size
        else:
            batch_size = tensordict.batch_size
        if tensordict is None:
            tensordict = self.reset()
        tensordict.update(policy(tensordict))
        first = self.step(tensordict.copy())
        second_in = first.get("next").copy()
        second = self.step(policy(second_in).copy())
        inputs = _specs_of(tensordict.exclude("next"), second_in, batch_size)
        outputs = _specs_of(first.pop("next"), second.pop("next"), batch_size)
        if not self.batch_locked and batch_size != self.batch_size:
            while inputs.shape:
                inputs = inputs[0]
            while outputs.shape:
                outputs = outputs[0]
        actions = inputs.separates(*_as_keys(action_key))
        dones = outputs.separates(*_as_keys(done_key or list(_DEFAULT_DONE_KEYS)))
        rewards = outputs.separates(*_as_keys(reward_key))
        observations = outputs.separates(*_as_keys(observation_key))
        left = list(outputs.keys(True, True))
        if left:
            raise RuntimeError(
                f"auto_specs_: keys {left} are unaccounted for. Pass every output leaf name "
                "as done_key, reward_key or observation_key."
            )
        for name, spec in (
            ("full_action_spec", actions),
            ("full_done_spec", dones),
            ("full_observation_spec", observations),
            ("full_reward_spec", rewards),
        ):
            if spec is not None:
                setattr(self, name, spec)
        self.full_state_spec = inputs
        return self

    # ------------------------------------------------------------------ collectors, parallel
    def register_collector(self, collector: Any) -> None:
        """Remembers (weakly) the collector that drives this env."""
        self.__dict__["_collector_ref"] = weakref.ref(collector)

    @property
    def collector(self) -> Any:
        """The collector registered with :meth:`register_collector`, if it is still alive."""
        ref = self.__dict__.get("_collector_ref")
        return ref() if ref is not None else None

    def configure_parallel(self, **kwargs: Any) -> Any:
        """Sets a batched env's execution options before it starts; only batched envs have
        any (:class:`NotImplementedError` here, as in TorchRL)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not support configure_parallel: it is only available "
            "on batched envs (SerialEnv, ParallelEnv)."
        )

    def eager(self) -> Any:
        """Eager execution of :meth:`step_and_maybe_reset` (torchenv never compiles it)."""
        return self

    @classmethod
    def make_parallel(cls, create_env_fn: Callable, *, num_envs: int = 1, **kwargs: Any) -> Any:
        """``ParallelEnv(num_envs, create_env_fn, **kwargs)`` (TorchRL's factory).

        ``serial_for_single=True`` gives a :class:`~torchenv.SerialEnv` for one env.
        """
        from torchenv.batched import ParallelEnv, SerialEnv

        if kwargs.pop("serial_for_single", False) and num_envs == 1:
            return SerialEnv(1, create_env_fn, **kwargs)
        return ParallelEnv(num_envs, create_env_fn, **kwargs)
