"""Direct array I/O (torchenv.envs._direct): same data as the TensorDict path, and fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.envs._direct import direct_plan, rollout_direct
from torchenv.specs import Bounded, Categorical, Composite, Unbounded

ROOT = ("position", "count", "phase", "done", "terminated", "truncated")


class WalkTD(EnvBase):
    """A random walk on numpy state, episodes ending at varying lengths (TensorDict path only).

    ``phase`` has the batch shape (a scalar leaf for an unbatched env). Every step and reset draws
    the same amount of randomness whatever the mask, so both paths stay in step.
    """

    def __init__(self, batch_size=(), nested=False, state=False, extra=False, **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        bs = tuple(self.batch_size)
        self.bs = bs
        obs = {
            "position": Unbounded((*bs, 2)),
            "count": Unbounded((*bs, 1), dtype=torch.int64),
            "phase": Categorical(4, shape=bs),
        }
        if nested:
            obs["sub"] = Composite(x=Unbounded((*bs, 1)), shape=bs)
        self.observation_spec = Composite(obs, shape=bs)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*bs, 2))
        self.reward_spec = Unbounded((*bs, 1))
        flag = Categorical(2, shape=(*bs, 1), dtype=torch.bool)
        self.full_done_spec = Composite(
            done=flag.clone(), terminated=flag.clone(), truncated=flag.clone(), shape=bs
        )
        if state:
            self.state_spec = Composite(hidden=Unbounded((*bs, 1)), shape=bs)
        self.nested, self.state, self.extra = nested, state, extra
        self.rng = np.random.RandomState(0)
        self.s = {
            "position": np.zeros((*bs, 2), np.float32),
            "count": np.zeros((*bs, 1), np.int64),
            "phase": np.zeros(bs, np.int64),
            "horizon": np.zeros((*bs, 1), np.int64),
        }

    def _set_seed(self, seed):
        self.rng = np.random.RandomState(seed)

    # the simulator (numpy in, numpy out)
    def _restart(self, mask):
        s, bs = self.s, self.bs
        fresh = {
            "position": self.rng.uniform(-0.1, 0.1, (*bs, 2)).astype(np.float32),
            "count": np.zeros((*bs, 1), np.int64),
            "phase": self.rng.randint(0, 4, bs).astype(np.int64),
            "horizon": self.rng.randint(2, 12, (*bs, 1)).astype(np.int64),
        }
        if mask is None:
            s.update(fresh)
        else:
            for key, value in fresh.items():
                s[key][mask] = value[mask]

    def _advance(self, action):
        s, bs = self.s, self.bs
        s["position"] = (s["position"] + 0.5 * action + self.rng.normal(0, 0.3, (*bs, 2))).astype(
            np.float32
        )
        s["count"] = s["count"] + 1
        s["phase"] = np.array((s["phase"] + 1) % 4)
        reward = -np.abs(s["position"]).sum(-1, keepdims=True).astype(np.float32)
        terminated = (np.abs(s["position"]).max(-1, keepdims=True) > 1.5) | (
            self.rng.random_sample((*bs, 1)) < 0.05
        )
        truncated = s["count"] >= s["horizon"]
        return reward, terminated | truncated, terminated, truncated

    def _obs(self):
        return {k: np.array(self.s[k]) for k in ("position", "count", "phase")}

    # TensorDict path
    def _reset(self, tensordict=None, **kwargs):
        reset = None if tensordict is None else tensordict.get("_reset", None)
        self._restart(None if reset is None else reset.reshape(self.bs).numpy())
        out = {k: torch.from_numpy(v) for k, v in self._obs().items()}
        false = torch.zeros((*self.bs, 1), dtype=torch.bool)
        out.update(done=false, terminated=false.clone(), truncated=false.clone())
        if self.nested:
            out["sub"] = {"x": torch.zeros((*self.bs, 1))}
        if self.state:
            out["hidden"] = torch.zeros((*self.bs, 1))
        if self.extra:
            out["extra"] = torch.ones((*self.bs, 1))
        return TensorDict(out, self.bs)

    def _step(self, tensordict):
        reward, done, terminated, truncated = self._advance(tensordict["action"].numpy())
        out = {k: torch.from_numpy(v) for k, v in self._obs().items()}
        out.update(
            reward=torch.from_numpy(reward),
            done=torch.from_numpy(done),
            terminated=torch.from_numpy(terminated),
            truncated=torch.from_numpy(truncated),
        )
        if self.nested:
            out["sub"] = {"x": torch.ones((*self.bs, 1))}
        return TensorDict(out, self.bs)


class Walk(WalkTD):
    """``WalkTD`` with the direct array I/O hooks."""

    def _direct_io_supported(self):
        # the hooks write the spec'd entries only: a reset that adds an "extra" entry cannot
        # be mirrored (rollout_direct also checks the first reset output, as a safety net)
        return not self.extra

    def _step_into(self, action, out):
        reward, done, terminated, truncated = self._advance(action.numpy())
        for key, value in self._obs().items():
            out[key][...] = value
        out["reward"][...] = reward
        out["done"][...] = done
        out["terminated"][...] = terminated
        out["truncated"][...] = truncated
        return bool(done.any())

    def _reset_into(self, out, mask=None):
        self._restart(mask)
        rows = (...,) if mask is None else mask
        for key, value in self._obs().items():
            out[key][rows] = value[rows]
        for key in ("done", "terminated", "truncated"):
            out[key][rows] = False


class WalkOwnStep(Walk):
    def step(self, tensordict):
        return super().step(tensordict)


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


def _no_direct(env):
    env._direct_io_supported = lambda: False
    return env


def _rollouts(envs, steps=40, **kwargs):
    """Two rollouts per env (the second carries on from the env's state), same seeds for all."""
    results = []
    for env in envs:
        env.set_seed(3)
        torch.manual_seed(0)
        first = env.rollout(steps, **kwargs)
        torch.manual_seed(1)
        results.append((first, env.rollout(steps, **kwargs)))
    return results


BATCHES = [(), (4,), (2, 3)]


@pytest.mark.parametrize("batch_size", BATCHES)
def test_direct_plan_lists_the_keys(batch_size):
    plan = direct_plan(Walk(batch_size))
    assert plan is not None
    assert plan.action_key == "action"
    assert set(plan.root_keys) == set(ROOT)
    assert set(plan.next_keys) == {*ROOT, "reward"}
    assert plan.leaves["phase"] == (torch.Size(batch_size), torch.int64)
    assert tuple(plan.batch_size) == batch_size


@pytest.mark.parametrize("set_truncated", [False, True])
@pytest.mark.parametrize("break_when_any_done", [True, False])
@pytest.mark.parametrize("batch_size", BATCHES)
def test_direct_rollout_matches_tensordict_rollout(batch_size, break_when_any_done, set_truncated):
    kwargs = {"break_when_any_done": break_when_any_done, "set_truncated": set_truncated}
    (direct, direct2), (general, general2) = _rollouts(
        [Walk(batch_size), _no_direct(Walk(batch_size))], **kwargs
    )
    assert_identical(direct, general)
    assert_identical(direct2, general2)
    if not break_when_any_done:
        assert direct.batch_size[-1] == 40
        assert direct["next", "done"].any()  # resets happened inside the rollout
    else:
        assert direct.batch_size[-1] < 40
    assert direct.names[-1] == "time"


@pytest.mark.parametrize("batch_size", BATCHES)
def test_direct_rollout_matches_env_without_hooks(batch_size):
    (direct, _), (general, _) = _rollouts([Walk(batch_size), WalkTD(batch_size)], 30)
    assert_identical(direct, general)


def test_direct_path_is_taken():
    env = Walk((3,))
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    env.rollout(5, break_when_any_done=False)
    assert len(calls) == 5


@pytest.mark.parametrize(
    "make",
    [
        lambda: Walk((3,), run_type_checks=True),
        lambda: Walk((3,), auto_reset=True),
        lambda: WalkOwnStep((3,)),
        lambda: Walk((3,), nested=True),
        lambda: Walk((3,), state=True),
        lambda: _no_direct(Walk((3,))),
        lambda: WalkTD((3,)),
    ],
    ids=["type-checks", "auto-reset", "own-step", "nested", "state", "unsupported", "no-hooks"],
)
def test_direct_plan_is_none(make):
    assert direct_plan(make()) is None


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: Walk((3,), run_type_checks=True, **kw),
        lambda **kw: WalkOwnStep((3,), **kw),
        lambda **kw: Walk((3,), nested=True, **kw),
        lambda **kw: Walk((3,), state=True, **kw),
        lambda **kw: _no_direct(Walk((3,), **kw)),
    ],
    ids=["type-checks", "own-step", "nested", "state", "unsupported"],
)
@pytest.mark.parametrize("break_when_any_done", [True, False])
def test_fallback_rollouts_are_correct(make, break_when_any_done):
    env = make()

    def fail(*args):
        raise AssertionError("the direct path was taken")

    env._step_into = fail
    kwargs = {"break_when_any_done": break_when_any_done}
    (result, _), (reference, _) = _rollouts([env, WalkTD((3,))], 25, **kwargs)
    keys = set(reference.keys(True, True))
    assert set(result.keys(True, True)) >= keys
    for key in keys:
        assert torch.equal(result[key], reference[key]), key


