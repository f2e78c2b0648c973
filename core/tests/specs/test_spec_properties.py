"""Property tests (hypothesis) over randomly built leaf specs."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchenv.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    Unbounded,
)

SETTINGS = settings(max_examples=40, deadline=None)

batch_dims = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@st.composite
def bounded_specs(draw):
    shape = draw(batch_dims) + (draw(st.integers(1, 4)),)
    if draw(st.booleans()):
        dtype = draw(st.sampled_from([torch.int64, torch.int32, torch.uint8]))
        low = draw(st.integers(0, 50))
        high = low + draw(st.integers(0, 50))
        return Bounded(low, high, shape=shape, dtype=dtype)
    low = draw(st.floats(-100, 100))
    high = low + draw(st.floats(0, 100))
    if draw(st.booleans()):  # per-element bounds
        lows = torch.full(shape, low) - torch.rand(shape)
        return Bounded(lows, torch.full(shape, high), dtype=torch.float32)
    return Bounded(
        low, high, shape=shape, dtype=draw(st.sampled_from([torch.float32, torch.float64]))
    )


@st.composite
def mask_for(draw, shape):
    mask = torch.tensor(draw(st.lists(st.booleans(), min_size=shape[-1], max_size=shape[-1])))
    if not bool(mask.any()):
        mask[draw(st.integers(0, shape[-1] - 1))] = True
    return mask


@st.composite
def categorical_specs(draw, masked: bool | None = None):
    n = draw(st.integers(1, 6))
    shape = draw(batch_dims)
    dtype = torch.bool if n == 2 and draw(st.booleans()) else torch.int64
    spec = Categorical(n, shape=shape, dtype=dtype)
    if masked if masked is not None else draw(st.booleans()):
        spec.update_mask(draw(mask_for((n,))))
    return spec


@st.composite
def onehot_specs(draw, masked: bool | None = None):
    n = draw(st.integers(1, 6))
    shape = draw(batch_dims) + (n,)
    spec = OneHot(n, shape=shape, dtype=draw(st.sampled_from([torch.bool, torch.int64])))
    if masked if masked is not None else draw(st.booleans()):
        spec.update_mask(draw(mask_for((n,))))
    return spec


@st.composite
def multi_specs(draw):
    nvec = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    lead = draw(batch_dims)
    if draw(st.booleans()):
        return MultiCategorical(nvec, shape=(*lead, len(nvec)))
    return MultiOneHot(nvec, shape=(*lead, sum(nvec)))


@st.composite
def other_specs(draw):
    shape = draw(batch_dims) + (draw(st.integers(1, 4)),)
    if draw(st.booleans()):
        return Binary(shape=shape, dtype=draw(st.sampled_from([torch.int8, torch.bool])))
    return Unbounded(shape=shape, dtype=draw(st.sampled_from([torch.float32, torch.int64])))


leaf_specs = st.one_of(
    bounded_specs(), categorical_specs(), onehot_specs(), multi_specs(), other_specs()
)
projectable = st.one_of(bounded_specs(), categorical_specs(), onehot_specs(), multi_specs())


@SETTINGS
@given(spec=leaf_specs, extra=batch_dims)
def test_rand_is_in(spec, extra):
    x = spec.rand(extra)
    # TorchRL's remove_singleton: a (1,) MultiCategorical's samples have no variable dim
    shape = spec.shape[:-1] if getattr(spec, "_squeeze_out", False) else spec.shape
    assert x.shape == (*extra, *shape)
    assert spec.is_in(x)
    assert spec.is_in(spec.rand())


@SETTINGS
@given(spec=projectable, scale=st.floats(0.1, 1000), seed=st.integers(0, 2**16))
def test_project_lands_in_spec(spec, scale, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(spec.rand().shape, generator=gen) * scale).to(
        spec.dtype if spec.dtype.is_floating_point else torch.float32
    )
    out = spec.project(x)
    assert spec.is_in(out), (spec, x, out)


@SETTINGS
@given(spec=leaf_specs)
def test_project_keeps_valid_values(spec):
    x = spec.rand()
    out = spec.project(x)
    assert out.dtype == x.dtype and torch.equal(out, x)


@SETTINGS
@given(spec=leaf_specs)
def test_encode_to_numpy_roundtrip(spec):
    x = spec.rand()
    back = spec.encode(spec.to_numpy(x))
    if getattr(spec, "_squeeze_out", False):  # TorchRL's remove_singleton: rand() drops the dim
        back = back.reshape(x.shape)
    assert back.dtype == x.dtype and torch.equal(back, x)


@SETTINGS
@given(spec=leaf_specs, k=st.integers(1, 3))
def test_expand_keeps_is_in(spec, k):
    expanded = spec.expand(k, *spec.shape)
    x = expanded.rand()
    assert expanded.is_in(x) and spec.is_in(x)
    first = expanded[0]
    assert first == spec
    assert first.is_in(x[0])


@SETTINGS
@given(spec=leaf_specs, k=st.integers(1, 3), data=st.data())
def test_stack_keeps_is_in(spec, k, data):
    dim = data.draw(st.integers(0, spec.ndim - spec._protected_dims))
    stacked = torch.stack([spec.clone() for _ in range(k)], dim)
    # reshape: TorchRL's remove_singleton drops the dim of a (1,) MultiCategorical's samples
    samples = torch.stack([spec.rand().reshape(spec.shape) for _ in range(k)], dim)
    assert stacked.shape == samples.shape
    assert stacked.is_in(samples)
    assert stacked.is_in(stacked.rand())


@SETTINGS
@given(spec=st.one_of(categorical_specs(masked=True), onehot_specs(masked=True)), extra=batch_dims)
def test_masked_rand_respects_mask(spec, extra):
    x = spec.rand((*extra, 8))
    idx = x.to(torch.long).argmax(-1) if isinstance(spec, OneHot) else x.to(torch.long)
    allowed = spec.mask.reshape(-1, spec.n)[0]
    assert bool(allowed[idx].all())
    assert spec.is_in(x)


@SETTINGS
@given(specs=st.lists(leaf_specs, min_size=1, max_size=4), extra=batch_dims)
def test_composite_rand_is_in(specs, extra):
    comp = Composite({f"k{i}": s for i, s in enumerate(specs)})
    td = comp.rand(extra)
    assert td.batch_size == extra and comp.is_in(td)
    assert comp.expand(2, *comp.shape).is_in(comp.expand(2).rand())
