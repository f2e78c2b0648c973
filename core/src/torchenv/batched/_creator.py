"""``EnvCreator``: a picklable env factory whose envs share their tensor state.

A factory given to a batched env may be a lambda or a closure, which ``pickle`` cannot send to a
``spawn``/``forkserver`` worker. ``EnvCreator`` wraps it so that it pickles (with ``cloudpickle``
when the plain pickler fails), builds one *shadow* env at construction to read its meta-data
(specs, batch size, device) and its state (parameters and buffers, e.g. running statistics of a
normalising transform), and puts that state in shared memory. Every env it creates afterwards, in
any process, has its parameters and buffers pointed at the same shared storage, so an update made
by one env is seen by all.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["EnvCreator"]

# buffers of normalising transforms (VecNorm's "_vn_<key>_sum"...): TorchRL's "_extra_state"
_EXTRA_PREFIX = "_vn_"


class _PicklableFn:
    """Pickles a callable with ``pickle`` when it can, else with ``cloudpickle``."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __getstate__(self) -> dict:
        try:
            return {"pickled": pickle.dumps(self.fn), "cloud": False}
        except (pickle.PicklingError, AttributeError, TypeError):
            try:
                import cloudpickle
            except ImportError as err:  # pragma: no cover - cloudpickle comes with gymnasium
                raise pickle.PicklingError(
                    f"cannot pickle the env factory {self.fn!r} (a lambda or a local function?): "
                    "install cloudpickle, or pass a module-level function or functools.partial"
                ) from err
            return {"pickled": cloudpickle.dumps(self.fn), "cloud": True}

    def __setstate__(self, state: dict) -> None:
        self.fn = pickle.loads(state["pickled"])

    def __repr__(self) -> str:
        return repr(self.fn)


def _shared_state(env: Any) -> dict[str, torch.Tensor]:
    """Parameters and buffers of ``env`` (an ``nn.Module``), moved to shared memory in place."""
    state: dict[str, torch.Tensor] = {}
    if not isinstance(env, torch.nn.Module):
        return state
    for name, tensor in [*env.named_parameters(), *env.named_buffers()]:
        if tensor.device.type == "cpu" and not tensor.is_shared():
            tensor.data.share_memory_()
        state[name] = tensor.data
    return state


