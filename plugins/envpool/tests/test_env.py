"""MultiThreadedEnv: batched conformance (classic control, MuJoCo, Atari), partial resets, seeding,
uint8 frames, bad input, and the same data as envpool's own API for the same seed and actions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchenv
from torchenv.envs import check_env_specs
from torchenv.testing import BatchedEnvConformanceTests, assert_tensordict_equal

envpool = pytest.importorskip(
    "envpool", reason='the envpool plugin\'s tests need envpool (pip install "torchenv[envpool]")'
)

from torchenv_envpool import MultiThreadedEnv, MultiThreadedEnvWrapper  # noqa: E402

pytestmark = pytest.mark.envpool

# envpool < 1.0 has HalfCheetah-v3/-v4 only
HALF_CHEETAH = "HalfCheetah-v5" if "HalfCheetah-v5" in envpool.list_all_envs() else "HalfCheetah-v4"


class _Conformance(BatchedEnvConformanceTests):
    task = "CartPole-v1"
    options: dict = {}
    direct_path = True
    rollout_steps = 4

    def make_batched_env(self, num_envs):
        return MultiThreadedEnv(num_envs, self.task, create_env_kwargs=dict(self.options))


class TestCartPoleConformance(_Conformance):
    task = "CartPole-v1"


class TestPendulumConformance(_Conformance):
    task = "Pendulum-v1"


class TestHalfCheetahConformance(_Conformance):
    task = HALF_CHEETAH


@pytest.mark.slow
class TestPongConformance(_Conformance):
    task = "Pong-v5"
    options = {"num_threads": 2}
    # Pong's first frames do not depend on the noop count drawn at reset: sub-envs start equal
    stochastic = False


# ---------------------------------------------------------------------------------------- by name
def test_make_by_name_and_list_envs():
    names = torchenv.list_envs("envpool")
    assert {"Pong-v5", HALF_CHEETAH, "CartPole-v1"} <= set(names)
    assert names == sorted(envpool.list_all_envs())
    env = torchenv.make("envpool:Pong-v5", num_envs=64, seed=0, num_threads=2)
    try:
        assert isinstance(env, MultiThreadedEnv)
        assert tuple(env.batch_size) == (64,)
        assert env.pool.config["num_envs"] == 64 and env.pool.config["num_threads"] == 2
        check_env_specs(env)
    finally:
        env.close()


def test_ale_prefix_is_envpool_name():
    env = MultiThreadedEnv(2, "ALE/Pong-v5")
    try:
        assert env.env_name == "Pong-v5"
    finally:
        env.close()


def test_atari_frames_are_uint8():
    env = torchenv.make("envpool:Breakout-v5", num_envs=3, seed=1, img_height=64, img_width=48)
    try:
        spec = env.observation_spec["observation"]
        assert spec.dtype == torch.uint8 and tuple(spec.shape) == (3, 4, 64, 48)
        assert int(spec.space.low.min()) == 0 and int(spec.space.high.max()) == 255
        td = env.rollout(3)
        frames = td["next", "observation"]
        assert frames.dtype == torch.uint8 and tuple(frames.shape) == (3, 3, 4, 64, 48)
        assert frames.float().std() > 0  # real images, not zeros
    finally:
        env.close()


def test_one_hot_actions_when_asked():
    env = MultiThreadedEnv(3, "CartPole-v1", categorical_action_encoding=False)
    try:
        assert type(env.action_spec).__name__ == "OneHot" and tuple(env.action_spec.shape) == (3, 2)
        check_env_specs(env)
    finally:
        env.close()


# ----------------------------------------------------------------------------------- parity
def _raw(task, n, seed, actions, options):
    """Per-env records of envpool's own API: ("reset", obs) / ("step", obs, r, term, trunc).

    envpool resets an ended env on its next step (that step's action is ignored): that
    transition is recorded as the env's reset, and each env takes its own action sequence."""
    pool = envpool.make(task, env_type="gymnasium", num_envs=n, seed=seed, **options)
    steps = actions.shape[1]
    obs, _ = pool.reset()
    records = [[("reset", obs[i].copy())] for i in range(n)]
    taken = np.zeros(n, dtype=int)
    pending = np.zeros(n, dtype=bool)
    rows = np.arange(n)
    while (taken < steps).any() or pending.any():
        obs, reward, term, trunc, _ = pool.step(actions[rows, np.minimum(taken, steps - 1)])
        for i in range(n):
            if pending[i]:
                assert reward[i] == 0 and not term[i] and not trunc[i]
                records[i].append(("reset", obs[i].copy()))
                pending[i] = False
            elif taken[i] < steps:
                records[i].append(("step", obs[i].copy(), reward[i], term[i], trunc[i]))
                taken[i] += 1
                pending[i] = bool(term[i] or trunc[i])
    pool.close()
    return records


def _ours_records(task, n, seed, actions, options):
    env = MultiThreadedEnv(n, task, create_env_kwargs={"seed": seed, **options})
    try:
        td = env.reset()
        records = [[("reset", td["observation"][i].numpy().copy())] for i in range(n)]
        for t in range(actions.shape[1]):
            td["action"] = torch.as_tensor(actions[:, t])
            out, td = env.step_and_maybe_reset(td)
            nxt = out["next"]
            for i in range(n):
                records[i].append(
                    (
                        "step",
                        nxt["observation"][i].numpy().copy(),
                        nxt["reward"][i, 0].item(),
                        bool(nxt["terminated"][i, 0]),
                        bool(nxt["truncated"][i, 0]),
                    )
                )
                if nxt["done"][i, 0]:
                    records[i].append(("reset", td["observation"][i].numpy().copy()))
        return records
    finally:
        env.close()


def _assert_same_records(ours, raw):
    for i, (mine, theirs) in enumerate(zip(ours, raw)):
        assert len(mine) <= len(theirs), f"env {i}: {len(mine)} records, envpool {len(theirs)}"
        for j, (a, b) in enumerate(zip(mine, theirs)):
            assert a[0] == b[0], f"env {i}, record {j}: {a[0]} here, {b[0]} in envpool"
            np.testing.assert_array_equal(a[1], b[1], err_msg=f"env {i}, record {j}: observation")
            if a[0] == "step":
                assert np.float32(a[2]) == np.float32(b[2]), f"env {i}, record {j}: reward"
                assert (a[3], a[4]) == (bool(b[3]), bool(b[4])), f"env {i}, record {j}: dones"


@pytest.mark.parametrize(
    ("task", "options", "steps"),
    [
        ("CartPole-v1", {}, 60),  # many episodes end: partial resets vs envpool's auto-reset
        (HALF_CHEETAH, {"max_episode_steps": 7}, 20),  # truncations
        ("Pong-v5", {"max_episode_steps": 9}, 20),
    ],
)
def test_same_data_as_envpool_api(task, options, steps):
    n, seed = 5, 3
    rng = np.random.default_rng(0)
    pool = envpool.make(task, env_type="gymnasium", num_envs=1)
    space = pool.spec.action_space
    pool.close()
    if type(space).__name__ == "Discrete":
        actions = rng.integers(0, space.n, (n, steps))
    else:
        actions = rng.uniform(space.low, space.high, (n, steps, *space.shape))
    ours = _ours_records(task, n, seed, actions, options)
    raw = _raw(task, n, seed, actions, options)
    assert sum(r[0] == "reset" for rec in ours for r in rec) > n  # episodes did end
    _assert_same_records(ours, raw)


def test_direct_path_rollout_matches_tensordict_path():
    def run(direct):
        env = MultiThreadedEnv(4, "CartPole-v1", create_env_kwargs={"seed": 5})
        if not direct:
            env.__dict__["_cache"]["direct_io_static"] = False
        torch.manual_seed(0)
        try:
            return env.rollout(40, break_when_any_done=False)
        finally:
            env.close()

    assert_tensordict_equal(run(True), run(False))


# ----------------------------------------------------------------------------------- seeding
def test_set_seed_rebuilds_pool_like_envpool_seed():
    env = MultiThreadedEnv(3, "CartPole-v1")
    try:
        env.set_seed(11)
        first = env.reset()["observation"].numpy()
        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=3, seed=11)
        np.testing.assert_array_equal(first, pool.reset()[0])
        pool.close()
        assert env.create_env_kwargs["seed"] == 11
        env.set_seed(11)
        np.testing.assert_array_equal(env.reset()["observation"].numpy(), first)
        env.set_seed(12)
        assert not np.array_equal(env.reset()["observation"].numpy(), first)
    finally:
        env.close()


