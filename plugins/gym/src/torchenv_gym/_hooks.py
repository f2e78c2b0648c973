"""The plugin's hook module: declares the ``gymnasium`` and ``gym`` backends.

Imports no simulator: gym/gymnasium are imported only when an env is listed or made.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from packaging.version import Version

from torchenv.registry import Backend, hookimpl

_DIST = "torchenv-gym"
_LIBRARIES = ("gymnasium", "gym")


# What works when gym < 0.27 sits next to numpy 2: never "install numpy<2" here (that downgrades
# numpy under every other package of the venv), but legacy gym in a venv of its own.
GYM_VENV_HINT = (
    "Use the gymnasium backend here, or legacy gym in a separate venv: "
    'python -m venv gym-venv && gym-venv/bin/pip install "torchenv[gym]"'
)


def _legacy_gym_problem() -> tuple[str, str] | None:
    """``(reason, hint)`` when the installed gym (< 0.27, uses ``np.bool8``) sits next to numpy 2
    (VMAS pulls gym 0.26 into numpy-2 venvs), else ``None``. Read from metadata: nothing imported.

    The gym backend's ``compatibility`` check: ``torchenv.backends()`` reports it as
    ``"unsupported version"``, says why and what works, instead of advising a numpy downgrade
    that would break the other packages of the environment.
    """
    try:
        gym, numpy = metadata.version("gym"), metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return None
    if Version(gym) < Version("0.27") and Version(numpy) >= Version("2"):
        reason = (
            f"gym {gym} cannot run with numpy {numpy} (gym < 0.27 uses np.bool8, removed in "
            "numpy 2)"
        )
        return reason, GYM_VENV_HINT
    return None


@hookimpl
def torchenv_backends() -> list[Backend]:
    return [
        Backend(
            name="gymnasium",
            distribution=_DIST,
            simulator="gymnasium",
            supported=">=0.29",
            install='pip install "torchenv[gymnasium]"',
            description="Gymnasium envs (classic control, Box2D, MuJoCo, Atari, ...), "
            "single or vectorised (num_envs=N).",
        ),
        Backend(
            name="gym",
            distribution=_DIST,
            simulator="gym",
            supported=">=0.23,<0.27",
            install='pip install "torchenv[gym]"',
            description="Legacy OpenAI gym envs (gym 0.23 to 0.26).",
            compatibility=_legacy_gym_problem,
        ),
    ]


@hookimpl
def torchenv_list_envs(backend: str) -> list[str] | None:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._backend import registered_ids, set_gym_backend

    with set_gym_backend(backend) as chosen:
        return [
            i for i in registered_ids(chosen.backend) if _dependencies_installed(chosen.backend, i)
        ]


# gymnasium's env sets and the module each needs (the extra that brings it: torchenv[gymnasium-*]).
_SET_NEEDS = {".envs.mujoco": "mujoco", ".envs.box2d": "Box2D"}


def _dependencies_installed(module: Any, env_id: str) -> bool:
    """Whether the simulator of ``env_id``'s env set is importable (listed ids only: as the
    PettingZoo list, ``torchenv list gymnasium`` hides the envs that cannot be made here)."""
    import importlib.util

    spec = module.envs.registry.get(env_id)
    entry = getattr(spec, "entry_point", None)
    if not isinstance(entry, str):
        return True
    for part, needed in _SET_NEEDS.items():
        if part in entry:
            return importlib.util.find_spec(needed) is not None
    return True


@hookimpl
def torchenv_make_env(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._backend import registered_ids, set_gym_backend
    from torchenv_gym._env import GymEnv

    with set_gym_backend(backend) as chosen:
        known = registered_ids(chosen.backend, external=False)
        if env_id not in known:  # ALE/...: registered once ale_py is imported
            known = registered_ids(chosen.backend)
        if env_id not in known:
            from torchenv.registry import UnknownEnvError

            raise UnknownEnvError(backend, env_id, known)
        return GymEnv(env_id, **kwargs)


@hookimpl
def torchenv_raw_loop(backend: str, env_id: str, kwargs: dict[str, Any]) -> Any:
    if backend not in _LIBRARIES:
        return None
    from torchenv_gym._raw import make_raw_loop

    return make_raw_loop(backend, env_id, kwargs)
