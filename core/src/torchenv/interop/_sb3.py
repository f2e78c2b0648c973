"""``to_sb3(env)``: a batched torchenv env as a Stable-Baselines3 ``VecEnv``.

SB3 takes a ``gymnasium.Env`` (use :func:`~torchenv.interop.to_gymnasium` for an unbatched env)
but not gymnasium's ``VectorEnv``; its own ``VecEnv`` protocol differs (``step_async`` /
``step_wait``, ``dones`` instead of terminated/truncated, the last observation of an episode in
``infos[i]["terminal_observation"]``, time-limit ends flagged by ``"TimeLimit.truncated"``). This
adapter speaks it over a natively batched torchenv env (batch size ``(n,)``), stepping all
sub-envs in one ``step_and_maybe_reset``. stable_baselines3 is imported only when an env is
exported.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from torchenv.envs import EnvBase
from torchenv.interop._gymnasium import _Layout, _row, _spaces
from torchenv.interop._seeding import seeded_reset

__all__ = ["to_sb3"]

_vec_env_class: Any = None


def to_sb3(env: EnvBase) -> Any:
    """``env`` (batch size ``(n,)``) as a ``stable_baselines3`` ``VecEnv`` of ``n`` envs.

    >>> import torchenv
    >>> from torchenv.interop import to_sb3
    >>> vec = to_sb3(torchenv.make("builtin:CartPole", batch_size=[4]))  # doctest: +SKIP
    >>> vec.reset().shape  # doctest: +SKIP
    (4, 4)
    """
    if not isinstance(env, EnvBase):
        raise TypeError(f"to_sb3 expects a torchenv EnvBase, got {type(env).__name__}")
    if env.batch_dims != 1:
        raise TypeError(
            f"to_sb3 takes a batched env (batch size (n,)); {type(env).__name__} has batch size "
            f"{tuple(env.batch_size)}. An unbatched env goes to SB3 as torchenv.to_gymnasium(env)."
        )
    return _sb3_class()(env)


def _sb3_class() -> type:
    global _vec_env_class
    if _vec_env_class is not None:
        return _vec_env_class
    gymnasium = importlib.import_module("gymnasium")
    base = importlib.import_module("stable_baselines3.common.vec_env.base_vec_env").VecEnv

    class TorchenvVecEnv(base):
        """A batched torchenv env behind Stable-Baselines3's ``VecEnv`` protocol."""

        def __init__(self, env: EnvBase) -> None:
            self.env = env
            self._layout = _Layout(env)
            observation_space, action_space = _spaces(self._layout, gymnasium)
            super().__init__(env.batch_size[0], observation_space, action_space)
            self._td = None
            self._actions = None

        def reset(self) -> Any:
            seed = self._seeds[0] if any(s is not None for s in self._seeds) else None
            self._reset_seeds()
            self._td = seeded_reset(self.env, seed)
            return self._layout.observation(self._td)

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = actions

        def step_wait(self) -> tuple:
            layout = self._layout
            td = self._td.set(layout.action_key, layout.encode(self._actions))
            td, self._td = self.env.step_and_maybe_reset(td)
            next_td = td.get("next")
            terminated, truncated = layout.flags(next_td)
            dones = terminated | truncated
            infos: list[dict] = [{} for _ in range(self.num_envs)]
            if dones.any():
                final = layout.observation(next_td)
                for i in np.flatnonzero(dones):
                    infos[i]["terminal_observation"] = _row(final, i)
                    infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return layout.observation(self._td), layout.reward(next_td), dones, infos

        def close(self) -> None:
            self.env.close()

        def get_attr(self, attr_name: str, indices: Any = None) -> list:
            if attr_name == "render_mode":  # torchenv envs render through transforms
                return [None] * len(self._indices(indices))
            return [getattr(self.env, attr_name)] * len(self._indices(indices))

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            setattr(self.env, attr_name, value)

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any):
            result = getattr(self.env, method_name)(*args, **kwargs)
            return [result] * len(self._indices(indices))

        def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
            return [False] * len(self._indices(indices))

        def _indices(self, indices: Any) -> Sequence[int]:
            if indices is None:
                return range(self.num_envs)
            return [indices] if isinstance(indices, int) else list(indices)

    _vec_env_class = TorchenvVecEnv
    return TorchenvVecEnv
