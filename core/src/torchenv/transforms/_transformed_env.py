"""``TransformedEnv``: an env made of a base env and a chain of transforms."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.envs import EnvBase
from torchenv.envs._reset import save_auto_reset
from torchenv.envs._step import _merge_sub_next, _skip_next
from torchenv.specs import Composite
from torchenv.transforms._auto_unwrap import auto_unwrap_transformed_env
from torchenv.transforms._base import Transform
from torchenv.transforms._compose import Compose, _as_transform

__all__ = ["AutoResetEnv", "TransformedEnv"]

# nn.Module internals that must never be looked up on the base env
_NO_FALLTHROUGH = frozenset(
    {
        "_parameters",
        "_buffers",
        "_modules",
        "_non_persistent_buffers_set",
        "_forward_hooks",
        "_forward_pre_hooks",
        "_backward_hooks",
        "_state_dict_hooks",
        "_load_state_dict_pre_hooks",
        "base_env",
        "_transform",
    }
)


# ---------------------------------------------------------------------------------------------
# The one seam to the envs layer's private machinery. A TransformedEnv drives its base env
# below the public API: it calls the base env's ``_step`` / ``_reset`` hooks and completes their
# outputs with the base env's step plan (``_plan.complete_output``) itself, so that the
# transforms run between the base env and the checks of ``EnvBase.step``. The private names
# (``_plan``, ``save_auto_reset``, ``_skip_next``, ``_merge_sub_next``) are used only in this
# module: ``_plan`` and ``save_auto_reset`` by the functions below, the two step helpers by
# ``TransformedEnv._partial_base_step``; no other transforms module touches envs internals.


def _base_plan(base: EnvBase) -> Any:
    """The base env's step plan (what completes its raw ``_step`` / ``_reset`` outputs)."""
    return base._plan


def _base_step(
    base: EnvBase, tensordict: TensorDictBase, plan: Any | None = None
) -> TensorDictBase:
    """``base._step(tensordict)``, completed by ``plan`` (default: the base env's plan)."""
    next_tensordict = base._step(tensordict)
    if plan is None:
        plan = base._plan
    plan.complete_output(base, next_tensordict, step=True)
    return next_tensordict


def _complete_base_reset(base: EnvBase, tensordict_reset: TensorDictBase) -> TensorDictBase:
    """Completes the output of the base env's reset (reshaped dones, missing done entries)."""
    base._plan.complete_output(base, tensordict_reset, step=False)
    return tensordict_reset


def _saved_base_auto_reset(base: EnvBase, next_tensordict: TensorDictBase) -> Any:
    """What an auto-resetting base env keeps of a done step for its next reset (or ``None``)."""
    replace = base.__dict__.get("_auto_reset_replace", True)
    return save_auto_reset(next_tensordict, base._plan, replace)


