"""Fuzzed actions for ``step`` / ``step_and_maybe_reset`` (issue 20): an action that does not fit
its spec is refused with an error naming the key; one that fits, possibly after a lossless cast,
is stepped with the spec's dtype and its values intact.

The verdict of each drawn action comes from the table in ``docs/envs.md`` (what each spec dtype
accepts), restated here, not from the code under test.
"""

from __future__ import annotations

import math

import pytest
import torch
from _envs_mocks import CounterEnv, DiscreteEnv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchenv.batched import SerialEnv
from torchenv.envs import TicTacToeEnv

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.complex64,
]
VALUES = st.one_of(
    st.integers(-300, 300),
    st.floats(-1e6, 1e6),
    st.sampled_from([0.0, 1.0, 0.5, -1.0, 127.0, 1e300, -1e300, math.inf, math.nan, 2**40]),
)


def _representable(value: float, src: torch.dtype, dst: torch.dtype, raw: torch.Tensor) -> bool:
    """Whether the drawn action (``raw``, of dtype ``src``) may be cast to a ``dst`` spec."""
    if src == dst:
        return True
    if src.is_complex:
        return False
    if dst.is_floating_point:
        if src == torch.bool:
            return False
        if src.is_floating_point:
            finite = bool(raw.isfinite().all())
            return not finite or bool(raw.to(dst).isfinite().all())
        return True
    if dst == torch.bool:
        return bool(((raw == 0) | (raw == 1)).all())
    if src == torch.bool:
        return True
    info = torch.iinfo(dst)
    if src.is_floating_point and not bool((raw.isfinite() & (raw == raw.trunc())).all()):
        return False
    wide = raw.to(torch.float64)  # no wrap-around in the comparisons (uint8 vs -128)
    return bool(((wide >= info.min) & (wide <= info.max)).all())


@st.composite
def actions(draw, spec_shape):
    dtype = draw(st.sampled_from(DTYPES))
    value = draw(VALUES)
    shape = draw(st.sampled_from([spec_shape, spec_shape, (), (2,), (*spec_shape, 1)]))
    meta = draw(st.integers(0, 9)) == 0
    try:
        raw = torch.full(shape, value, dtype=torch.float64).to(dtype)
    except (RuntimeError, OverflowError):
        raw = torch.zeros(shape, dtype=dtype)
    if dtype == torch.bool:
        raw = torch.full(shape, bool(value == value and value != 0))
    return raw.to("meta") if meta else raw


def _step_and_judge(env, method, action, spec_dtype, spec_shape, batch=()):
    td = env.reset()
    td.set("action", action) if action.shape[: len(batch)] == batch else td._tensordict.update(
        action=action
    )
    # an action without the spec's singleton dims is expanded, as TorchRL takes it (issue 28)
    shape_ok = tuple(action.shape) == tuple(spec_shape) or (
        action.dim() < len(spec_shape)
        and action.numel() == torch.Size(spec_shape).numel()
        and all(a in (1, b) for a, b in zip(action.shape[::-1], tuple(spec_shape)[::-1]))
    )
    if shape_ok:
        action = action.expand(spec_shape)
    ok = shape_ok and not action.is_meta and _representable(0.0, action.dtype, spec_dtype, action)
    if not ok:
        with pytest.raises((TypeError, ValueError, KeyError)) as info:
            getattr(env, method)(td)
        assert "'action'" in str(info.value), str(info.value)
        return
    out = getattr(env, method)(td)
    out = out[0] if isinstance(out, tuple) else out
    stepped = out["action"]
    assert stepped.dtype == spec_dtype
    if spec_dtype.is_floating_point:
        torch.testing.assert_close(stepped, action.to(spec_dtype), equal_nan=True)
    else:
        assert torch.equal(stepped.to(torch.float64), action.to(torch.float64))


@SETTINGS
@given(action=actions((1,)), method=st.sampled_from(["step", "step_and_maybe_reset"]))
def test_float_spec(action, method):
    _step_and_judge(CounterEnv(), method, action, torch.float32, (1,))


@SETTINGS
@given(action=actions((1,)), method=st.sampled_from(["step", "step_and_maybe_reset"]))
def test_int8_categorical_spec(action, method):
    _step_and_judge(DiscreteEnv(torch.int8, n=127), method, action, torch.int8, (1,))


@SETTINGS
@given(action=actions((1,)), method=st.sampled_from(["step", "step_and_maybe_reset"]))
def test_bool_spec(action, method):
    _step_and_judge(DiscreteEnv(torch.bool, n=2), method, action, torch.bool, (1,))


@pytest.fixture(scope="module")
def serial():
    env = SerialEnv(2, CounterEnv)
    yield env
    env.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(action=actions((2, 1)), method=st.sampled_from(["step", "step_and_maybe_reset"]))
def test_serial_env(serial, action, method):
    _step_and_judge(serial, method, action, torch.float32, (2, 1), batch=(2,))


@settings(max_examples=60, deadline=None)
@given(action=actions(()))
def test_tictactoe_shape(action):
    env = TicTacToeEnv(seed=0)
    td = env.reset()
    td._tensordict.update(action=action)
    ok = (
        action.shape == ()
        and not action.is_meta
        and _representable(0.0, action.dtype, torch.int64, action)
    )
    if ok:
        ok = 0 <= int(action) < 9  # a cell of the board (TicTacToe checks the move itself)
    if not ok:
        with pytest.raises((TypeError, ValueError, KeyError, IndexError, RuntimeError)) as info:
            env.step(td)
        assert "action" in str(info.value) or "index" in str(info.value), str(info.value)
        return
    assert env.step(td)["next", "board"].shape == (3, 3)
