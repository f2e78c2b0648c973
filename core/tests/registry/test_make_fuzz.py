"""Fuzzed ``make`` names and conventional keywords (issue 20): a name that names no env is
refused with a registry error quoting it (or the part at fault); valid names and keywords are
accepted; a conventional keyword of the wrong type or range is refused, naming it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchenv.registry import (
    InvalidKwargError,
    TorchEnvRegistryError,
    backends,
    make,
    reset_plugins,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
IDS = ["CartPole", "Pendulum", "TicTacToe"]
VALID = re.compile(r"((?i:builtin):)?(CartPole|Pendulum|TicTacToe)")

valid_names = st.tuples(
    st.sampled_from(["", "builtin:", "BUILTIN:", "Builtin:"]), st.sampled_from(IDS)
).map("".join)
noise = st.characters(codec="utf-8", exclude_categories=["Cs"])


@st.composite
def mangled(draw):
    """A valid name with one character inserted (whitespace and control characters included)."""
    name = draw(valid_names)
    at = draw(st.integers(0, len(name)))
    return name[:at] + draw(noise) + name[at:]


@pytest.fixture(scope="module", autouse=True)
def core_backends_only() -> Iterator[None]:
    """Disable every installed plugin: the names judged here are the core's alone. (Hypothesis
    also draws string constants from the code under test, so an installed plugin's env id, say
    ``"Walker2d"``, would otherwise be a valid bare name.)"""
    plugins = sorted({info.plugin for info in backends() if info.name != "builtin"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHENV_DISABLE_PLUGINS", ",".join(plugins))
        reset_plugins()
        assert [info.name for info in backends() if info.ok] == ["builtin"]
        yield
    reset_plugins()


names = st.one_of(
    valid_names, mangled(), st.text(noise, max_size=24), st.text("abc:-/ \n\t", max_size=12)
)


@SETTINGS
@given(name=names)
def test_make_names(name):
    valid = VALID.fullmatch(name) is not None
    try:
        env = make(name)
    except TorchEnvRegistryError as err:
        assert not valid, f"{name!r} refused: {err}"
        message = str(err)
        backend, _, env_id = name.partition(":")
        quoted = [repr(name), repr(backend), repr(env_id)]
        assert any(q in message for q in quoted), (name, message)
        return
    assert valid, f"{name!r} accepted: {type(env).__name__}"
    assert type(env).__name__ == VALID.fullmatch(name).group(2) + "Env"


def _judged(valid, invalid):
    return st.one_of(valid.map(lambda v: (v, True)), invalid.map(lambda v: (v, False)))


kwarg_values = {
    "batch_size": _judged(
        st.one_of(st.lists(st.integers(0, 3), max_size=2), st.integers(0, 3)),
        st.one_of(st.integers(-5, -1), st.sampled_from(["a", 2.5, [1.5], [-1], None])),
    ),
    "seed": _judged(
        st.one_of(st.integers(0, 2**31), st.none()),
        st.sampled_from(["x", 1.5, [1], True]),
    ),
    "device": _judged(
        st.sampled_from(["cpu", torch.device("cpu"), None]),
        st.sampled_from(["nowhere", 1.5, object(), "cpu:-3x"]),
    ),
}


@SETTINGS
@given(
    values=st.fixed_dictionaries({}, optional=kwarg_values),
)
def test_make_conventional_kwargs(values):
    kwargs = {k: v for k, (v, _) in values.items()}
    bad = [k for k, (_, ok) in values.items() if not ok]
    try:
        env = make("builtin:CartPole", **kwargs)
    except InvalidKwargError as err:
        assert bad, f"valid {kwargs} refused: {err}"
        assert any(f"): {k} must be" in str(err) for k in bad), str(err)
        return
    assert not bad, f"invalid {bad} accepted: {kwargs}"
    assert type(env).__name__ == "CartPoleEnv"