def test_extra_reset_entry_falls_back():
    """A reset output with an entry the plan does not know: no direct path, reference data."""
    env, reference = Walk((3,), extra=True), WalkTD((3,), extra=True)
    assert direct_plan(env) is None
    (result, _), (expected, _) = _rollouts([env, reference], 20, break_when_any_done=False)
    assert "extra" in result
    assert_identical(result, expected)


def test_rollout_direct_checks_the_first_reset_output():
    """``rollout_direct`` refuses a reset output with entries beyond the plan's (safety net
    for an env claiming support wrongly), before stepping."""
    env = Walk((3,), extra=True)
    env._direct_io_supported = lambda: True
    plan = direct_plan(env)
    assert plan is not None
    first = WalkTD._reset(env)
    assert "extra" in first
    assert rollout_direct(env, plan, first, 5, False) is None


def test_rollout_with_a_policy_matches_the_reference():
    """A policy keeps ``rollout_direct`` out (it draws no random action); the steps go through
    ``step_and_maybe_reset``, direct or not, with the reference result."""
    env, reference = Walk((3,)), WalkTD((3,))

    def policy(td):
        td["action"] = td["position"].clamp(-1, 1) * -1
        return td

    results = []
    for e in (env, reference):
        e.set_seed(0)
        results.append(e.rollout(30, policy, break_when_any_done=False))
    assert_identical(*results)


