"""The conformance mixin passes a correct env and catches deliberately broken ones."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Binary, Bounded, Categorical, Composite, Unbounded
from torchenv.testing import EnvConformanceTests


class CounterEnv(EnvBase):
    """A correct batched env: counts steps from a seeded random offset; ends after 5 steps."""

    def __init__(self, batch_size=(4,)):
        super().__init__(batch_size=torch.Size(batch_size))
        shape = self.batch_size
        self.observation_spec = Composite(
            observation=Bounded(low=-1.0, high=100.0, shape=(*shape, 2)), shape=shape
        )
        self.action_spec = Categorical(2, shape=shape)
        self.reward_spec = Unbounded(shape=(*shape, 1))
        flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=shape
        )
        self.count = torch.zeros(shape)
        self.offset = torch.zeros(shape)
        self.rng = torch.Generator()

    def _set_seed(self, seed):
        self.rng.manual_seed(seed if seed is not None else 0)

    def _fresh_offset(self):
        return torch.rand(self.batch_size, generator=self.rng)

    def _reset(self, tensordict, **kwargs):
        reset = None if tensordict is None else tensordict.get("_reset", None)
        mask = torch.ones(self.batch_size, dtype=torch.bool) if reset is None else reset.squeeze(-1)
        self.offset = torch.where(mask, self._fresh_offset(), self.offset)
        self.count = self.count.masked_fill(mask, 0.0)
        return self._output(terminated=torch.zeros((*self.batch_size, 1), dtype=torch.bool))

    def _output(self, terminated, truncated=None):
        truncated = torch.zeros_like(terminated) if truncated is None else truncated
        return TensorDict(
            {
                "observation": torch.stack([self.count, self.offset], -1),
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            },
            self.batch_size,
        )

    def _step(self, tensordict):
        self.count = self.count + 1 + tensordict["action"].float()
        out = self._output(terminated=(self.count >= 5).unsqueeze(-1))
        out["reward"] = tensordict["action"].float().unsqueeze(-1)
        return out


class ObsOutOfSpecEnv(CounterEnv):
    def _step(self, tensordict):
        out = super()._step(tensordict)
        out["observation"] = out["observation"] + 1000.0  # spec says [-1, 100]
        return out


class WrongDtypeEnv(CounterEnv):
    def _reset(self, tensordict, **kwargs):
        out = super()._reset(tensordict, **kwargs)
        out["observation"] = out["observation"].double()
        return out


class UnseededEnv(CounterEnv):
    def _fresh_offset(self):
        generator = torch.Generator()
        generator.seed()  # from the OS: ignores env.set_seed
        return torch.rand(self.batch_size, generator=generator)


class NoPartialResetEnv(CounterEnv):
    def _reset(self, tensordict, **kwargs):
        return super()._reset(None)  # resets every sub-env, whatever "_reset" says


class BadFlankingEnv(CounterEnv):
    def _step(self, tensordict):
        out = super()._step(tensordict)
        out["done"] = torch.zeros_like(out["done"])  # even when terminated
        return out


class BadRandActionEnv(CounterEnv):
    def rand_action(self, tensordict=None):
        tensordict = TensorDict(batch_size=self.batch_size) if tensordict is None else tensordict
        return tensordict.set("action", torch.full(self.batch_size, 7, dtype=torch.int64))


class DoubleCloseEnv(CounterEnv):
    def close(self, *, raise_if_closed=False):
        if getattr(self, "_closed_once", False):
            raise RuntimeError("closed twice")
        self._closed_once = True
        super().close(raise_if_closed=raise_if_closed)


class ConstantEnv(CounterEnv):
    def _fresh_offset(self):
        return torch.zeros(self.batch_size)


def mixin_for(env_cls, **attributes):
    """A conformance test class for ``env_cls``, like a plugin author would write."""
    return type(
        f"Test{env_cls.__name__}",
        (EnvConformanceTests,),
        {"make_env": lambda self: env_cls(), **attributes},
    )


class TestCounterEnvConformance(EnvConformanceTests):
    """The correct env passes every inherited test."""

    def make_env(self):
        return CounterEnv()


class TestUnbatchedCounterEnvConformance(EnvConformanceTests):
    def make_env(self):
        return CounterEnv(batch_size=())


class GroupEnv(EnvBase):
    """A multi-agent env: observations, actions and rewards nested under group "agents"."""

    def __init__(self, n_agents=2):
        super().__init__(batch_size=torch.Size([3]))
        shape = self.batch_size
        group = (*shape, n_agents)
        self.full_observation_spec = Composite(
            agents=Composite(observation=Unbounded((*group, 2)), shape=group), shape=shape
        )
        self.full_action_spec = Composite(
            agents=Composite(action=Categorical(4, shape=group), shape=group), shape=shape
        )
        self.full_reward_spec = Composite(
            agents=Composite(reward=Unbounded((*group, 1)), shape=group), shape=shape
        )
        flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), shape=shape)
        self.n_agents = n_agents
        self.t = torch.zeros(shape)
        self.rng = torch.Generator()

    def _set_seed(self, seed):
        self.rng.manual_seed(seed if seed is not None else 0)

    def _reset(self, tensordict, **kwargs):
        reset = None if tensordict is None else tensordict.get("_reset", None)
        mask = torch.ones(self.batch_size, dtype=torch.bool) if reset is None else reset.squeeze(-1)
        self.t = self.t.masked_fill(mask, 0.0)
        obs = torch.rand(*self.batch_size, self.n_agents, 2, generator=self.rng)
        flag = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return TensorDict(
            {("agents", "observation"): obs, "done": flag, "terminated": flag.clone()},
            self.batch_size,
        )

    def _step(self, tensordict):
        self.t = self.t + 1
        action = tensordict["agents", "action"].float()
        obs = torch.stack([action, self.t.unsqueeze(-1).expand_as(action)], -1)
        done = (self.t >= 4).unsqueeze(-1)
        return TensorDict(
            {
                ("agents", "observation"): obs,
                ("agents", "reward"): action.unsqueeze(-1),
                "done": done,
                "terminated": done.clone(),
            },
            self.batch_size,
        )


class GrowingEnv(EnvBase):
    """An env with a dynamic spec (a -1 dim): the observation grows by one row per step."""

    def __init__(self):
        super().__init__(batch_size=())
        self.observation_spec = Composite(observation=Unbounded(shape=(3, -1, 2)))
        self.action_spec = Bounded(low=-1, high=1, shape=(2,))
        flag = Binary(1, shape=(1,), dtype=torch.bool)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone())
        self.reward_spec = Unbounded((1,))
        self.count = 0

    def _observe(self):
        done = self.full_done_spec.zero() | (self.count >= 5)
        obs = torch.full((3, self.count + 1, 2), float(self.count))
        return TensorDict({"observation": obs}).update(done)

    def _reset(self, tensordict, **kwargs):
        self.count = 0
        return self._observe()

    def _step(self, tensordict):
        self.count += 1
        return self._observe().update(self.full_reward_spec.zero())


class TestGroupEnvConformance(EnvConformanceTests):
    """Nested multi-agent keys pass the mixin."""

    def make_env(self):
        return GroupEnv()


class TestGrowingEnvConformance(EnvConformanceTests):
    """Dynamic specs (lazily stacked rollouts) pass the mixin."""

    stochastic = False

    def make_env(self):
        return GrowingEnv()


@pytest.mark.parametrize(
    ("env_cls", "test_name", "message"),
    [
        (ObsOutOfSpecEnv, "test_step_writes_next", "'observation' holds values outside"),
        (ObsOutOfSpecEnv, "test_rollout_shapes", "'observation' holds values outside"),
        (ObsOutOfSpecEnv, "test_check_env_specs", None),
        (WrongDtypeEnv, "test_reset_matches_specs", "'observation' has dtype torch.float64"),
        (UnseededEnv, "test_seeding_is_reproducible", "same seed"),
        (NoPartialResetEnv, "test_partial_reset", "not reset"),
        (BadFlankingEnv, "test_done_flanking", "'done' vs 'terminated' | 'truncated'"),
        (BadRandActionEnv, "test_rand_action_in_spec", "'action' holds values outside"),
        (ConstantEnv, "test_different_seeds_differ", "identical rollouts"),
    ],
)
def test_mixin_catches_broken_env(env_cls, test_name, message):
    tests = mixin_for(env_cls)()
    with pytest.raises(AssertionError, match=message):
        getattr(tests, test_name)()


def test_broken_env_fails_only_the_relevant_tests():
    tests = mixin_for(BadFlankingEnv)()
    tests.test_reset_matches_specs()
    tests.test_rollout_shapes()
    tests.test_partial_reset()
    with pytest.raises(AssertionError):
        tests.test_done_flanking()


def test_close_twice_is_caught():
    with pytest.raises(RuntimeError, match="closed twice"):
        mixin_for(DoubleCloseEnv)().test_close_is_idempotent()


def test_opt_out_flags_skip():
    with pytest.raises(pytest.skip.Exception):
        mixin_for(ConstantEnv, stochastic=False)().test_different_seeds_differ()
    with pytest.raises(pytest.skip.Exception):
        mixin_for(UnseededEnv, deterministic=False)().test_seeding_is_reproducible()
    with pytest.raises(pytest.skip.Exception):
        mixin_for(NoPartialResetEnv, supports_partial_reset=False)().test_partial_reset()


def test_make_env_must_be_implemented():
    class TestNothing(EnvConformanceTests):
        pass

    with pytest.raises(NotImplementedError, match="TestNothing must implement make_env"):
        TestNothing().test_rollout_shapes()


def test_mixin_itself_is_not_collected():
    assert not EnvConformanceTests.__name__.startswith("Test")
