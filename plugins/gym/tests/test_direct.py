"""Direct array I/O of GymEnv: the direct path gives the data of the TensorDict path, bit for bit."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs._direct import direct_plan
from torchenv_gym import GymEnv, GymWrapper
from torchenv_gym._toy_envs import LIB

pytestmark = pytest.mark.skipif(LIB.__name__ != "gymnasium", reason="needs gymnasium")

GYMNASIUM_1 = LIB.__name__ == "gymnasium" and int(LIB.__version__.split(".")[0]) >= 1
MODES = ["sync", "async"] + (["vector_entry_point"] if GYMNASIUM_1 else [])


class FlatDictEnv(LIB.Env):
    """A Dict observation of plain spaces (Box of every rank, Discrete with a start, MultiBinary,
    MultiDiscrete), ending at varying times (termination and truncation)."""

    def __init__(self):
        spaces = LIB.spaces
        self.observation_space = spaces.Dict(
            {
                "pos": spaces.Box(-1.0, 1.0, (3,), np.float32),
                "count": spaces.Discrete(5, start=2),
                "flags": spaces.MultiBinary(4),
                "state": spaces.Box(-np.inf, np.inf, (2,), np.float64),
                "scalar": spaces.Box(-1.0, 1.0, (), np.float32),
                "md": spaces.MultiDiscrete([3, 4]),
            }
        )
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.rng = np.random.default_rng(0)
        self.t = 0

    def _obs(self):
        r = self.rng
        return {
            "pos": r.uniform(-1, 1, 3).astype(np.float32),
            "count": int(r.integers(2, 7)),
            "flags": r.integers(0, 2, 4).astype(np.int8),
            "state": r.normal(size=2),
            "scalar": np.float32(r.uniform(-1, 1)),
            "md": r.integers(0, 3, 2),
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        terminated = bool(self.rng.random() < 0.1)
        return self._obs(), float(self.rng.normal()), terminated, self.t >= 15, {}


def _td_path(env):
    """``env`` with its direct array I/O switched off (the TensorDict path)."""
    env._direct_io_supported = lambda: False
    return env


def assert_identical(a, b):
    assert a.batch_size == b.batch_size
    assert a.names == b.names
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    for key in b.keys(True, True):
        x, y = a[key], b[key]
        assert x.dtype == y.dtype, key
        assert x.shape == y.shape, key
        assert x.is_contiguous(), key
        assert torch.equal(x, y), key


def _compare_rollouts(make, steps, **kwargs):
    direct, general = make(), _td_path(make())
    try:
        assert direct_plan(direct) is not None
        assert direct_plan(general) is None
        results = []
        for env in (direct, general):
            env.set_seed(0)
            torch.manual_seed(0)
            first = env.rollout(steps, **kwargs)
            torch.manual_seed(1)  # a second rollout carries on from the env's state
            results.append((first, env.rollout(steps, **kwargs)))
        for x, y in zip(*results, strict=True):
            assert_identical(x, y)
        return results[0]
    finally:
        direct.close()
        general.close()


SINGLE = {
    "cartpole": lambda: GymEnv("CartPole-v1"),
    "cartpole-categorical": lambda: GymEnv("CartPole-v1", categorical_action_encoding=True),
    "pendulum": lambda: GymEnv("Pendulum-v1"),
    "mountaincar": lambda: GymEnv("MountainCarContinuous-v0"),
    "flat-dict": lambda: GymWrapper(FlatDictEnv(), categorical_action_encoding=True),
    # a Discrete observation: a scalar (shape ()) leaf
    "frozenlake": lambda: GymEnv("FrozenLake-v1", categorical_action_encoding=True),
}


@pytest.mark.parametrize("break_when_any_done", [True, False])
@pytest.mark.parametrize("name", list(SINGLE))
def test_single_env_rollouts_match(name, break_when_any_done):
    first, _ = _compare_rollouts(SINGLE[name], 60, break_when_any_done=break_when_any_done)
    if not break_when_any_done and name in ("cartpole", "flat-dict"):
        assert first["next", "done"].any()  # episodes ended (and were reset) inside the rollout


def test_set_truncated_matches():
    make = SINGLE["cartpole-categorical"]
    result, _ = _compare_rollouts(make, 30, break_when_any_done=False, set_truncated=True)
    assert result["next", "truncated"][-1].all()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("break_when_any_done", [True, False])
def test_vector_env_rollouts_match(mode, break_when_any_done):
    def make():
        return GymEnv("CartPole-v1", num_envs=4, vectorization_mode=mode)

    result, _ = _compare_rollouts(make, 40, break_when_any_done=break_when_any_done)
    assert result.batch_size[0] == 4 and result.names[-1] == "time"
    if not break_when_any_done:
        assert result["next", "done"].any()  # partial resets happened


def test_vector_pendulum_rollouts_match():
    _compare_rollouts(lambda: GymEnv("Pendulum-v1", num_envs=4), 20, break_when_any_done=False)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GymEnv("ToyDict-v0"),  # a nested Dict observation and a Dict action
        lambda: GymEnv("ToyTuple-v0"),
        lambda: GymEnv("ToyTuple-v0", categorical_action_encoding=True),
        lambda: GymWrapper(FlatDictEnv()),  # a Discrete observation one-hot encoded
        lambda: GymEnv("CartPole-v1").set_info_dict_reader(),
        lambda: GymWrapper(LIB.make("ToyDict-v0"), from_pixels=True),
    ],
    ids=["toy-dict", "toy-tuple", "toy-tuple-categorical", "onehot-obs", "info-reader", "pixels"],
)
def test_envs_without_direct_io_fall_back(make):
    envs = [make(), make()]
    try:
        assert direct_plan(envs[0]) is None
        results = []
        for env in envs:
            env.set_seed(0)
            torch.manual_seed(0)
            results.append(env.rollout(12, break_when_any_done=False))
        assert_identical(*results)
    finally:
        for env in envs:
            env.close()


def test_info_reader_switches_direct_io_off():
    env = GymEnv("CartPole-v1")
    assert direct_plan(env) is not None
    env.set_info_dict_reader()
    assert direct_plan(env) is None


# ------------------------------------------------------------------------------ batched runners
def _cartpole():
    return GymEnv("CartPole-v1")


def _pendulum():
    return GymEnv("Pendulum-v1")


def _cartpole_td():
    return _td_path(GymEnv("CartPole-v1"))


def _pendulum_td():
    return _td_path(GymEnv("Pendulum-v1"))


def _frozenlake():
    return GymEnv("FrozenLake-v1", categorical_action_encoding=True)


def _frozenlake_td():
    return _td_path(_frozenlake())


BATCHED = {
    "cartpole": (_cartpole, _cartpole_td),
    "pendulum": (_pendulum, _pendulum_td),
    "frozenlake": (_frozenlake, _frozenlake_td),
}


def _run(env, actions):
    env.set_seed(0)
    td = env.reset()
    steps, roots = [], []
    for action in actions:
        td["action"] = action
        out, td = env.step_and_maybe_reset(td)
        steps.append(out.clone())
        roots.append(td.clone())
    return torch.stack(steps, -1), torch.stack(roots, -1)


@pytest.mark.parallel
@pytest.mark.parametrize("name", list(BATCHED))
def test_batched_runners_match(name):
    make, make_td = BATCHED[name]
    probe = make()
    torch.manual_seed(0)
    actions = [probe.action_spec.rand((2,)) for _ in range(80)]
    probe.close()
    envs = [SerialEnv(2, make), SerialEnv(2, make_td), ParallelEnv(2, make)]
    try:
        results = [_run(env, actions) for env in envs]
        assert all(r._direct is not None for r in envs[0]._runners)
        assert all(r._direct is None for r in envs[1]._runners)
    finally:
        for env in envs:
            env.close()
    reference = results[1]
    for result in (results[0], results[2]):
        for x, y in zip(result, reference, strict=True):
            assert_identical(x, y)
    if name != "pendulum":
        assert reference[0]["next", "done"].any()  # workers were reset inside the loop


def _step_loop(env, steps, extra):
    """``step_and_maybe_reset`` with random actions (and a policy-like extra entry)."""
    env.set_seed(0)
    torch.manual_seed(0)
    td = env.reset()
    outs = []
    for _ in range(steps):
        td = env.rand_action(td)
        if extra:
            td.set("logits", torch.randn(*env.batch_size, 3))
        step, td = env.step_and_maybe_reset(td)
        outs.append((step.clone(), td.clone()))
    return outs


@pytest.mark.parametrize("extra", [False, True])
@pytest.mark.parametrize(
    "make",
    [
        SINGLE["cartpole"],
        SINGLE["pendulum"],
        SINGLE["flat-dict"],
        lambda: GymEnv("CartPole-v1", num_envs=4, vectorization_mode="sync"),
        *(
            [lambda: GymEnv("CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point")]
            if GYMNASIUM_1
            else []
        ),
    ],
)
def test_step_and_maybe_reset_matches(make, extra):
    direct, general = make(), _td_path(make())
    try:
        steps = 70
        for (step_a, next_a), (step_b, next_b) in zip(
            _step_loop(direct, steps, extra), _step_loop(general, steps, extra), strict=True
        ):
            for a, b in ((step_a, step_b), (next_a, next_b)):
                assert set(a.keys(True, True)) == set(b.keys(True, True))
                for key in b.keys(True, True):
                    assert a[key].dtype == b[key].dtype, key
                    assert torch.equal(a[key], b[key]), key
    finally:
        direct.close()
        general.close()


def _vector_cartpole(direct: bool, mode: str):
    env = GymEnv("CartPole-v1", num_envs=3, vectorization_mode=mode)
    return env if direct else _td_path(env)


def _batched_loop(cls, direct: bool, mode: str, steps: int = 50):
    env = cls(2, functools.partial(_vector_cartpole, direct, mode))
    try:
        return _step_loop(env, steps, extra=False)
    finally:
        env.close()


@pytest.mark.parallel
@pytest.mark.parametrize("mode", ["sync"] + (["vector_entry_point"] if GYMNASIUM_1 else []))
def test_batched_envs_of_vector_envs_match(mode):
    """Sub-envs that are vector envs themselves: the runners' direct path resets the sub-env
    rows that are done (partial resets inside a worker), as the TensorDict path does."""
    reference = _batched_loop(SerialEnv, False, mode)
    for cls in (SerialEnv, ParallelEnv):
        for (step_a, next_a), (step_b, next_b) in zip(
            _batched_loop(cls, True, mode), reference, strict=True
        ):
            for a, b in ((step_a, step_b), (next_a, next_b)):
                assert set(a.keys(True, True)) == set(b.keys(True, True))
                for key in b.keys(True, True):
                    assert torch.equal(a[key], b[key]), (cls.__name__, key)
