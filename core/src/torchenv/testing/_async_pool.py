"""Conformance tests for asynchronous pools (:class:`~torchenv.batched.AsyncEnvPool`).

``AsyncEnvPoolConformanceTests`` runs every test of
:class:`~torchenv.testing.BatchedEnvConformanceTests` on the pool's synchronous API, and
checks the asynchronous one against it: what ``async_*_send`` / ``async_*_recv`` return, in
any order and any grouping, is what a twin pool's ``step`` / ``reset`` /
``step_and_maybe_reset`` return for the same sub-envs, seed for seed; every row carries its
``"env_index"``; misuse raises (a ``recv`` with nothing sent, a second command to a busy
sub-env, a sub-env index out of range, a synchronous call while commands are in flight, a
``recv`` after ``close``).
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from torchenv.batched import AsyncEnvPool, EnvClosedError
from torchenv.envs import EnvBase, step_mdp
from torchenv.testing._batched import BatchedEnvConformanceTests
from torchenv.testing._conformance import assert_tensordict_equal

__all__ = ["AsyncEnvPoolConformanceTests"]

_TAG = "env_index"


def _untagged(td: TensorDictBase) -> TensorDictBase:
    return td.exclude(_TAG, ("next", _TAG))


class AsyncEnvPoolConformanceTests(BatchedEnvConformanceTests):
    """Contract tests for :class:`~torchenv.batched.AsyncEnvPool`; subclass it and implement
    :meth:`make_batched_env` returning a pool of ``num_envs`` sub-envs.

    >>> from torchenv.batched import AsyncEnvPool
    >>> from torchenv.envs import PendulumEnv
    >>> from torchenv.testing import AsyncEnvPoolConformanceTests
    >>> class TestPendulumPool(AsyncEnvPoolConformanceTests):
    ...     def make_batched_env(self, num_envs):
    ...         return AsyncEnvPool([PendulumEnv] * num_envs, backend="threading")
    >>> TestPendulumPool().test_async_step_matches_step()
    """

    def _pair(self) -> tuple[EnvBase, EnvBase, TensorDictBase]:
        """A pool and its twin, seeded alike and reset; the pool's first root."""
        env, twin = self.make_env(), self.make_env()
        assert isinstance(env, AsyncEnvPool), (
            f"make_batched_env must return an AsyncEnvPool; got {type(env).__name__}"
        )
        env.set_seed(self.seed)
        twin.set_seed(self.seed)
        with self._global_seed(self.seed):
            td = env.reset()
            twin.reset()
        return env, twin, td

    def _actions(self, env: EnvBase, td: TensorDictBase, seed: int) -> TensorDictBase:
        with self._global_seed(seed):
            return env.rand_action(td.clone())

    @staticmethod
    def _close(*envs: EnvBase) -> None:
        for env in envs:
            env.close(raise_if_closed=False)

    # ------------------------------------------------------------------ tests
    def test_async_step_matches_step(self) -> None:
        """``async_step_send`` of every sub-env then ``async_step_recv(min_get=n)`` returns what
        ``step`` returns, rows in sub-env order, tagged ``0..n-1``."""
        if not self.deterministic:
            self._skip("env declared non-deterministic")
        env, twin, td = self._pair()
        try:
            n = self.num_envs
            for t in range(3):
                td = self._actions(env, td, self.seed + t)
                expected = twin.step(td.clone())
                env.async_step_send(td)
                out = env.async_step_recv(min_get=n)
                assert out.get(_TAG).reshape(n, -1)[:, 0].tolist() == list(range(n)), (
                    f"async_step_recv(min_get={n}) rows are tagged {out.get(_TAG).tolist()}"
                )
                assert_tensordict_equal(
                    _untagged(out).get("next"), expected.get("next"), f"step {t}: next"
                )
                td = step_mdp(_untagged(out), keep_other=True)
        finally:
            self._close(env, twin)

    def test_async_sends_in_parts_and_recv_one_by_one(self) -> None:
        """The sub-envs sent in two groups and received one at a time, last first, give the
        rows of one synchronous ``step``."""
        if not self.deterministic:
            self._skip("env declared non-deterministic")
        env, twin, td = self._pair()
        try:
            n = self.num_envs
            td = self._actions(env, td, self.seed)
            expected = twin.step(td.clone())
            evens, odds = list(range(0, n, 2)), list(range(1, n, 2))
            env.async_step_send(td[torch.tensor(evens)], env_index=evens)
            env.async_step_send(td[torch.tensor(odds)], env_index=odds)
            assert env.busy == list(range(n)), f"busy after sending all: {env.busy}"
            for i in reversed(range(n)):
                row = env.async_step_recv(env_index=i)
                assert row.batch_size[0] == 1 and int(row.get(_TAG).reshape(-1)[0]) == i, (
                    f"async_step_recv(env_index={i}) returned rows {row.get(_TAG).tolist()}"
                )
                assert_tensordict_equal(
                    _untagged(row).get("next")[0],
                    expected.get("next")[i],
                    f"sub-env {i} received alone",
                )
            assert env.busy == [], f"busy after receiving all: {env.busy}"
        finally:
            self._close(env, twin)

    def test_async_first_ready(self) -> None:
        """``recv(max_get=1)`` returns one finished sub-env at a time; each exactly once."""
        env, _, td = self._pair()
        try:
            n = self.num_envs
            env.async_step_send(self._actions(env, td, self.seed))
            seen = []
            for _ in range(n):
                out = env.async_step_recv(min_get=1, max_get=1)
                assert out.batch_size[0] == 1, f"max_get=1 returned {out.batch_size[0]} rows"
                seen += out.get(_TAG).reshape(1, -1)[:, 0].tolist()
            assert sorted(seen) == list(range(n)), f"sub-envs received: {seen}"
        finally:
            self._close(env)

    def test_async_reset_matches_reset(self) -> None:
        """``async_reset_send()`` then ``async_reset_recv(min_get=n)`` gives ``reset()``."""
        env, twin = self.make_env(), self.make_env()
        try:
            env.set_seed(self.seed)
            twin.set_seed(self.seed)
            with self._global_seed(self.seed):
                env.async_reset_send()
                out = env.async_reset_recv(min_get=self.num_envs)
            with self._global_seed(self.seed):
                expected = twin.reset()
            if self.deterministic:
                assert_tensordict_equal(_untagged(out), expected, "async reset")
            for key in expected.keys(True, True):
                assert key in out.keys(True, True), f"async reset lacks {key!r}"
        finally:
            self._close(env, twin)

    def test_async_step_and_maybe_reset_matches(self) -> None:
        """``async_step_and_maybe_reset`` over ``rollout_steps`` steps gives what
        ``step_and_maybe_reset`` gives (the step and the next root, reset where done)."""
        if not self.deterministic:
            self._skip("env declared non-deterministic")
        env, twin, td = self._pair()
        try:
            n = self.num_envs
            td_twin = td.clone()
            for t in range(self.rollout_steps):
                td = self._actions(env, td, self.seed + t)
                td_twin.update(td.select(*env.action_keys))
                exp, td_twin = twin.step_and_maybe_reset(td_twin)
                env.async_step_and_maybe_reset_send(td)
                out, td = env.async_step_and_maybe_reset_recv(min_get=n)
                assert td.get(_TAG).reshape(n, -1)[:, 0].tolist() == list(range(n))
                assert_tensordict_equal(
                    _untagged(out).get("next"), exp.get("next"), f"step {t}: next"
                )
                for key in td_twin.keys(True, True):
                    assert_tensordict_equal(
                        td.select(key), td_twin.select(key), f"step {t}: next root {key!r}"
                    )
        finally:
            self._close(env, twin)

    def test_async_misuse_raises(self) -> None:
        """A ``recv`` with nothing in flight, a second send to a busy sub-env, an index out of
        range and a synchronous ``step`` while commands are in flight raise; after the
        ``recv``, the pool works synchronously again."""
        import pytest

        env, _, td = self._pair()
        try:
            n = self.num_envs
            with pytest.raises(RuntimeError, match="no step in flight"):
                env.async_step_recv()
            td = self._actions(env, td, self.seed)
            with pytest.raises(IndexError, match="env_index"):
                env.async_step_send(td[:1], env_index=[n])
            env.async_step_send(td[:1], env_index=[0])
            with pytest.raises(RuntimeError, match=r"\[0\]"):
                env.async_step_send(td[:1], env_index=[0])
            with pytest.raises(RuntimeError, match="in flight|still processing"):
                env.step(td.clone())
            with pytest.raises(RuntimeError, match="cannot await"):
                env.async_step_recv(min_get=2)
            env.async_step_recv(min_get=1)
            assert env.step(td.clone()).get("next").batch_size[0] == n
        finally:
            self._close(env)

    def test_async_close_with_commands_in_flight(self) -> None:
        """``close`` with steps in flight: nothing stays in flight and a later ``recv``
        raises ``EnvClosedError``."""
        import pytest

        env, _, td = self._pair()
        try:
            env.async_step_send(self._actions(env, td, self.seed))
            env.close()
            with pytest.raises(EnvClosedError):
                env.async_step_recv()
            assert env.busy == [], f"busy after close: {env.busy}"
        finally:
            self._close(env)
