"""``Compose``: a chain of transforms, itself a transform."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from torchenv.transforms._base import Transform

__all__ = ["Compose"]


class _CallableTransform(Transform):
    """Wraps a ``TensorDict -> TensorDict`` callable as a forward-only transform."""

    def __init__(self, func: Callable[[TensorDictBase], TensorDictBase]) -> None:
        super().__init__()
        self.func = func

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.func(tensordict)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self.func(next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self.func(tensordict_reset)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.func!r})"


def _as_transform(obj: Any) -> Transform:
    if isinstance(obj, Transform):
        return obj
    if any(cls.__module__.startswith("torchrl.envs.transforms") for cls in type(obj).__mro__):
        raise TypeError(
            f"{type(obj).__name__} is a TorchRL transform: torchenv's TransformedEnv and Compose "
            f"take torchenv transforms (torchenv.transforms.{type(obj).__name__}, where it exists). "
            "To use TorchRL's transform, wrap the env for TorchRL: "
            "torchrl.envs.TransformedEnv(torchenv.interop.to_torchrl(env), transform)."
        )
    if callable(obj):
        return _CallableTransform(obj)
    raise TypeError(
        f"expected a Transform or a callable taking and returning a TensorDict, "
        f"got an object of type {type(obj).__name__}"
    )


def _chained(name: str) -> Callable[[Compose, Any], Any]:
    """A ``Compose`` method passing its argument through method ``name`` of each transform."""

    def method(self: Compose, value: Any) -> Any:
        for t in self.transforms:
            value = getattr(t, name)(value)
        return value

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Applies ``{name}`` of each transform in turn, innermost first."
    return method


#: ``Compose.__dict__`` entries caching views of the chain (rebuilt on next use)
_CHAIN_CACHES = ("_seq", "_inv_seq", "_step_fns")


def _clear_chain_caches(d: dict[str, Any]) -> None:
    """Resets the chain caches in ``d`` (a ``Compose.__dict__`` or its pickled state)."""
    for name in _CHAIN_CACHES:
        d[name] = None


class Compose(Transform):
    """Composes transforms: forward in order (inner to outer), inverse in reverse order.

    Indexing with an int returns the transform itself (it keeps its parent); indexing with a
    slice or a list returns a new, parentless ``Compose`` of clones (they share buffers).

    Args:
        *transforms: the transforms, innermost first; a single list is accepted too, and so is
            ``transforms=[...]``. Callables ``TensorDict -> TensorDict`` are wrapped.

    Examples:
        >>> from torchenv.transforms import RewardScaling, RewardClipping
        >>> t = Compose(RewardScaling(0.0, 2.0), RewardClipping(-1.0, 1.0))
        >>> len(t), type(t[0]).__name__, type(t[1:]).__name__
        (2, 'RewardScaling', 'Compose')
    """

    def __init__(self, *transforms: Transform | Sequence[Transform], **kwargs: Any) -> None:
        if not transforms and "transforms" in kwargs:
            transforms = tuple(kwargs.pop("transforms"))
        elif len(transforms) == 1 and isinstance(transforms[0], (list, tuple)):
            transforms = tuple(transforms[0])
        if kwargs:
            raise TypeError(f"Compose got unexpected keyword arguments {sorted(kwargs)}")
        super().__init__()
        self.transforms = nn.ModuleList([_as_transform(t) for t in transforms])
        _clear_chain_caches(self.__dict__)
        for t in self.transforms:
            t.set_container(self)

    @property
    def _chain(self) -> tuple[Transform, ...]:
        """The transforms as a tuple (cached: iterating a ModuleList is slow on the hot path)."""
        seq = self.__dict__["_seq"]
        if seq is None:
            seq = self.__dict__["_seq"] = tuple(self._modules["transforms"])
        return seq

    @property
    def _step_chain(self) -> tuple[Callable, ...]:
        """The bound ``_step`` methods (``_call`` where ``_step`` is not overridden), cached."""
        fns = self.__dict__["_step_fns"]
        if fns is None:
            fns = tuple(
                (lambda call: lambda td, next_td: call(next_td))(t._call)
                if type(t)._step is Transform._step
                else t._step
                for t in self._chain
                if not t._is_step_noop
            )
            self.__dict__["_step_fns"] = fns
        return fns

    @property
    def _inv_chain(self) -> tuple[Transform, ...]:
        """The transforms with an inverse, outermost first (cached)."""
        seq = self.__dict__["_inv_seq"]
        if seq is None:
            seq = tuple(t for t in reversed(self._chain) if t._has_inverse)
            self.__dict__["_inv_seq"] = seq
        return seq

    # ----------------------------------------------------------- sequence API
    def __len__(self) -> int:
        return len(self.transforms)

    def __iter__(self) -> Iterator[Transform]:
        return iter(self.transforms)

    def __getitem__(self, index: int | slice | Sequence[int]) -> Transform:
        if isinstance(index, int):
            return self.transforms[index]
        if isinstance(index, slice):
            selected = self.transforms[index]
        else:
            selected = [self.transforms[i] for i in index]
        return Compose(*(t.clone() for t in selected))

    def append(self, transform: Transform | Callable[[TensorDictBase], TensorDictBase]) -> None:
        """Appends a transform (the items of a plain ``Compose`` are appended one by one)."""
        transform = _as_transform(transform)
        if type(transform) is Compose:
            for t in list(transform):
                t.reset_parent()
                self.append(t)
            return
        transform.eval()
        self.transforms.append(transform)
        transform.set_container(self)
        self._chain_changed()

    def insert(
        self, index: int, transform: Transform | Callable[[TensorDictBase], TensorDictBase]
    ) -> None:
        """Inserts a transform at ``index`` (negative indices count from the end)."""
        transform = _as_transform(transform)
        n = len(self.transforms)
        if not -n <= index <= n:
            raise IndexError(f"Compose.insert: index must be in [-{n}, {n}], got {index}")
        if index < 0:
            index += n
        transform.eval()
        self.transforms.insert(index, transform)
        transform.set_container(self)
        self._chain_changed()

    def pop(self, index: int = -1) -> Transform:
        """Removes and returns the transform at ``index`` (it loses its parent)."""
        transform = self.transforms[index]
        del self.transforms[index]
        transform.reset_parent()
        self._chain_changed()
        return transform

    def __delitem__(self, index: int | slice) -> None:
        removed = self.transforms[index]
        for t in removed if isinstance(removed, nn.ModuleList) else [removed]:
            t.reset_parent()
        del self.transforms[index]
        self._chain_changed()

    def __setitem__(self, index: int, transform: Transform) -> None:
        transform = _as_transform(transform)
        self.transforms[index].reset_parent()
        self.transforms[index] = transform
        transform.set_container(self)
        self._chain_changed()

    def _chain_changed(self) -> None:
        """Invalidates cached parents and the specs of the env holding the chain."""
        self.empty_cache()
        holder = self._container_ref()
        while isinstance(holder, Transform):
            holder.empty_cache()
            holder = holder._container_ref()
        if holder is not None:
            holder.empty_cache()

    # ------------------------------------------------------------- data flow
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._call(next_tensordict)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t(tensordict)
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in reversed(self.transforms):
            tensordict = t._inv_call(tensordict)
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def _reset_env_preprocess(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        for t in reversed(self.transforms):
            tensordict = t._reset_env_preprocess(tensordict)
        return tensordict

    @property
    def _has_inverse(self) -> bool:
        return any(t._has_inverse for t in self.transforms)

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        for t in self.transforms:
            if t._has_post_step_mdp_hooks:
                tensordict, tensordict_ = t._post_step_mdp_hooks(tensordict, tensordict_)
        return tensordict, tensordict_

    @property
    def _has_post_step_mdp_hooks(self) -> bool:
        return any(t._has_post_step_mdp_hooks for t in self.transforms)

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            fake_tensordict = t.transform_fake_tensordict(fake_tensordict)
        return fake_tensordict

    def _check_batched_worker_compat(self) -> None:
        for t in self.transforms:
            t._check_batched_worker_compat()

    def init(self, tensordict: TensorDictBase) -> None:
        for t in self.transforms:
            t.init(tensordict)

    def close(self) -> None:
        for t in self.transforms:
            t.close()

    def dump(self, **kwargs: Any) -> None:
        """Calls ``dump`` on every transform (e.g. writes the videos of a ``VideoRecorder``)."""
        for t in self.transforms:
            t.dump(**kwargs)

    # ----------------------------------------------------------------- specs
    # Every spec (input specs included) goes inner to outer: the outer spec is derived from
    # the inner one, even though the inverse *data* transform runs outer to inner.
    transform_output_spec = _chained("transform_output_spec")
    transform_input_spec = _chained("transform_input_spec")
    transform_observation_spec = _chained("transform_observation_spec")
    transform_reward_spec = _chained("transform_reward_spec")
    transform_done_spec = _chained("transform_done_spec")
    transform_action_spec = _chained("transform_action_spec")
    transform_state_spec = _chained("transform_state_spec")

    # written out (not _chained): the env reads its device and batch size often
    def transform_env_device(self, device: torch.device | None) -> torch.device | None:
        for t in self.transforms:
            device = t.transform_env_device(device)
        return device

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        for t in self.transforms:
            batch_size = t.transform_env_batch_size(batch_size)
        return batch_size

    # ------------------------------------------------------------ plumbing
    def set_container(self, container: Any) -> None:
        super().set_container(container)
        for t in self.transforms:
            t.set_container(self)

    def reset_parent(self) -> None:
        for t in self.transforms:
            t.reset_parent()
            t.set_container(self)
        super().reset_parent()

    def empty_cache(self) -> None:
        _clear_chain_caches(self.__dict__)
        for t in self.transforms:
            t.empty_cache()
        super().empty_cache()

    def set_missing_tolerance(self, mode: bool = False) -> None:
        for t in self.transforms:
            t.set_missing_tolerance(mode)
        super().set_missing_tolerance(mode)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        _clear_chain_caches(state)  # caches (closures)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        _clear_chain_caches(self.__dict__)
        for t in self.transforms:
            t.__dict__["_container"] = weakref.ref(self)

    def clone(self) -> Compose:
        """A parentless ``Compose`` of clones of the transforms (buffers are shared)."""
        return Compose(*(t.clone() for t in self.transforms))

    def to(self, *args: Any, **kwargs: Any) -> Compose:
        for t in self.transforms:
            t.to(*args, **kwargs)
        return super().to(*args, **kwargs)

    def __repr__(self) -> str:
        if not len(self.transforms):
            return "Compose()"
        inner = ",\n".join("    " + repr(t).replace("\n", "\n    ") for t in self.transforms)
        return f"Compose(\n{inner})"
