"""The :class:`Transform` base class.

A transform reads and writes entries of a TensorDict. Inside a :class:`TransformedEnv` it runs
around the base env's ``step`` and ``reset``; outside of one (e.g. in a replay buffer) it runs on
any TensorDict through :meth:`Transform.forward` and :meth:`Transform.inv`.

Key convention (the same as TorchRL's):

* ``in_keys`` name entries as the *inner* (base) env produces them, ``out_keys`` as the *outer*
  world (the policy) sees them. The forward transform maps ``in_keys`` to ``out_keys``.
* ``in_keys_inv`` name entries as the inner env expects them, ``out_keys_inv`` as the policy
  writes them. The inverse transform maps ``out_keys_inv`` to ``in_keys_inv``.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.nn import dispatch
from tensordict.utils import NestedKey
from torch import nn

from torchenv.transforms._utils import replace_last

if TYPE_CHECKING:  # pragma: no cover
    from torchenv.specs import Composite, TensorSpec
    from torchenv.transforms._transformed_env import TransformedEnv

__all__ = ["Transform", "ObservationTransform"]

#: the parts of ``output_spec`` / ``input_spec`` most transforms map
_OBS_AND_REWARD = ("full_observation_spec", "full_reward_spec")
_ACTION_AND_STATE = ("full_action_spec", "full_state_spec")
_OUTPUT_PARTS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
_INPUT_PARTS = ("full_action_spec", "full_state_spec")


def _marking_spec_build(method: Callable) -> Callable:
    """Wraps a transform's ``transform_output_spec`` / ``transform_input_spec`` so that, while
    it runs, the per-part methods it may call (through ``super()``) are the identity."""

    def wrapper(self: Transform, spec: Any) -> Any:
        d = self.__dict__
        previous = d.get("_building_specs", False)
        d["_building_specs"] = True
        try:
            return method(self, spec)
        finally:
            d["_building_specs"] = previous

    wrapper._marks_spec_build = True  # type: ignore[attr-defined]
    wrapper.__name__ = method.__name__
    wrapper.__qualname__ = method.__qualname__
    wrapper.__doc__ = method.__doc__
    return wrapper


def _normalize_keys(keys: NestedKey | Sequence[NestedKey] | None) -> list[NestedKey] | None:
    if keys is None:
        return None
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    return [unravel_key(key) for key in keys]


def _missing_key_error(transform: Transform, key: NestedKey, data: TensorDictBase) -> KeyError:
    return KeyError(
        f"{type(transform).__name__}: expected entry {key!r} in the tensordict, "
        f"but it holds only {sorted(map(str, data.keys(True, True)))}"
    )


def _keys_property(attr: str, cache: str, default_from: str | None, doc: str) -> property:
    """A key-list property stored under ``attr``; setting it drops the cached pairs ``cache``.

    Unset, it reads as ``[]`` or, with ``default_from``, as a copy of that other key list
    (``out_keys`` default to ``in_keys``).
    """

    def fget(self: Transform) -> list[NestedKey]:
        keys = self.__dict__.get(attr)
        if default_from is None:
            return keys or []
        return list(getattr(self, default_from)) if keys is None else keys

    def fset(self: Transform, value: Sequence[NestedKey] | NestedKey | None) -> None:
        self.__dict__[attr] = _normalize_keys(value)
        self.__dict__.pop(cache, None)

    return property(fget, fset, doc=doc)


def _pairs_property(cache: str, first: str, second: str, doc: str) -> property:
    """A property zipping the key lists ``first`` and ``second``, cached under ``cache``.

    Raises ``ValueError`` (naming both lists) when their lengths differ.
    """

    def fget(self: Transform) -> tuple[tuple[NestedKey, NestedKey], ...]:
        pairs = self.__dict__.get(cache)
        if pairs is None:
            keys_a, keys_b = getattr(self, first), getattr(self, second)
            if len(keys_a) != len(keys_b):
                raise ValueError(
                    f"{type(self).__name__}: {first} and {second} must have the same length, "
                    f"got {first}={keys_a} and {second}={keys_b}"
                )
            pairs = self.__dict__[cache] = tuple(zip(keys_a, keys_b))
        return pairs

    return property(fget, doc=doc)


class Transform(nn.Module):
    """Base class of env transforms: modifies or creates entries of a TensorDict.

    Subclasses usually implement :meth:`_apply_transform` (one tensor in, one tensor out) and,
    for actions or states, :meth:`_inv_apply_transform`. Transforms that need the data of time
    ``t`` and ``t + 1`` override :meth:`_step`; stateful ones override :meth:`_reset`; those that
    change entries' shapes, dtypes or names override the ``transform_*_spec`` methods.

    Args:
        in_keys: entries read by the forward transform (inner names).
        out_keys: entries written by the forward transform (outer names). Defaults to ``in_keys``.
        in_keys_inv: entries written by the inverse transform (inner names).
        out_keys_inv: entries read by the inverse transform (outer names). Defaults to
            ``in_keys_inv``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class AddOne(Transform):
        ...     def _apply_transform(self, obs):
        ...         return obs + 1
        >>> AddOne(in_keys=["observation"])(TensorDict(observation=torch.zeros(2)))["observation"]
        tensor([1., 1.])
    """

    invertible: bool = False
    #: ``__dict__`` entries holding values derived from the parent env; dropped by
    #: :meth:`empty_cache`.
    _cache_keys: tuple[str, ...] = ()
    #: when True, the inverse transform also runs on the input of ``reset``.
    enable_inv_on_reset: bool = False

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        in_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
    ) -> None:
        super().__init__()
        # stored in __dict__ so that nn.Module does not register them as submodules
        self.__dict__["_container"] = None
        self.__dict__["_parent"] = None
        self.__dict__["_missing_tolerance"] = False
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.in_keys_inv = in_keys_inv
        self.out_keys_inv = out_keys_inv

    # ------------------------------------------------------------------ keys
    in_keys = _keys_property("_in_keys", "_pairs", None, "Entries read by the forward transform.")
    out_keys = _keys_property(
        "_out_keys", "_pairs", "in_keys", "Entries written by the forward transform."
    )
    in_keys_inv = _keys_property(
        "_in_keys_inv", "_pairs_inv", None, "Entries written by the inverse transform."
    )
    out_keys_inv = _keys_property(
        "_out_keys_inv", "_pairs_inv", "in_keys_inv", "Entries read by the inverse transform."
    )
    _key_pairs = _pairs_property(
        "_pairs", "in_keys", "out_keys", "Cached ``(in_key, out_key)`` pairs."
    )
    _key_pairs_inv = _pairs_property(
        "_pairs_inv", "in_keys_inv", "out_keys_inv", "``(in_key_inv, out_key_inv)`` pairs, cached."
    )

    # ------------------------------------------------------- missing tolerance
    @property
    def missing_tolerance(self) -> bool:
        """Whether a missing ``in_key`` is skipped (True) or raises a KeyError (False)."""
        return self.__dict__["_missing_tolerance"]

    def set_missing_tolerance(self, mode: bool = False) -> None:
        self.__dict__["_missing_tolerance"] = mode

    # ------------------------------------------------------------ tensor level
    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        """Maps one entry read from ``in_keys`` to the value written under the paired out key."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement _apply_transform; it cannot run on the "
            "in_keys it was given"
        )

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        """Maps one entry read from ``out_keys_inv`` to the value for the paired inner key."""
        if self.invertible:
            raise NotImplementedError(
                f"{type(self).__name__} is invertible but does not implement _inv_apply_transform"
            )
        return state

    # -------------------------------------------------------- tensordict level
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the forward transform to the output of ``step`` (and of ``reset``)."""
        for in_key, out_key in self._key_pairs:
            value = next_tensordict.get(in_key, None)
            if value is not None:
                next_tensordict.set(out_key, self._apply_transform(value))
            elif not self.__dict__["_missing_tolerance"]:
                raise _missing_key_error(self, in_key, next_tensordict)
        return next_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the inverse transform to the input of ``step``: outer keys to inner keys."""
        for in_key, out_key in self._key_pairs_inv:
            value = tensordict.get(out_key, None)
            if value is not None:
                tensordict.set(in_key, self._inv_apply_transform(value))
            elif not self.__dict__["_missing_tolerance"]:
                raise _missing_key_error(self, out_key, tensordict)
        return tensordict

    @dispatch(source="in_keys", dest="out_keys")
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the transform to a TensorDict outside of an env (e.g. in a replay buffer).

        Calls :meth:`_apply_transform` on every present ``in_key`` (the base
        :meth:`Transform._call` loop); neither :meth:`_step` nor a subclass's :meth:`_call` is
        called. Tensors can also be passed by key name: ``transform(observation=x)`` returns
        the transformed tensor(s).
        """
        return Transform._call(self, tensordict)

    @dispatch(source="out_keys_inv", dest="in_keys_inv")
    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the inverse transform to a shallow copy of ``tensordict``.

        Tensors can also be passed by key name: ``transform.inv(action=a)``.
        """
        return self._inv_call(tensordict.copy())

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        """Runs after the base env's step with the data at ``t`` and ``t + 1``; returns ``t + 1``."""
        return self._call(next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """Runs after the base env's reset; by default applies :meth:`_call` to present keys."""
        return self._call_tolerant(tensordict_reset)

    def _tolerant(
        self, fn: Callable[[TensorDictBase], TensorDictBase], tensordict: TensorDictBase
    ) -> TensorDictBase:
        """Runs ``fn(tensordict)`` with missing entries skipped, then restores the tolerance."""
        d = self.__dict__
        mode = d["_missing_tolerance"]
        d["_missing_tolerance"] = True
        try:
            return fn(tensordict)
        finally:
            d["_missing_tolerance"] = mode

    def _call_tolerant(self, tensordict: TensorDictBase) -> TensorDictBase:
        """:meth:`_call` on the entries present (the default of :meth:`_reset`)."""
        return self._tolerant(self._call, tensordict)

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """Runs on the input of ``reset`` before the base env resets (inverse, if enabled)."""
        if self.enable_inv_on_reset and tensordict is not None:
            return self._tolerant(self._inv_call, tensordict)
        return tensordict

    @property
    def _has_inverse(self) -> bool:
        """Whether this transform touches the input of ``step`` (lets the env skip the copy)."""
        return bool(self.in_keys_inv) or type(self)._inv_call is not Transform._inv_call

    @property
    def _is_step_noop(self) -> bool:
        """Whether :meth:`_step` does nothing (lets :class:`Compose` leave it out of the chain)."""
        cls = type(self)
        return cls._step is Transform._step and cls._call is Transform._call and not self._key_pairs

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Runs in ``step_and_maybe_reset`` (and ``rollout``) after ``step_mdp``; identity here.

        ``tensordict`` is the step output (with ``"next"``, what a rollout stacks) and
        ``tensordict_`` the input of the next step. A transform overriding this may edit both
        (e.g. drop an entry from ``"next"`` once ``step_mdp`` has moved it to the root); envs
        only call the hook when some transform of the chain overrides it.
        """
        return tensordict, tensordict_

    @property
    def _has_post_step_mdp_hooks(self) -> bool:
        """Whether :meth:`_post_step_mdp_hooks` is overridden (the env then calls it)."""
        return type(self)._post_step_mdp_hooks is not Transform._post_step_mdp_hooks

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        """Maps the env's ``fake_tensordict()`` where the data differ from the specs (identity)."""
        return fake_tensordict

    def _check_batched_worker_compat(self) -> None:
        """Raises if the transform cannot run inside a ``SerialEnv``/``ParallelEnv`` worker."""

    def init(self, tensordict: TensorDictBase) -> None:
        """Runs initialisation steps of the transform (no-op by default)."""

    def close(self) -> None:
        """Releases resources held by the transform (no-op by default)."""

    def dump(self, **kwargs: Any) -> None:
        """Writes what the transform recorded (no-op except for recorders, see torchenv.record)."""

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Maps the env's ``output_spec`` (observation, reward and done specs) inner to outer."""
        output_spec["full_observation_spec"] = self.transform_observation_spec(
            output_spec["full_observation_spec"]
        )
        if "full_reward_spec" in output_spec:
            output_spec["full_reward_spec"] = self.transform_reward_spec(
                output_spec["full_reward_spec"]
            )
        if "full_done_spec" in output_spec:
            output_spec["full_done_spec"] = self.transform_done_spec(output_spec["full_done_spec"])
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Maps the env's ``input_spec`` (action and state specs) inner to outer."""
        input_spec["full_state_spec"] = self.transform_state_spec(input_spec["full_state_spec"])
        input_spec["full_action_spec"] = self.transform_action_spec(input_spec["full_action_spec"])
        return input_spec

    # The per-part methods below are what a transform used standalone is asked, TorchRL's way
    # (``t.transform_observation_spec(spec)``, with a Composite or a bare leaf spec). Transforms
    # that only override ``transform_output_spec`` / ``transform_input_spec`` answer them
    # through that method (see :meth:`_through_container_spec`); inside those methods (an env
    # building its specs) they are the identity, as before.
    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        return self._through_container_spec(observation_spec, "full_observation_spec")

    def transform_reward_spec(self, reward_spec: TensorSpec) -> TensorSpec:
        return self._through_container_spec(reward_spec, "full_reward_spec")

    def transform_done_spec(self, done_spec: TensorSpec) -> TensorSpec:
        return self._through_container_spec(done_spec, "full_done_spec")

    def transform_action_spec(self, action_spec: TensorSpec) -> TensorSpec:
        return self._through_container_spec(action_spec, "full_action_spec")

    def transform_state_spec(self, state_spec: TensorSpec) -> TensorSpec:
        return self._through_container_spec(state_spec, "full_state_spec")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("transform_output_spec", "transform_input_spec"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_marks_spec_build", False):
                setattr(cls, name, _marking_spec_build(method))

    def _through_container_spec(self, spec: TensorSpec, part: str) -> TensorSpec:
        """``spec`` (one part of an output or input spec) mapped by this transform's own
        ``transform_output_spec`` / ``transform_input_spec``: it is put in a container holding
        that part alone, and read back. A leaf spec stands for the first in-key's entry.
        Identity when the transform overrides neither, or while one of them runs."""
        output = part in _OUTPUT_PARTS
        method = "transform_output_spec" if output else "transform_input_spec"
        if getattr(type(self), method) is getattr(Transform, method) or self.__dict__.get(
            "_building_specs"
        ):
            return spec
        from torchenv.specs import Composite

        leaf_keys = None
        if not isinstance(spec, Composite):
            pairs = self._key_pairs if output else self._key_pairs_inv
            if not pairs:
                return spec
            leaf_keys = pairs[0]
            inner = Composite(shape=())
            inner[leaf_keys[0]] = spec
        else:
            inner = spec
        parts = _OUTPUT_PARTS if output else _INPUT_PARTS
        container = Composite(
            {name: inner if name == part else Composite(shape=inner.shape) for name in parts},
            shape=inner.shape,
        )
        result = getattr(self, method)(container)[part]
        if leaf_keys is None:
            return result
        in_key, out_key = leaf_keys
        keys = set(result.keys(True, True))
        return result[out_key if out_key in keys else in_key]

    def transform_env_device(self, device: torch.device | None) -> torch.device | None:
        """Maps the base env's device to the transformed env's device."""
        return device

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """Maps the base env's batch size to the transformed env's batch size."""
        return batch_size

    # ---------------------------------------------- spec helpers for subclasses
    def _map_specs(
        self, spec: Composite, fn: Callable[[TensorSpec], TensorSpec], pairs=None
    ) -> Composite:
        """Writes ``fn(spec[in_key])`` at ``out_key`` for every forward key pair present.

        A leaf spec (a transform used standalone, as TorchRL allows: ``t.transform_observation_spec(
        Unbounded(3))``) is taken as the spec of the entry and mapped directly.
        """
        from torchenv.specs import Composite

        if not isinstance(spec, Composite):
            return fn(spec.clone())
        keys = set(spec.keys(True, True))
        for in_key, out_key in self._key_pairs if pairs is None else pairs:
            if in_key in keys:
                spec[out_key] = fn(spec[in_key].clone())
        return spec

    def _map_output_specs(
        self,
        output_spec: Composite,
        fn: Callable[[TensorSpec], TensorSpec],
        parts: Sequence[str] = _OBS_AND_REWARD,
    ) -> Composite:
        """:meth:`_map_specs` over each of the ``parts`` of an ``output_spec``."""
        for name in parts:
            self._map_specs(output_spec[name], fn)
        return output_spec

    def _map_input_specs(
        self,
        input_spec: Composite,
        fn: Callable[[TensorSpec], TensorSpec] | None = None,
        parts: Sequence[str] = _ACTION_AND_STATE,
    ) -> Composite:
        """:meth:`_map_inv_specs` over each of the ``parts`` of an ``input_spec``."""
        for name in parts:
            self._map_inv_specs(input_spec[name], fn)
        return input_spec

    def _map_inv_specs(
        self, spec: Composite, fn: Callable[[TensorSpec], TensorSpec] | None = None
    ) -> Composite:
        """Exposes the outer (``out_keys_inv``) specs of an action or state spec.

        For every pair whose inner key is in ``spec``, the spec seen by the policy,
        ``fn(inner_spec)``, is written under the outer key and the inner key is removed when the
        names differ (the policy then writes the outer entry, the inverse transform the inner).
        """
        keys = set(spec.keys(True, True))
        for in_key, out_key in self._key_pairs_inv:
            if in_key in keys:
                inner = spec[in_key].clone()
                if in_key != out_key:
                    del spec[in_key]
                spec[out_key] = inner if fn is None else fn(inner)
        return spec

    # ------------------------------------------------- container and parent
    def set_container(self, container: Transform | Any) -> None:
        """Registers the object (a :class:`Compose` or an env) that holds this transform.

        Raises:
            AttributeError: if the transform already belongs to another env: a transform has one
                parent at most; use :meth:`clone` to reuse it elsewhere.
        """
        current = self._container_ref()
        if current is not None and current is not container and self.container is not None:
            raise AttributeError(
                f"{type(self).__name__} already has a parent env ({type(self.container).__name__}); "
                "a transform can belong to one env only. Call `transform.clone()` to get a copy "
                "with no parent that shares its buffers."
            )
        self.__dict__["_container"] = weakref.ref(container) if container is not None else None
        self.__dict__["_parent"] = None

    def _container_ref(self) -> Any:
        ref = self.__dict__.get("_container")
        return ref() if ref is not None else None

    def reset_parent(self) -> None:
        """Forgets the container and the cached parent."""
        self.__dict__["_container"] = None
        self.__dict__["_parent"] = None

    @property
    def container(self) -> Any:
        """The env holding this transform (through any :class:`Compose`), or ``None``."""
        container = self._container_ref()
        while isinstance(container, Transform):
            container = container._container_ref()
        return container

    @property
    def parent(self) -> TransformedEnv | None:
        """A :class:`TransformedEnv` of the base env and all transforms before this one.

        Built once and cached; the transforms it holds are clones (they share buffers).
        ``None`` when the transform is not in an env.
        """
        parent = self.__dict__.get("_parent")
        if parent is not None:
            return parent
        env = self.container
        if env is None:
            return None
        from torchenv.transforms._transformed_env import TransformedEnv

        before: list[Transform] = []
        child: Transform = self
        holder = self._container_ref()
        while isinstance(holder, Transform):  # a Compose
            ahead = []
            for t in holder.transforms:
                if t is child:
                    break
                ahead.append(t.clone())
            before[:0] = ahead
            child, holder = holder, holder._container_ref()
        parent = TransformedEnv(env.base_env, before, auto_unwrap=False)
        self.__dict__["_parent"] = parent
        return parent

    def empty_cache(self) -> None:
        """Drops the cached parent and ``_cache_keys`` (called when the chain changes)."""
        d = self.__dict__
        for name in self._cache_keys:
            d.pop(name, None)
        d["_parent"] = None

    def _env_reset_keys(self) -> list[NestedKey]:
        """The parent env's effective reset keys (``["_reset"]`` outside of an env): a reset
        key nested under another one's level is left out, as TorchRL's transforms do."""
        parent = self.parent
        if parent is None:
            return ["_reset"]
        filtered = getattr(parent, "_filtered_reset_keys", None)
        return list(parent.reset_keys if filtered is None else filtered)

    def _reset_levels(self, *names: str) -> tuple[tuple[NestedKey, ...], ...]:
        """Per reset key of the parent env: ``(reset_key, *names at that key's level)``.

        E.g. ``("agents", "_reset")`` with ``"done"`` gives ``(("agents", "_reset"),
        ("agents", "done"))``.
        """
        return tuple((r, *(replace_last(r, n) for n in names)) for r in self._env_reset_keys())

    def _only_reset_key(self, given: NestedKey | None) -> NestedKey:
        """``given``, else the parent env's one reset key (``RuntimeError`` if it has several)."""
        if given is not None:
            return given
        keys = self._env_reset_keys()
        if len(keys) != 1:
            raise RuntimeError(
                f"{type(self).__name__}: the env has several reset keys {keys}; pass reset_key="
            )
        return keys[0]

    def _require(self, tensordict: TensorDictBase, key: NestedKey) -> Any:
        """``tensordict[key]``; ``None`` if it is missing and tolerated, else ``KeyError``."""
        value = tensordict.get(key, None)
        if value is None and not self.__dict__["_missing_tolerance"]:
            raise KeyError(f"{type(self).__name__}: entry {key!r} not found")
        return value

    def clone(self) -> Transform:
        """Returns a copy with no parent that shares parameters and buffers with this one."""
        new = copy.copy(self)
        new.__dict__["_parameters"] = dict(self._parameters)
        new.__dict__["_buffers"] = dict(self._buffers)
        new.__dict__["_modules"] = dict(self._modules)
        new.__dict__["_non_persistent_buffers_set"] = set(self._non_persistent_buffers_set)
        new.__dict__["_container"] = None
        new.__dict__["_parent"] = None
        return new

    def to(self, *args: Any, **kwargs: Any) -> Transform:
        self.empty_cache()
        return super().to(*args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_container"] = None
        state["_parent"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(in_keys={self.in_keys}, out_keys={self.out_keys})"


class ObservationTransform(Transform):
    """A transform of observations; ``in_keys`` default to ``["observation", "pixels"]``."""

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | NestedKey | None = None,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        in_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | NestedKey | None = None,
    ) -> None:
        if in_keys is None:
            in_keys = ["observation", "pixels"]
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)

    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        return self._map_specs(observation_spec, self._transform_leaf_spec)

    def _transform_leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        """Maps the spec of one observation entry; identity by default."""
        return spec
