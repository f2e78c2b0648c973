"""Env adapters across the two libraries: ``to_torchrl(env)`` and ``from_torchrl(env)``.

Registration (:mod:`torchenv.interop._torchrl`) lets TorchRL's collectors, modules and losses
take torchenv envs as they are. TorchRL's own env *wrappers* (its ``TransformedEnv``, its
``SerialEnv``/``ParallelEnv``) go further: they reach into the private internals of the env and
of its specs. For them, :func:`to_torchrl` gives a genuine ``torchrl.envs.EnvBase`` with TorchRL
specs that steps the torchenv env; :func:`from_torchrl` does the reverse, so a TorchRL-only env
runs inside torchenv's transforms and batched envs.
"""

from __future__ import annotations

import importlib
from typing import Any

from tensordict import TensorDictBase

from torchenv.envs import EnvBase
from torchenv.specs._torchrl import from_torchrl_spec, to_torchrl_spec

__all__ = ["TorchRLFactory", "from_torchrl", "to_torchrl"]

_SPEC_PARTS = (
    "full_observation_spec",
    "full_reward_spec",
    "full_done_spec",
    "full_action_spec",
    "full_state_spec",
)
_adapter_class: Any = None


def _torchrl_adapter_class() -> type:
    """The ``torchrl.envs.EnvBase`` subclass that steps a torchenv env (built once, lazily)."""
    global _adapter_class
    if _adapter_class is None:
        trl_envs = importlib.import_module("torchrl.envs")

        class TorchRLView(trl_envs.EnvBase):
            """A ``torchrl.envs.EnvBase`` over a torchenv env (see :func:`to_torchrl`)."""

            def __init__(self, env: EnvBase) -> None:
                super().__init__(batch_size=env.batch_size, device=env.device)
                self.torchenv_env = env
                for part in _SPEC_PARTS:
                    setattr(self, part, to_torchrl_spec(getattr(env, part)))

            def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
                return self.torchenv_env.step(tensordict.copy()).get("next")

            def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any):
                return self.torchenv_env.reset(tensordict, **kwargs)

            def _set_seed(self, seed: int | None) -> None:
                self.torchenv_env.set_seed(seed)

            def close(self, *args: Any, **kwargs: Any) -> None:
                self.torchenv_env.close()
                super().close(*args, **kwargs)

        _adapter_class = TorchRLView
    return _adapter_class


def to_torchrl(env: EnvBase) -> Any:
    """A genuine ``torchrl.envs.EnvBase`` (TorchRL specs) that steps torchenv ``env``.

    Use it to put a torchenv env inside TorchRL's own ``TransformedEnv``, ``SerialEnv`` or
    ``ParallelEnv``; TorchRL's collectors, modules and losses take ``env`` itself.

    >>> import torchenv
    >>> from torchenv.interop import to_torchrl
    >>> view = to_torchrl(torchenv.make("builtin:Pendulum"))  # doctest: +SKIP
    >>> view.rollout(3).batch_size  # doctest: +SKIP
    torch.Size([3])
    """
    if not isinstance(env, EnvBase):
        raise TypeError(f"to_torchrl expects a torchenv EnvBase, got {type(env).__name__}")
    return _torchrl_adapter_class()(env)


class TorchRLFactory:
    """A picklable ``() -> to_torchrl(torchenv.make(name, **kwargs))``, for TorchRL's batched envs.

    TorchRL's ``ParallelEnv`` builds its envs in worker processes from a factory; this one
    makes a torchenv env by registry name and hands TorchRL its TorchRL view.

    >>> factory = TorchRLFactory("builtin:Pendulum")
    >>> factory
    TorchRLFactory('builtin:Pendulum')
    >>> from torchrl.envs import ParallelEnv  # doctest: +SKIP
    >>> env = ParallelEnv(2, factory)  # doctest: +SKIP
    """

    def __init__(self, name: str, **kwargs: Any) -> None:
        self.name = name
        self.kwargs = kwargs

    def __call__(self) -> Any:
        from torchenv.registry import make

        return to_torchrl(make(self.name, **self.kwargs))

    def __repr__(self) -> str:
        args = [repr(self.name), *(f"{k}={v!r}" for k, v in self.kwargs.items())]
        return f"TorchRLFactory({', '.join(args)})"


class TorchenvView(EnvBase):
    """A torchenv env over a ``torchrl.envs.EnvBase`` (see :func:`from_torchrl`)."""

    def __init__(self, env: Any) -> None:
        super().__init__(batch_size=env.batch_size, device=env.device)
        self.torchrl_env = env
        for part in _SPEC_PARTS:
            setattr(self, part, from_torchrl_spec(getattr(env, part)))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.torchrl_env.step(tensordict.copy()).get("next")

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        return self.torchrl_env.reset(tensordict, **kwargs)

    def _set_seed(self, seed: int | None) -> None:
        self.torchrl_env.set_seed(seed)

    def close(self, *, raise_if_closed: bool = False) -> None:
        self.torchrl_env.close()
        super().close(raise_if_closed=raise_if_closed)


def from_torchrl(env: Any) -> EnvBase:
    """A torchenv env (torchenv specs) that steps TorchRL env ``env``.

    >>> from torchenv.interop import from_torchrl
    >>> from torchrl.envs import GymEnv  # doctest: +SKIP
    >>> env = from_torchrl(GymEnv("Pendulum-v1"))  # doctest: +SKIP
    >>> env.rollout(3).batch_size  # doctest: +SKIP
    torch.Size([3])
    """
    if isinstance(env, EnvBase):
        raise TypeError("from_torchrl expects a TorchRL env, got a torchenv env")
    return TorchenvView(env)