def test_seed_with_partial_reset_is_refused():
    env = MultiThreadedEnv(3, "CartPole-v1")
    try:
        td = env.reset()
        env.set_seed(1)
        with pytest.raises(ValueError, match="seed: envpool seeds its envs only"):
            env.reset(td.set("_reset", torch.tensor([[True], [False], [False]])))
    finally:
        env.close()


def test_outputs_outlive_the_next_step():
    env = MultiThreadedEnv(2, "Pong-v5", create_env_kwargs={"seed": 0})
    try:
        td = env.rollout(3)
        kept = td["next", "observation"].clone()
        env.rollout(3)
        assert torch.equal(td["next", "observation"], kept)
        assert not torch.equal(kept[:, 0], kept[:, -1])
    finally:
        env.close()


# ----------------------------------------------------------------------------------- bad input
def test_unknown_task():
    with pytest.raises(torchenv.registry.UnknownEnvError, match="Pong-v5"):
        torchenv.make("envpool:Pongg-v5", num_envs=2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_num_envs(bad):
    with pytest.raises(ValueError, match=r"num_envs must be an int >= 1"):
        torchenv.make("envpool:CartPole-v1", num_envs=bad)
    with pytest.raises(ValueError, match=r"num_envs: expected a positive int, got"):
        MultiThreadedEnv(bad, "CartPole-v1")


def test_unknown_option():
    with pytest.raises(
        ValueError, match=r"create_env_kwargs: envpool's 'CartPole-v1' has no option 'foo'"
    ):
        MultiThreadedEnv(2, "CartPole-v1", create_env_kwargs={"foo": 1})


@pytest.mark.parametrize("shape", [(3,), (5,), (4, 2)])
def test_wrong_action_shape(shape):
    env = MultiThreadedEnv(4, "CartPole-v1")
    try:
        td = env.reset().set("action", torch.zeros(4, dtype=torch.int64))
        td = td.clone(False)
        td._tensordict["action"] = torch.zeros(shape, dtype=torch.int64)  # past the batch checks
        with pytest.raises(ValueError, match=r"action: expected shape \(4,\)"):
            env._array_step(td["action"].numpy(), {})
    finally:
        env.close()


def test_wrapper_refuses_other_objects_and_async_pools():
    with pytest.raises(TypeError, match="env: expected an envpool pool"):
        MultiThreadedEnvWrapper(object())
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, batch_size=2)
    try:
        with pytest.raises(ValueError, match="expected a sync pool"):
            MultiThreadedEnvWrapper(pool)
    finally:
        pool.close()
    pool = envpool.make("CartPole-v1", env_type="dm", num_envs=2)
    try:
        with pytest.raises(TypeError, match="env_type='dm'"):
            MultiThreadedEnvWrapper(pool)
    finally:
        pool.close()


def test_close_is_idempotent_and_releases_the_pool():
    env = MultiThreadedEnv(2, "CartPole-v1")
    env.close()
    env.close()
    assert env.pool is None
