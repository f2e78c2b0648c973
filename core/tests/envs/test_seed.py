"""``set_seed`` covers the env's own random actions (issue 29) and chains seeds as TorchRL.

Two runs with the same seed give the same data bit for bit, in the same process and in fresh
ones; the random actions come from a generator owned by the env, so they neither depend on nor
move torch's global generator.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs.builtin import CartPoleEnv, PendulumEnv, TicTacToeEnv
from torchenv.specs import Bounded, Categorical, Composite, MultiOneHot, OneHot, Unbounded
from torchenv.testing import assert_tensordict_equal
from torchenv.transforms import StepCounter, TransformedEnv

BUILTINS = [PendulumEnv, CartPoleEnv, TicTacToeEnv]


def _seeded_rollout(env, seed, steps=30):
    env.set_seed(seed)
    return env.rollout(steps, break_when_any_done=False)


@pytest.mark.parametrize("make", BUILTINS, ids=lambda c: c.__name__)
def test_same_seed_same_rollout_fresh_envs(make):
    first = _seeded_rollout(make(), 3)
    torch.rand(7)  # the global generator moves between the runs: no effect
    second = _seeded_rollout(make(), 3)
    assert_tensordict_equal(second, first, "two rollouts seeded 3")


@pytest.mark.parametrize("make", BUILTINS, ids=lambda c: c.__name__)
def test_reseeding_the_same_env_repeats_the_rollout(make):
    env = make()
    first = _seeded_rollout(env, 5)
    assert_tensordict_equal(_seeded_rollout(env, 5), first, "the same env reseeded")


def test_other_seeds_other_actions():
    a = _seeded_rollout(PendulumEnv(), 0)
    b = _seeded_rollout(PendulumEnv(), 1)
    assert not torch.equal(a["action"], b["action"])


def test_seeded_random_actions_leave_the_global_generator_alone():
    env = PendulumEnv()
    env.set_seed(0)
    state = torch.get_rng_state()
    env.rollout(20)
    env.rand_step()
    env.rand_action(TensorDict())
    assert torch.equal(torch.get_rng_state(), state)


def test_unseeded_env_draws_from_the_global_generator_as_torchrl():
    env = PendulumEnv()  # no seed: random actions follow torch.manual_seed, as TorchRL's
    torch.manual_seed(4)
    a = env.rand_action()["action"]
    torch.manual_seed(4)
    assert torch.equal(env.rand_action()["action"], a)
    env.set_seed(None)  # back to unseeded
    torch.manual_seed(4)
    assert torch.equal(env.rand_action()["action"], a)


def test_seeded_actions_are_those_of_torch_manual_seed():
    # the env's generator is seeded like torch.manual_seed(seed): TorchRL users who wrote
    # torch.manual_seed(s); env.set_seed(s) get the same random actions
    env = PendulumEnv()
    env.set_seed(9)
    ours = env.rand_action()["action"]
    torch.manual_seed(9)
    assert torch.equal(ours, env.action_spec.rand())


def test_transformed_env_draws_from_the_base_envs_seeded_generator():
    runs = []
    for _ in range(2):
        env = TransformedEnv(PendulumEnv(), StepCounter())
        runs.append(_seeded_rollout(env, 2, steps=12))
    assert_tensordict_equal(runs[1], runs[0], "transformed env seeded twice")
    base = _seeded_rollout(PendulumEnv(), 2, steps=12)
    assert torch.equal(runs[0]["action"], base["action"])


def test_constructor_seed_seeds_the_random_actions_too():
    a = PendulumEnv(seed=1).rollout(10)
    b = PendulumEnv(seed=1).rollout(10)
    assert_tensordict_equal(b, a, "PendulumEnv(seed=1) twice")


def test_batched_builtin_same_seed_same_rollout():
    a = _seeded_rollout(CartPoleEnv(batch_size=[4]), 6, steps=40)
    b = _seeded_rollout(CartPoleEnv(batch_size=[4]), 6, steps=40)
    assert_tensordict_equal(b, a, "CartPoleEnv(batch_size=[4]) seeded twice")


def test_next_seed_follows_torchrls_rule():
    # TorchRL 0.14.1: GymEnv("CartPole-v1").set_seed(0) returns 795726461 and
    # SerialEnv(3, ...).set_seed(0) 2309840538 (observed with torchrl 0.14.1)
    env = PendulumEnv()
    assert env.set_seed(0) == 795726461
    chain = [0]
    for _ in range(3):
        chain.append(env.set_seed(chain[-1]))
    assert chain[-1] == 2309840538
    assert env.set_seed(0, static_seed=True) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_bad_seed_is_refused(bad):
    env = PendulumEnv()
    with pytest.raises((TypeError, ValueError), match="seed must be an int >= 0"):
        env.set_seed(bad)


def test_cli_rollout_with_seed_is_reproducible_across_processes():
    cmd = [sys.executable, "-m", "torchenv.cli", "rollout", "builtin:Pendulum"]
    cmd += ["--steps", "10", "--seed", "0", "--no-progress"]
    outs = [subprocess.run(cmd, capture_output=True, text=True, check=True) for _ in range(2)]
    totals = [next(x for x in o.stdout.splitlines() if "total reward" in x) for o in outs]
    assert totals[0] == totals[1]


def test_rollout_reproducible_across_processes():
    code = (
        "import torch; from torchenv.envs.builtin import PendulumEnv; env = PendulumEnv(); "
        "env.set_seed(0); r = env.rollout(10); "
        "print(r['action'].double().sum().item(), r['next', 'reward'].double().sum().item())"
    )
    outs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    assert outs[0].stdout == outs[1].stdout and outs[0].stdout.strip()


# ------------------------------------------------------------------ specs: rand(generator=)
def _all_kinds():
    return Composite(
        a=Bounded(-1, 1, shape=(3,)),
        b=Categorical(4, shape=(2,)),
        c=OneHot(3),
        d=MultiOneHot([2, 3]),
        e=Unbounded(shape=(2,)),
        f=Bounded(0, 5, shape=(2,), dtype=torch.int64),
        nested=Composite(g=Categorical(3)),
    )


def test_spec_rand_with_generator_equals_global_draws():
    spec = _all_kinds()
    drawn = spec.rand((2,), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    assert_tensordict_equal(drawn, spec.rand((2,)), "rand(generator=) vs manual_seed")


def test_masked_categorical_draws_from_the_generator():
    spec = Categorical(5, shape=(8,))
    spec.update_mask(torch.tensor([True, False, True, True, False]).expand(8, 5))
    a = spec.rand(generator=torch.Generator().manual_seed(3))
    b = spec.rand(generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b) and spec.is_in(a)


def test_torchrl_style_spec_subclass_takes_a_generator():
    class Coin(Categorical):  # rand(self, shape) as TorchRL's signature
        def rand(self, shape=None):
            return super().rand(shape)

    spec = Coin(2, shape=(16,))
    torch.manual_seed(1)
    expected = spec.rand()
    state = torch.get_rng_state()
    got = spec.rand(generator=torch.Generator().manual_seed(1))
    assert torch.equal(got, expected)
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is put back
