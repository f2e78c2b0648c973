"""Tiny Dict- and Tuple-space envs, for tests and examples (registered as ToyDict-v0, ToyTuple-v0).

Written against the gym library that is installed (gymnasium preferred, else gym) and registered
with it on import. They live in the package (not in the tests) so that ParallelEnv workers can
import them.
"""

from __future__ import annotations

import importlib
import importlib.util

import numpy as np

from torchenv_gym._backend import registered_ids

HAS_GYMNASIUM = importlib.util.find_spec("gymnasium") is not None
HAS_GYM = importlib.util.find_spec("gym") is not None
LIB = importlib.import_module("gymnasium" if HAS_GYMNASIUM else "gym")

spaces = LIB.spaces


def lib_version() -> tuple[int, ...]:
    return tuple(int(p) for p in LIB.__version__.split(".")[:2])


NEW_API = LIB.__name__ == "gymnasium" or lib_version() >= (0, 26)


class _ToyEnv(LIB.Env):
    """Deterministic given its seed; ends after ``horizon`` steps (truncation via TimeLimit)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, render_mode=None):
        self.render_mode = render_mode
        self.t = 0
        self.rng = np.random.default_rng(0)

    def reset(self, *, seed=None, options=None, return_info=False):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        obs = self._obs()
        return (obs, {"t": self.t}) if (NEW_API or return_info) else obs

    def step(self, action):
        self.t += 1
        obs = self._obs()
        reward = float(self.rng.normal())
        terminated = bool(self.rng.random() < 0.05)
        info = {"t": self.t, "flag": self.t % 2 == 0}
        if NEW_API:
            return obs, reward, terminated, False, info
        return obs, reward, terminated, info

    def render(self, mode="rgb_array"):
        return np.full((8, 6, 3), self.t % 255, dtype=np.uint8)


class DictEnv(_ToyEnv):
    """Dict observations (nested) and a Dict action."""

    def __init__(self, render_mode=None):
        super().__init__(render_mode)
        self.observation_space = spaces.Dict(
            {
                "position": spaces.Box(-1.0, 1.0, (3,), np.float32),
                "sensors": spaces.Dict(
                    {
                        "count": spaces.Discrete(5),
                        "flags": spaces.MultiBinary(4),
                    }
                ),
                "state": spaces.Box(-np.inf, np.inf, (2,), np.float64),
            }
        )
        self.action_space = spaces.Dict(
            {"move": spaces.Box(-1.0, 1.0, (2,), np.float32), "mode": spaces.Discrete(3)}
        )

    def _obs(self):
        r = self.rng
        return {
            "position": r.uniform(-1, 1, 3).astype(np.float32),
            "sensors": {"count": int(r.integers(5)), "flags": r.integers(0, 2, 4).astype(np.int8)},
            "state": r.normal(size=2),
        }


class TupleEnv(_ToyEnv):
    """A heterogeneous Tuple observation and a homogeneous Tuple action."""

    def __init__(self, render_mode=None):
        super().__init__(render_mode)
        self.observation_space = spaces.Tuple(
            (spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Discrete(4))
        )
        self.action_space = spaces.Tuple(
            (spaces.Box(-1.0, 1.0, (2,), np.float32), spaces.Box(-1.0, 1.0, (2,), np.float32))
        )

    def _obs(self):
        return (self.rng.uniform(-1, 1, 2).astype(np.float32), int(self.rng.integers(4)))


def register() -> None:
    """Register ToyDict-v0 and ToyTuple-v0 with the library (idempotent)."""
    for name, cls in (("ToyDict-v0", DictEnv), ("ToyTuple-v0", TupleEnv)):
        if name not in registered_ids(LIB):
            LIB.register(name, entry_point=cls, max_episode_steps=50)


register()
