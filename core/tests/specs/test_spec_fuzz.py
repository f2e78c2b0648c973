"""Fuzzed spec constructions (issue 20): every invalid argument is refused with an error naming
it; every valid construction is accepted and gives a spec whose samples it accepts.

Each argument is drawn together with its verdict (valid, or the name an error must mention),
so the oracle is the table of what each argument may be, not the code under test.
"""

from __future__ import annotations

import math
import re

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OK = None  # the verdict of a valid argument

INT_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def _counts():
    """``n``-like arguments: (value, verdict)."""
    good = st.one_of(
        st.integers(1, 12),
        st.integers(1, 12).map(np.int64),
        st.integers(1, 12).map(torch.tensor),
    ).map(lambda v: (v, OK))
    bad = st.one_of(
        st.integers(-5, 0),
        st.floats(allow_nan=True, allow_infinity=True).filter(
            lambda f: f != int(f) if math.isfinite(f) else True
        ),
        st.sampled_from([True, False, "3", None, [2], torch.tensor([2]), torch.tensor(2.0)]),
    ).map(lambda v: (v, "bad"))
    return st.one_of(good, bad)


def _shapes(allow_dynamic: bool = True):
    dim = st.integers(-1 if allow_dynamic else 0, 4)
    good = st.one_of(
        st.lists(dim, max_size=3).map(tuple),
        st.lists(dim, max_size=3).map(torch.Size),
        st.lists(st.integers(0, 4), max_size=3).map(lambda s: [np.int64(d) for d in s]),
    ).map(lambda v: (v, OK))
    bad = st.one_of(
        st.lists(st.integers(-9, -2), min_size=1, max_size=2).map(tuple),
        st.lists(st.floats(0.1, 3.9).filter(lambda f: f != int(f)), min_size=1, max_size=2).map(
            tuple
        ),
        st.sampled_from(["ab", (True,), ("2",), 2.5, object()]),
    ).map(lambda v: (v, "bad"))
    return st.one_of(good, bad)


def _dtypes(valid: list):
    good = st.sampled_from(valid).map(lambda v: (v, OK))
    bad = st.sampled_from(["float99", "tensor", 3, object()]).map(lambda v: (v, "bad"))
    return st.one_of(good, good, bad)


def _devices():
    good = st.sampled_from(["cpu", torch.device("cpu"), None]).map(lambda v: (v, OK))
    bad = st.sampled_from(["nowhere", "cpu:x", 2.5, object()]).map(lambda v: (v, "bad"))
    return st.one_of(good, good, bad)


def _check(build, args: dict[str, tuple], owner: str, extra_check=None):
    """Build with the drawn arguments; compare with their verdicts."""
    kwargs = {name: value for name, (value, _) in args.items()}
    bad = [name for name, (_, verdict) in args.items() if verdict is not OK]
    try:
        spec = build(**kwargs)
    except (TypeError, ValueError) as err:
        message = str(err)
        assert bad, f"valid arguments {kwargs} refused: {type(err).__name__}: {message}"
        assert message.startswith(owner), message
        assert any(re.search(rf"\b{name}\b", message) for name in bad), (bad, message)
        return
    assert not bad, f"invalid {bad} accepted: {kwargs} -> {spec}"
    if extra_check is not None:
        extra_check(spec)
    if all(d >= 0 for d in spec.shape):
        assert spec.is_in(spec.rand())


@SETTINGS
@given(n=_counts(), shape=_shapes(), dtype=_dtypes(INT_DTYPES), device=_devices())
def test_categorical(n, shape, dtype, device):
    _check(Categorical, {"n": n, "shape": shape, "dtype": dtype, "device": device}, "Categorical")


@SETTINGS
@given(n=_counts(), dtype=_dtypes([torch.bool, torch.int64, torch.uint8]), device=_devices())
def test_one_hot(n, dtype, device):
    _check(OneHot, {"n": n, "dtype": dtype, "device": device}, "OneHot")


@SETTINGS
@given(n=_counts(), dtype=_dtypes([torch.int8, torch.bool, torch.int64]), device=_devices())
def test_binary(n, dtype, device):
    _check(Binary, {"n": n, "dtype": dtype, "device": device}, "Binary")


@SETTINGS
@given(
    shape=_shapes(),
    dtype=_dtypes([torch.float32, torch.float64, torch.int64, "float32"]),
    device=_devices(),
)
def test_unbounded(shape, dtype, device):
    _check(Unbounded, {"shape": shape, "dtype": dtype, "device": device}, "Unbounded")


def _nvecs():
    good = st.one_of(
        st.lists(st.integers(1, 6), min_size=1, max_size=4),
        st.lists(st.integers(1, 6), min_size=1, max_size=4).map(torch.tensor),
        st.lists(st.integers(1, 6), min_size=1, max_size=4).map(lambda v: [float(x) for x in v]),
    ).map(lambda v: (v, OK))
    bad = st.one_of(
        st.lists(st.integers(-3, 6), min_size=1, max_size=4).filter(lambda v: min(v) < 1),
        st.lists(st.floats(0.5, 6).filter(lambda f: f != int(f)), min_size=1, max_size=3),
        st.sampled_from([[], "ab", None, [[]], [True, 2]]),
    ).map(lambda v: (v, "bad"))
    return st.one_of(good, bad)


@SETTINGS
@given(nvec=_nvecs(), device=_devices())
def test_multi_categorical(nvec, device):
    _check(MultiCategorical, {"nvec": nvec, "device": device}, "MultiCategorical")


@SETTINGS
@given(nvec=_nvecs(), device=_devices())
def test_multi_one_hot(nvec, device):
    _check(MultiOneHot, {"nvec": nvec, "device": device}, "MultiOneHot")


@st.composite
def _bounds(draw):
    """(low, high, dtype) with verdicts; the pair's order is judged as a whole ("low")."""
    dtype = draw(
        st.sampled_from([torch.float32, torch.float64, torch.int64, torch.uint8, torch.int8])
    )
    floating = dtype.is_floating_point
    if floating:
        finite = st.floats(-1e30, 1e30)
        values = st.one_of(finite, finite, st.sampled_from([math.inf, -math.inf, math.nan]))
    else:
        info = torch.iinfo(dtype)
        values = st.one_of(
            st.integers(info.min, info.max),
            st.integers(info.min, info.max),
            st.integers(-(2**40), 2**40),
            st.floats(-300, 300),
            st.sampled_from([math.inf, math.nan]),
        )
    low, high = draw(values), draw(values)

    def verdict(v):
        if isinstance(v, float) and math.isnan(v):
            return "bad"
        if not floating:
            info = torch.iinfo(dtype)
            if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
                return "bad"
            if not info.min <= v <= info.max:
                return "bad"
        return OK

    vl, vh = verdict(low), verdict(high)
    if vl is OK and vh is OK:
        cast = torch.tensor([low, high], dtype=torch.float64).to(dtype) if floating else None
        order_ok = (cast[0] <= cast[1]).item() if floating else low <= high
        if not order_ok:
            vl = vh = "bad"
    return (low, vl), (high, vh), (dtype, OK)


@SETTINGS
@given(bounds=_bounds(), shape=_shapes(allow_dynamic=False))
def test_bounded(bounds, shape):
    low, high, dtype = bounds
    _check(Bounded, {"low": low, "high": high, "dtype": dtype, "shape": shape}, "Bounded")
