"""``JaxEnv``: the machinery shared by the Brax and Jumanji envs.

A backend gives three pure, single-env JAX functions (``init(key) -> carry``,
``step(carry, action) -> (carry, reward, terminated, truncated)`` and the accessor
``observation(carry) -> pytree``). This class compiles, once per batch shape,

- ``reset(keys, carry, mask) -> (keys, carry)``: ``jax.vmap(init)`` over fresh keys split from
  each sub-env's own key (``set_seed(s)`` splits ``PRNGKey(s)`` into one key per sub-env), merged into the current carry with ``jnp.where`` on the rows of ``mask`` (no Python
  loop over sub-envs; a full reset is the all-True mask),
- ``step(carry, action) -> (carry, reward, terminated, truncated, done)``: ``jax.vmap(step)``,

with ``jax.jit(...).lower(...).compile()`` (ahead of time: the compile time is measured and kept
in :attr:`JaxEnv.compile_seconds`). Compiled functions are shared by every env built from the same
name and arguments on the same device and batch size. Outputs cross to torch through DLPack:
the tensors of the returned TensorDicts are views of JAX's output buffers, and actions cross the
other way as views of the torch tensors.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs import EnvBase
from torchenv.specs import Categorical, Composite
from torchenv_jax._bridge import jax_device, to_jax, tree_to_torch

__all__ = ["JaxEnv"]

_log = logging.getLogger("torchenv_jax")

# (cache key, batch numel, device) -> _Compiled; shared by envs made from the same arguments.
_CACHE: OrderedDict[Hashable, _Compiled] = OrderedDict()
_CACHE_SIZE = 16


class _Compiled:
    """The compiled ``reset`` (by mask) and ``step`` of one env type and batch, and a zero carry
    (what a first reset, with every row in its mask, replaces)."""

    __slots__ = ("reset", "step", "blank", "seconds")

    def __init__(self, reset: Any, step: Any, blank: Any, seconds: dict) -> None:
        self.reset, self.step, self.blank, self.seconds = reset, step, blank, seconds


def _where_rows(mask: Any, new: Any, old: Any) -> Any:
    import jax.numpy as jnp

    return jnp.where(mask.reshape(mask.shape + (1,) * (new.ndim - 1)), new, old)


def _compile(
    init: Callable,
    step: Callable,
    n: int,
    key: Any,
    action: Any,
    reward_shape: tuple,
    max_episode_steps: int | None,
) -> _Compiled:
    """Trace, lower and compile the three batched functions for ``n`` sub-envs."""
    import jax
    import jax.numpy as jnp

    def reset_masked(keys, carry, mask):
        # one key per sub-env: a sub-env's resets draw from its own stream only, so they do not
        # depend on when the other sub-envs reset
        pairs = jax.vmap(jax.random.split)(keys)
        fresh = (jax.vmap(init)(pairs[:, 1]), jnp.zeros((n,), jnp.int32))
        merged = jax.tree_util.tree_map(lambda a, b: _where_rows(mask, a, b), fresh, carry)
        return _where_rows(mask, pairs[:, 0], keys), merged

    def step_all(carry, action):
        inner, steps = carry
        inner, reward, terminated, truncated = jax.vmap(step)(inner, action)
        steps = steps + 1
        if max_episode_steps is not None:
            truncated = truncated | (steps >= max_episode_steps)
        terminated = terminated.reshape(n, 1)
        truncated = truncated.reshape(n, 1)
        done = terminated | truncated
        reward = reward.reshape(n, *reward_shape).astype(jnp.float32)
        return (inner, steps), reward, terminated, truncated, done

    seconds = {}
    compiled = []
    carry_shape = jax.eval_shape(lambda k: (jax.vmap(init)(k), jnp.zeros((n,), jnp.int32)), key)
    mask = jax.ShapeDtypeStruct((n,), jnp.bool_)
    for name, fn, args in (
        ("reset", reset_masked, (key, carry_shape, mask)),
        ("step", step_all, (carry_shape, action)),
    ):
        start = time.perf_counter()
        compiled.append(jax.jit(fn).lower(*args).compile())
        seconds[name] = time.perf_counter() - start
    _log.info("compiled for %d sub-envs in %s", n, {k: round(v, 3) for k, v in seconds.items()})
    blank = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), carry_shape)
    return _Compiled(compiled[0], compiled[1], blank, seconds)


class JaxEnv(EnvBase):
    """Base class of the JAX envs: batched JAX functions behind a torchenv env.

    Subclasses call :meth:`_setup` from ``__init__`` (after ``super().__init__``), with their
    pure single-env functions and their specs.

    Attributes:
        compile_seconds: seconds spent compiling ``reset`` and ``step`` for this
            env's batch size (from the moment they were first compiled: envs made later with the
            same arguments reuse the compiled functions and report the same figures).
    """

    def __init__(self, *, batch_size: Any = (), device: Any = None, **kwargs: Any) -> None:
        if isinstance(batch_size, int):
            batch_size = (batch_size,)
        batch_size = torch.Size(batch_size)
        if any(int(d) < 1 for d in batch_size):
            raise ValueError(f"batch_size: expected positive sizes, got {tuple(batch_size)}")
        if device is None:
            device = torch.device("cpu")
        super().__init__(batch_size=batch_size, device=device, **kwargs)

    # ------------------------------------------------------------------ set up
    def _setup(
        self,
        *,
        init: Callable,
        step: Callable,
        observation: Callable[[Any], Any],
        action_shape: Sequence[int],
        action_dtype: Any,
        reward_shape: Sequence[int] = (1,),
        cache_key: Hashable | None,
        max_episode_steps: int | None,
        seed: int | None,
    ) -> None:
        import jax

        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, int)
            or max_episode_steps < 1
        ):
            raise ValueError(
                f"max_episode_steps: expected a positive int or None, got {max_episode_steps!r}"
            )
        self.max_episode_steps = max_episode_steps
        self._n = max(1, self.batch_size.numel())
        self._jax_device = jax_device(self.device)
        self._observe = observation
        self._action_shape = tuple(action_shape)
        self._action_torch_dtype = _torch_dtype(action_dtype)
        self._init_fn, self._step_fn = init, step
        if seed is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        self._set_seed(seed)
        key = self._key
        action = jax.ShapeDtypeStruct((self._n, *action_shape), action_dtype)
        full_key = None if cache_key is None else (cache_key, self._n, str(self._jax_device))
        compiled = _CACHE.get(full_key) if full_key is not None else None
        if compiled is None:
            with jax.default_device(self._jax_device):
                compiled = _compile(
                    init, step, self._n, key, action, tuple(reward_shape), max_episode_steps
                )
            if full_key is not None:
                _CACHE[full_key] = compiled
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(full_key)
        self._compiled = compiled
        self._all_rows = jax.device_put(jax.numpy.ones((self._n,), bool), self._jax_device)
        self.__dict__["_carry"] = None
        shape = self.batch_size
        flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool, device=self.device)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=shape
        )

    @property
    def compile_seconds(self) -> dict[str, float]:
        """Seconds spent compiling each batched function (``reset``, ``step``)."""
        return dict(self._compiled.seconds)

    # ------------------------------------------------------------------ JAX state
    @property
    def jax_state(self) -> Any:
        """The batched JAX state of the sub-envs (the backend's state pytree, leading dim
        ``num_envs``), ``None`` before the first reset."""
        return None if self._carry is None else self._carry[0]

    @jax_state.setter
    def jax_state(self, state: Any) -> None:
        import jax

        if self._carry is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before setting jax_state")
        old = self._carry[0]
        same = jax.tree_util.tree_structure(state) == jax.tree_util.tree_structure(old) and all(
            getattr(a, "shape", None) == b.shape
            for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(old))
        )
        if not same:
            raise ValueError(
                "jax_state: expected a state of the same structure and shapes as env.jax_state"
            )
        self.__dict__["_carry"] = (state, self._carry[1])
        self._after_reset(None)

    def _after_reset(self, rows: torch.Tensor | None) -> None:
        """Called after every reset with the reset rows (``None``: all of them)."""

    def _set_seed(self, seed: int | None) -> None:
        import jax

        if seed is None:
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
        keys = jax.random.split(jax.random.PRNGKey(seed % 2**63), self._n)
        self.__dict__["_key"] = jax.device_put(keys, self._jax_device)

    # ------------------------------------------------------------------ torch side
    def _obs_td(self, carry: Any) -> dict:
        obs = tree_to_torch(self._observe(carry[0]))
        if not isinstance(obs, dict):
            obs = {"observation": obs}
        return obs

    def _shaped(self, tensors: dict) -> TensorDict:
        batch = self.batch_size
        if batch == (self._n,):
            return TensorDict(tensors, batch, device=self.device)
        flat = TensorDict(tensors, (self._n,), device=self.device)
        return flat.reshape(batch)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get("_reset", None)
        compiled, d = self._compiled, self.__dict__  # plain attributes: no nn.Module setattr
        if mask is None or self._carry is None:
            carry = compiled.blank if self._carry is None else self._carry
            d["_key"], d["_carry"] = compiled.reset(self._key, carry, self._all_rows)
            self._after_reset(None)
        else:
            rows = mask.reshape(self._n).to(device=self.device, dtype=torch.bool)
            if bool(rows.any()):
                d["_key"], d["_carry"] = compiled.reset(self._key, self._carry, to_jax(rows))
                self._after_reset(rows)
        out = self._obs_td(self._carry)
        flag = torch.zeros((self._n, 1), dtype=torch.bool, device=self.device)
        out["done"], out["terminated"], out["truncated"] = flag, flag.clone(), flag.clone()
        return self._shaped(out)

    def _action(self, tensordict: TensorDictBase) -> Any:
        action = tensordict.get("action")
        expected = (*self.batch_size, *self._action_shape)
        if tuple(action.shape) != expected:
            raise ValueError(f"'action': expected shape {expected}, got {tuple(action.shape)}")
        action = action.reshape(self._n, *self._action_shape)
        if action.dtype != self._action_torch_dtype:
            action = action.to(self._action_torch_dtype)
        return to_jax(action.detach())

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._carry is None:
            raise RuntimeError(f"{type(self).__name__}: call reset() before step()")
        carry, *rest = self._compiled.step(self._carry, self._action(tensordict))
        self.__dict__["_carry"] = carry
        reward, terminated, truncated, done = tree_to_torch(rest)
        out = self._obs_td(self._carry)
        out["reward"], out["terminated"], out["truncated"], out["done"] = (
            reward,
            terminated,
            truncated,
            done,
        )
        return self._shaped(out)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batch_size={tuple(self.batch_size)}, device={self.device})"


def _torch_dtype(jax_dtype: Any) -> torch.dtype:
    import numpy as np

    return torch.from_numpy(np.zeros((), dtype=np.dtype(jax_dtype))).dtype
