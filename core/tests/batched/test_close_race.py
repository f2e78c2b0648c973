"""``close()`` from another thread at random moments (issues 35 and 37): every call in flight
ends with :class:`EnvClosedError` or its complete result, never another error and never partial
data; whatever the moment of the close, the env is whole again after ``reset()``."""

from __future__ import annotations

import random
import threading

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import EnvClosedError, ParallelEnv, SerialEnv
from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Composite, Unbounded

pytestmark = [pytest.mark.parallel, pytest.mark.slow]

OUTPUT_KEYS = {"observation", "count", "done", "terminated"}


class TinyEnv(EnvBase):
    """Two observation entries and a counter: cheap enough for hundreds of trials."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(
            observation=Unbounded((2,)), count=Unbounded((1,), dtype=torch.int64)
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded((1,))
        self.n = 0

    def _reset(self, tensordict=None, **kwargs):
        self.n = 0
        return TensorDict(
            observation=torch.zeros(2),
            count=torch.zeros(1, dtype=torch.int64),
            done=torch.zeros(1, dtype=torch.bool),
        )

    def _step(self, tensordict):
        self.n += 1
        return TensorDict(
            observation=torch.full((2,), float(self.n)),
            count=torch.tensor([self.n]),
            reward=torch.ones(1),
            done=torch.zeros(1, dtype=torch.bool),
        )

    def _set_seed(self, seed):
        pass


def _keys(td) -> set:
    return {k if isinstance(k, str) else k[-1] for k in td.keys(True, True)}


def _check_complete(td, batch) -> None:
    """A whole output: every entry, the batch size asked for."""
    assert td.batch_size == batch, td
    assert _keys(td) >= OUTPUT_KEYS, f"partial data: {sorted(_keys(td))}"


ROLLOUT_STEPS = 12


def _rollout(env):
    out = env.rollout(ROLLOUT_STEPS, break_when_any_done=False)
    _check_complete(out, torch.Size([2, ROLLOUT_STEPS]))
    _check_complete(out["next"], torch.Size([2, ROLLOUT_STEPS]))
    assert out["next", "reward"].shape == (2, ROLLOUT_STEPS, 1)
    counts = out["next", "count"][..., 0]
    assert (counts == torch.arange(1, ROLLOUT_STEPS + 1)).all(), counts


def _set_seed(env):
    # several calls: a close lands during one of them, and the next ones start new workers
    # while the close is still shutting the old ones down
    for seed in range(4):
        assert isinstance(env.set_seed(seed), int)


def _reset(env):
    for _ in range(4):
        _check_complete(env.reset(), torch.Size([2]))


def _step(env):
    td = env.reset().set("action", torch.zeros(2, 1))
    for _ in range(4):
        td = env.step(td)
        _check_complete(td["next"], torch.Size([2]))
        td = td["next"].set("action", torch.zeros(2, 1))


def _trials(kind, op, n: int, max_delay: float, seed: int) -> dict:
    """``n`` trials of ``op`` on one env, each closed from this thread after a random delay."""
    rng = random.Random(seed)
    env = kind(2, TinyEnv)
    outcomes = {"closed": 0, "finished": 0}
    try:
        for _ in range(n):
            _check_complete(env.reset(), torch.Size([2]))  # whole again after any close
            started, result = threading.Event(), []

            def run(started=started, result=result):
                started.set()
                try:
                    op(env)
                    result.append("finished")
                except EnvClosedError as err:
                    assert "closed" in str(err)
                    result.append("closed")
                except BaseException as err:  # anything else fails the test below
                    result.append(err)

            thread = threading.Thread(target=run)
            thread.start()
            started.wait()
            threading.Event().wait(rng.uniform(0, max_delay))
            env.close()
            thread.join(60)
            assert not thread.is_alive(), "the call did not return after close()"
            (outcome,) = result
            if isinstance(outcome, BaseException):
                raise AssertionError(f"{op.__name__}: {outcome!r}") from outcome
            outcomes[outcome] += 1
    finally:
        env.close()
    return outcomes


def test_close_during_parallel_rollouts_at_300_random_moments():
    outcomes = _trials(ParallelEnv, _rollout, 300, 0.02, seed=0)
    # the delays cover the rollout: both endings occur
    assert outcomes["closed"] > 30 and outcomes["finished"] > 0, outcomes


@pytest.mark.parametrize("op", [_set_seed, _reset, _step], ids=lambda f: f.__name__[1:])
def test_close_racing_set_seed_reset_step(op):
    outcomes = _trials(ParallelEnv, op, 40, 0.01, seed=1)
    assert outcomes["closed"] + outcomes["finished"] == 40


def test_close_during_serial_rollouts():
    outcomes = _trials(SerialEnv, _rollout, 100, 0.005, seed=2)
    assert outcomes["closed"] + outcomes["finished"] == 100


def test_a_sub_envs_closed_error_after_a_close_is_reported_as_the_batched_envs():
    # a step inside a sub-env that the concurrent close just closed raises the sub-env's own
    # EnvClosedError; the batched env says it was closed, and that reset() starts again
    from torchenv.batched._base import closed_error
    from torchenv.envs import PendulumEnv

    env = SerialEnv(2, PendulumEnv)
    generation = env.__dict__["_generation"]
    env.reset()
    env.close()
    from torchenv.envs._closed import closed_error as sub_env_closed

    inner = sub_env_closed(PendulumEnv())  # what a closed sub-environment raises
    with pytest.raises(EnvClosedError, match=r"SerialEnv was closed .*reset\(\)") as info:
        closed_error(env, generation, inner)
    assert info.value.__cause__ is inner
    closed_error(env, env.__dict__["_generation"], inner)  # no close in between: unchanged
    # the env's own closed errors (and its views') are left as they are
    closed_error(env, generation, sub_env_closed(env))
    closed_error(env, generation, EnvClosedError("Cannot use an indexed view ... closed"))
