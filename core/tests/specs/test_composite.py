"""Composite: mapping API, nested keys, locking, shapes, data generation and checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    NonTensor,
    OneHot,
    SpecKeyError,
    SpecLockedError,
    SpecShapeError,
    Unbounded,
)


def make_spec() -> Composite:
    return Composite(
        observation=Unbounded(shape=(4,)),
        pixels=Bounded(0, 255, shape=(3, 8, 8), dtype=torch.uint8),
        action=OneHot(6),
        reward=Unbounded(shape=(1,)),
        done=Categorical(2, shape=(1,), dtype=torch.bool),
    )


class TestMapping:
    def test_kwargs_and_dict(self):
        a = Composite(obs=Unbounded(3))
        b = Composite({"obs": Unbounded(3)})
        assert a == b and list(a.keys()) == ["obs"]

    def test_nested_dict_becomes_composite(self):
        spec = Composite({"agents": {"obs": Unbounded(3)}})
        assert isinstance(spec["agents"], Composite)
        assert spec["agents", "obs"] == Unbounded(3)
        assert spec[("agents", ("obs",))] == Unbounded(3)

    def test_setitem_tuple_creates_nested(self):
        spec = Composite(shape=(2,))
        spec["a", "b", "c"] = Unbounded(shape=(2, 1))
        assert isinstance(spec["a"], Composite) and spec["a"].shape == (2,)
        assert spec["a", "b"].shape == (2,)
        assert spec.get(("a", "b", "c")).shape == (2, 1)

    def test_keys_nested_and_leaves(self):
        spec = Composite(x=Unbounded(1), n=Composite(y=Unbounded(1), m=Composite(z=Unbounded(1))))
        assert list(spec.keys()) == ["x", "n"]
        assert set(spec.keys(True)) == {"x", "n", ("n", "y"), ("n", "m"), ("n", "m", "z")}
        assert set(spec.keys(True, True)) == {"x", ("n", "y"), ("n", "m", "z")}
        assert ("n", "m", "z") in spec.keys(include_nested=True)
        assert ("n", "m") not in spec.keys(include_nested=True, leaves_only=True)
        assert ("n", "y") in spec
        assert len(spec.keys(True, True)) == 3
        assert [k for k, _ in spec.items(True, True)] == list(spec.keys(True, True))
        assert all(isinstance(v, Unbounded) for v in spec.values(True, True))

    def test_get_default_and_missing(self):
        spec = make_spec()
        assert spec.get("nope", None) is None
        with pytest.raises(KeyError, match="nope"):
            spec["nope"]
        with pytest.raises(SpecKeyError, match="available keys"):
            spec["a", "b"]

    def test_delete(self):
        spec = Composite({"a": {"b": Unbounded(1), "c": Unbounded(1)}})
        del spec["a", "b"]
        assert list(spec.keys(True)) == [("a", "c"), "a"]
        del spec["a"]
        assert len(spec) == 0 and spec.is_empty()

    def test_set_returns_self_and_reserved(self):
        spec = Composite()
        assert spec.set("x", Unbounded(1)) is spec
        with pytest.raises(AttributeError, match="reserved"):
            spec["shape"] = Unbounded(1)

    def test_none_entries(self):
        spec = Composite(a=Unbounded(1), b=None)
        assert list(spec.keys()) == ["a", "b"]
        assert list(spec.rand().keys()) == ["a"]
        assert spec.is_in(spec.zero())

    def test_update(self):
        spec = Composite({"a": {"b": Unbounded(1)}})
        spec.update({"a": {"c": Unbounded(2)}, "d": Unbounded(3)})
        assert set(spec.keys(True, True)) == {("a", "b"), ("a", "c"), "d"}
        spec.update(Composite(d=Unbounded(5)))
        assert spec["d"].shape == (5,)

    def test_select_exclude_empty(self):
        spec = make_spec()
        sel = spec.select("observation", "done")
        assert list(sel.keys()) == ["observation", "done"]
        with pytest.raises(KeyError):
            spec.select("missing")
        assert list(spec.select("missing", "done", strict=False).keys()) == ["done"]
        exc = spec.exclude("pixels", "missing")
        assert "pixels" not in exc and "pixels" in spec
        empty = spec.empty()
        assert len(empty) == 0 and empty.shape == spec.shape


class TestShape:
    def test_entry_shape_must_start_with_composite_shape(self):
        with pytest.raises(SpecShapeError, match=r"'obs'.*\[3\].*\[2\]"):
            Composite(obs=Unbounded(3), shape=(2,))
        spec = Composite(obs=Unbounded(shape=(2, 3)), shape=(2,))
        assert spec.shape == (2,) and spec.ndim == 1 and spec.batch_size == (2,)

    def test_shorter_composite_entry_is_extended(self):
        spec = Composite(shape=(2,))
        spec["sub"] = Composite()
        assert spec["sub"].shape == (2,)

    def test_shape_setter(self):
        spec = Composite(obs=Unbounded(shape=(2, 3)))
        spec.shape = (2,)
        assert spec.shape == (2,)
        with pytest.raises(SpecShapeError):
            spec.shape = (3,)

    def test_expand(self):
        spec = Composite(
            obs=Unbounded(shape=(2, 3)),
            n=Composite(x=OneHot(4, shape=(2, 4)), shape=(2,)),
            shape=(2,),
        )
        out = spec.expand(5, 2)
        assert out.shape == (5, 2)
        assert out["obs"].shape == (5, 2, 3) and out["n", "x"].shape == (5, 2, 4)
        assert out.is_in(out.rand())
        with pytest.raises(SpecShapeError):
            spec.expand(5, 3)

    def test_index(self):
        spec = Composite(obs=Unbounded(shape=(4, 3)), act=OneHot(2, shape=(4, 2)), shape=(4,))
        assert spec[0].shape == () and spec[0]["obs"].shape == (3,)
        assert spec[1:3]["act"].shape == (2, 2)
        assert spec[..., 0]["obs"].shape == (3,)

    def test_squeeze_unsqueeze_unbind(self):
        spec = Composite(obs=Unbounded(shape=(1, 3)), shape=(1,))
        assert spec.squeeze().shape == () and spec.squeeze()["obs"].shape == (3,)
        assert spec.unsqueeze(0)["obs"].shape == (1, 1, 3)
        parts = Composite(obs=Unbounded(shape=(2, 3)), shape=(2,)).unbind(0)
        assert len(parts) == 2 and parts[0]["obs"].shape == (3,)


class TestData:
    def test_rand_zero_return_tensordict(self):
        spec = make_spec()
        td = spec.rand()
        assert isinstance(td, TensorDict) and td.batch_size == ()
        assert td["pixels"].dtype == torch.uint8 and td["done"].dtype == torch.bool
        assert spec.is_in(td)
        z = spec.zero((3,))
        assert z.batch_size == (3,) and z["observation"].shape == (3, 4)
        assert bool((z["observation"] == 0).all())
        assert spec.one()["reward"].item() == 1.0

    def test_nested_rand_batch_size(self):
        spec = Composite(
            agents=Composite(obs=Unbounded(shape=(3, 2)), shape=(3,)), done=Unbounded(1)
        )
        td = spec.rand((5,))
        assert td.batch_size == (5,) and td["agents"].batch_size == (5, 3)
        assert spec.is_in(td)

    def test_is_in(self):
        spec = make_spec()
        assert not spec.is_in(spec.zero())  # an all-zero one-hot is not a valid action
        td = spec.rand()
        assert spec.is_in(td)
        td["extra"] = torch.zeros(1)
        assert spec.is_in(td)  # extra keys are ignored
        td["action"] = torch.zeros(6, dtype=torch.bool)
        assert not spec.is_in(td)
        assert not spec.is_in(spec.rand().exclude("reward"))

    def test_project(self):
        spec = Composite(a=Bounded(0.0, 1.0, shape=(2,)), b=Categorical(3))
        td = TensorDict(a=torch.tensor([2.0, 0.5]), b=torch.tensor(5))
        out = spec.project(td)
        assert out["a"].tolist() == [1.0, 0.5] and out["b"].item() == 2
        assert spec.is_in(out)

    def test_encode_to_numpy(self):
        spec = Composite(a=Unbounded(shape=(2,)), b=OneHot(3))
        td = spec.encode({"a": np.ones(2), "b": 2})
        assert td["a"].dtype == torch.float32 and td["b"].tolist() == [False, False, True]
        arrays = spec.to_numpy(td)
        assert isinstance(arrays["a"], np.ndarray) and int(arrays["b"]) == 2

    def test_nontensor_entry(self):
        spec = Composite(text=NonTensor(shape=(), example_data="x"), obs=Unbounded(1))
        td = spec.rand()
        assert td["text"] == "x" and spec.is_in(td)


class TestLocking:
    def test_lock_recursive(self):
        spec = Composite({"a": {"b": Unbounded(1)}})
        spec.lock_()
        assert spec.is_locked and spec["a"].is_locked
        with pytest.raises(SpecLockedError):
            spec["c"] = Unbounded(1)
        with pytest.raises(RuntimeError):
            spec["a", "c"] = Unbounded(1)
        with pytest.raises(RuntimeError):
            del spec["a", "b"]
        spec.unlock_()
        assert not spec["a"].is_locked
        spec["a", "c"] = Unbounded(1)

    def test_lock_not_recursive(self):
        spec = Composite({"a": {"b": Unbounded(1)}})
        spec.lock_(recurse=False)
        spec["a", "c"] = Unbounded(1)
        with pytest.raises(RuntimeError):
            spec["d"] = Unbounded(1)

    def test_is_locked_setter_and_clone_unlocked(self):
        spec = make_spec()
        spec.is_locked = True
        assert spec.is_locked and not spec.clone().is_locked


class TestDeviceAndCopies:
    def test_device(self):
        assert make_spec().device is None
        spec = Composite(obs=Unbounded(3), device="cpu")
        assert spec.device == torch.device("cpu") and spec.rand().device == torch.device("cpu")
        spec["nested", "x"] = Unbounded(1)
        assert spec["nested"].device == torch.device("cpu")

    def test_clear_device(self):
        spec = Composite({"a": {"b": Unbounded(1)}}, device="cpu")
        spec.clear_device_()
        assert spec.device is None and spec["a"].device is None

    def test_clone_eq(self):
        spec = make_spec()
        other = spec.clone()
        assert other == spec and other is not spec
        other["reward"] = Unbounded(shape=(2,))
        assert other != spec

    def test_to_dtype(self):
        spec = Composite(a=Unbounded(2), b=Bounded(0, 1, shape=(1,)))
        assert spec.to(torch.float64)["b"].dtype == torch.float64
        assert spec.dtype == torch.float32

    def test_dtype_is_the_shared_leaf_dtype_or_none(self):
        # TorchRL 0.14.1 says float32 for every Composite (its class default); ours names the
        # leaves' dtype, or None when they differ (docs/migrating-from-torchrl.md)
        assert Composite(a=Categorical(3), b=Categorical(2)).dtype == torch.int64
        nested = Composite(a=Composite(b=Unbounded(3, dtype=torch.float64)))
        assert nested.dtype == torch.float64
        mixed = Composite(a=Unbounded(3), b=Categorical(3))
        assert mixed.dtype is None and Composite().dtype is None
        # code that allocates with it gets torch's default dtype, as with TorchRL's float32
        assert torch.zeros(2, dtype=mixed.dtype).dtype == torch.float32

    def test_repr_lists_entries(self):
        text = repr(make_spec())
        assert text.startswith("Composite(\n    observation: UnboundedContinuous(")
        assert "shape=torch.Size([])" in text


def test_separates_and_batch_size_setter():
    spec = make_spec()
    out = spec.separates("reward", "done")
    assert list(out.keys()) == ["reward", "done"] and "reward" not in spec
    assert spec.separates("reward") is None  # missing keys are skipped
    spec = Composite(obs=Unbounded(shape=(2, 3)))
    spec.batch_size = (2,)
    assert spec.shape == (2,)


def test_is_in_lazy_stack_of_dynamic_shapes():
    spec = Composite(obs=Unbounded(shape=(3, -1)))
    parts = [TensorDict(obs=torch.zeros(3, n)) for n in (1, 2, 4)]
    lazy = LazyStackedTensorDict(*parts, stack_dim=0)
    assert spec.is_in(lazy)
    parts[1]["obs"] = torch.zeros(2, 2)
    assert not spec.is_in(LazyStackedTensorDict(*parts, stack_dim=0))
