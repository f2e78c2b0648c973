"""Other transforms: FiniteTensorDictCheck, Timer, ConditionalSkip, EndOfLifeTransform,
AutoResetTransform, BatchSizeTransform."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Composite, Unbounded
from torchenv.transforms._base import Transform
from torchenv.transforms._utils import flag_spec_like, mask_like

__all__ = [
    "AutoResetTransform",
    "BatchSizeTransform",
    "ConditionalSkip",
    "EndOfLifeTransform",
    "FiniteTensorDictCheck",
    "PinMemoryTransform",
    "Timer",
]


class FiniteTensorDictCheck(Transform):
    """Raises ``ValueError`` if an entry of the step or reset output is not finite.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> FiniteTensorDictCheck()(TensorDict(a=torch.ones(1)))["a"]
        tensor([1.])
    """

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key, value in next_tensordict.items(True, True):
            if (
                isinstance(value, torch.Tensor)
                and value.is_floating_point()
                and not torch.isfinite(value).all()
            ):
                raise ValueError(
                    f"FiniteTensorDictCheck: the entry {key!r} has non-finite values: {value}"
                )
        return next_tensordict

    forward = _call

    def _reset(self, tensordict, tensordict_reset):
        return self._call(tensordict_reset)

    def __repr__(self) -> str:
        return "FiniteTensorDictCheck()"


class Timer(Transform):
    """Measures the wall time of the env step, of the policy (between steps) and of resets.

    Writes ``"time_step"``, ``"time_policy"`` and ``"time_reset"`` (seconds, float64, batch
    shaped) into the outputs.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), Timer())
        >>> (env.rollout(3)["next", "time_step"] >= 0).all().item()
        True
    """

    def __init__(self, out_keys: Sequence[NestedKey] | None = None, time_key: str = "time") -> None:
        if out_keys is None:
            out_keys = [f"{time_key}_step", f"{time_key}_policy", f"{time_key}_reset"]
        elif len(out_keys) != 3:
            raise TypeError(f"Timer: expected three out_keys (step, policy, reset), got {out_keys}")
        super().__init__(in_keys=[], out_keys=out_keys)
        self.__dict__["_out_keys_fixed"] = self.out_keys
        self.time_key = time_key
        self.time_step_key, self.time_policy_key, self.time_reset_key = self.out_keys
        self.last_inv_time = self.last_call_time = self.last_reset_time = None

    @property
    def _key_pairs(self):
        return ()

    @property
    def _has_inverse(self) -> bool:
        return True

    def _stamp(self, elapsed: float, like: TensorDictBase) -> torch.Tensor:
        return torch.full(like.batch_size, elapsed, dtype=torch.float64, device=like.device)

    def _reset_env_preprocess(self, tensordict):
        self.last_reset_time = self.last_inv_time = time.perf_counter()
        return tensordict

    def _reset(self, tensordict, tensordict_reset):
        now = time.perf_counter()
        elapsed = now - self.last_reset_time if self.last_reset_time is not None else 0.0
        tensordict_reset.set(self.time_reset_key, self._stamp(elapsed, tensordict_reset))
        tensordict_reset.set(self.time_step_key, self._stamp(0.0, tensordict_reset))
        tensordict_reset.set(self.time_policy_key, self._stamp(0.0, tensordict_reset))
        self.last_call_time = now
        return tensordict_reset

    def _inv_call(self, tensordict):
        now = time.perf_counter()
        if self.last_call_time is not None:
            tensordict.set(self.time_policy_key, self._stamp(now - self.last_call_time, tensordict))
        self.last_inv_time = now
        return tensordict

    def _step(self, tensordict, next_tensordict):
        now = time.perf_counter()
        elapsed = now - self.last_inv_time if self.last_inv_time is not None else 0.0
        next_tensordict.set(self.time_step_key, self._stamp(elapsed, next_tensordict))
        next_tensordict.set(self.time_reset_key, self._stamp(0.0, next_tensordict))
        policy = tensordict.get(self.time_policy_key, None)
        next_tensordict.set(
            self.time_policy_key,
            policy if policy is not None else self._stamp(0.0, next_tensordict),
        )
        self.last_call_time = now
        return next_tensordict

    def forward(self, tensordict):
        raise NotImplementedError("Timer runs in an env only")

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for key in (self.time_step_key, self.time_policy_key, self.time_reset_key):
            observation_spec[key] = Unbounded(
                shape=observation_spec.shape, dtype=torch.float64, device=observation_spec.device
            )
        return observation_spec


class ConditionalSkip(Transform):
    """Skips the env step where ``cond(tensordict)`` is ``True`` (a ``"_step"`` mask).

    Skipped elements keep their previous observations (zeros where unknown). A skip also skips
    the transforms of the same env; wrap it in another env to run transforms on every step.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv, StepCounter
        >>> middle = TransformedEnv(PendulumEnv(), ConditionalSkip(lambda td: td["step_count"] % 2 == 1))
        >>> env = TransformedEnv(middle, StepCounter(), auto_unwrap=False)
        >>> td = env.rollout(4)
        >>> bool((td["next", "th"][1] == td["th"][1]).all())  # the second step was skipped
        True
    """

    def __init__(self, cond: Callable[[TensorDictBase], bool | torch.Tensor]) -> None:
        super().__init__()
        self.cond = cond

    @property
    def _has_inverse(self) -> bool:
        return True

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        cond = torch.as_tensor(self.cond(tensordict), device=tensordict.device)
        cond = (
            cond.reshape(tensordict.batch_size)
            if cond.numel() == tensordict.batch_size.numel()
            else cond
        )
        step = tensordict.get("_step", None)
        mask = ~cond if step is None else step & ~cond
        tensordict.set("_step", mask.reshape(tensordict.batch_size))
        return tensordict

    def forward(self, tensordict):
        raise NotImplementedError("ConditionalSkip runs in an env only")


class EndOfLifeTransform(Transform):
    """Adds an ``"end-of-life"`` done flag, set when the number of lives drops.

    The lives are read from the step output entry ``lives_key`` when present, else from the
    base env attribute at the dotted path ``eol_attribute`` (e.g. gym's
    ``"unwrapped.ale.lives"``, called if callable). The flag is registered in the done spec.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = PendulumEnv()
        >>> env.lives = 3
        >>> env = TransformedEnv(env, EndOfLifeTransform(eol_attribute="lives"))
        >>> bool(env.reset()["end-of-life"])
        False
    """

    def __init__(
        self,
        eol_key: NestedKey = "end-of-life",
        lives_key: NestedKey = "lives",
        done_key: NestedKey = "done",
        eol_attribute: str = "unwrapped.ale.lives",
    ) -> None:
        super().__init__()
        self.eol_key = eol_key
        self.lives_key = lives_key
        self.done_key = done_key
        self.eol_attribute = eol_attribute
        self.__dict__["_lives"] = None

    def _read_lives(self, tensordict: TensorDictBase) -> torch.Tensor:
        value = tensordict.get(self.lives_key, None)
        if value is None:
            obj = self.container.base_env
            for name in self.eol_attribute.split("."):
                obj = getattr(obj, name)
            value = obj() if callable(obj) else obj
        return torch.as_tensor(value)

    def _reset(self, tensordict, tensordict_reset):
        self.__dict__["_lives"] = self._read_lives(tensordict_reset)
        done = tensordict_reset.get(self.done_key)
        tensordict_reset.set(self.eol_key, torch.zeros_like(done))
        return tensordict_reset

    def _step(self, tensordict, next_tensordict):
        lives = self._read_lives(next_tensordict)
        previous = self.__dict__["_lives"]
        done = next_tensordict.get(self.done_key)
        if previous is None:
            lost = torch.zeros_like(done)
        else:
            lost = (lives < previous).reshape(-1).expand(done.numel()).reshape(done.shape)
        self.__dict__["_lives"] = lives
        next_tensordict.set(self.eol_key, lost | done)
        return next_tensordict

    def forward(self, tensordict):
        raise NotImplementedError("EndOfLifeTransform runs in an env only")

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        done_spec[self.eol_key] = flag_spec_like(done_spec[self.done_key])
        return done_spec


class AutoResetTransform(Transform):
    """For base envs that reset themselves inside ``step`` (use with :class:`AutoResetEnv`).

    At a done step, the observations returned (the first of the next episode) are kept for the
    next ``reset`` and replaced in the step output by ``fill_float`` / ``fill_int`` /
    ``fill_bool`` (unless ``replace=False``).

    Examples:
        >>> from torchenv.envs import CartPoleEnv
        >>> from torchenv.transforms import AutoResetEnv
        >>> env = AutoResetEnv(CartPoleEnv(), AutoResetTransform())
        >>> env.rollout(3).shape
        torch.Size([3])
    """

    def __init__(
        self,
        *,
        replace: bool | None = None,
        fill_float: float | str = "nan",
        fill_int: int = -1,
        fill_bool: bool = False,
    ) -> None:
        super().__init__()
        self.replace = True if replace is None else replace
        self.fill_float = float(fill_float)
        self.fill_int = fill_int
        self.fill_bool = fill_bool
        self.__dict__["_saved"] = None

    def _fill(self, value: torch.Tensor):
        if value.is_floating_point():
            return self.fill_float
        if value.dtype is torch.bool:
            return self.fill_bool
        return self.fill_int

    def _step(self, tensordict, next_tensordict):
        parent = self.parent
        done = next_tensordict.get("done", None)
        if done is None or not bool(done.any()):
            return next_tensordict
        keys = parent.observation_keys
        self.__dict__["_saved"] = next_tensordict.select(*keys).clone()
        if self.replace:
            for key in keys:
                value = next_tensordict.get(key)
                next_tensordict.set(
                    key, value.masked_fill(mask_like(done, value), self._fill(value))
                )
        return next_tensordict

    def _reset(self, tensordict, tensordict_reset):
        saved = self.__dict__["_saved"]
        if saved is not None:
            self.__dict__["_saved"] = None
            tensordict_reset.update(saved)
        return tensordict_reset

    def forward(self, tensordict):
        raise NotImplementedError("AutoResetTransform runs in an env only")


class BatchSizeTransform(Transform):
    """Changes the batch size of an env.

    With ``batch_size``, a batch-unlocked base env (e.g. :class:`PendulumEnv`) is run on
    batches of that size: resets create data of that batch size and the specs are expanded.
    With ``reshape_fn``, outputs are reshaped by it and inputs reshaped back to the base
    env's batch size.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), BatchSizeTransform(batch_size=[4]))
        >>> env.batch_size, env.rollout(2).shape
        (torch.Size([4]), torch.Size([4, 2]))
    """

    def __init__(
        self,
        *,
        batch_size: Sequence[int] | torch.Size | None = None,
        reshape_fn: Callable[[TensorDictBase], TensorDictBase] | None = None,
        reset_func: Callable | None = None,
        env_kwarg: bool = False,
    ) -> None:
        if (batch_size is None) == (reshape_fn is None):
            raise ValueError("BatchSizeTransform needs exactly one of batch_size and reshape_fn")
        super().__init__()
        self.batch_size = torch.Size(batch_size) if batch_size is not None else None
        self.reshape_fn = reshape_fn
        self.reset_func = reset_func
        self.env_kwarg = env_kwarg

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        if self.batch_size is not None:
            return self.batch_size
        return self.reshape_fn(TensorDict(batch_size=batch_size)).batch_size

    def _reset_env_preprocess(self, tensordict):
        if self.batch_size is not None and tensordict is None:
            parent = self.parent
            device = parent.device if parent is not None else None
            tensordict = TensorDict(batch_size=self.batch_size, device=device)
        if self.reshape_fn is not None and tensordict is not None:
            tensordict = tensordict.reshape(self.parent.batch_size)
        return tensordict

    def _reset(self, tensordict, tensordict_reset):
        if self.reset_func is not None and tensordict_reset.batch_size != self.batch_size:
            tensordict_reset = self.reset_func(tensordict, tensordict_reset)
        if self.reshape_fn is not None:
            tensordict_reset = self.reshape_fn(tensordict_reset)
        return tensordict_reset

    def _call(self, next_tensordict):
        if self.reshape_fn is not None:
            return self.reshape_fn(next_tensordict)
        return next_tensordict

    forward = _call

    @property
    def _has_inverse(self) -> bool:
        return self.reshape_fn is not None

    def _inv_call(self, tensordict):
        if self.reshape_fn is None:
            return tensordict
        return tensordict.reshape(self.parent.batch_size)

    def _respec(self, spec: Composite) -> Composite:
        parent_bs = self.parent.batch_size
        nb = len(parent_bs)
        new_bs = self.transform_env_batch_size(parent_bs)
        out = Composite(shape=new_bs, device=spec.device)
        for key in spec:
            leaf = spec[key]
            tail = leaf.shape[nb:]
            if self.batch_size is not None:
                new = leaf.expand((*new_bs, *tail))
            else:
                new = leaf.reshape((*new_bs, *tail))
            out[key] = new
        return out

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        out = Composite(
            shape=self.transform_env_batch_size(self.parent.batch_size), device=output_spec.device
        )
        for name in output_spec:
            out[name] = self._respec(output_spec[name])
        return out

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self.transform_output_spec(input_spec)


class PinMemoryTransform(Transform):
    """Pins the memory of every tensor of each step and reset, for faster copies to CUDA.

    Where pinning is impossible (no CUDA), the data pass through as they are. TorchRL's
    transform of the same name.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> out = PinMemoryTransform()(TensorDict(x=torch.zeros(2)))
        >>> out["x"].is_pinned() == torch.cuda.is_available()
        True
    """

    def __init__(self) -> None:
        super().__init__(in_keys=[], out_keys=[])

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not torch.cuda.is_available():
            return next_tensordict
        return next_tensordict.pin_memory()

    forward = _call

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)
