"""Per-version behaviour of gym and gymnasium, chosen once per library.

gym and gymnasium changed their API several times: the step tuple (4 values up to gym 0.25, 5 after),
the reset signature (``return_info`` up to gym 0.25, ``(obs, info)`` after), the render API
(``render(mode=...)`` up to gym 0.25, ``render_mode=`` at construction after) and the vector envs'
autoreset convention (same step up to gymnasium 0.29, next step in 1.0, selectable from 1.1).

Each behaviour is one function name defined several times with :class:`torchenv.versions.implement_for`.
:class:`GymApi` resolves every behaviour once for a library (``implement_for.prefer(library)`` makes the
library *in use* win when gym and gymnasium are installed side by side) and keeps plain functions,
so the per-step hot path calls a function with no version test.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from torchenv.versions import implement_for
from torchenv_gym._backend import backend_version, check_supported

__all__ = ["GymApi", "AUTORESET_SAME_STEP", "AUTORESET_NEXT_STEP", "AUTORESET_DISABLED"]

AUTORESET_SAME_STEP = "same-step"
AUTORESET_NEXT_STEP = "next-step"
AUTORESET_DISABLED = "disabled"

# Behaviours resolved by GymApi; each is defined below for every supported range of both libraries.
_BEHAVIOURS = (
    "reset_env",
    "step_env",
    "render_env",
    "render_kwargs",
    "make_vec",
    "autoreset_mode",
    "final_obs_key",
)


# ---------------------------------------------------------------------------------------- reset
@implement_for("gym", "0.23", "0.26")
def reset_env(env: Any, seed: int | None, options: dict | None) -> tuple[Any, dict]:
    """``(obs, info)`` from ``env.reset``, seeding it when ``seed`` is given."""
    kwargs: dict[str, Any] = {"return_info": True}
    if seed is not None:
        kwargs["seed"] = seed
    if options:
        kwargs["options"] = options
    out = env.reset(**kwargs)
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict):
        return out
    return out, {}


@implement_for("gym", "0.26", "0.27")
@implement_for("gymnasium", "0.29", None)
def reset_env(env: Any, seed: int | None, options: dict | None) -> tuple[Any, dict]:  # noqa: F811
    return env.reset(seed=seed, options=options)


# ----------------------------------------------------------------------------------------- step
@implement_for("gym", "0.23", "0.26")
def step_env(env: Any, action: Any) -> tuple[Any, Any, Any, Any, dict]:
    """``(obs, reward, terminated, truncated, info)`` from ``env.step``."""
    obs, reward, done, info = env.step(action)
    truncated = bool(info.get("TimeLimit.truncated", False))
    return obs, reward, done and not truncated, truncated, info


@implement_for("gym", "0.26", "0.27")
@implement_for("gymnasium", "0.29", None)
def step_env(env: Any, action: Any) -> tuple[Any, Any, Any, Any, dict]:  # noqa: F811
    return env.step(action)


# --------------------------------------------------------------------------------------- render
@implement_for("gym", "0.23", "0.26")
def render_kwargs(from_pixels: bool) -> dict:
    """Keyword arguments for ``make`` so that the env can render RGB frames."""
    return {}


@implement_for("gym", "0.26", "0.27")
@implement_for("gymnasium", "0.29", None)
def render_kwargs(from_pixels: bool) -> dict:  # noqa: F811
    return {"render_mode": "rgb_array"} if from_pixels else {}


@implement_for("gym", "0.23", "0.26")
def render_env(env: Any) -> Any:
    """One RGB frame (``H x W x 3`` uint8 array) of ``env``."""
    return env.render(mode="rgb_array")


@implement_for("gym", "0.26", "0.27")
@implement_for("gymnasium", "0.29", None)
def render_env(env: Any) -> Any:  # noqa: F811
    return env.render()


# ---------------------------------------------------------------------------------- vector envs
@implement_for("gym", "0.23", "0.27")
def make_vec(module: ModuleType, env_id: str, num_envs: int, mode: str | None, kwargs: dict):
    """Build ``num_envs`` copies of ``env_id`` as one vector env."""
    raise NotImplementedError(
        f"num_envs is supported with gymnasium only, not {module.__name__} {module.__version__}: "
        "batch gym envs with torchenv's SerialEnv or ParallelEnv."
    )


@implement_for("gymnasium", "0.29", "1.0")
def make_vec(module: ModuleType, env_id: str, num_envs: int, mode: str | None, kwargs: dict):  # noqa: F811
    if mode not in (None, "sync", "async"):
        raise ValueError(
            f"vectorization_mode={mode!r} needs gymnasium>=1.0 (found {module.__version__}); "
            "expected 'sync' or 'async'."
        )
    return module.vector.make(env_id, num_envs=num_envs, asynchronous=mode == "async", **kwargs)


@implement_for("gymnasium", "1.0", "1.1")
def make_vec(module: ModuleType, env_id: str, num_envs: int, mode: str | None, kwargs: dict):  # noqa: F811
    return module.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode or "sync", **kwargs)


@implement_for("gymnasium", "1.1", None)
def make_vec(module: ModuleType, env_id: str, num_envs: int, mode: str | None, kwargs: dict):  # noqa: F811
    mode = mode or "sync"
    if mode in ("sync", "async"):
        # DISABLED autoreset is exactly torchenv's contract: the caller resets with a mask.
        vector_kwargs = dict(kwargs.pop("vector_kwargs", None) or {})
        vector_kwargs.setdefault("autoreset_mode", module.vector.AutoresetMode.DISABLED)
        kwargs["vector_kwargs"] = vector_kwargs
    return module.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs)


@implement_for("gym", "0.23", "0.27")
@implement_for("gymnasium", "0.29", "1.0")
def autoreset_mode(env: Any) -> str:
    """The autoreset convention of a vector env (one of the ``AUTORESET_*`` names)."""
    return AUTORESET_SAME_STEP


@implement_for("gymnasium", "1.0", "1.1")
def autoreset_mode(env: Any) -> str:  # noqa: F811
    return AUTORESET_NEXT_STEP


@implement_for("gymnasium", "1.1", None)
def autoreset_mode(env: Any) -> str:  # noqa: F811
    mode = getattr(env, "autoreset_mode", None) or env.metadata.get("autoreset_mode")
    value = getattr(mode, "value", mode)
    return {"SameStep": AUTORESET_SAME_STEP, "Disabled": AUTORESET_DISABLED}.get(
        value, AUTORESET_NEXT_STEP
    )


@implement_for("gym", "0.23", "0.27")
@implement_for("gymnasium", "0.29", "1.0")
def final_obs_key() -> str:
    """Where a same-step vector env puts the last observation of an episode in ``info``."""
    return "final_observation"


@implement_for("gymnasium", "1.0", None)
def final_obs_key() -> str:  # noqa: F811
    return "final_obs"


class GymApi:
    """All version-dependent behaviour of one gym-like library, resolved once.

    Use :meth:`of` (cached per library) rather than the constructor.

    Args:
        module: ``gym`` or ``gymnasium`` (a supported version).

    >>> import gymnasium
    >>> api = GymApi.of(gymnasium)
    >>> env = gymnasium.make("CartPole-v1")
    >>> obs, info = api.reset_env(env, 0, None)
    >>> obs, reward, terminated, truncated, info = api.step_env(env, 0)
    """

    _cache: dict[str, GymApi] = {}

    def __init__(self, module: ModuleType) -> None:
        check_supported(module)
        self.module = module
        self.library = module.__name__.split(".")[0]
        self.version = backend_version(module)
        namespace = globals()
        with implement_for.prefer(self.library):
            for name in _BEHAVIOURS:
                setattr(self, name, namespace[name].resolve())
        self.final_obs_key = self.final_obs_key()

    @classmethod
    def of(cls, module: ModuleType) -> GymApi:
        """The (cached) API of ``module``."""
        api = cls._cache.get(module.__name__)
        if api is None or api.module is not module:
            api = cls._cache[module.__name__] = cls(module)
        return api

    @classmethod
    def for_env(cls, env: Any) -> GymApi:
        """The API of the library that defined ``env``'s class (else the current backend)."""
        from torchenv_gym._backend import gym_backend

        for klass in type(env).__mro__:
            root = klass.__module__.split(".")[0]
            if root in ("gym", "gymnasium"):
                return cls.of(importlib.import_module(root))
        return cls.of(gym_backend())

    def __repr__(self) -> str:
        return f"GymApi({self.library} {self.version})"
