"""Conformance tests for natively batched envs (``batch_size=(num_envs,)``, one simulator).

``BatchedEnvConformanceTests`` extends :class:`~torchenv.testing.EnvConformanceTests` with what a
natively batched backend (a gymnasium vector env, MuJoCo's batched rollouts, VMAS...) must
also get right: its batch size follows ``num_envs`` (one env too), a ``"_reset"`` mask resets
exactly the masked sub-envs, sub-envs are independent of each other, seeding gives reproducible
and distinct sub-envs, and, where the env takes the direct array I/O path, that path gives what
the TensorDict path gives.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from torchenv.envs import EnvBase, step_mdp
from torchenv.testing._conformance import (
    EnvConformanceTests,
    _assert_equal,
    _values,
    assert_tensordict_equal,
)

__all__ = ["BatchedEnvConformanceTests"]


class BatchedEnvConformanceTests(EnvConformanceTests):
    """Contract tests for natively batched envs; subclass it and implement :meth:`make_batched_env`.

    Every test of :class:`~torchenv.testing.EnvConformanceTests` runs too, on
    ``make_batched_env(num_envs)``. Class attributes (besides the inherited ones):

    - ``num_envs`` (``4``): the batch the tests use (at least 3).
    - ``independent`` (``True``): a sub-env's trajectory depends only on its own actions and
      resets (set ``False`` for simulators whose sub-envs share a random stream).

    >>> from torchenv.envs import CartPoleEnv
    >>> from torchenv.testing import BatchedEnvConformanceTests
    >>> class TestBatchedCartPole(BatchedEnvConformanceTests):
    ...     def make_batched_env(self, num_envs):
    ...         return CartPoleEnv(batch_size=[num_envs])
    >>> TestBatchedCartPole().test_partial_reset_by_mask()
    """

    num_envs: int = 4
    independent: bool = True

    def make_batched_env(self, num_envs: int) -> EnvBase:
        """Returns a fresh env of ``num_envs`` sub-envs. Subclasses must implement it."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement make_batched_env(self, num_envs)"
        )

    def make_env(self) -> EnvBase:
        return self.make_batched_env(self.num_envs)

    @contextlib.contextmanager
    def _batched(self, num_envs: int) -> Iterator[EnvBase]:
        env = self.make_batched_env(num_envs)
        try:
            yield env
        finally:
            with contextlib.suppress(Exception):
                env.close(raise_if_closed=False)

    # ------------------------------------------------------------------ tests
    def test_batch_size_follows_num_envs(self) -> None:
        """``batch_size == (num_envs,)`` for ``num_envs`` and for 1; outputs carry that batch."""
        for n in (self.num_envs, 1):
            with self._batched(n) as env:
                assert tuple(env.batch_size) == (n,), (
                    f"make_batched_env({n}) has batch_size {tuple(env.batch_size)}, expected ({n},)"
                )
                td = self._rollout(env, 3)
                assert tuple(td.batch_size) == (n, 3), (
                    f"rollout(3) of {n} sub-envs has batch_size {tuple(td.batch_size)}"
                )

    def test_partial_reset_by_mask(self) -> None:
        """A ``"_reset"`` mask selecting several sub-envs resets those, and only those: the
        others keep their data and (deterministic envs) go on as in a twin env never reset."""
        n = self.num_envs
        with self._env() as env, self._env() as twin:
            env.set_seed(self.seed)
            twin.set_seed(self.seed)
            with self._global_seed(self.seed):
                td, td_twin = env.reset(), twin.reset()
                for _ in range(3):
                    env.rand_action(td)
                    td_twin.update(td.select(*env.action_keys))
                    td = step_mdp(env.step(td), keep_other=True)
                    td_twin = step_mdp(twin.step(td_twin), keep_other=True)
                mask = torch.zeros((n, 1), dtype=torch.bool, device=env.device)
                mask[::2] = True  # sub-envs 0, 2, ...
                rows = mask.squeeze(-1)
                before = td.clone()
                out = env.reset(td.set("_reset", mask))
                for key in env.observation_keys:
                    _assert_values_equal(
                        out[~rows],
                        before[~rows],
                        key,
                        f"reset with a mask: {key!r} of a sub-env not in the mask",
                    )
                for key in env.done_keys:
                    assert not out.get(key)[rows].any(), (
                        f"reset with a mask: {key!r} is set on a sub-env that was just reset"
                    )
                nothing = out.clone().set("_reset", torch.zeros_like(mask))
                kept = env.reset(nothing)
                for key in env.observation_keys:
                    _assert_values_equal(kept, out, key, f"reset with an all-False mask: {key!r}")
                if not self.deterministic:
                    return
                env.rand_action(kept)
                td_twin.update(kept.select(*env.action_keys))
                nxt, nxt_twin = env.step(kept).get("next"), twin.step(td_twin).get("next")
            for key in env.observation_keys:
                _assert_values_equal(
                    nxt[~rows],
                    nxt_twin[~rows],
                    key,
                    f"step after a reset with a mask: {key!r} of a sub-env not in the mask "
                    "differs from the same sub-env of a twin env never reset",
                )

    def test_sub_envs_are_independent(self) -> None:
        """Changing the actions of one sub-env leaves the trajectories of the others alone."""
        if not (self.independent and self.deterministic):
            self._skip("sub-envs declared dependent or non-deterministic")
        results = []
        for perturb in (False, True):
            with self._env() as env:
                env.set_seed(self.seed)
                td = env.reset()
                with self._global_seed(self.seed):
                    outs = []
                    for _ in range(self.rollout_steps):
                        env.rand_action(td)
                        if perturb:  # sub-env 0 takes other actions (drawn aside)
                            with self._global_seed(self.seed + 1):
                                other = env.full_action_spec.rand()
                            for key in env.action_keys:
                                td.get(key)[0] = other.get(key)[0]
                        nxt = env.step(td)
                        outs.append(nxt.get("next").clone())
                        td = _next(env, nxt)
                results.append(outs)
        for t, (a, b) in enumerate(zip(*results)):
            assert_tensordict_equal(
                a[1:], b[1:], f"step {t}: sub-envs 1.. after other actions in sub-env 0"
            )

    def test_sub_envs_differ_after_seeding(self) -> None:
        """One seed gives distinct first observations (not ``num_envs`` copies of one)."""
        if not self.stochastic:
            self._skip("env declared deterministic given its actions (stochastic = False)")
        with self._env() as env:
            env.set_seed(self.seed)
            td = env.reset()
        for key in env.observation_keys:
            # heterogeneous agents (lazily stacked groups): one tensor per agent
            for values in _values(td, key):
                if any(not torch.equal(values[0], values[i]) for i in range(1, values.shape[0])):
                    return
        raise AssertionError(
            f"every sub-env was reset to the same observations {env.observation_keys} after one "
            "seed: seed sub-env i differently (e.g. seed + i), or set stochastic = False"
        )


def _assert_values_equal(a: TensorDictBase, b: TensorDictBase, key: NestedKey, what: str) -> None:
    """``a[key] == b[key]``, agent by agent where ``key`` is in a heterogeneous (lazily stacked)
    group whose entries cannot be stacked into one tensor."""
    values_a, values_b = _values(a, key), _values(b, key)
    assert len(values_a) == len(values_b), f"{what}: {key!r} stacks differently"
    for value_a, value_b in zip(values_a, values_b):
        _assert_equal(value_a, value_b, what)


def _next(env: EnvBase, stepped: TensorDictBase) -> TensorDictBase:
    """The next input: ``step_mdp`` of the step, with the done sub-envs reset by mask."""
    td = step_mdp(stepped, keep_other=True)
    done = td.get("done", None)
    if done is not None and done.any():
        td = env.reset(td.set("_reset", done.reshape(*env.batch_size, 1)))
    return td
