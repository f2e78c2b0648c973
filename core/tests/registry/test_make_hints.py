"""make()'s hints for a newcomer's mistakes: a misspelled keyword, a backend without its env id."""

from __future__ import annotations

import pytest

import torchenv
from torchenv.registry import UnknownEnvError
from torchenv.registry._make import misspelled_kwarg_hint


def test_misspelled_num_envs_names_the_keyword():
    with pytest.raises(
        TypeError, match="unexpected keyword argument 'num_env'.*Did you mean 'num_envs'"
    ):
        torchenv.make("builtin:Pendulum", num_env=4)


def test_a_required_keyword_next_to_its_misspelling_is_named():
    err = TypeError("x: num_envs is required (an int >= 1), got None")
    assert misspelled_kwarg_hint(err, {"num_env": 4}) == "Did you mean 'num_envs'?"
    assert misspelled_kwarg_hint(err, {"colour": 4}) is None
    assert misspelled_kwarg_hint(TypeError("bad value"), {"num_envs": 4}) is None


def test_other_type_errors_are_left_alone():
    with pytest.raises(TypeError) as info:
        torchenv.make("builtin:Pendulum", zzzz=1)
    assert "Did you mean" not in str(info.value)


def test_a_backend_name_alone_says_the_env_id_is_missing():
    with pytest.raises(
        UnknownEnvError, match=r"'builtin' is a backend: add the env id, make\('builtin:<env-id>'\)"
    ):
        torchenv.make("builtin")
