"""``SeedingConformanceTests``: same seed, same data, for an env and for a ``SerialEnv`` of it.

Random actions included: ``rollout`` without a policy draws from the env's own generator, which
``set_seed`` seeds, so two envs seeded alike must roll out bit for bit alike whatever the global
generator did in between.
"""

from __future__ import annotations

from typing import Any

import torch

from torchenv.testing._conformance import assert_tensordict_equal

__all__ = ["SeedingConformanceTests"]


class SeedingConformanceTests:
    """Mixin: subclass it, define ``make_env()`` (a fresh env each call), and pytest runs the tests.

    ``steps`` and ``serial_steps`` set the rollout lengths (no early stop on done).

    >>> class TestCartPoleSeeds(SeedingConformanceTests):
    ...     def make_env(self):
    ...         from torchenv.envs import CartPoleEnv
    ...         return CartPoleEnv()
    >>> TestCartPoleSeeds().test_same_seed_same_rollout()
    """

    steps: int = 40
    serial_steps: int = 20

    def make_env(self) -> Any:
        raise NotImplementedError("define make_env() to return a new env")

    def _seeded_rollout(self, env: Any, seed: int, steps: int) -> Any:
        try:
            env.set_seed(seed)
            return env.rollout(steps, break_when_any_done=False)
        finally:
            env.close()

    def test_same_seed_same_rollout(self) -> None:
        first = self._seeded_rollout(self.make_env(), 3, self.steps)
        torch.rand(3)  # the global generator moving in between changes nothing
        again = self._seeded_rollout(self.make_env(), 3, self.steps)
        assert_tensordict_equal(again, first, "two envs seeded 3")

    def test_other_seed_other_rollout(self) -> None:
        a = self._seeded_rollout(self.make_env(), 3, self.steps)
        b = self._seeded_rollout(self.make_env(), 4, self.steps)
        assert any(
            not torch.equal(a.get(k), b.get(k))
            for k in a.keys(True, True)
            if a.get(k).is_floating_point()
        ), "seeds 3 and 4 gave the same floating-point data"

    def test_serial_env_same_seed_same_rollout(self) -> None:
        from torchenv.batched import SerialEnv

        first = self._seeded_rollout(SerialEnv(2, self.make_env), 5, self.serial_steps)
        again = self._seeded_rollout(SerialEnv(2, self.make_env), 5, self.serial_steps)
        assert_tensordict_equal(again, first, "SerialEnv seeded 5")