# ---------------------------------------------------------------- step_and_maybe_reset
def _smr_loop(env, steps=60, extra=False):
    """``step_and_maybe_reset`` with random actions (and a policy-like extra entry)."""
    env.set_seed(5)
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
@pytest.mark.parametrize("batch_size", BATCHES)
def test_direct_step_and_maybe_reset_matches(batch_size, extra):
    direct = _smr_loop(Walk(batch_size), extra=extra)
    general = _smr_loop(_no_direct(Walk(batch_size)), extra=extra)
    for (step_a, next_a), (step_b, next_b) in zip(direct, general):
        assert set(step_a.keys(True, True)) == set(step_b.keys(True, True))
        assert set(next_a.keys(True, True)) == set(next_b.keys(True, True))
        for a, b in ((step_a, step_b), (next_a, next_b)):
            for key in b.keys(True, True):
                assert a[key].dtype == b[key].dtype, key
                assert torch.equal(a[key], b[key]), key


def test_direct_step_and_maybe_reset_is_taken_and_falls_back():
    env = Walk((4,))
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    td = env.rand_action(env.reset())
    env.step_and_maybe_reset(td)
    assert calls == [1]
    td = env.rand_action(env.reset())
    td.set("_step", torch.tensor([True, False, True, True]))  # partial step: general path
    env.step_and_maybe_reset(td)
    assert calls == [1]
    env.run_type_checks = True
    env.step_and_maybe_reset(env.rand_action(env.reset()))
    assert calls == [1]


def test_direct_step_and_maybe_reset_reports_bad_actions():
    env = Walk(())
    td = env.reset()
    td.set("action", torch.zeros(5))
    with pytest.raises((ValueError, KeyError, TypeError, RuntimeError), match="action"):
        env.step_and_maybe_reset(td)
