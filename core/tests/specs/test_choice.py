"""``Choice`` (TorchRL's ``torchrl.data.Choice``): numbers below were produced by TorchRL 0.14.1."""

from __future__ import annotations

import pytest
import torch
from tensordict import NonTensorData

from torchenv.specs import Bounded, Categorical, Choice, Composite, Stacked, Unbounded
from torchenv.specs._torchrl import from_torchrl_spec


def _bounded_choice() -> Choice:
    return Choice([Bounded(0, 1, shape=(1,)), Bounded(10, 11, shape=(1,))])


def test_rand_matches_torchrl_seeded() -> None:
    torch.manual_seed(0)
    spec = _bounded_choice()
    first, second = spec.rand(), spec.rand()
    torch.testing.assert_close(first, torch.tensor([0.7682]), atol=1e-4, rtol=0)
    torch.testing.assert_close(second, torch.tensor([10.1320]), atol=1e-4, rtol=0)
    torch.testing.assert_close(
        spec.rand((2,)), torch.tensor([[10.6341], [10.4901]]), atol=1e-4, rtol=0
    )


def test_attributes() -> None:
    spec = _bounded_choice()
    assert spec.shape == torch.Size([1])
    assert spec.dtype == torch.float32
    assert spec.device == torch.device("cpu")
    assert spec.domain is None and spec.space is None
    assert spec.num_choices == 2
    assert spec.rand((2, 3)).shape == torch.Size([2, 3, 1])
    assert torch.equal(spec.zero(), torch.zeros(1))
    # TorchRL's ``one`` raises a TypeError (a bug); ours takes the second choice's ``one``
    assert torch.equal(spec.one(), torch.ones(1))


def test_is_in() -> None:
    spec = _bounded_choice()
    assert spec.is_in(torch.tensor([0.5]))
    assert spec.is_in(torch.tensor([10.5]))
    assert not spec.is_in(torch.tensor([5.0]))
    assert spec.project(torch.tensor([0.5])).item() == 0.5
    with pytest.raises(NotImplementedError):
        spec.project(torch.tensor([5.0]))
    with pytest.raises(NotImplementedError):
        spec.index(0, torch.zeros(1))


def test_cardinality_and_enumerate() -> None:
    spec = Choice([Categorical(3), Categorical(2)])
    assert spec.cardinality() == 5
    values = spec.enumerate()
    assert isinstance(values, list)
    assert [v.item() for v in values] == [0, 1, 2, 0, 1]
    with pytest.raises(NotImplementedError):
        _bounded_choice().enumerate()


def test_categorical_rand_is_uniform_over_choices() -> None:
    torch.manual_seed(3)
    spec = Choice([Categorical(3), Categorical(2)])
    counts = torch.bincount(torch.stack([spec.rand() for _ in range(4000)])).tolist()
    assert counts == [1665, 1651, 684]  # TorchRL's counts with the same seed


def test_non_tensor_choices() -> None:
    torch.manual_seed(0)
    spec = Choice([NonTensorData(s) for s in ["a", "b", "c", "d"]])
    assert spec.shape == torch.Size([]) and spec.dtype is None and spec.device is None
    assert [spec.rand().data for _ in range(6)] == ["a", "d", "b", "a", "d", "d"]
    assert spec.zero().data == "a"
    assert spec.is_in(NonTensorData("a")) and not spec.is_in(NonTensorData("z"))
    assert spec.cardinality() == 4
    # TorchRL raises an AttributeError here; ours lists the choices
    assert [v.data for v in spec.enumerate()] == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("choices", "exc", "match"),
    [
        ((Bounded(0, 1, shape=(1,)),), TypeError, "must be a list"),
        ([], ValueError, "at least one"),
        ([1, 2], TypeError, "Each choice must be"),
        ([Bounded(0, 1, shape=(1,)), Unbounded(shape=(1,))], TypeError, "same type"),
        ([Bounded(0, 1, shape=(1,)), Bounded(0, 1, shape=(2,))], ValueError, "same shape"),
        (
            [Bounded(0, 1, shape=(1,)), Bounded(0, 1, shape=(1,), dtype=torch.float64)],
            ValueError,
            "same dtype",
        ),
    ],
)
def test_bad_choices(choices: object, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        Choice(choices)  # type: ignore[arg-type]


def test_shape_ops_and_copies() -> None:
    spec = _bounded_choice()
    assert spec.expand(3, 1).shape == torch.Size([3, 1])
    assert spec.unsqueeze(0).shape == torch.Size([1, 1])
    assert spec.expand(3, 1).squeeze().shape == torch.Size([3])
    assert spec.reshape(1, 1).shape == torch.Size([1, 1])
    assert spec.expand(3, 1)[1:].shape == torch.Size([2, 1])
    assert [s.shape for s in spec.expand(2, 1).unbind(0)] == [torch.Size([1])] * 2
    assert spec == spec.clone()
    assert spec != Choice([Bounded(0, 1, shape=(1,))])
    as64 = spec.to(torch.float64)
    assert as64.dtype == torch.float64 and as64.rand().dtype == torch.float64


def test_stack() -> None:
    spec = _bounded_choice()
    stacked = torch.stack([spec, spec.clone()], 0)
    assert isinstance(stacked, Choice)
    assert stacked.shape == torch.Size([2, 1])
    assert stacked.rand().shape == torch.Size([2, 1])
    other = Choice([Bounded(0, 2, shape=(1,)), Bounded(10, 11, shape=(1,))])
    assert isinstance(torch.stack([spec, other], 0), Stacked)


def test_in_composite() -> None:
    comp = Composite(a=Choice([Categorical(3), Categorical(2)]), shape=())
    torch.manual_seed(1)
    assert comp.rand()["a"].item() == 1
    assert comp.cardinality() == 5
    nested = Choice([Composite(a=Unbounded(1)), Composite(a=Unbounded(1))])
    assert nested.rand()["a"].shape == torch.Size([1])


def test_conversion_round_trip() -> None:
    spec = _bounded_choice()
    back = from_torchrl_spec(spec)
    assert isinstance(back, Choice) and back == spec
