"""ArrayEnv: two numpy methods give the TensorDict path and the direct path, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from test_envbase_direct import BATCHES, WalkTD, _rollouts, _smr_loop, assert_identical

from torchenv.batched import SerialEnv
from torchenv.envs import ArrayEnv, check_env_specs, default_info_dict_reader
from torchenv.envs._direct import direct_plan
from torchenv.specs import Bounded, Categorical, Composite, Unbounded
from torchenv.testing import EnvConformanceTests


class WalkArray(ArrayEnv):
    """``WalkTD``'s simulator behind ArrayEnv's two methods."""

    _restart, _advance, _obs = WalkTD._restart, WalkTD._advance, WalkTD._obs

    def __init__(self, batch_size=(), replace=False, info=False, **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        bs = self.bs = tuple(self.batch_size)
        self.observation_spec = Composite(
            position=Unbounded((*bs, 2)),
            count=Unbounded((*bs, 1), dtype=torch.int64),
            phase=Categorical(4, shape=bs),
            shape=bs,
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(*bs, 2))
        self.reward_spec = Unbounded((*bs, 1))
        self.replace, self.info = replace, info
        self.rng = np.random.RandomState(0)
        self.s = {
            "position": np.zeros((*bs, 2), np.float32),
            "count": np.zeros((*bs, 1), np.int64),
            "phase": np.zeros(bs, np.int64),
            "horizon": np.zeros((*bs, 1), np.int64),
        }

    def _array_reset(self, out, mask, seed):
        if seed is not None:
            self.rng = np.random.RandomState(seed)
        self._restart(mask)
        rows = (...,) if mask is None else mask
        for key, value in self._obs().items():
            if self.replace:
                out[key] = value  # a fresh array: the base copies the rows it needs
            else:
                out[key][rows] = value[rows]
        return {"horizon": self.s["horizon"].copy()} if self.info else None

    def _array_step(self, action, out):
        assert isinstance(action, np.ndarray)
        reward, done, terminated, truncated = self._advance(action)
        values = dict(self._obs(), reward=reward, done=done)
        values.update(terminated=terminated, truncated=truncated)
        for key, value in values.items():
            if self.replace:
                out[key] = value
            else:
                out[key][...] = value
        return {"horizon": self.s["horizon"].copy()} if self.info else None


def _no_direct(env):
    env._direct_io_supported = lambda: False
    return env


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("break_when_any_done", [True, False])
@pytest.mark.parametrize("batch_size", BATCHES)
def test_both_paths_match_a_tensordict_env(batch_size, break_when_any_done, replace):
    envs = [
        WalkArray(batch_size, replace=replace),
        _no_direct(WalkArray(batch_size)),
        WalkTD(batch_size),
    ]
    assert direct_plan(envs[0]) is not None
    (direct, direct2), (td_path, td_path2), (ref, ref2) = _rollouts(
        envs, break_when_any_done=break_when_any_done
    )
    assert_identical(direct, ref)
    assert_identical(direct2, ref2)
    assert_identical(td_path, ref)
    assert_identical(td_path2, ref2)
    if not break_when_any_done:
        assert ref["next", "done"].any()  # resets (partial ones for batches) happened


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("batch_size", BATCHES)
def test_step_and_maybe_reset_matches(batch_size, replace):
    direct = _smr_loop(WalkArray(batch_size, replace=replace))
    general = _smr_loop(WalkTD(batch_size))
    for (step_a, next_a), (step_b, next_b) in zip(direct, general):
        for a, b in ((step_a, step_b), (next_a, next_b)):
            assert set(a.keys(True, True)) == set(b.keys(True, True))
            for key in b.keys(True, True):
                assert torch.equal(a[key], b[key]), key


def test_direct_path_is_taken_by_rollout_and_runners():
    env = WalkArray((3,))
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    env.rollout(5, break_when_any_done=False)
    assert len(calls) == 5
    serial = SerialEnv(2, lambda: WalkArray((3,)))
    try:
        reference = SerialEnv(2, lambda: WalkTD((3,)))
        for e in (serial, reference):
            e.set_seed(1)
            torch.manual_seed(0)
        a = serial.rollout(20, break_when_any_done=False)
        torch.manual_seed(0)
        b = reference.rollout(20, break_when_any_done=False)
        assert_identical(a, b)
    finally:
        serial.close()
        reference.close()


def test_outputs_outlive_the_next_step():
    env = WalkArray((2,))
    td = env.reset()
    first = env.rand_step(td.clone())["next", "position"]
    kept = first.clone()
    env.rand_step(td.clone())
    assert torch.equal(first, kept)


def test_partial_reset_writes_only_masked_rows():
    env = WalkArray((4,))
    td = env.rollout(3, break_when_any_done=False)[..., -1]["next"].clone()
    before = td["position"].clone()
    mask = torch.tensor([True, False, True, False]).reshape(4, 1)
    td.set("_reset", mask)
    out = env.reset(td)
    rows = mask.squeeze(-1)
    assert torch.equal(out["position"][~rows], before[~rows])
    assert not torch.equal(out["position"][rows], before[rows])
    assert torch.equal(out["count"][rows], torch.zeros(2, 1, dtype=torch.int64))
    assert not out["done"][rows].any()


def test_reset_into_keeps_rows_not_reset():
    env = WalkArray((3,), replace=True)
    env.reset()
    out = {
        key: np.full(shape, 7, dtype)
        for key, shape, dtype in [
            ("position", (3, 2), np.float32),
            ("count", (3, 1), np.int64),
            ("phase", (3,), np.int64),
            ("done", (3, 1), bool),
            ("terminated", (3, 1), bool),
            ("truncated", (3, 1), bool),
        ]
    }
    env._reset_into(out, np.array([False, True, False]))
    assert (out["count"][[0, 2]] == 7).all() and out["count"][1] == 0
    assert out["done"][[0, 2]].all() and not out["done"][1].any()


def test_seeding_goes_to_the_next_reset():
    env = WalkArray((2,))
    env.set_seed(11)
    a = env.reset()["position"]
    env.set_seed(11)
    b = env.reset()["position"]
    c = env.reset()["position"]
    assert torch.equal(a, b)
    assert not torch.equal(b, c)


def test_info_reader_adds_specs_and_disables_the_direct_path():
    env = WalkArray((2,), info=True).set_info_dict_reader(default_info_dict_reader(["horizon"]))
    assert "horizon" in env.observation_spec
    assert direct_plan(env) is None
    td = env.rollout(4, break_when_any_done=False)
    assert td["next", "horizon"].shape == (2, 4, 1)
    assert (td["next", "horizon"] >= 2).all()
    check_env_specs(env)


def test_direct_io_static_is_asked_once_per_spec_configuration():
    env = WalkArray((2,))
    asked = []
    static = env._direct_io_static
    env._direct_io_static = lambda: asked.append(1) or static()
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    td = env.reset()
    for _ in range(3):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    assert (len(asked), len(calls)) == (1, 3)
    env.reward_spec = Unbounded((2, 1))  # a spec change: asked again
    td = env.reset()
    env.step_and_maybe_reset(env.rand_action(td))
    assert (len(asked), len(calls)) == (2, 4)


def test_a_reader_appended_after_steps_turns_the_direct_path_off():
    env = WalkArray((2,), info=True)
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    td = env.reset()
    _, td = env.step_and_maybe_reset(env.rand_action(td))
    assert len(calls) == 1
    # appended to the list, without set_info_dict_reader: the specs (and cache) are unchanged
    env.info_dict_reader.append(lambda info, out: out.set("seen", torch.ones(2, 1)))
    out, _ = env.step_and_maybe_reset(env.rand_action(td))
    assert len(calls) == 1
    assert out["next", "seen"].shape == (2, 1)


def test_auto_registered_info_reader():
    env = WalkArray((2,), info=True).auto_register_info_dict()
    assert env.observation_spec["horizon"].dtype == torch.int64
    check_env_specs(env)


class MultiAgent(ArrayEnv):
    """Nested keys, float64 observations and two action keys: the TensorDict path only."""

    def __init__(self):
        super().__init__(batch_size=())
        self.observation_spec = Composite(
            agents=Composite(observation=Unbounded((3, 2), dtype=torch.float64), shape=(3,)),
            adversary=Composite(observation=Unbounded((1, 2), dtype=torch.float64), shape=(1,)),
        )
        self.full_action_spec = Composite(
            agents=Composite(action=Bounded(-1.0, 1.0, (3, 2)), shape=(3,)),
            adversary=Composite(action=Categorical(4, (1,)), shape=(1,)),
        )
        self.full_reward_spec = Composite(
            agents=Composite(reward=Unbounded((3, 1)), shape=(3,)),
            adversary=Composite(reward=Unbounded((1, 1)), shape=(1,)),
        )
        self.pos = np.zeros((4, 2))

    def _array_reset(self, out, mask, seed):
        assert set(out) == {("agents", "observation"), ("adversary", "observation")}
        self.pos[:] = 0.0
        out["agents", "observation"][:] = self.pos[:3]
        out["adversary", "observation"][:] = self.pos[3:]

    def _array_step(self, action, out):
        self.pos[:3] += action["agents", "action"]
        self.pos[3] += action["adversary", "action"][0]
        out["agents", "observation"][:] = self.pos[:3]
        out["adversary", "observation"][:] = self.pos[3:]
        out["agents", "reward"][:] = -np.abs(self.pos[:3]).sum(-1, keepdims=True)
        out["adversary", "reward"][:] = 1.0
        for key in ("done", "terminated", "truncated"):
            out[key][:] = False


def test_nested_keys_and_several_actions():
    env = MultiAgent()
    assert direct_plan(env) is None
    check_env_specs(env)
    td = env.rollout(4)
    assert td["next", "agents", "observation"].dtype == torch.float64
    assert td["next", "agents", "reward"].shape == (4, 3, 1)
    assert td["agents", "action"].shape == (4, 3, 2)
    expected = td["agents", "action"].double().sum(0)
    assert torch.allclose(td["next", "agents", "observation"][-1], expected)


def test_missing_methods_raise_a_clear_error():
    class Empty(ArrayEnv):
        def __init__(self):
            super().__init__()
            self.observation_spec = Composite(x=Unbounded((1,)))
            self.action_spec = Unbounded((1,))
            self.reward_spec = Unbounded((1,))

    with pytest.raises(NotImplementedError, match="Empty must implement _array_reset"):
        Empty().reset()


class TestWalkArrayConformance(EnvConformanceTests):
    # unbatched: the sub-envs of a batched Walk share one generator, so they are not
    # independent (the batched contract is tested on the toy plugin's simulator)
    def make_env(self):
        return WalkArray(())


def test_a_plain_tensordict_input_to_reset():
    env = WalkArray((2,))
    out = env.reset(TensorDict({}, [2]))
    assert out["position"].shape == (2, 2)
