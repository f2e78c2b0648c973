"""Leaf specs: construction defaults, sampling, membership, projection, conversions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchenv.specs import (
    Binary,
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Categorical,
    ContinuousBox,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)


class TestUnbounded:
    def test_defaults(self):
        spec = Unbounded()
        assert spec.shape == torch.Size([1])
        assert spec.dtype == torch.get_default_dtype()
        assert spec.device == torch.device("cpu")
        assert isinstance(spec, UnboundedContinuous) and isinstance(spec, Unbounded)
        assert spec.domain == "continuous"

    def test_int_shape_and_discrete_variant(self):
        spec = Unbounded(3, dtype=torch.int32)
        assert spec.shape == torch.Size([3])
        assert isinstance(spec, UnboundedDiscrete)
        assert spec.domain == "discrete"
        assert spec.rand().dtype == torch.int32
        assert UnboundedDiscrete(2).dtype == torch.int64

    def test_rand_zero_one(self):
        spec = Unbounded(shape=(2, 3))
        assert spec.rand().shape == (2, 3)
        assert spec.rand((4,)).shape == (4, 2, 3)
        assert spec.zero((5, 1)).shape == (5, 1, 2, 3)
        assert bool((spec.zero() == 0).all()) and bool((spec.one() == 1).all())
        assert spec.zeros().shape == spec.ones().shape == (2, 3)

    def test_is_in(self):
        spec = Unbounded(shape=(3,))
        assert spec.is_in(torch.zeros(3))
        assert spec.is_in(torch.zeros(7, 3))  # leading batch dims are allowed
        assert not spec.is_in(torch.zeros(4))
        assert not spec.is_in(torch.zeros(3, dtype=torch.float64))
        assert not spec.is_in(np.zeros(3, dtype=np.float32))

    def test_bool_rand(self):
        out = Unbounded(shape=(100,), dtype=torch.bool).rand()
        assert out.dtype == torch.bool

    def test_space(self):
        space = Unbounded(shape=(2,)).space
        assert isinstance(space, ContinuousBox)
        assert bool(torch.isinf(space.low).all()) and bool((space.low < 0).all())
        int_space = Unbounded(shape=(2,), dtype=torch.int8).space
        assert int(int_space.high[0]) == 127

    def test_project_casts(self):
        spec = Unbounded(shape=(2,), dtype=torch.int64)
        out = spec.project(torch.tensor([1.6, -0.2]))
        assert out.dtype == torch.int64 and out.tolist() == [2, 0]


class TestBounded:
    def test_variants(self):
        assert isinstance(Bounded(-1, 1, shape=(2,)), BoundedContinuous)
        assert isinstance(Bounded(0, 255, shape=(3,), dtype=torch.uint8), BoundedDiscrete)
        assert isinstance(Bounded(0, 3, shape=(1,), domain="discrete"), BoundedDiscrete)
        assert Bounded(0, 3, shape=(1,), domain="discrete").dtype == torch.int64
        assert Bounded(-1, 1, shape=(2,)).dtype == torch.get_default_dtype()

    def test_broadcast_bounds(self):
        spec = Bounded(torch.tensor([0.0, -1.0]), 1.0, shape=(3, 2))
        assert spec.low.shape == spec.high.shape == (3, 2)
        assert spec.low[:, 1].tolist() == [-1.0, -1.0, -1.0]
        assert spec.space.low is spec.low

    def test_shape_from_bounds(self):
        assert Bounded(torch.zeros(4), torch.ones(4)).shape == (4,)
        with pytest.raises(ValueError, match="shape"):
            Bounded(0, 1)
        with pytest.raises(ValueError, match="broadcast"):
            Bounded(torch.zeros(3), torch.ones(3), shape=(2,))

    def test_low_gt_high(self):
        with pytest.raises(ValueError, match="low must be <= high"):
            Bounded(1, 0, shape=(1,))

    def test_legacy_minimum_maximum(self):
        spec = Bounded(minimum=-2.0, maximum=2.0, shape=(1,))
        assert spec.minimum.item() == -2.0 and spec.maximum.item() == 2.0

    def test_rand_in_bounds(self):
        spec = Bounded(torch.tensor([0.0, 10.0]), torch.tensor([1.0, 20.0]))
        out = spec.rand((1000,))
        assert bool((out[:, 0] >= 0).all() and (out[:, 0] <= 1).all())
        assert bool((out[:, 1] >= 10).all() and (out[:, 1] <= 20).all())

    def test_discrete_rand_hits_both_ends(self):
        spec = Bounded(0, 2, shape=(500,), dtype=torch.int64)
        values = set(spec.rand().tolist())
        assert values == {0, 1, 2}
        varying = Bounded(torch.tensor([0, 5]), torch.tensor([1, 6]), dtype=torch.int32)
        sample = varying.rand((200,))
        assert set(sample[:, 1].tolist()) == {5, 6} and sample.dtype == torch.int32

    def test_is_in(self):
        spec = Bounded(-1.0, 1.0, shape=(2,))
        assert spec.is_in(torch.tensor([-1.0, 1.0]))
        assert not spec.is_in(torch.tensor([-1.0, 1.5]))
        assert not spec.is_in(torch.tensor([0.0, float("nan")]))
        assert not spec.is_in(torch.tensor([0.0, 0.0], dtype=torch.float64))
        assert spec.is_in(torch.zeros(0, 2))

    def test_is_in_full_range_uint8(self):
        spec = Bounded(0, 255, shape=(3, 4, 4), dtype=torch.uint8)
        assert spec.is_in(spec.rand())
        assert not spec.is_in(torch.zeros(3, 4, 4))

    def test_project_clamps(self):
        spec = Bounded(torch.tensor([0.0, -1.0]), torch.tensor([1.0, 1.0]))
        out = spec.project(torch.tensor([[2.0, -3.0], [0.5, 0.5]]))
        assert out.tolist() == [[1.0, -1.0], [0.5, 0.5]]

    def test_project_discrete_rounds(self):
        spec = Bounded(0, 4, shape=(3,), dtype=torch.int64)
        assert spec.project(torch.tensor([-1.2, 2.6, 9.0])).tolist() == [0, 3, 4]

    def test_to_dtype_switches_variant(self):
        spec = Bounded(0, 4, shape=(2,)).to(torch.int64)
        assert isinstance(spec, BoundedDiscrete) and spec.low.dtype == torch.int64

    def test_cardinality(self):
        assert Bounded(0, 2, shape=(2,), dtype=torch.int64).cardinality() == 9
        assert Bounded(0, 2, shape=(2,)).cardinality() == float("inf")  # TorchRL's value


class TestCategorical:
    def test_defaults(self):
        spec = Categorical(4)
        assert spec.shape == torch.Size([]) and spec.dtype == torch.int64
        assert spec.n == 4 and spec.space.n == 4 and spec.cardinality() == 4

    def test_done_spec(self):
        spec = Categorical(2, shape=(1,), dtype=torch.bool)
        assert spec.rand().dtype == torch.bool and spec.rand((3,)).shape == (3, 1)
        assert spec.zero().tolist() == [False] and spec.one().tolist() == [True]
        assert spec.is_in(torch.tensor([True]))
        assert not spec.is_in(torch.tensor([1]))

    def test_is_in_range(self):
        spec = Categorical(3, shape=(2,))
        assert spec.is_in(torch.tensor([0, 2]))
        assert not spec.is_in(torch.tensor([0, 3]))
        assert not spec.is_in(torch.tensor([-1, 0]))

    def test_project(self):
        spec = Categorical(3)
        assert spec.project(torch.tensor(7)).item() == 2
        assert spec.project(torch.tensor(1.7)).item() == 2

    def test_mask(self):
        spec = Categorical(4, shape=(2,), mask=torch.tensor([False, True, False, True]))
        samples = spec.rand((200,))
        assert set(samples.unique().tolist()) == {1, 3}
        assert not spec.is_in(torch.tensor([0, 1]))
        assert spec.is_in(torch.tensor([3, 1]))
        projected = spec.project(torch.tensor([0, 1]))
        assert projected[1].item() == 1 and projected[0].item() in (1, 3)
        spec.update_mask(None)
        assert spec.is_in(torch.tensor([0, 1]))

    def test_per_entry_mask(self):
        spec = Categorical(3, shape=(2,))
        spec.update_mask(torch.tensor([[True, False, False], [False, False, True]]))
        assert spec.rand((20,)).tolist() == [[0, 2]] * 20

    def test_enumerate(self):
        assert Categorical(3).enumerate().tolist() == [0, 1, 2]
        assert Categorical(2, shape=(2,)).enumerate().shape == (2, 2)

    def test_one_hot_conversion(self):
        spec = Categorical(3)
        assert spec.to_one_hot(torch.tensor(1)).tolist() == [0, 1, 0]
        assert spec.to_one_hot_spec() == OneHot(3)


class TestOneHot:
    def test_defaults(self):
        spec = OneHot(5)
        assert spec.shape == (5,) and spec.dtype == torch.bool and spec.space.n == 5

    def test_bad_shape(self):
        with pytest.raises(ValueError, match="n=5"):
            OneHot(5, shape=(4,))

    def test_rand_is_one_hot(self):
        spec = OneHot(4, dtype=torch.long)
        out = spec.rand((50,))
        assert out.dtype == torch.long and bool((out.sum(-1) == 1).all())
        assert spec.is_in(out)

    def test_is_in(self):
        spec = OneHot(3)
        assert spec.is_in(torch.tensor([False, True, False]))
        assert not spec.is_in(torch.tensor([True, True, False]))
        assert not spec.is_in(torch.tensor([False, False, False]))
        batch = torch.tensor([[True, False, False], [False, False, False]])
        assert not spec.is_in(batch)
        long_spec = OneHot(3, dtype=torch.long)
        assert not long_spec.is_in(torch.tensor([2, -1, 0]))

    def test_encode_to_numpy_roundtrip(self):
        spec = OneHot(4)
        assert spec.encode(2).tolist() == [False, False, True, False]
        assert spec.encode(np.array([1, 3])).shape == (2, 4)
        assert int(spec.to_numpy(spec.encode(3))) == 3

    def test_project(self):
        spec = OneHot(3)
        assert spec.project(torch.tensor([0.1, 0.7, 0.2])).tolist() == [False, True, False]

    def test_mask(self):
        spec = OneHot(4, mask=torch.tensor([True, False, False, True]))
        idx = spec.rand((200,)).to(torch.long).argmax(-1)
        assert set(idx.unique().tolist()) == {0, 3}
        assert not spec.is_in(torch.tensor([False, True, False, False]))
        assert spec.project(torch.tensor([0.0, 1.0, 0.0, 0.5])).tolist() == [
            False,
            False,
            False,
            True,
        ]

    def test_categorical_conversion(self):
        spec = OneHot(3)
        assert spec.to_categorical(torch.tensor([False, False, True])).item() == 2
        assert spec.to_categorical_spec() == Categorical(3)

    def test_index(self):
        spec = OneHot(3)
        values = torch.arange(6.0).reshape(3, 2)
        assert spec.index(torch.tensor([False, True, False]), values).tolist() == [2.0, 3.0]

    @pytest.mark.parametrize("dtype", [torch.bool, torch.long, torch.float32, torch.bfloat16])
    @pytest.mark.parametrize("batch", [(), (7,), (2, 3)])
    def test_rand_draws_the_categories_of_torch_randint(self, dtype, batch):
        # the one-hot rows follow torch.randint's draws: same seed, same samples, any dtype
        spec = OneHot(5, dtype=dtype)
        torch.manual_seed(3)
        out = spec.rand(batch)
        torch.manual_seed(3)
        expected = torch.randint(0, 5, batch)
        assert out.shape == (*batch, 5) and out.dtype == dtype
        assert spec.is_in(out.reshape(-1, 5)[0])
        assert torch.equal(out.to(torch.long).argmax(-1), expected)
        assert bool((out.to(torch.long).sum(-1) == 1).all())

    def test_rand_samples_are_independent_tensors(self):
        # writing into a sample changes neither the next samples nor the spec's lookup table
        spec = OneHot(3, dtype=torch.long)
        for batch in [(), (4,)]:
            first = spec.rand(batch)
            first.fill_(7)
            again = spec.rand(batch)
            assert bool((again.sum(-1) == 1).all())
            assert torch.equal(spec._eye, torch.eye(3, dtype=torch.long))

    def test_rand_follows_dtype_changes(self):
        spec = OneHot(3)
        spec.dtype = torch.long  # assigned directly: the cached rows are rebuilt
        assert spec.rand().dtype == torch.long
        assert spec.rand((2,)).dtype == torch.long


class TestBinary:
    def test_defaults(self):
        spec = Binary(3)
        assert spec.shape == (3,) and spec.dtype == torch.int8
        assert Binary(shape=(2, 4)).shape == (2, 4)
        assert spec.cardinality() == 8

    def test_is_in(self):
        spec = Binary(2)
        assert spec.is_in(torch.tensor([0, 1], dtype=torch.int8))
        assert not spec.is_in(torch.tensor([2, 1], dtype=torch.int8))
        assert spec.is_in(spec.rand((10,)))

    def test_bool_dtype(self):
        spec = Binary(3, dtype=torch.bool)
        assert spec.rand().dtype == torch.bool

    def test_enumerate(self):
        assert Binary(2).enumerate().tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]


class TestMultiCategorical:
    def test_defaults(self):
        spec = MultiCategorical([2, 3])
        assert spec.shape == (2,) and spec.dtype == torch.int64
        assert [b.n for b in spec.space.boxes] == [2, 3]
        assert spec.cardinality() == 6

    def test_rand_respects_nvec(self):
        spec = MultiCategorical([2, 5])
        out = spec.rand((300,))
        assert set(out[:, 0].tolist()) == {0, 1} and set(out[:, 1].tolist()) == {0, 1, 2, 3, 4}
        assert spec.is_in(out)
        assert not spec.is_in(torch.tensor([2, 0]))

    def test_project(self):
        spec = MultiCategorical([2, 3])
        assert spec.project(torch.tensor([5, -1])).tolist() == [1, 0]

    def test_mask(self):
        spec = MultiCategorical([2, 3], mask=torch.tensor([False, True, True, False, False]))
        assert spec.rand((10,)).tolist() == [[1, 0]] * 10
        assert not spec.is_in(torch.tensor([0, 0]))

    def test_batched_nvec(self):
        spec = MultiCategorical([2, 3], shape=(4, 2))
        assert spec.rand().shape == (4, 2) and spec.nvec.shape == (4, 2)
        assert spec[0] == MultiCategorical([2, 3])

    def test_enumerate_and_one_hot(self):
        spec = MultiCategorical([2, 2])
        assert spec.enumerate().tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
        assert spec.to_one_hot(torch.tensor([1, 0])).tolist() == [False, True, True, False]


class TestMultiOneHot:
    def test_defaults(self):
        spec = MultiOneHot([2, 3])
        assert spec.shape == (5,) and spec.dtype == torch.bool and spec.cardinality() == 6

    def test_rand_is_in(self):
        spec = MultiOneHot([2, 3, 1])
        out = spec.rand((30,))
        assert spec.is_in(out)
        assert bool((out[:, :2].sum(-1) == 1).all() and (out[:, 2:5].sum(-1) == 1).all())

    def test_is_in_rejects(self):
        spec = MultiOneHot([2, 3])
        assert not spec.is_in(torch.tensor([True, True, False, True, False]))
        assert not spec.is_in(torch.tensor([True, False, False, False, False]))

    def test_encode_to_numpy(self):
        spec = MultiOneHot([2, 3])
        x = spec.encode([1, 2])
        assert x.tolist() == [False, True, False, False, True]
        assert spec.to_numpy(x).tolist() == [1, 2]

    def test_mask(self):
        spec = MultiOneHot([2, 2], mask=torch.tensor([True, False, False, True]))
        assert spec.rand().tolist() == [True, False, False, True]
        assert not spec.is_in(torch.tensor([False, True, False, True]))


class TestNonTensor:
    def test_rand_and_is_in(self):
        spec = NonTensor(shape=(), example_data="hi")
        data = spec.rand()
        assert data.data == "hi" and spec.is_in(data)
        assert spec.is_in("anything")
        assert not spec.is_in(torch.zeros(1))

    def test_batched(self):
        spec = NonTensor(shape=(3,), example_data=1, batched=True)
        data = spec.rand()
        assert data.batch_size == (3,) and data.tolist() == [1, 1, 1]

    def test_default_shape_and_eq(self):
        assert NonTensor().shape == (1,)
        assert NonTensor(example_data=1) == NonTensor(example_data=1)
        assert NonTensor(example_data=1) != NonTensor(example_data=2)


class TestDynamicDims:
    def test_rand_treats_minus_one_as_one(self):
        spec = Unbounded(shape=(3, -1, 2))
        assert spec.rand().shape == (3, 1, 2)
        assert spec.zero((4,)).shape == (4, 3, 1, 2)

    def test_is_in_accepts_any_size(self):
        spec = Unbounded(shape=(3, -1, 2))
        assert spec.is_in(torch.zeros(3, 7, 2))
        assert not spec.is_in(torch.zeros(3, 7, 3))
        bounded = Bounded(0.0, 1.0, shape=(-1, 2))
        assert bounded.is_in(torch.rand(9, 2))
        assert not bounded.is_in(torch.full((9, 2), 2.0))


def test_zero_returns_fresh_tensors():
    spec = Unbounded(shape=(3,))
    first = spec.zero()
    first += 1
    assert spec.zero().tolist() == [0.0, 0.0, 0.0]
    assert spec.to(torch.float64).zero().dtype == torch.float64
    spec.shape = (2,)
    assert spec.zero().shape == (2,)
    spec.dtype = torch.int32
    assert spec.zero().dtype == torch.int32
