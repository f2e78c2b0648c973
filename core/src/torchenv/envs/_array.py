"""``ArrayEnv``: the base class of envs whose simulator speaks numpy.

A subclass declares its specs and fills numpy arrays in two methods, ``_array_reset`` and
``_array_step``. From that one pair the base derives both ways of driving an env:

* the TensorDict path (``_reset`` / ``_step``): fresh arrays per call, filled by the subclass and
  wrapped with ``torch.from_numpy`` (no copy), so outputs outlive the next step;
* the direct path (``_step_into`` / ``_reset_into``, see :mod:`torchenv.envs._direct`): the
  subclass writes straight into the caller's arrays (the rows of a ``rollout`` or the shared
  buffers of a ``ParallelEnv``), when the keys are flat and there is one action key.

It also gives partial resets by mask, seeding (the seed of ``set_seed`` goes to the next reset)
and info readers (``set_info_dict_reader``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs._common import EnvBase
from torchenv.envs._info import BaseInfoDictReader, default_info_dict_reader
from torchenv.spaces._codec import to_numpy
from torchenv.specs import Categorical, Composite

__all__ = ["ArrayEnv"]

Leaf = tuple[Any, tuple[int, ...], np.dtype]  # (key, shape, numpy dtype)


def _np_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty((), dtype=dtype).numpy().dtype


def _leaves(spec: Composite) -> list[Leaf]:
    out = []
    for key in spec.keys(True, True):
        leaf = spec[key]
        if type(leaf).__name__ == "NonTensor":
            out.append((key, tuple(leaf.shape), np.dtype(object)))
            continue
        out.append((key, tuple(leaf.shape), _np_dtype(leaf.dtype)))
    return out


class _Layout:
    """The keys, shapes and numpy dtypes of what the two methods fill (built once per spec)."""

    def __init__(self, env: ArrayEnv) -> None:
        info_keys = env.__dict__.get("_info_keys", ())
        self.obs = [leaf for leaf in _leaves(env.full_observation_spec) if leaf[0] not in info_keys]
        self.reward = _leaves(env.full_reward_spec)
        self.done = _leaves(env.full_done_spec)
        self.step = self.obs + self.reward + self.done
        self.action_keys = list(env.full_action_spec.keys(True, True))
        self.flat = all(isinstance(key, str) for key, _, _ in self.step)
        self.flat_action = len(self.action_keys) == 1 and isinstance(self.action_keys[0], str)
        self.any_object = any(dtype.kind == "O" for _, _, dtype in self.step)
        self.batch = tuple(env.batch_size)
        done_keys = [key for key, _, _ in self.done]
        self.done_key = "done" if "done" in done_keys else None


def _nest(flat: dict) -> dict:
    """``{("a", "b"): x, "c": y}`` → ``{"a": {"b": x}, "c": y}``."""
    out: dict = {}
    for key, value in flat.items():
        if isinstance(key, tuple):
            node = out
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = value
        else:
            out[key] = value
    return out


def _as_tensor(value: Any) -> Any:
    if type(value) is np.ndarray:
        return torch.from_numpy(value) if value.dtype != object else value
    return value


class ArrayEnv(EnvBase):
    """Base class of envs whose simulator speaks numpy: two methods fill arrays, the base does the rest.

    A subclass sets its specs in ``__init__`` (after ``super().__init__(...)``; the done spec
    defaults to ``"done"``, ``"terminated"`` and ``"truncated"`` of shape ``(*batch_size, 1)``)
    and implements:

    * ``_array_reset(out, mask, seed) -> info | None``: ``out`` maps every observation key (as
      ``observation_spec.keys(True, True)`` gives it) to a numpy array of the spec's shape
      (batch dims included) and dtype; ``mask`` is ``None`` (reset everything) or a boolean
      array of the batch shape (never all False): reset and write only those rows. ``seed`` is
      the seed given to
      ``set_seed`` before this reset, else ``None``. The base writes the done entries (False).
      Extra ``reset(**kwargs)`` arguments are passed on as keywords.
    * ``_array_step(action, out) -> info | None``: ``action`` is a numpy array (a view: do not
      keep it), or ``{action_key: array}`` when the env has several action keys; ``out`` holds
      the observation, reward and done keys: write every one of them.

    The arrays' content on entry is unspecified. Instead of writing into ``out[key]`` a method may
    replace it by a fresh array of the same shape and dtype (no copy on the TensorDict path).
    Return an ``info`` mapping to feed info readers (:meth:`set_info_dict_reader`).

    The direct path is taken when keys are flat strings, there is one action key, the env is on
    the cpu and no info reader is set; override :meth:`_direct_io_static` (calling ``super``)
    to turn it off in other configurations.

    >>> import numpy as np, torch
    >>> from torchenv.envs import ArrayEnv
    >>> from torchenv.specs import Bounded, Composite, Unbounded
    >>> class Walk(ArrayEnv):
    ...     '''Random walks on a line, ended beyond +-3; ``num_envs`` of them.'''
    ...     def __init__(self, num_envs=2):
    ...         super().__init__(batch_size=(num_envs,))
    ...         self.observation_spec = Composite(
    ...             pos=Unbounded((num_envs, 1), dtype=torch.float64), shape=(num_envs,))
    ...         self.action_spec = Bounded(-1.0, 1.0, (num_envs, 1))
    ...         self.reward_spec = Unbounded((num_envs, 1))
    ...         self._pos = np.zeros((num_envs, 1))
    ...         self._rng = np.random.default_rng()
    ...     def _array_reset(self, out, mask, seed):
    ...         if seed is not None:
    ...             self._rng = np.random.default_rng(seed)
    ...         rows = slice(None) if mask is None else mask
    ...         self._pos[rows] = self._rng.uniform(-1, 1, self._pos[rows].shape)
    ...         out["pos"][rows] = self._pos[rows]
    ...     def _array_step(self, action, out):
    ...         self._pos += action
    ...         out["pos"][:] = self._pos
    ...         out["reward"][:] = -np.abs(self._pos)
    ...         np.greater(np.abs(self._pos), 3, out=out["terminated"])
    ...         out["truncated"][:] = False
    ...         out["done"][:] = out["terminated"]
    >>> env = Walk(num_envs=3)
    >>> _ = env.set_seed(0)
    >>> env.rollout(5)["next", "pos"].shape
    torch.Size([3, 5, 1])
    >>> from torchenv.envs._direct import direct_plan
    >>> direct_plan(env) is not None  # rollout and the batched runners take the fast path
    True
    """

    def __init__(self, *, device: Any = None, batch_size: Any = None, **kwargs: Any) -> None:
        super().__init__(device=device, batch_size=batch_size, **kwargs)
        d = self.__dict__
        d["_next_seed"] = None
        d["info_dict_reader"] = []
        d["_info_keys"] = set()  # observation keys written by info readers, not by the env
        batch = tuple(self.batch_size)
        self.done_spec = Composite(
            {
                name: Categorical(2, shape=(*batch, 1), dtype=torch.bool, device=self.device)
                for name in ("done", "terminated", "truncated")
            },
            shape=batch,
            device=self.device,
        )

    # ------------------------------------------------------------------ what subclasses write
    def _array_reset(
        self, out: dict, mask: np.ndarray | None, seed: int | None
    ) -> Mapping | None:  # pragma: no cover - abstract
        """Reset (the rows of ``mask``) and write the first observations into ``out``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _array_reset.")

    def _array_step(self, action: Any, out: dict) -> Mapping | None:  # pragma: no cover
        """Step with ``action`` and write observations, rewards and dones into ``out``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _array_step.")

    # ------------------------------------------------------------------ layout
    @property
    def _array_layout(self) -> _Layout:
        layout = self.__dict__["_cache"].get("array_layout")
        if layout is None:
            layout = self._cached("array_layout", lambda: _Layout(self))
        return layout

    def _take_seed(self, kwargs: dict) -> int | None:
        seed = kwargs.pop("seed", None)
        d = self.__dict__
        if seed is None and d["_next_seed"] is not None:
            seed, d["_next_seed"] = d["_next_seed"], None
        return seed

    def _set_seed(self, seed: int | None) -> None:
        self.__dict__["_next_seed"] = seed

    # ------------------------------------------------------------------ TensorDict path
    def _make_td(self, out: dict, layout: _Layout) -> TensorDictBase:
        values = {key: _as_tensor(value) for key, value in out.items()}
        device = self.device
        cpu = device is None or device.type == "cpu"
        if layout.flat and not layout.any_object and cpu:
            return TensorDict._new_unsafe(
                values, batch_size=self.batch_size, device=device, nested=False
            )
        td = TensorDict(_nest(values), batch_size=self.batch_size)
        return td if device is None else td.to(device, non_blocking=not cpu)

    def _reset_mask(self, tensordict: TensorDictBase | None) -> np.ndarray | None:
        if tensordict is None or not self.batch_size:
            return None
        reset = tensordict.get("_reset", None)
        if reset is None:
            return None
        mask = to_numpy(reset).reshape(tuple(self.batch_size))
        return None if mask.all() else mask

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        layout = self._array_layout
        seed = self._take_seed(kwargs)
        mask = self._reset_mask(tensordict)
        alloc = np.empty if mask is None else np.zeros  # rows not reset: zeros, not garbage
        out = {key: alloc(shape, dtype) for key, shape, dtype in layout.obs}
        for reader in self.info_dict_reader:
            getattr(reader, "reset", lambda: None)()
        if mask is None or mask.any():
            info = self._array_reset(out, mask, seed, **kwargs)
        else:  # nothing to reset: the caller keeps its data
            info = None
            if seed is not None:
                self.__dict__["_next_seed"] = seed
        for key, shape, dtype in layout.done:
            out[key] = np.zeros(shape, dtype)
        td = self._make_td(out, layout)
        if self.info_dict_reader:
            td = self._read_info(info or {}, td)
        return td

    def _array_action(self, action: torch.Tensor) -> Any:
        """The form of a (single-key) action that :meth:`_array_step` receives: its numpy view.

        A subclass whose simulator takes Python values may return the tensor itself where
        reading it directly is cheaper (``tolist()`` of a one-env discrete action costs a
        quarter of ``numpy()``).
        """
        return to_numpy(action)

    def _action_arrays(self, tensordict: TensorDictBase, layout: _Layout) -> Any:
        keys = layout.action_keys
        if layout.flat_action:
            if type(tensordict) is TensorDict:
                return self._array_action(tensordict._tensordict[keys[0]])
            return self._array_action(tensordict.get(keys[0]))
        return {key: to_numpy(tensordict.get(key)) for key in keys}

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        layout = self._array_layout
        out = {key: np.empty(shape, dtype) for key, shape, dtype in layout.step}
        info = self._array_step(self._action_arrays(tensordict, layout), out)
        td = self._make_td(out, layout)
        if self.info_dict_reader:
            td = self._read_info(info or {}, td)
        return td

    # ------------------------------------------------------------------ direct path
    def _direct_io_supported(self) -> bool:
        """Whether the direct hooks may be used now: :meth:`_direct_io_static` (computed once
        per spec configuration) and no info reader set."""
        d = self.__dict__
        if d["info_dict_reader"]:  # a list: readers may be appended at any time
            return False
        cache = d["_cache"]  # emptied when the specs (or the device) change
        static = cache.get("direct_io_static")
        if static is None:
            static = cache["direct_io_static"] = bool(self._direct_io_static())
        return static

    def _direct_io_static(self) -> bool:
        """The part of :meth:`_direct_io_supported` that only changes with the specs: flat keys,
        one action, cpu, ``_step``/``_reset`` not overridden. Subclasses extend it (calling
        ``super``) with their own configuration."""
        cls = type(self)
        device = self.device
        layout = self._array_layout
        return (
            cls._step is ArrayEnv._step
            and cls._reset is ArrayEnv._reset
            and (device is None or device.type == "cpu")
            and layout.flat
            and layout.flat_action
            and not layout.any_object
            and layout.done_key is not None
        )

    def _step_into(self, action: torch.Tensor, out: dict) -> bool:
        view = dict(out)
        self._array_step(self._array_action(action), view)
        for array, value in zip(out.values(), view.values()):  # same keys, same order
            if value is not array:  # replaced by the subclass: copy it in
                np.copyto(array, value, casting="unsafe")
        done = out["done"]
        # one env: item() is a tenth of any() (measured, CartPole)
        return done.item() if done.size == 1 else bool(done.any())

    def _reset_into(self, out: dict, mask: Any = None) -> None:
        layout = self._array_layout
        if mask is not None:
            mask = np.asarray(mask, dtype=bool).reshape(layout.batch)
            if mask.all():
                mask = None
            elif not mask.any():
                return
        seed = self._take_seed({})
        view = {key: out[key] for key, _, _ in layout.obs}
        self._array_reset(view, mask, seed)
        for key, _, _ in layout.obs:
            value, array = view[key], out[key]
            if value is not array:
                if mask is None:
                    np.copyto(array, value, casting="unsafe")
                else:
                    array[mask] = np.asarray(value)[mask]
        rows = None if mask is None else mask.reshape(*layout.batch, 1)
        for key, _, _ in layout.done:
            if rows is None:
                out[key][...] = False
            else:
                np.copyto(out[key], False, where=rows)

    # ------------------------------------------------------------------ info dicts
    def set_info_dict_reader(
        self,
        info_dict_reader: BaseInfoDictReader | Callable | None = None,
        ignore_private: bool = True,
    ) -> ArrayEnv:
        """Add a reader that copies ``info`` entries into the outputs, and add its specs.

        Without ``info_dict_reader``, a :class:`~torchenv.envs.default_info_dict_reader` of every
        numeric entry is used; when its keys or specs are not given they are found by running
        one reset and one random step (:meth:`_probe_info`). Returns the env.
        """
        reader = info_dict_reader or default_info_dict_reader(ignore_private=ignore_private)
        if isinstance(reader, default_info_dict_reader) and not reader.complete:
            reader.infer(self._probe_info(), tuple(self.batch_size))
        self.info_dict_reader.append(reader)
        spec = getattr(reader, "info_spec", None)
        if spec is not None:
            self._add_info_specs(spec)
        return self

    def auto_register_info_dict(
        self, ignore_private: bool = True, info_dict_reader: BaseInfoDictReader | None = None
    ) -> ArrayEnv:
        """Register a reader of every numeric info entry (or ``info_dict_reader``), specs
        included (needed for infos to flow through ``ParallelEnv``, whose buffers come from
        the specs)."""
        reader = info_dict_reader or default_info_dict_reader(ignore_private=ignore_private)
        if isinstance(reader, default_info_dict_reader):
            reader.infer(self._probe_info(), tuple(self.batch_size))
        return self.set_info_dict_reader(reader)

    def _probe_info(self) -> dict:
        """The info dicts of one reset and one random step, merged (the env is reset again
        before its next use)."""
        layout = self._array_layout
        out = {key: np.zeros(shape, dtype) for key, shape, dtype in layout.obs}
        info = self._array_reset(out, None, None) or {}
        action = self.full_action_spec.rand()
        if layout.flat_action:
            action = to_numpy(action.get(layout.action_keys[0]))
        else:
            action = {key: to_numpy(action.get(key)) for key in layout.action_keys}
        out = {key: np.zeros(shape, dtype) for key, shape, dtype in layout.step}
        step_info = self._array_step(action, out) or {}
        out = {key: np.zeros(shape, dtype) for key, shape, dtype in layout.obs}
        self._array_reset(out, None, None)
        return dict(info) | dict(step_info)

    def _add_info_specs(self, spec: Composite) -> None:
        batch = tuple(self.batch_size)
        locked = self.spec_locked
        if locked:
            self.set_spec_lock_(False)
        obs = self.observation_spec.clone()
        for key in spec.keys(True, True):
            leaf = spec[key]
            if batch and tuple(leaf.shape[: len(batch)]) != batch:
                leaf = leaf.expand(*batch, *leaf.shape)
            obs[key] = leaf.to(self.device) if self.device is not None else leaf
            self.__dict__["_info_keys"].add(key)
        self.observation_spec = obs
        if locked:
            self.set_spec_lock_(True)

    def _read_info(self, info: Any, td: TensorDictBase) -> TensorDictBase:
        for reader in self.info_dict_reader:
            result = reader(info, td)
            if result is not None:
                td = result
        return td