def _point_at(env: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Make the parameters/buffers of ``env`` use the storage of ``state`` where shapes match."""
    owned = dict(env.named_parameters())
    owned.update(env.named_buffers())
    for name, shared in state.items():
        mine = owned.get(name)
        if mine is not None and mine.shape == shared.shape and mine.dtype == shared.dtype:
            mine.data = shared


class EnvCreator:
    """A picklable env factory; the envs it creates share their tensor state.

    Args:
        create_env_fn: a callable returning an env.
        create_env_kwargs: keyword arguments for ``create_env_fn`` (they take precedence over
            those given at call time).
        share_memory: put the shadow env's parameters and buffers in shared memory and point
            every created env at them. Defaults to ``True``.
        **kwargs: more keyword arguments for ``create_env_fn``.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.batched import EnvCreator, ParallelEnv
        >>> make_env = EnvCreator(lambda: PendulumEnv())
        >>> make_env.meta_data["batch_size"]
        torch.Size([])
        >>> env = ParallelEnv(2, make_env)
        >>> env.reset().batch_size
        torch.Size([2])
        >>> env.close()
    """

    def __init__(
        self,
        create_env_fn: Callable,
        create_env_kwargs: dict | None = None,
        share_memory: bool = True,
        **kwargs: Any,
    ) -> None:
        if isinstance(create_env_fn, EnvCreator):
            create_env_fn = create_env_fn.create_env_fn
        if not isinstance(create_env_fn, _PicklableFn):
            create_env_fn = _PicklableFn(create_env_fn)
        self.create_env_fn = create_env_fn
        self.create_env_kwargs = dict(kwargs)
        if create_env_kwargs:
            self.create_env_kwargs.update(create_env_kwargs)
        self._share_memory = share_memory
        self._state: dict[str, torch.Tensor] = {}
        self._meta_data: dict | None = None
        self.initialized = False
        self.init_()

    def init_(self) -> EnvCreator:
        """Build the shadow env, read its meta-data and share its state, then close it."""
        env = self.create_env_fn(**self.create_env_kwargs)
        try:
            self.env_type = type(env)
            self._meta_data = _meta_data(env)
            self._state = _shared_state(env) if self._share_memory else {}
        finally:
            close = getattr(env, "close", None)
            if close is not None:
                try:
                    close(raise_if_closed=False)
                except TypeError:
                    close()
        self.initialized = True
        return self

    @property
    def meta_data(self) -> dict:
        """Specs, batch size and device of the envs this creator makes (read from the shadow env)."""
        if self._meta_data is None:
            raise RuntimeError("EnvCreator has no meta-data: call init_() first")
        return self._meta_data

    def make_variant(self, **kwargs: Any) -> EnvCreator:
        """A creator sharing this one's state, with some keyword arguments changed.

        >>> from torchenv.envs import PendulumEnv
        >>> make = EnvCreator(PendulumEnv)
        >>> make.make_variant(device="cpu").create_env_kwargs
        {'device': 'cpu'}
        """
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.create_env_kwargs = {**self.create_env_kwargs, **kwargs}
        return out

    def state_dict(self) -> dict[str, Any]:
        """The shared state, in TorchRL's layout: the running statistics of normalising
        transforms (``VecNorm``) under ``"_extra_state"`` by TorchRL's names
        (``{"_extra_state": {"observation_sum": ..., "observation_ssq": ...,
        "observation_count": ...}}``), other parameters and buffers by name. The tensors are the
        shared ones (not copies).

        Examples:
            >>> from torchenv.envs import PendulumEnv
            >>> from torchenv.transforms import TransformedEnv, VecNorm
            >>> make = EnvCreator(lambda: TransformedEnv(PendulumEnv(), VecNorm(["observation"], new_api=False)))
            >>> sorted(make.state_dict()["_extra_state"])
            ['observation_count', 'observation_ssq', 'observation_sum']
        """
        out: dict[str, Any] = {}
        extra: dict[str, torch.Tensor] = {}
        for public, name in self._public_names().items():
            if public is None:
                continue
            if name.rsplit(".", 1)[-1].startswith(_EXTRA_PREFIX):
                extra[public] = self._state[name]
            else:
                out[public] = self._state[name]
        if extra:
            out["_extra_state"] = extra
        return out

    def _public_names(self) -> dict[str, str]:
        """``{name in state_dict(): internal name}`` (a statistic whose short name two
        transforms share keeps its internal name)."""
        names: dict[str, str] = {}
        for name in self._state:
            leaf = name.rsplit(".", 1)[-1]
            short = leaf[len(_EXTRA_PREFIX) :] if leaf.startswith(_EXTRA_PREFIX) else name
            names[name if short in names else short] = name
        return names

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Copy values into the shared state, in place (every created env sees them); takes
        what :meth:`state_dict` returns, or internal names."""
        names = self._public_names()
        flat = dict(state_dict)
        flat.update(flat.pop("_extra_state", None) or {})
        for key, value in flat.items():
            name = names.get(key, key)
            if name not in self._state:
                raise KeyError(
                    f"EnvCreator.load_state_dict: unknown entry {key!r}; expected one of "
                    f"{sorted(names)} (under '_extra_state' for normalisation statistics)"
                )
            self._state[name].copy_(value)

    def __call__(self, **kwargs: Any) -> Any:
        if not self.initialized:
            raise RuntimeError("EnvCreator must be initialised (init_()) before being called")
        kwargs.update(self.create_env_kwargs)
        env = self.create_env_fn(**kwargs)
        if self._state and isinstance(env, torch.nn.Module):
            # specs built lazily (a TransformedEnv's) create state as they are built, e.g.
            # VecNorm's statistics: build them first, as reading the meta-data did in init_
            getattr(env, "output_spec", None)
            _point_at(env, self._state)
        return env

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_meta_data"] = None  # specs are rebuilt where needed; keep the pickle small
        return state

    def __repr__(self) -> str:
        kwargs = ", ".join(f"{k}={v!r}" for k, v in self.create_env_kwargs.items())
        return f"EnvCreator({self.create_env_fn!r}({kwargs}))"


def _meta_data(env: Any) -> dict:
    """What a batched env needs to know about a sub-env without running it.

    Raises if a transform of the sub-env cannot run inside a batched env's worker.
    """
    check = getattr(env, "_check_batched_worker_compat", None)
    if check is not None:
        check()
    return {
        "batch_size": env.batch_size,
        "device": env.device,
        "input_spec": env.input_spec.clone(),
        "output_spec": env.output_spec.clone(),
        "has_dynamic_specs": bool(getattr(env, "_has_dynamic_specs", False)),
        "batch_locked": bool(getattr(env, "batch_locked", True)),
        "env_str": repr(env),
    }
