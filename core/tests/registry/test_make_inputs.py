"""``make``: names and conventional keyword arguments are checked before any plugin runs."""

from __future__ import annotations

import pytest

from torchenv.registry import InvalidEnvNameError, InvalidKwargError, make


@pytest.mark.parametrize(
    "name",
    [
        "builtin:Pendulum\n",
        " builtin:Pendulum",
        "builtin:Pen dulum",
        "builtin:\tPendulum",
        "Pendulum\x00",
    ],
)
def test_names_with_whitespace_or_control_characters_are_refused(name):
    with pytest.raises(InvalidEnvNameError, match=r"contains .* at position \d+"):
        make(name)


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        (
            "gymnasium:CartPole-v1",
            {"max_episode_steps": "10"},
            r"max_episode_steps must be None or an int >= 1; got '10' \(str\)",
        ),
        ("gymnasium:CartPole-v1", {"num_envs": -1}, r"num_envs must be an int >= 1; got -1"),
        (
            "gymnasium:CartPole-v1",
            {"num_envs": 2.0},
            r"num_envs must be an int >= 1; got 2.0 \(float\)",
        ),
        ("builtin:Pendulum", {"device": "nowhere"}, r"device must be None, a torch.device"),
        ("builtin:Pendulum", {"seed": "x"}, r"seed must be None or an int"),
        ("builtin:Pendulum", {"batch_size": [2, -1]}, r"batch_size must be an int >= 0"),
        ("builtin:Pendulum", {"from_pixels": "yes"}, r"from_pixels must be a bool"),
        ("builtin:Pendulum", {"frame_skip": 0}, r"frame_skip must be an int >= 1"),
    ],
)
def test_conventional_kwargs_of_the_wrong_type_are_refused_naming_them(name, kwargs, match):
    with pytest.raises(InvalidKwargError, match=rf"make\({name!r}\): {match}"):
        make(name, **kwargs)


def test_invalid_kwarg_error_is_both_type_and_value_error():
    with pytest.raises(TypeError):
        make("builtin:Pendulum", seed="x")
    with pytest.raises(ValueError):
        make("builtin:Pendulum", seed="x")


def test_valid_conventional_kwargs_reach_the_backend():
    env = make("builtin:CartPole", batch_size=[2], device="cpu")
    assert env.batch_size == (2,)
