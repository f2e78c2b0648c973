"""``to_gymnasium(env)``: a torchenv env as a ``gymnasium.Env`` or ``gymnasium.vector.VectorEnv``.

For consumers of the gymnasium API (Stable-Baselines3, CleanRL, anything that calls
``reset``/``step`` on numpy arrays). An env with an empty batch size becomes a
``gymnasium.Env``; an env with batch size ``(n,)`` a ``VectorEnv`` of ``n`` sub-envs that
resets finished sub-envs in the same step (gymnasium's ``AutoresetMode.SAME_STEP``: the
observation returned is the new episode's first, the last one is in ``infos["final_obs"]``),
which is what torchenv's ``step_and_maybe_reset`` does. Spaces come from the env's specs, after
its transforms. gymnasium is imported only when an env is exported.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tensordict import TensorDictBase

from torchenv.envs import EnvBase
from torchenv.interop._seeding import seeded_reset
from torchenv.interop._spaces_out import action_encoder, spec_to_space
from torchenv.specs import Composite

__all__ = ["register_gym", "to_gymnasium"]


class _Layout:
    """What the export reads and writes: one action key, one reward key, the observations."""

    def __init__(
        self,
        env: EnvBase,
        to_numpy: bool = True,
        info_keys: Sequence[Any] = (),
        dict_observations: bool = False,
    ) -> None:
        self.to_numpy = to_numpy
        self.info_keys = list(info_keys)
        name = type(env).__name__
        if len(env.action_keys) != 1 or len(env.reward_keys) != 1:
            raise TypeError(
                f"to_gymnasium needs an env with one action and one reward entry; {name} has "
                f"actions {env.action_keys} and rewards {env.reward_keys} (multi-agent envs "
                "have no gymnasium.Env form)"
            )
        _refuse_multi_agent(env)
        self.action_key = env.action_keys[0]
        self.reward_key = env.reward_keys[0]
        done_keys = set(env.done_keys)
        self.terminated_key = "terminated" if "terminated" in done_keys else "done"
        self.truncated_key = "truncated" if "truncated" in done_keys else None
        batch = env.batch_dims
        observation_spec = env.full_observation_spec
        # the entries returned in info are not observations too
        in_info = [key if isinstance(key, tuple) else (key,) for key in self.info_keys]
        leaves = [
            leaf
            for leaf in observation_spec.keys(True, True)
            if not any(_as_tuple(leaf)[: len(key)] == key for key in in_info)
        ]
        if not leaves:
            raise TypeError(f"to_gymnasium needs an env with observations; {name} has none")
        # One observation entry: its array (unless dict_observations); several: a (nested) dict
        self.single_key = leaves[0] if len(leaves) == 1 and not dict_observations else None
        unbatched = observation_spec[0] if batch else observation_spec
        if len(leaves) != len(list(unbatched.keys(True, True))):
            unbatched = unbatched.select(*leaves)
        action_spec = env.full_action_spec[self.action_key]
        action_spec = action_spec[0] if batch else action_spec
        self.observation_spec = unbatched[self.single_key] if self.single_key else unbatched
        self.action_spec = action_spec
        self.encode = action_encoder(action_spec, tuple(env.batch_size))
        self.batch_size = env.batch_size

    def observation(self, td: TensorDictBase) -> Any:
        """Fresh numpy arrays (an env may hand out the same tensor twice, e.g. static entries).

        With ``to_numpy=False`` (``register_gym``'s TorchRL default): tensors (a dict of them).
        """
        if not self.to_numpy:
            if self.single_key is not None:
                return td.get(self.single_key).clone()
            return td.select(*self.observation_spec.keys(True, True)).clone().to_dict()
        if self.single_key is not None:
            return _copy(td.get(self.single_key))
        return _as_numpy(td.select(*self.observation_spec.keys(True, True)))

    def info(self, td: TensorDictBase) -> dict:
        """The ``info_keys`` entries of ``td`` (``register_gym``), as numpy or tensors."""
        if not self.info_keys:
            return {}
        out = {}
        for key in self.info_keys:
            value = td.get(key)
            if isinstance(value, TensorDictBase):
                out[key] = _as_numpy(value) if self.to_numpy else value.clone().to_dict()
            else:
                out[key] = _copy(value) if self.to_numpy else value.clone()
        return out

    def flags(self, next_td: TensorDictBase) -> tuple[np.ndarray, np.ndarray]:
        terminated = next_td.get(self.terminated_key).reshape(self.batch_size).cpu().numpy()
        if self.truncated_key is None:
            return terminated, np.zeros_like(terminated)
        return terminated, next_td.get(self.truncated_key).reshape(self.batch_size).cpu().numpy()

    def reward(self, next_td: TensorDictBase) -> np.ndarray:
        return next_td.get(self.reward_key).reshape(self.batch_size).detach().cpu().numpy()


def _refuse_multi_agent(env: EnvBase) -> None:
    """Refuse, before anything is reset or stepped, an env whose reward is not one per sub-env.

    A multi-agent env with one group (VMAS, PettingZoo's MPE) has one action and one reward entry,
    but per agent: gymnasium has no form for it.
    """
    batch = tuple(env.batch_size)
    reward_key = env.reward_keys[0]
    shape = tuple(env.full_reward_spec[reward_key].shape)
    per_env = shape[len(batch) :]
    group_map = getattr(env, "group_map", None)
    if per_env not in ((), (1,)):
        groups = f" (agent groups {dict(group_map)})" if group_map else ""
        raise TypeError(
            f"to_gymnasium exports single-agent envs; {type(env).__name__} is multi-agent"
            f"{groups}: its reward {reward_key!r} has shape {list(shape)} for batch size "
            f"{list(batch)}, one per agent. Use it through torchenv's API (rollout, "
            "step_and_maybe_reset) or export a single-agent env."
        )


def _as_tuple(key: Any) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _copy(tensor: Any) -> np.ndarray:
    return np.array(tensor.detach().cpu().numpy(), copy=True)


def _as_numpy(td: TensorDictBase) -> dict:
    return {
        key: _as_numpy(value) if isinstance(value, TensorDictBase) else _copy(value)
        for key, value in td.items()
    }


def _spaces(layout: _Layout, gymnasium: Any) -> tuple[Any, Any]:
    observation_spec = layout.observation_spec
    if isinstance(observation_spec, Composite):
        observation_spec = observation_spec.clone()
    return (
        spec_to_space(observation_spec, gymnasium.spaces),
        spec_to_space(layout.action_spec, gymnasium.spaces),
    )


def to_gymnasium(
    env: EnvBase,
    *,
    to_numpy: bool = True,
    info_keys: Sequence[Any] = (),
    dict_observations: bool = False,
) -> Any:
    """``env`` behind the gymnasium API.

    Args:
        env: a torchenv env (transforms included) with one action and one reward entry and
            batch size ``()`` (→ ``gymnasium.Env``) or ``(n,)`` (→ ``gymnasium.vector.VectorEnv``).
        to_numpy: observations as numpy arrays (default) or as tensors / TensorDicts.
        info_keys: entries of the env's output to return in ``info`` (single env), and not
            among the observations.
        dict_observations: a dict of observations even for one entry (``register_gym``'s
            layout, as TorchRL's); by default one entry is returned as its array.

    Returns:
        The gymnasium env. Closing it closes ``env``.

    Raises:
        TypeError: ``env`` has several action or reward entries, no observation, or more than
            one batch dim.

    >>> import torchenv
    >>> gym_env = torchenv.to_gymnasium(torchenv.make("builtin:CartPole"))
    >>> obs, info = gym_env.reset(seed=0)
    >>> obs.shape, gym_env.action_space
    ((4,), Discrete(2))
    >>> obs, reward, terminated, truncated, info = gym_env.step(1)
    >>> float(reward), bool(terminated)
    (1.0, False)
    """
    if not isinstance(env, EnvBase):
        raise TypeError(f"to_gymnasium expects a torchenv EnvBase, got {type(env).__name__}")
    gymnasium = importlib.import_module("gymnasium")
    layout = _Layout(env, to_numpy, info_keys, dict_observations)
    if env.batch_dims == 0:
        return _env_class(gymnasium)(env, layout)
    if env.batch_dims == 1:
        return _vector_class(gymnasium)(env, layout)
    raise TypeError(
        f"to_gymnasium exports envs with batch size () or (n,); {type(env).__name__} has "
        f"batch size {tuple(env.batch_size)}"
    )


_classes: dict[str, type] = {}


def _env_class(gymnasium: Any) -> type:
    if "env" in _classes:
        return _classes["env"]

    class TorchenvGymnasiumEnv(gymnasium.Env):
        """A torchenv env (batch size ``()``) as a ``gymnasium.Env``."""

        metadata: dict = {"render_modes": []}

        def __init__(self, env: EnvBase, layout: _Layout) -> None:
            self.env = env
            self._layout = layout
            self.observation_space, self.action_space = _spaces(layout, gymnasium)
            self._td: TensorDictBase | None = None

        def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
            super().reset(seed=seed)
            self._td = seeded_reset(self.env, seed)
            return self._layout.observation(self._td), self._layout.info(self._td)

        def step(self, action: Any) -> tuple:
            if self._td is None:
                raise RuntimeError("call reset() before step()")
            layout = self._layout
            td = self._td.set(layout.action_key, layout.encode(action))
            td = self.env.step(td)
            next_td = td.get("next")
            terminated, truncated = layout.flags(next_td)
            self._td = self.env._step_mdp(td)
            return (
                layout.observation(next_td),
                float(layout.reward(next_td)),
                bool(terminated),
                bool(truncated),
                layout.info(next_td),
            )

        def close(self) -> None:
            self.env.close()

    _classes["env"] = TorchenvGymnasiumEnv
    return TorchenvGymnasiumEnv


def _vector_class(gymnasium: Any) -> type:
    if "vector" in _classes:
        return _classes["vector"]
    vector = importlib.import_module("gymnasium.vector")
    same_step = getattr(vector, "AutoresetMode", None)
    if same_step is None:
        raise ImportError(
            "to_gymnasium exports batched envs as VectorEnvs with same-step autoreset, which "
            f"needs gymnasium>=1.1 (installed: {gymnasium.__version__}): "
            'pip install "gymnasium>=1.1"'
        )
    batch_space = importlib.import_module("gymnasium.vector.utils").batch_space

    class TorchenvVectorEnv(vector.VectorEnv):
        """A torchenv env with batch size ``(n,)`` as a ``gymnasium.vector.VectorEnv``."""

        metadata: dict = {"autoreset_mode": same_step.SAME_STEP, "render_modes": []}

        def __init__(self, env: EnvBase, layout: _Layout) -> None:
            self.env = env
            self._layout = layout
            self.num_envs = env.batch_size[0]
            self.single_observation_space, self.single_action_space = _spaces(layout, gymnasium)
            self.observation_space = batch_space(self.single_observation_space, self.num_envs)
            self.action_space = batch_space(self.single_action_space, self.num_envs)
            self._td: TensorDictBase | None = None

        def reset(self, *, seed: Any = None, options: dict | None = None) -> tuple:
            if seed is not None:
                seed = int(seed if np.isscalar(seed) else seed[0])
            self._td = seeded_reset(self.env, seed)
            return self._layout.observation(self._td), {}

        def step(self, actions: Any) -> tuple:
            if self._td is None:
                raise RuntimeError("call reset() before step()")
            layout = self._layout
            td = self._td.set(layout.action_key, layout.encode(actions))
            td, self._td = self.env.step_and_maybe_reset(td)
            next_td = td.get("next")
            terminated, truncated = layout.flags(next_td)
            infos: dict = {}
            done = terminated | truncated
            if done.any():
                final = layout.observation(next_td)
                final_obs = np.empty(self.num_envs, dtype=object)
                for i in np.flatnonzero(done):
                    final_obs[i] = _row(final, i)
                infos = {"final_obs": final_obs, "_final_obs": done.copy()}
            return (
                layout.observation(self._td),
                layout.reward(next_td),
                terminated,
                truncated,
                infos,
            )

        def close_extras(self, **kwargs: Any) -> None:
            self.env.close()

    _classes["vector"] = TorchenvVectorEnv
    return TorchenvVectorEnv


def _row(observation: Any, i: int) -> Any:
    if isinstance(observation, dict):
        return {key: _row(value, i) for key, value in observation.items()}
    return observation[i]


def _make_exported(
    *,
    entry_point: Callable[..., EnvBase],
    transform: Any,
    to_numpy: bool,
    info_keys: Sequence[Any],
    **kwargs: Any,
) -> Any:
    env = entry_point(**kwargs)
    if transform is not None:
        from torchenv.transforms import TransformedEnv

        env = TransformedEnv(env, transform)
    return to_gymnasium(env, to_numpy=to_numpy, info_keys=info_keys, dict_observations=True)


def register_gym(
    cls: type,
    id: str,
    *,
    entry_point: Callable[..., EnvBase] | None = None,
    transform: Any = None,
    info_keys: Sequence[Any] | None = None,
    backend: str | None = None,
    to_numpy: bool = False,
    reward_threshold: float | None = None,
    nondeterministic: bool = False,
    max_episode_steps: int | None = None,
    order_enforce: bool = True,
    autoreset: bool | None = None,
    disable_env_checker: bool = False,
    apply_api_compatibility: bool = False,
    **kwargs: Any,
) -> Any:
    """``EnvBase.register_gym``: registers ``cls`` (or ``entry_point``) with gymnasium as ``id``.

    TorchRL's method, for gymnasium: ``gymnasium.make(id, **kw)`` builds the env with
    ``entry_point(**kwargs, **kw)`` (``cls`` by default), applies ``transform`` and returns it
    through :func:`to_gymnasium`. ``to_numpy=False`` (TorchRL's default) returns tensors.
    ``transform``, ``to_numpy`` and ``info_keys`` given to ``gymnasium.make`` replace the
    registered ones.
    """
    if backend not in (None, "gymnasium"):
        raise ValueError(
            f"register_gym: torchenv registers with gymnasium only, got backend={backend!r}"
        )
    if autoreset or apply_api_compatibility:
        raise ValueError(
            "register_gym: autoreset and apply_api_compatibility are gym wrappers torchenv does "
            "not apply; batched envs already reset finished sub-envs in the same step"
        )
    gymnasium = importlib.import_module("gymnasium")
    # keywords, so that gymnasium.make(id, transform=..., to_numpy=...) overrides them (TorchRL)
    factory = functools.partial(
        _make_exported,
        entry_point=entry_point or cls,
        transform=transform,
        to_numpy=to_numpy,
        info_keys=tuple(info_keys or ()),
    )
    return gymnasium.register(
        id,
        entry_point=factory,
        reward_threshold=reward_threshold,
        nondeterministic=nondeterministic,
        max_episode_steps=max_episode_steps,
        order_enforce=order_enforce,
        disable_env_checker=disable_env_checker,
        kwargs=kwargs,
    )
