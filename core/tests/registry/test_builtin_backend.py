"""The builtin backend declared by the core's own entry point."""

from __future__ import annotations

import pytest

import torchenv
from torchenv.registry import UnknownEnvError

envs = pytest.importorskip("torchenv.envs")
if not all(hasattr(envs, n) for n in ("PendulumEnv", "CartPoleEnv", "TicTacToeEnv")):
    pytest.skip("the builtin env classes are not there yet", allow_module_level=True)


def test_builtin_is_declared_by_the_core_distribution():
    (info,) = [b for b in torchenv.backends() if b.name == "builtin"]
    assert info.ok and info.simulator is None
    assert info.distribution == "torchenv"
    assert info.distribution_version == torchenv.__version__


def test_builtin_lists_its_envs():
    assert torchenv.list_envs("builtin") == ["CartPole", "Pendulum", "TicTacToe"]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("builtin:Pendulum", "PendulumEnv"),
        ("builtin:CartPole", "CartPoleEnv"),
        ("builtin:TicTacToe", "TicTacToeEnv"),
        ("Pendulum", "PendulumEnv"),
    ],
)
def test_builtin_make(name, cls):
    env = torchenv.make(name)
    assert type(env) is getattr(envs, cls)


def test_builtin_make_forwards_kwargs():
    env = torchenv.make("builtin:Pendulum", device="cpu")
    assert str(env.device) == "cpu"


def test_builtin_unknown_env_suggests():
    with pytest.raises(UnknownEnvError) as info:
        torchenv.make("builtin:Pendulm")
    assert info.value.suggestions == ["builtin:Pendulum"]
