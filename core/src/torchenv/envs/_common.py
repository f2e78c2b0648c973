"""``EnvBase``: the environment contract every backend implements (TorchRL-compatible)."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from torchenv.envs._conveniences import EnvConveniences
from torchenv.envs._direct import cached_direct_plan, direct_step_and_maybe_reset
from torchenv.envs._finite import check_finite_mode, check_step
from torchenv.envs._reset import (
    check_done_after_reset,
    merge_root_reset,
    save_auto_reset,
    strip_reset_entries,
    update_during_reset,
)
from torchenv.envs._spec_props import _EnvSpecs
from torchenv.envs._step import (
    _merge_sub_next,
    _skip_next,
    _StepPlan,
    check_observations,
    nested_rand_targets,
)
from torchenv.envs._step_mdp import _EnvStepMDP
from torchenv.envs._torchrl_internals import TorchRLInternals
from torchenv.envs._utils import (
    _align_mask,
    _any,
    _get_nested,
    any_set,
    terminated_or_truncated,
)
from torchenv.specs import Composite

__all__ = ["EnvBase"]

_POST_INIT_FLAGS = ("spec_locked", "auto_reset", "auto_reset_replace", "check_finite")
_MAX_SEED = 2**32 - 1


def _next_seed(seed: int) -> int:
    """The seed that follows ``seed`` in a chain of seeds (a batched env's workers), by TorchRL
    0.14.1's rule: the first 8 bytes (big-endian) of ``numpy.random.default_rng(seed)``, modulo
    ``2**32 - 1``. The same seed thus gives the same worker seeds as TorchRL's."""
    return int.from_bytes(np.random.default_rng(seed).bytes(8), "big") % _MAX_SEED


def _check_seed(seed: Any) -> None:
    """Refuses what no simulator takes as a seed (gym, numpy and TorchRL need an int >= 0)."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_seed: seed must be an int >= 0 or None, got {seed!r}.")
    if seed < 0:
        raise ValueError(f"set_seed: seed must be an int >= 0 or None, got {seed}.")


def _action_generator_for(device: torch.device | None, seed: int) -> torch.Generator | None:
    """A generator on ``device`` (cpu when ``None``) seeded with ``seed``; ``None`` where torch
    has none for that device (random actions then draw from the global generator)."""
    try:
        generator = torch.Generator(device=device if device is not None else "cpu")
    except RuntimeError:
        return None
    return generator.manual_seed(int(seed))


_SPEC_PARTS = {
    "_input_spec": ("full_action_spec", "full_state_spec"),
    "_output_spec": ("full_observation_spec", "full_reward_spec", "full_done_spec"),
}


def _init_spec_state(env: Any, batch_size: torch.Size, device: torch.device | None) -> None:
    """The state the spec properties need: empty containers of ``batch_size`` on ``device``."""
    d = env.__dict__
    d.setdefault("_cache", {})
    d["_cache"].clear()
    d["_batch_size"] = batch_size
    d["_device"] = device
    d["_is_spec_locked"] = False
    d["_post_init_done"] = False
    d["_input_spec"] = Composite(
        full_action_spec=Composite(shape=batch_size, device=device),
        full_state_spec=Composite(shape=batch_size, device=device),
        shape=batch_size,
        device=device,
    )
    d["_output_spec"] = Composite(
        full_observation_spec=Composite(shape=batch_size, device=device),
        full_reward_spec=Composite(shape=batch_size, device=device),
        full_done_spec=Composite(shape=batch_size, device=device),
        shape=batch_size,
        device=device,
    )


def _specs_set_before_init(env: Any) -> dict[str, Composite]:
    """Spec parts given before ``EnvBase.__init__``: on the instance, or TorchRL-style on the
    class (``cls._output_spec`` / ``cls._input_spec``, as TorchRL's mock envs set them)."""
    carried: dict[str, Composite] = {}
    d = env.__dict__
    for container, parts in _SPEC_PARTS.items():
        sources = [getattr(type(env), container, None)]
        if d.pop("_specs_before_init", False) or container in d:
            sources.append(d.get(container))
        for source in sources:
            if not isinstance(source, Composite):
                continue
            for part in parts:
                value = source.get(part, None)
                if value is not None and (not isinstance(value, Composite) or len(value.keys())):
                    carried[part] = value.clone()
    return carried


class _EnvMeta(abc.ABCMeta):
    """Runs ``_post_init`` once the subclass ``__init__`` has set the specs."""

    def __call__(cls, *args, **kwargs):
        flags = {k: kwargs.pop(k) for k in _POST_INIT_FLAGS if k in kwargs}
        instance = super().__call__(*args, **kwargs)
        if not isinstance(instance, cls):  # __new__ handed back another env, built by its class
            if flags:
                instance._post_init(**flags)
            return instance
        instance._post_init(**flags)
        return instance


class EnvBase(_EnvSpecs, TorchRLInternals, EnvConveniences, torch.nn.Module, metaclass=_EnvMeta):
    """Base class of every environment: a ``torch.nn.Module`` that reads and writes TensorDicts.

    Subclasses set the specs in ``__init__`` (shapes start with ``batch_size``) and implement
    ``_reset``, ``_step`` and ``_set_seed``. Users call ``reset``, ``step``,
    ``step_and_maybe_reset``, ``rollout``, ``set_seed``.

    Keyword Args:
        device: where inputs and outputs live (``None``: no device).
        batch_size: the leading dims of every tensordict the env reads and writes.
        run_type_checks: check the full action range (``is_in``) at every step, and the
            observations against their specs. Shape and dtype of actions are always checked.
        allow_done_after_reset: allow an env to be done right after ``reset``.
        spec_locked: lock the specs (the default), which lets the env cache its key lists.
        auto_reset: the env resets itself when done (its ``_step`` already returns the
            first observation of the next episode); ``rollout`` and ``step_and_maybe_reset``
            then skip calls to ``_reset``.
        auto_reset_replace: with ``auto_reset``, replace the (invalid) observations delivered
            with a done flag by NaN (floats), -1 (signed ints) or ``False``.
        check_finite: what a NaN or infinite action, observation or reward does:
            ``"warn"`` (default: one ``RuntimeWarning`` per env, naming the key and the batch
            rows), ``"raise"`` (:class:`~torchenv.envs.NonFiniteError`) or ``"ignore"``. Also
            a property, and a keyword of ``torchenv.make``; see :mod:`torchenv.envs._finite`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torchenv.specs import Bounded, Unbounded
        >>> class Counter(EnvBase):
        ...     def __init__(self):
        ...         super().__init__(batch_size=())
        ...         self.observation_spec = Unbounded(shape=(1,))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...         self.count = torch.zeros(1)
        ...     def _reset(self, tensordict=None):
        ...         self.count = torch.zeros(1)
        ...         return TensorDict({"observation": self.count.clone()})
        ...     def _step(self, tensordict):
        ...         self.count = self.count + 1
        ...         done = self.count >= 3
        ...         return TensorDict({"observation": self.count.clone(), "reward": torch.ones(1), "done": done})
        ...     def _set_seed(self, seed):
        ...         pass
        >>> env = Counter()
        >>> env.rollout(10).batch_size
        torch.Size([3])
    """

    _batch_locked: bool = True

    def __new__(
        cls, *args: Any, _inplace_update: bool = False, _batch_locked: bool = True, **kwargs
    ):
        """Takes (and ignores) the constructor's arguments, as TorchRL's ``EnvBase.__new__`` does.

        Subclasses written the TorchRL way override ``__new__(cls, *args, **kwargs)`` and pass
        everything up; they may also set specs on the instance before calling
        ``EnvBase.__init__``, so the spec containers exist from here on.
        """
        self = super().__new__(cls)
        if not _batch_locked:
            self.__dict__["_batch_locked"] = False
        _init_spec_state(self, torch.Size(()), None)
        self.__dict__["_specs_before_init"] = True
        return self

    def __init__(
        self,
        *,
        device: torch.device | str | None = None,
        batch_size: torch.Size | tuple | None = None,
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
        spec_locked: bool = True,
        auto_reset: bool = False,
        auto_reset_replace: bool = True,
        check_finite: str = "warn",
    ) -> None:
        carried = _specs_set_before_init(self)
        super().__init__()
        d = self.__dict__
        batch = torch.Size(batch_size) if batch_size is not None else torch.Size(())
        device = torch.device(device) if device is not None else None
        if device is not None and device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        _init_spec_state(self, batch, device)
        d["_spec_locked_request"] = spec_locked
        d["_auto_reset"] = auto_reset
        d["_auto_reset_replace"] = auto_reset_replace
        d["_auto_reset_saved"] = None
        d["_run_type_checks"] = run_type_checks
        d["_allow_done_after_reset"] = allow_done_after_reset
        d["_check_finite"] = check_finite_mode(check_finite)
        d["_finite_on"] = check_finite != "ignore"  # off after the one warning of "warn"
        self.is_closed = False
        for part, value in carried.items():  # specs a TorchRL-style subclass set before us
            setattr(self, part, value)

    def _post_init(self, **flags: Any) -> None:
        d = self.__dict__
        if "_input_spec" not in d:
            raise RuntimeError(
                f"{type(self).__name__}.__init__ must call super().__init__() (EnvBase.__init__)."
            )
        if "auto_reset" in flags:
            d["_auto_reset"] = flags["auto_reset"]
        if "auto_reset_replace" in flags:
            d["_auto_reset_replace"] = flags["auto_reset_replace"]
        if "check_finite" in flags:  # every subclass takes it, whatever its __init__
            self.check_finite = flags["check_finite"]
        locked = flags.get("spec_locked", d["_spec_locked_request"])
        was_locked = self.spec_locked
        if was_locked:
            self.set_spec_lock_(False)
        self._complete_reward_specs()
        self._complete_done_specs()
        self._check_key_collisions()
        d["_post_init_done"] = True
        self.empty_cache()
        self.set_spec_lock_(bool(locked))

    def _check_key_collisions(self) -> None:
        for parts in (
            ("full_observation_spec", "full_reward_spec", "full_done_spec"),
            ("full_action_spec", "full_state_spec"),
        ):
            seen: dict = {}
            for part in parts:
                parent = self.output_spec if part in self.output_spec else self.input_spec
                for key in parent[part].keys(True, True):
                    if key in seen:
                        raise RuntimeError(
                            f"{type(self).__name__}: the key {key!r} is in both {seen[key]} "
                            f"and {part}; spec keys must not collide."
                        )
                    seen[key] = part

    # ------------------------------------------------------------------ attributes
    @property
    def batch_size(self) -> torch.Size:
        """The leading dims of every tensordict the env reads and writes."""
        return self.__dict__["_batch_size"]

    @batch_size.setter
    def batch_size(self, value) -> None:
        value = torch.Size(value)
        d = self.__dict__
        locked = self.spec_locked
        self.set_spec_lock_(False)
        for name in ("_input_spec", "_output_spec"):
            spec = d[name]
            spec.shape = value
        d["_batch_size"] = value
        self.set_spec_lock_(locked)

    @property
    def shape(self) -> torch.Size:
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        return len(self.batch_size)

    ndim = batch_dims

    def ndimension(self) -> int:
        return len(self.batch_size)

    def numel(self) -> int:
        return self.batch_size.numel()

    @property
    def device(self) -> torch.device | None:
        """Where the env's inputs and outputs live (``None``: anywhere)."""
        return self.__dict__["_device"]

    @property
    def batch_locked(self) -> bool:
        """Whether inputs must have exactly ``batch_size`` (``False``: any leading dims)."""
        return self.__dict__.get("_batch_locked", type(self)._batch_locked)

    @batch_locked.setter
    def batch_locked(self, value: bool) -> None:
        self.__dict__["_batch_locked"] = bool(value)
        self.empty_cache()

    @property
    def run_type_checks(self) -> bool:
        return self.__dict__["_run_type_checks"]

    @run_type_checks.setter
    def run_type_checks(self, value: bool) -> None:
        self.__dict__["_run_type_checks"] = bool(value)

    @property
    def auto_reset(self) -> bool:
        """Whether the env resets itself when done (see the class docstring)."""
        return self.__dict__["_auto_reset"]

    # A closed env of this class starts again on reset (batched envs restart their workers, as
    # TorchRL's); step still refuses. Other envs refuse reset, step and rollout once closed.
    _reset_reopens: bool = False

    @property
    def check_finite(self) -> str:
        """``"warn"``, ``"raise"`` or ``"ignore"``: what a NaN or infinite action, observation
        or reward does (see the class docstring). Setting it re-arms ``"warn"``.

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> env = PendulumEnv()
            >>> env.check_finite
            'warn'
            >>> env.check_finite = "raise"
        """
        return self.__dict__["_check_finite"]

    @check_finite.setter
    def check_finite(self, value: str) -> None:
        d = self.__dict__
        d["_check_finite"] = check_finite_mode(value)
        d["_finite_on"] = value != "ignore"

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` was called: ``reset``, ``step`` and ``rollout`` then raise
        :class:`~torchenv.envs.EnvClosedError`."""
        return self.__dict__.get("_is_closed", False)

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        d = self.__dict__
        d["_is_closed"] = bool(value)
        cache = d.get("_cache")
        if value and cache is not None:
            # the step's plan is rebuilt through _plan, which refuses a closed env: the hot
            # paths (step, step_and_maybe_reset, reset) pay nothing for the check
            cache.pop("plan", None)

    @property
    def _plan(self) -> _StepPlan:
        plan = self.__dict__["_cache"].get("plan")
        if plan is None:
            if self.__dict__.get("_is_closed", False) and not self._reset_reopens:
                from torchenv.envs._closed import closed_error

                raise closed_error(self)
            plan = self._cached("plan", lambda: _StepPlan(self))
        return plan

    @property
    def _step_mdp(self) -> Callable[[TensorDictBase], TensorDictBase]:
        fn = self.__dict__["_cache"].get("step_mdp")
        if fn is None:
            fn = self._cached("step_mdp", lambda: _EnvStepMDP(self))
        return fn

    def to(self, device) -> EnvBase:
        """Moves the specs (and any parameter or buffer) to ``device``."""
        device = torch.device(device)
        locked = self.spec_locked
        self.set_spec_lock_(False)
        d = self.__dict__
        d["_input_spec"] = d["_input_spec"].to(device)
        d["_output_spec"] = d["_output_spec"].to(device)
        d["_device"] = device
        self.set_spec_lock_(locked)
        super().to(device)
        if d.get("_rand_generator") is not None:  # a generator lives on one device
            d["_rand_generator"] = _action_generator_for(device, d["_rand_seed"])
        return self

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        """Returns a new tensordict with the first observations (and done entries)."""

    @abc.abstractmethod
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a new tensordict with the next observations, reward and done entries."""

    def _set_seed(self, seed: int | None) -> None:
        """Seeds the env's own random generator (default: nothing to seed)."""

    # Optional direct array I/O (see torchenv.envs._direct): envs whose simulator speaks numpy
    # may write their outputs into preallocated arrays; rollout and the batched envs' runners
    # then skip the per-step tensors and TensorDicts.
    def _direct_io_supported(self) -> bool:
        """Whether ``_step_into`` / ``_reset_into`` write what ``_step`` / ``_reset`` return."""
        return False

    #: whether the hooks also write ``(group, name)`` keys (multi-agent groups); flat keys only
    #: otherwise
    _direct_io_nested_keys: bool = False

    def _step_into(self, action: torch.Tensor | dict, out: dict) -> bool:
        """Steps with ``action`` (a dict key -> tensor for several action keys); writes
        observations, rewards and dones into the arrays ``out``; returns whether the root done of
        any (sub-)env is set. Optional (see ``_direct_io_supported``)."""
        raise NotImplementedError

    def _reset_into(self, out: dict, mask: Any = None) -> None:
        """Resets the sub-envs selected by ``mask`` (all if ``None``); writes their observations
        and dones into the arrays ``out``. Optional (see ``_direct_io_supported``)."""
        raise NotImplementedError

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            "EnvBase is not callable: use env.reset(), env.step(td) or env.rollout(n)."
        )

    # ------------------------------------------------------------------ checks
    def _check_batch(self, tensordict: TensorDictBase, plan: _StepPlan) -> None:
        if (plan.batch_locked or plan.nb) and tensordict.batch_size != plan.batch_size:
            raise RuntimeError(
                f"{type(self).__name__}: expected a tensordict with batch_size "
                f"{tuple(plan.batch_size)} (the env batch_size); got {tuple(tensordict.batch_size)}."
            )

    # ------------------------------------------------------------------ reset
    def reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        """Resets the env (or the parts selected by ``"_reset"`` entries of ``tensordict``).

        Returns the reset data; when ``tensordict`` is given it is updated in place and
        returned, keeping its content where ``"_reset"`` is ``False``.

        ``set_state=True`` asks an env that supports it (``_supports_set_state``) to restore
        the state found in ``tensordict``; other envs raise :class:`NotImplementedError` and
        never see the argument otherwise (TorchRL's rules). Other keywords go to ``_reset``.
        """
        plan = self._plan
        if tensordict is not None:
            self._check_batch(tensordict, plan)
        select_reset_only = kwargs.pop("select_reset_only", False)
        set_state = kwargs.pop("set_state", None)
        if set_state is not None or self._supports_set_state:
            set_state = self._resolve_set_state(set_state, tensordict, select_reset_only)
            if set_state is not None:
                kwargs["set_state"] = set_state
        saved = self.__dict__["_auto_reset_saved"]
        if saved is not None and tensordict is not None and _has_any(tensordict, plan.reset_keys):
            out = saved
        else:
            td_in = tensordict
            if select_reset_only and tensordict is not None:
                td_in = _select_reset(tensordict, plan)
            out = self._reset(td_in, **kwargs)
            if tensordict is not None and out is tensordict:
                raise RuntimeError(
                    f"{type(self).__name__}._reset must return a new tensordict, not its input."
                )
            if not isinstance(out, TensorDictBase):
                raise TypeError(
                    f"{type(self).__name__}._reset returned {type(out).__name__}; "
                    "a TensorDict was expected."
                )
        self.__dict__["_auto_reset_saved"] = None
        if plan.batch_locked and out.batch_size != plan.batch_size:
            out.batch_size = plan.batch_size
        plan.complete_output(self, out, step=False)
        if self.__dict__["_run_type_checks"]:
            self._check_observations(out)
        if tensordict is None:
            check_done_after_reset(self, None, out)
            strip_reset_entries(out, plan.reset_keys)
            return out
        if plan.root_reset:
            merged = merge_root_reset(self, tensordict, out, plan.done_groups[0].names)
            if merged is not None:
                return merged
        check_done_after_reset(self, tensordict, out)
        return update_during_reset(out, tensordict, plan.reset_keys)

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Whether any done entry of ``tensordict`` is set; writes the ``"_reset"`` entries."""
        plan = self.__dict__["_cache"].get("plan") or self._plan
        if plan.simple_done:
            if type(tensordict) is TensorDict:
                done = tensordict._tensordict.get("done")
            else:
                done = tensordict._get_str("done", None)
            if done is None:
                return False
            if done.numel() == 1:
                if not done.item():
                    return False
            elif not done.any():
                return False
            tensordict._set_str("_reset", done.clone(), validated=True, inplace=False)
            return True
        if not any_set(tensordict, plan.done_keys):
            return False  # nested done entries (multi-agent), none set: nothing to write
        return terminated_or_truncated(tensordict, self.full_done_spec, key="_reset")

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Resets (partially) where ``tensordict`` is done; returns ``tensordict``."""
        if self.any_done(tensordict):
            tensordict = self.reset(tensordict, select_reset_only=True)
        return tensordict

    # ------------------------------------------------------------------ step
    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs one step with the action(s) in ``tensordict``; writes the result under ``"next"``.

        A boolean ``"_step"`` entry asks for a partial step: batch-unlocked and unbatched envs
        step only the selected elements and fill the others with the previous content of the
        input (or zeros); batched, batch-locked envs receive the mask and must honour it.

        Actions are checked cheaply (presence, shape, dtype; the full range only with
        ``run_type_checks``): ``KeyError``, ``ValueError`` or ``TypeError`` name the key, the
        expected spec and what came.

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> env = PendulumEnv()
            >>> td = env.step(env.rand_action(env.reset()))
            >>> td["next", "reward"].shape, td["next", "done"].shape
            (torch.Size([1]), torch.Size([1]))
        """
        plan = self.__dict__["_cache"].get("plan") or self._plan
        if (plan.batch_locked or plan.nb) and tensordict.batch_size != plan.batch_size:
            self._check_batch(tensordict, plan)
        if type(tensordict) is TensorDict:
            partial = tensordict._tensordict.get("_step")
        else:
            partial = tensordict._get_str("_step", None)
        if partial is not None:
            return self._partial_step(tensordict, partial, plan)
        return self._full_step(tensordict, plan)

    def _full_step(self, tensordict: TensorDictBase, plan: _StepPlan) -> TensorDictBase:
        d = self.__dict__
        type_checks = d["_run_type_checks"]
        if type_checks or not plan.actions_ok(tensordict):
            plan.check_actions(self, tensordict, type_checks)
        next_td = self._step(tensordict)
        if type(next_td) is not TensorDict and not isinstance(next_td, TensorDictBase):
            raise TypeError(
                f"{type(self).__name__}._step returned {type(next_td).__name__}; "
                "a TensorDict was expected."
            )
        if next_td is tensordict:
            raise RuntimeError(f"{type(self).__name__}._step must return a new tensordict.")
        batch_size = tensordict.batch_size
        same_batch = next_td.batch_size == batch_size
        if not same_batch and not next_td.batch_dims:
            # a _step that built its output without a batch size: adopt the input's
            next_td.batch_size = batch_size
            same_batch = True
        if not plan.outputs_ok(next_td):
            plan.complete_output(self, next_td, step=True)
        if d["_finite_on"]:
            check_step(self, tensordict, next_td)
        if type_checks:
            self._check_observations(next_td)
        if d["_auto_reset"]:
            self._auto_reset_step(next_td, plan)
        if type(tensordict) is TensorDict:
            preset = tensordict._tensordict.get("next")
        else:
            preset = tensordict._get_str("next", None)
        if preset is not None:
            _merge_missing(next_td, preset)
        if same_batch and next_td.device == tensordict.device:
            tensordict._set_str("next", next_td, validated=True, inplace=False)
        else:
            tensordict.set("next", next_td)
        return tensordict

    def _partial_step(
        self, tensordict: TensorDictBase, mask: torch.Tensor, plan: _StepPlan
    ) -> TensorDictBase:
        tensordict.del_("_step")
        if not _any(mask):
            tensordict.set("next", _skip_next(self, tensordict))
            return tensordict
        if bool(mask.all()):
            return self._full_step(tensordict, plan)
        if plan.batch_locked and plan.nb:
            # a batched env receives the mask and is trusted to honour it
            tensordict.set("_step", mask)
            return self._full_step(tensordict, plan)
        batch = tensordict.batch_size
        flat = _align_mask(mask, batch, len(batch)).reshape(batch)
        sub = self._full_step(tensordict[flat], plan)
        tensordict.set("next", _merge_sub_next(tensordict, sub.get("next"), flat, batch))
        return tensordict

    def _check_observations(self, data: TensorDictBase) -> None:
        check_observations(self, data, self._plan)

    def _auto_reset_step(self, next_td: TensorDictBase, plan: _StepPlan) -> None:
        saved = save_auto_reset(next_td, plan, self.__dict__["_auto_reset_replace"])
        if saved is not None:
            self.__dict__["_auto_reset_saved"] = saved

    #: ``(tensordict, tensordict_) -> (tensordict, tensordict_)`` run after ``step_mdp`` in
    #: ``step_and_maybe_reset`` and ``rollout`` (before the reset), or ``None`` (the default:
    #: no call). ``TransformedEnv`` sets it when a transform needs it.
    _post_step_mdp_hooks: Callable[..., tuple[TensorDictBase, TensorDictBase]] | None = None

    def step_and_maybe_reset(
        self, tensordict: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, then builds the next input with ``step_mdp`` and resets it where done.

        Returns:
            ``(tensordict, tensordict_)``: the step output (with ``"next"``) and the input
            of the next step.
        """
        if type(tensordict) is TensorDict:
            direct = cached_direct_plan(self)
            if direct is not None and self._post_step_mdp_hooks is None:
                out = direct_step_and_maybe_reset(self, direct, tensordict)
                if out is not None:
                    return out
        device = self.__dict__["_device"]
        if device is not None and tensordict.device != device:
            tensordict = tensordict.to(device)
        tensordict = self.step(tensordict)
        cache = self.__dict__["_cache"]
        tensordict_ = (cache.get("step_mdp") or self._step_mdp)(tensordict)
        hooks = self._post_step_mdp_hooks
        if hooks is not None:
            tensordict, tensordict_ = hooks(tensordict, tensordict_)
        if (cache.get("plan") or self._plan).simple_done and type(tensordict_) is TensorDict:
            # one look at the root done: fast exit when nothing is done (the common case)
            done = tensordict_._tensordict.get("done")
            if done is not None:
                if not (done.item() if done.numel() == 1 else done.any()):
                    return tensordict, tensordict_
                cls = type(self)
                if cls.maybe_reset is EnvBase.maybe_reset and cls.any_done is EnvBase.any_done:
                    # what maybe_reset does, without looking at done again
                    tensordict_._set_str("_reset", done.clone(), validated=True, inplace=False)
                    return tensordict, self.reset(tensordict_, select_reset_only=True)
        return tensordict, self.maybe_reset(tensordict_)

    # ------------------------------------------------------------------ random actions, seeds
    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a random action (sampled from the action spec) into ``tensordict``."""
        plan = self.__dict__["_cache"].get("plan") or self._plan
        fast, nested = plan.rand_fast, plan.rand_nested
        generator = self._action_generator()
        if generator is not None:
            return self._rand_action_from(tensordict, plan, generator)
        if (
            (fast is not None or nested is not None)
            and type(tensordict) is TensorDict
            and tensordict.batch_size == plan.batch_size
            and tensordict.device in (None, plan.device)
        ):
            # batch-locked, same batch and device: write the samples unvalidated
            if nested is None:
                for key, rand in fast:
                    tensordict._set_str(key, rand(), validated=True, inplace=False)
                return tensordict
            targets = nested_rand_targets(tensordict, nested)
            if targets is not None:
                for node, (_, _, key, rand) in zip(targets, nested, strict=True):
                    node._set_str(key, rand(), validated=True, inplace=False)
                return tensordict
        shape = torch.Size(())
        if not self.batch_locked and not self.batch_size and tensordict is not None:
            shape = tensordict.batch_size
        if tensordict is None:
            return self.full_action_spec.rand(shape)
        actions = plan.actions
        if not all(leaf.is_str for leaf in actions):
            # nested keys: the Composite builds the sub-tensordicts with their own batch dims
            return tensordict.update(self.full_action_spec.rand(shape))
        for leaf in actions:
            tensordict._set_str(leaf.key, leaf.spec.rand(shape), validated=False, inplace=False)
        return tensordict

    def _rand_action_from(
        self, tensordict: TensorDictBase | None, plan: _StepPlan, generator: torch.Generator
    ) -> TensorDictBase:
        """``rand_action`` drawing from ``generator`` (the env's seeded one): the same paths
        and the same draws, in the same order, as from the global generator."""
        fast, nested = plan.rand_fast, plan.rand_nested
        if (
            (fast is not None or nested is not None)
            and type(tensordict) is TensorDict
            and tensordict.batch_size == plan.batch_size
            and tensordict.device in (None, plan.device)
        ):
            if nested is None:
                for key, rand in fast:
                    value = rand(generator=generator)
                    tensordict._set_str(key, value, validated=True, inplace=False)
                return tensordict
            targets = nested_rand_targets(tensordict, nested)
            if targets is not None:
                for node, (_, _, key, rand) in zip(targets, nested, strict=True):
                    value = rand(generator=generator)
                    node._set_str(key, value, validated=True, inplace=False)
                return tensordict
        shape = torch.Size(())
        if not self.batch_locked and not self.batch_size and tensordict is not None:
            shape = tensordict.batch_size
        if tensordict is None:
            return self.full_action_spec.rand(shape, generator=generator)
        actions = plan.actions
        if not all(leaf.is_str for leaf in actions):
            return tensordict.update(self.full_action_spec.rand(shape, generator=generator))
        for leaf in actions:
            value = leaf.spec.rand(shape, generator=generator)
            tensordict._set_str(leaf.key, value, validated=False, inplace=False)
        return tensordict

    def _action_generator(self) -> torch.Generator | None:
        """The generator of the env's random actions (seeded by :meth:`set_seed`), or ``None``
        before a seed: torch's global generator then, as in TorchRL."""
        return self.__dict__.get("_rand_generator")

    def _seed_action_generator(self, seed: int | None) -> None:
        """Seeds the random actions' generator with ``seed`` (``None``: back to torch's global
        generator)."""
        d = self.__dict__
        d["_rand_seed"] = seed
        d["_rand_generator"] = None if seed is None else _action_generator_for(self.device, seed)

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step with a random action; resets first when ``tensordict`` is ``None``."""
        if tensordict is None:
            tensordict = self.reset()
        return self.step(self.rand_action(tensordict))

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env and its random actions; returns the seed for the next env.

        The simulator gets ``seed`` as TorchRL's wrappers give it (gym: a seeded reset right
        away). The random actions of :meth:`rand_action`, :meth:`rand_step` and
        :meth:`rollout` without a policy then draw from the env's own generator, seeded with
        ``seed`` (``None``: torch's global generator, as TorchRL's). The returned seed follows
        TorchRL's rule (``static_seed``: ``seed`` itself), so batched envs give their workers
        TorchRL's seeds.

        >>> from torchenv.envs.builtin import PendulumEnv
        >>> env = PendulumEnv()
        >>> _ = env.set_seed(0)
        >>> first = env.rollout(5)
        >>> _ = env.set_seed(0)
        >>> torch.equal(first["action"], env.rollout(5)["action"])
        True
        """
        _check_seed(seed)
        if seed is not None:
            seed = int(seed)
        self._set_seed(seed)
        self._seed_action_generator(seed)
        if seed is None or static_seed:
            return seed
        return _next_seed(seed)

    # ------------------------------------------------------------------ misc
    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled tensordict with the structure of a step output (with ``"next"``)."""
        obs = self.full_observation_spec.zero()
        done = self.full_done_spec.zero()
        reward = self.full_reward_spec.zero()
        out = self.full_state_spec.zero()
        out.update(self.full_action_spec.zero())
        out.update(obs)
        out.update(done.clone())
        next_td = obs.clone()
        next_td.update(reward)
        next_td.update(done)
        out.set("next", next_td)
        if self.device is not None:
            out = out.to(self.device)
        return out

    def rollout(self, max_steps: int, policy=None, callback=None, **kwargs) -> TensorDictBase:
        """Runs up to ``max_steps`` steps; see :func:`torchenv.envs._rollout.rollout` for keywords.

        Keyword Args:
            actions (Iterable): actions to replay instead of a policy: each is written under
                the env's (top-level) action key before its step; at most ``max_steps`` are
                taken, and the rollout stops when they run out.
            auto_reset (bool): reset before the first step (default ``True``).
            auto_cast_to_device (bool): move data between the policy and env devices.
            break_when_any_done (bool): stop at the first done (default, unless
                ``break_when_all_done``).
            break_when_all_done (bool): keep stepping the envs that are not done (partial
                steps) until all are done.
            return_contiguous (bool): stack the steps densely (default) or lazily (needed for
                dynamic specs); ``None`` picks from the specs.
            tensordict (TensorDictBase): the first input (requires ``auto_reset=False``).
            set_truncated (bool): mark the last step as truncated.
            out (TensorDictBase): a tensordict to stack into.
            trust_policy (bool): call the policy as is, without checking or wrapping it.
            progress (bool | str): show a progress bar (tqdm) on stderr, labelled with the
                string if one is given.
            storing_device (torch.device | str): where the returned steps are stored.
            set_state (bool): passed to the first :meth:`reset`.

        Returns:
            the stacked steps, with a trailing dim named ``"time"``.
        """
        from torchenv.envs._rollout import rollout

        return rollout(self, max_steps, policy, callback, **kwargs)

    @classmethod
    def register_gym(cls, id: str, **kwargs: Any) -> Any:
        """Registers this env class with gymnasium under ``id`` (TorchRL's ``register_gym``).

        ``gymnasium.make(id)`` then builds the env and returns it behind the gymnasium API
        (:func:`torchenv.to_gymnasium`). Keyword arguments: ``entry_point``, ``transform``,
        ``info_keys``, ``to_numpy`` (default ``False``, as TorchRL: tensors), ``max_episode_steps``,
        ``reward_threshold``, ``nondeterministic``, ``order_enforce``, ``disable_env_checker``;
        any other is a default keyword argument of the env's constructor.

        >>> import gymnasium
        >>> from torchenv.envs import PendulumEnv
        >>> PendulumEnv.register_gym("TorchenvPendulumDoc-v0", to_numpy=True)
        >>> gymnasium.make("TorchenvPendulumDoc-v0").reset(seed=0)[0]["observation"].shape
        (3,)
        """
        from torchenv.interop._gymnasium import register_gym

        return register_gym(cls, id, **kwargs)

    def check_env_specs(self, *args, **kwargs) -> None:
        """Runs :func:`torchenv.envs.check_env_specs` on this env."""
        from torchenv.envs._checks import check_env_specs

        check_env_specs(self, *args, **kwargs)

    def append_transform(self, transform) -> Any:
        """Returns ``TransformedEnv(self, transform)``."""
        from torchenv.transforms import TransformedEnv

        return TransformedEnv(self, transform)

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Closes the env. Idempotent: closing a closed env does nothing, unless
        ``raise_if_closed=True`` asks for a ``RuntimeError``."""
        if self.is_closed and raise_if_closed:
            raise RuntimeError(f"{type(self).__name__} is already closed.")
        self.is_closed = True

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n    output_spec={self.output_spec},\n"
            f"    input_spec={self.input_spec},\n    device={self.device},\n"
            f"    batch_size={self.batch_size})"
        )


def _merge_missing(dst: TensorDictBase, src: TensorDictBase) -> None:
    """Copies into ``dst`` the entries of ``src`` that ``dst`` lacks (nested levels merged)."""
    if type(dst) is TensorDict and type(src) is TensorDict:
        target = dst._tensordict
        tensor = torch.Tensor
        for key, value in src._tensordict.items():
            current = target.get(key)
            if current is None:
                dst._set_str(key, value, validated=False, inplace=False)
            elif (
                type(current) is not tensor
                and type(value) is not tensor
                and isinstance(current, TensorDictBase)
                and isinstance(value, TensorDictBase)
            ):
                _merge_missing(current, value)
        return
    for key in src.keys(True, True):
        if _get_nested(dst, key) is None:
            dst.set(key, src.get(key))


def _select_reset(tensordict: TensorDictBase, plan: _StepPlan) -> TensorDictBase:
    """``tensordict.select(*reset_keys, strict=False)``, cheaply for a root ``"_reset"``."""
    if plan.root_reset and type(tensordict) is TensorDict:
        mask = tensordict._tensordict.get("_reset")
        return TensorDict._new_unsafe(
            {} if mask is None else {"_reset": mask},
            batch_size=tensordict.batch_size,
            device=tensordict.device,
            nested=False,
        )
    return tensordict.select(*plan.reset_keys, strict=False)


def _has_any(td: TensorDictBase, keys: list[NestedKey]) -> bool:
    return any(_get_nested(td, k) is not None for k in keys)
