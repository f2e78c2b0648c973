"""BatchedEnvConformanceTests passes correct batched envs and catches broken ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.envs import ArrayEnv, CartPoleEnv
from torchenv.specs import Bounded, Composite, Unbounded
from torchenv.testing import BatchedEnvConformanceTests


class Drift(ArrayEnv):
    """Sub-env i drifts by its action plus noise from its own generator (seeded seed + i)."""

    def __init__(self, num_envs, shared_rng=False, reset_all=False, same_rows=False):
        super().__init__(batch_size=(num_envs,))
        self.observation_spec = Composite(x=Unbounded((num_envs, 1)), shape=(num_envs,))
        self.action_spec = Bounded(-1.0, 1.0, (num_envs, 1))
        self.reward_spec = Unbounded((num_envs, 1))
        self.n, self.shared, self.reset_all, self.same_rows = (
            num_envs,
            shared_rng,
            reset_all,
            same_rows,
        )
        self.x = np.zeros((num_envs, 1), np.float32)
        self.t = np.zeros((num_envs, 1), np.int64)
        self._seed(0)

    def _seed(self, seed):
        if self.same_rows:
            self.rngs = [np.random.default_rng(seed) for _ in range(self.n)]
        else:
            self.rngs = [np.random.default_rng(seed + i) for i in range(self.n)]

    def _noise(self, rows):
        if self.shared:  # one stream for all: draws depend on which rows draw
            return self.rngs[0].normal(size=(len(rows), 1))
        return np.array([[self.rngs[i].normal()] for i in rows])

    def _array_reset(self, out, mask, seed):
        if seed is not None:
            self._seed(seed)
        rows = np.arange(self.n) if mask is None or self.reset_all else np.flatnonzero(mask)
        self.x[rows] = self._noise(rows)
        self.t[rows] = 0
        out["x"][...] = np.where(np.isin(np.arange(self.n), rows)[:, None], self.x, out["x"])

    def _array_step(self, action, out):
        rows = np.arange(self.n)
        self.x += action + 0.1 * self._noise(rows)
        if self.shared:  # coupled sub-envs: each feels the others' actions
            self.x += 0.1 * action.mean()
        self.t += 1
        out["x"][...] = self.x
        out["reward"][...] = -np.abs(self.x)
        out["terminated"][...] = False
        out["truncated"][...] = self.t >= 5 + np.arange(self.n)[:, None]
        out["done"][...] = out["truncated"]


class TestDrift(BatchedEnvConformanceTests):
    direct_path = True

    def make_batched_env(self, num_envs):
        return Drift(num_envs)


class TestCartPole(BatchedEnvConformanceTests):
    direct_path = False

    def make_batched_env(self, num_envs):
        return CartPoleEnv(batch_size=[num_envs])


def _suite(**flags):
    class Broken(BatchedEnvConformanceTests):
        def make_batched_env(self, num_envs):
            return Drift(num_envs, **flags)

    return Broken()


def test_catches_a_reset_that_ignores_the_mask():
    with pytest.raises(
        AssertionError, match="not in the mask differs from the same sub-env of a twin"
    ):
        _suite(reset_all=True).test_partial_reset_by_mask()


def test_catches_dependent_sub_envs():
    with pytest.raises(AssertionError, match="sub-envs 1.. after other actions in sub-env 0"):
        _suite(shared_rng=True).test_sub_envs_are_independent()


def test_catches_identical_sub_envs():
    with pytest.raises(AssertionError, match="every sub-env was reset to the same observations"):
        _suite(same_rows=True).test_sub_envs_differ_after_seeding()


def test_catches_a_wrong_direct_path_claim():
    suite = _suite()
    suite.direct_path = False
    with pytest.raises(AssertionError, match="direct_plan"):
        suite.test_direct_path_matches_tensordict_path()


def test_catches_a_batch_size_not_following_num_envs():
    class Fixed(BatchedEnvConformanceTests):
        def make_batched_env(self, num_envs):
            return Drift(4)

    with pytest.raises(AssertionError, match=r"make_batched_env\(1\) has batch_size \(4,\)"):
        Fixed().test_batch_size_follows_num_envs()


def test_direct_and_tensordict_paths_compared():
    torch.manual_seed(0)
    TestDrift().test_direct_path_matches_tensordict_path()