class TransformedEnv(EnvBase):
    """An env whose outputs (and inputs) go through a chain of transforms.

    The specs are those of ``base_env`` mapped by each transform, innermost first; they are
    computed once and cached (until the chain changes, or always with ``cache_specs=False``).
    ``step`` applies the inverse transforms outermost first to the input, steps the base env,
    then applies the transforms innermost first to the output. Attributes that the
    transformed env does not have are read from ``base_env``. A base env created with
    ``auto_reset=True`` keeps resetting itself: the next reset hands the first observations of
    its new episode to the transforms' ``_reset`` instead of calling the base env's ``_reset``.

    Args:
        base_env: the env to transform.
        transform: a transform, a list of transforms, a ``Compose`` or a callable
            ``TensorDict -> TensorDict``. ``env.transform`` is always a ``Compose``.
        cache_specs: cache the transformed specs. Defaults to ``True``.

    Keyword Args:
        auto_unwrap: when ``base_env`` is itself a ``TransformedEnv``, wrap its base env and
            chain its transforms (clones) before ``transform``. Defaults to ``True``.
        device: move the base env to this device first.

    Examples:
        >>> from torchenv.envs import CartPoleEnv
        >>> from torchenv.transforms import StepCounter, RewardSum
        >>> env = TransformedEnv(CartPoleEnv(), StepCounter(max_steps=10))
        >>> env = env.append_transform(RewardSum())
        >>> td = env.rollout(20, break_when_any_done=False)
        >>> td.shape, sorted(env.observation_spec.keys())
        (torch.Size([20]), ['episode_reward', 'observation', 'step_count'])
        >>> env.transform[-1].parent.transform[0] is not env.transform[0]  # clones
        True
    """

    def __init__(
        self,
        base_env: EnvBase,
        transform: Transform | Any | None = None,
        cache_specs: bool = True,
        *,
        auto_unwrap: bool | None = None,
        device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(base_env, EnvBase):
            raise TypeError(
                f"TransformedEnv: base_env must be an EnvBase, got {type(base_env).__name__}"
            )
        if device is not None:
            base_env = base_env.to(device)
        if auto_unwrap is None:
            auto_unwrap = auto_unwrap_transformed_env()
        inner: list[Transform] = []
        if auto_unwrap and type(base_env) is TransformedEnv and type(self) is TransformedEnv:
            inner = [t.clone() for t in base_env.transform]
            base_env = base_env.base_env
        super().__init__(device=base_env.device, batch_size=base_env.batch_size, **kwargs)
        d = self.__dict__
        d["_tspecs_valid"] = False
        d["_computing_specs"] = False
        d["cache_specs"] = cache_specs
        d["_hot"] = None
        self.base_env = base_env
        if transform is None:
            transforms = []
        elif isinstance(transform, (list, tuple)):
            transforms = list(transform)
        elif type(transform) is Compose and not inner:
            transforms = None
        elif type(transform) is Compose:
            transforms = list(transform)
            for t in transforms:
                t.reset_parent()
        else:
            transforms = [transform]
        if transforms is None:
            compose = transform
        else:
            compose = Compose(*inner, *[_as_transform(t) for t in transforms])
        self.transform = compose

    def _post_init(self, **flags: Any) -> None:
        d = self.__dict__
        d["_post_init_done"] = True
        d["_is_spec_locked"] = bool(flags.get("spec_locked", True))
        if "auto_reset" in flags:
            d["_auto_reset"] = flags["auto_reset"]

    # ------------------------------------------------------------ transform chain
    @property
    def transform(self) -> Compose:
        """The chain of transforms (always a :class:`Compose`)."""
        return self._modules["_transform"]

    @transform.setter
    def transform(self, transform: Transform | Any) -> None:
        transform = _as_transform(transform)
        if type(transform) is not Compose:
            transform = Compose(transform)
        previous = self._modules.get("_transform")
        if previous is not None and previous is not transform:
            previous.empty_cache()
            previous.reset_parent()
        transform.set_container(self)
        if self.base_env.device is not None:
            transform.to(self.base_env.device)
        transform.eval()
        self._modules["_transform"] = transform
        self.empty_cache()

    def append_transform(self, transform: Transform | Any) -> TransformedEnv:
        """Appends a transform (outermost) to the chain; returns the env."""
        transform = _as_transform(transform)
        if self.base_env.device is not None:
            transform = transform.to(self.base_env.device)
        self.transform.append(transform)
        return self

    def insert_transform(self, index: int, transform: Transform | Any) -> TransformedEnv:
        """Inserts a transform at ``index`` of the chain; returns the env."""
        transform = _as_transform(transform)
        if self.base_env.device is not None:
            transform = transform.to(self.base_env.device)
        self.transform.insert(index, transform)
        return self

    # ----------------------------------------------------------------- specs
    def empty_cache(self) -> None:
        """Drops the transformed specs, key lists and cached parents (the chain changed)."""
        d = self.__dict__
        d["_cache"].clear()
        d["_tspecs_valid"] = False
        d["_hot"] = None
        transform = self._modules.get("_transform") if "_modules" in d else None
        if transform is not None:
            transform.empty_cache()

    def set_spec_lock_(self, mode: bool = True) -> TransformedEnv:
        d = self.__dict__
        d["_cache"].clear()
        if d.get("_tspecs_valid"):
            for name in ("_input_spec", "_output_spec"):
                spec = d[name]
                spec.lock_(recurse=True) if mode else spec.unlock_(recurse=True)
        d["_is_spec_locked"] = bool(mode)
        return self

    def _ensure_specs(self) -> None:
        d = self.__dict__
        if d["_tspecs_valid"]:
            return
        if d["_computing_specs"]:
            raise RuntimeError(
                "TransformedEnv: a transform read the specs of its own env while they were "
                "being computed; use `transform.parent` (the env up to that transform) instead"
            )
        d["_computing_specs"] = True
        try:
            base = self.base_env
            output_spec = base.output_spec.clone()
            input_spec = base.input_spec.clone()
            output_spec.unlock_(recurse=True)
            input_spec.unlock_(recurse=True)
            output_spec = self.transform.transform_output_spec(output_spec)
            input_spec = self.transform.transform_input_spec(input_spec)
            for spec in (output_spec, input_spec):
                if not isinstance(spec, Composite):
                    raise TypeError(
                        f"TransformedEnv: a transform returned a {type(spec).__name__} instead "
                        "of a Composite from transform_output_spec / transform_input_spec"
                    )
            if d["_is_spec_locked"]:
                output_spec.lock_(recurse=True)
                input_spec.lock_(recurse=True)
            d["_output_spec"] = output_spec
            d["_input_spec"] = input_spec
            d["_cache"].clear()
            d["_tspecs_valid"] = d["cache_specs"]
        finally:
            d["_computing_specs"] = False

    @property
    def output_spec(self) -> Composite:
        self._ensure_specs()
        return self.__dict__["_output_spec"]

    @output_spec.setter
    def output_spec(self, value) -> None:
        raise RuntimeError(
            "TransformedEnv: specs are derived from the base env and the transforms; "
            "change the base env's specs or the transforms instead"
        )

    @property
    def input_spec(self) -> Composite:
        self._ensure_specs()
        return self.__dict__["_input_spec"]

    @input_spec.setter
    def input_spec(self, value) -> None:
        self.output_spec = value

    def _full(self, parent: str, part: str) -> Composite:
        self._ensure_specs()
        return self.__dict__[parent][part]

    def _full_getter(parent: str, part: str):
        def getter(self) -> Composite:
            self._ensure_specs()
            return self.__dict__[parent][part]

        def setter(self, value) -> None:
            self._set_spec_part(parent, part, value)

        getter.__doc__ = f"``{part}`` of the base env, mapped by the transforms."
        return property(getter, setter)

    full_action_spec = _full_getter("_input_spec", "full_action_spec")
    full_state_spec = _full_getter("_input_spec", "full_state_spec")
    full_observation_spec = _full_getter("_output_spec", "full_observation_spec")
    full_reward_spec = _full_getter("_output_spec", "full_reward_spec")
    full_done_spec = _full_getter("_output_spec", "full_done_spec")
    del _full_getter

    def _set_spec_part(self, parent: str, part: str, value: Composite) -> None:
        raise RuntimeError(
            f"TransformedEnv: cannot set {part}; set it on the base env or use a transform"
        )

    # ------------------------------------------------------- read-through attributes
    @property
    def batch_size(self) -> torch.Size:
        base = self.__dict__.get("_modules", {}).get("base_env")
        if base is None:
            return self.__dict__["_batch_size"]
        transform = self._modules.get("_transform")
        if transform is None:
            return base.batch_size
        return transform.transform_env_batch_size(base.batch_size)

    @batch_size.setter
    def batch_size(self, value) -> None:
        raise RuntimeError(
            "TransformedEnv: the batch size comes from the base env; change it there"
        )

    @property
    def device(self) -> torch.device | None:
        base = self.__dict__.get("_modules", {}).get("base_env")
        if base is None:
            return self.__dict__["_device"]
        transform = self._modules.get("_transform")
        if transform is None:
            return base.device
        return transform.transform_env_device(base.device)

    @property
    def batch_locked(self) -> bool:
        return self.base_env.batch_locked

    @batch_locked.setter
    def batch_locked(self, value: bool) -> None:
        raise RuntimeError("TransformedEnv.batch_locked is read-only (set it on the base env)")

    def __setattr__(self, name: str, value: Any) -> None:
        # nn.Module.__setattr__ would register a module value under the property's name
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):
            if prop.fset is None:
                raise AttributeError(f"TransformedEnv.{name} is read-only")
            prop.fset(self, value)
            return
        super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError as err:
            if name.startswith("__") or name in _NO_FALLTHROUGH:
                raise
            modules = self.__dict__.get("_modules")
            base = modules.get("base_env") if modules is not None else None
            if base is None:
                raise AttributeError(
                    f"TransformedEnv has no attribute {name!r} (and no base env yet)"
                ) from err
            return getattr(base, name)

    # ------------------------------------------------------------------ steps
    def _hot_path(self) -> tuple[bool, Any, Any, Compose, bool]:
        hot = self.__dict__["_hot"]
        if hot is None:
            base = self._modules["base_env"]
            transform = self._modules["_transform"]
            hot = (transform._has_inverse, base, _base_plan(base), transform, base.auto_reset)
            if self.__dict__["_is_spec_locked"] and base.spec_locked:
                self.__dict__["_hot"] = hot
        return hot

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        has_inverse, base, base_plan, transform, auto_reset = self._hot_path()
        if has_inverse:
            tensordict_in = transform._inv_call(tensordict.copy())
            for key in self._cached("inverse_state_keys", self._inverse_state_keys):
                tensordict.set(key, tensordict_in.get(key))
        else:
            tensordict_in = tensordict
        partial = tensordict_in.get("_step", None) if has_inverse else None
        if partial is not None:
            return self._partial_base_step(tensordict_in, partial)
        next_tensordict = _base_step(base, tensordict_in, base_plan)
        if auto_reset:
            self._save_base_auto_reset(next_tensordict)
        return transform._step(tensordict_in, next_tensordict)

    def _inverse_state_keys(self) -> list[NestedKey]:
        """Base env actions that this env exposes as state (e.g. ``ActionDiscretizer`` with its
        own ``out_action_key``): the inverse transforms compute them, and the step writes them
        into its input tensordict, as TorchRL's does."""
        actions = set(self._modules["base_env"].action_keys)
        return [key for key in self.state_keys if key in actions]

    def _save_base_auto_reset(self, next_tensordict: TensorDictBase) -> None:
        """The base env resets itself: keep the first observations of its next episode.

        They replace the base env's ``_reset`` at the next (partial) reset, so that the
        transforms' ``_reset`` still runs on them.
        """
        saved = _saved_base_auto_reset(self._modules["base_env"], next_tensordict)
        if saved is not None:
            self.__dict__["_base_auto_reset_saved"] = saved

    def _partial_base_step(
        self, tensordict_in: TensorDictBase, partial: torch.Tensor
    ) -> TensorDictBase:
        """A ``"_step"`` mask set by a transform: skip the base step (and later transforms)."""
        base = self.base_env
        tensordict_in = tensordict_in.exclude("_step")
        if not bool(partial.any()):
            return _skip_next(self, tensordict_in)  # envs' private "nothing stepped" output
        if not bool(partial.all()):
            if base.batch_locked:
                tensordict_in.set("_step", partial)
            else:
                flat = partial.reshape(tensordict_in.batch_size)
                sub = tensordict_in[flat]
                next_sub = self.transform._step(sub, _base_step(base, sub))
                return _merge_sub_next(tensordict_in, next_sub, flat)
        next_tensordict = _base_step(base, tensordict_in)
        return self.transform._step(tensordict_in, next_tensordict)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        tensordict = self._reset_input(tensordict)
        tensordict = self.transform._reset_env_preprocess(tensordict)
        base = self.base_env
        saved = self.__dict__.pop("_base_auto_reset_saved", None)
        if saved is not None and _asks_reset(tensordict, base):
            tensordict_reset = saved  # the base env already reset itself
        else:
            tensordict_reset = base._reset(tensordict, **kwargs)
        return self._transform_reset(tensordict, _complete_base_reset(base, tensordict_reset))

    def _reset_input(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """The reset and state entries of the input of ``reset`` (``None`` stays ``None``)."""
        if tensordict is None:
            return None
        keys = self._cached("reset_input_keys", lambda: [*self.reset_keys, *self.state_keys])
        return tensordict.select(*keys, strict=False)

    def _transform_reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """Runs the transforms' ``_reset`` on the (completed) base env reset output."""
        if tensordict is None:
            tensordict = tensordict_reset.empty()
        return self.transform._reset(tensordict, tensordict_reset)

    # ------------------------------------------------------- post-step-mdp hooks
    @property
    def _post_step_mdp_hooks(self) -> Any:
        """The chain's and base env's post-``step_mdp`` hooks as one callable, or ``None``.

        ``None`` (the env skips the call) unless a transform overrides
        ``Transform._post_step_mdp_hooks`` or the base env has hooks.
        """
        return self._cached("post_step_mdp_hooks", self._make_post_step_mdp_hooks)[0]

    def _make_post_step_mdp_hooks(self) -> tuple[Any]:
        transform = self._modules["_transform"]
        base_hook = self._modules["base_env"]._post_step_mdp_hooks
        if not transform._has_post_step_mdp_hooks:
            return (base_hook,)
        chain = transform._post_step_mdp_hooks
        if base_hook is None:
            return (chain,)

        def hooks(
            tensordict: TensorDictBase, tensordict_: TensorDictBase
        ) -> tuple[TensorDictBase, TensorDictBase]:
            return base_hook(*chain(tensordict, tensordict_))

        return (hooks,)

    def fake_tensordict(self) -> TensorDictBase:
        """The base env's structure mapped by the specs, then by ``transform_fake_tensordict``."""
        return self.transform.transform_fake_tensordict(super().fake_tensordict())

    def _check_batched_worker_compat(self) -> None:
        """Raises if a transform of the chain cannot run inside a batched env's worker."""
        self.transform._check_batched_worker_compat()

    # ------------------------------------------------------------------ misc
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the base env."""
        return self.base_env.set_seed(seed, static_seed=static_seed)

    def _set_seed(self, seed: int | None) -> None:
        self.base_env._set_seed(seed)

    def _action_generator(self) -> torch.Generator | None:
        # the random actions draw from the base env's generator, seeded by set_seed
        return self.base_env._action_generator()

    def to(self, device) -> TransformedEnv:
        self.base_env.to(device)
        self.transform.to(device)
        self.empty_cache()
        return self

    def state_dict(self, *args: Any, **kwargs: Any) -> OrderedDict:
        return self.transform.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, *args: Any, **kwargs: Any):
        return self.transform.load_state_dict(state_dict, *args, **kwargs)

    def eval(self) -> TransformedEnv:
        self.transform.eval()
        return self

    def train(self, mode: bool = True) -> TransformedEnv:
        self.transform.train(mode)
        return self

    def set_missing_tolerance(self, mode: bool = False) -> None:
        """Whether transforms skip (``True``) or raise on (``False``) missing in_keys."""
        self.transform.set_missing_tolerance(mode)

    def close(self, *, raise_if_closed: bool = False) -> None:
        self.base_env.close(raise_if_closed=raise_if_closed)
        self.transform.close()
        self.is_closed = True

    def __setstate__(self, state: dict[str, Any]) -> None:
        # transforms do not pickle their (weak) container: re-attach the chain to this env
        super().__setstate__(state)
        self.__dict__["_hot"] = None
        self._modules["_transform"].__dict__["_container"] = weakref.ref(self)

    def __repr__(self) -> str:
        env = repr(self.base_env).replace("\n", "\n    ")
        transform = repr(self.transform).replace("\n", "\n    ")
        return f"TransformedEnv(\n    env={env},\n    transform={transform})"


def _asks_reset(tensordict: TensorDictBase | None, base: EnvBase) -> bool:
    """Whether the input of ``reset`` holds one of the base env's ``"_reset"`` entries."""
    return tensordict is not None and any(k in tensordict.keys(True) for k in base.reset_keys)


class AutoResetEnv(TransformedEnv):
    """A ``TransformedEnv`` over an auto-resetting base env (see :class:`AutoResetTransform`).

    Its reset does not reset the base env when the input has ``"_reset"`` entries: the
    observations saved at the last done step are used instead.
    """

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        tensordict = self._reset_input(tensordict)
        base = self.base_env
        if _asks_reset(tensordict, base):
            tensordict_reset = tensordict.exclude(*base.reset_keys)
        else:
            tensordict_reset = _complete_base_reset(base, base._reset(tensordict, **kwargs))
        return self._transform_reset(tensordict, tensordict_reset)

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        raise RuntimeError("AutoResetEnv: transforms cannot be inserted (append them instead)")
